package fakehost

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing/fstest"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
)

// FS builds the described host as an in-memory tree, every parent
// directory listed, links as sysfs writes them (relative).
func (s *Spec) FS() (fstest.MapFS, error) {
	w := &writer{fs: fstest.MapFS{}}
	w.file("proc/sys/kernel/hostname", s.Hostname+"\n")
	if s.Kernel != "" {
		w.file("proc/sys/kernel/osrelease", s.Kernel+"\n")
		w.file("proc/version", "Linux version "+s.Kernel+" (fakehost) #1 SMP\n")
	}
	var all []string
	online := []string{}
	for _, n := range s.NUMA {
		base := fmt.Sprintf("sys/devices/system/node/node%d/", n.ID)
		w.file(base+"cpulist", n.CPUs+"\n")
		all = append(all, n.CPUs)
		online = append(online, strconv.Itoa(n.ID))
	}
	if len(s.NUMA) > 0 {
		w.file("sys/devices/system/node/online", strings.Join(online, ",")+"\n")
	}
	allCPUs := strings.Join(all, ",")
	if allCPUs == "" {
		allCPUs = "0-15"
	}
	w.mkdir("sys/bus/pci/devices")
	w.mkdir("sys/class/infiniband")
	w.mkdir("sys/class/net")
	for _, hb := range s.Bridges {
		for _, d := range hb.Devices {
			s.writeDev(w, d, "sys/devices/"+hb.Name, allCPUs)
		}
	}
	for _, rd := range s.RDMA {
		if err := s.writeRDMA(w, rd); err != nil {
			return nil, err
		}
	}
	for _, nd := range s.NetDevs {
		if s.devs[nd.Addr] == nil {
			return nil, fmt.Errorf("%s: netdev %s on unknown device %s", s.Name, nd.Name, nd.Addr)
		}
		s.writeNetdev(w, nd.Addr, nd.Name, nd.MTU, nd.Speed, nd.State, 1)
	}
	var mods strings.Builder
	for _, m := range s.Modules {
		fmt.Fprintf(&mods, "%s 16384 0 - Live 0x0000000000000000\n", m)
		w.file("sys/module/"+m+"/initstate", "live\n")
	}
	w.file("proc/modules", mods.String())
	if s.NVML != nil {
		b, err := s.facts()
		if err != nil {
			return nil, err
		}
		w.file("commands/"+gpu.FactsFile, string(b))
	}
	keys := make([]string, 0, len(s.Files))
	for k := range s.Files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.file(k, s.Files[k])
	}
	if w.err != nil {
		return nil, w.err
	}
	return w.fs, nil
}

// Materialize writes the described host under dir (which becomes a root).
func (s *Spec) Materialize(dir string) error {
	fsys, err := s.FS()
	if err != nil {
		return err
	}
	return os.CopyFS(dir, fsys)
}

// writer builds the tree. Every entry's parents are listed as directories,
// so the tree answers lookups without scanning.
type writer struct {
	fs  fstest.MapFS
	err error
}

func (w *writer) mkdir(rel string) {
	w.parents(rel + "/x")
}

// parents lists the directories above rel. A parent that is already a
// link or a file is an error: sysfs is never written through a link.
func (w *writer) parents(rel string) {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		f, ok := w.fs[d]
		if !ok {
			w.fs[d] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
			continue
		}
		if !f.Mode.IsDir() && w.err == nil {
			w.err = fmt.Errorf("%s: %s is not a directory", rel, d)
		}
		return
	}
}

func (w *writer) file(rel, content string) { w.bytes(rel, []byte(content)) }

func (w *writer) bytes(rel string, b []byte) {
	w.parents(rel)
	w.fs[rel] = &fstest.MapFile{Data: b, Mode: 0o644}
}

// link makes rel a symbolic link to target (root-relative), written as a
// relative link the way sysfs does.
func (w *writer) link(rel, target string) {
	t, err := filepath.Rel(path.Dir(rel), target)
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return
	}
	w.parents(rel)
	w.fs[rel] = &fstest.MapFile{Data: []byte(filepath.ToSlash(t)), Mode: fs.ModeSymlink | 0o777}
}

var speedText = map[int]string{1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe", 5: "32.0 GT/s PCIe", 6: "64.0 GT/s PCIe"}

func (s *Spec) cpusOf(d *Dev, all string) string {
	if d.CPUs != "" {
		return d.CPUs
	}
	for _, n := range s.NUMA {
		if n.ID == d.NUMA {
			return n.CPUs
		}
	}
	return all
}

func (s *Spec) writeDev(w *writer, d *Dev, parent, all string) {
	p := parent + "/" + d.Addr
	f := func(name, v string) { w.file(p+"/"+name, v+"\n") }
	f("class", fmt.Sprintf("0x%06x", d.Class))
	f("vendor", fmt.Sprintf("0x%04x", d.Vendor))
	f("device", fmt.Sprintf("0x%04x", d.Device))
	f("subsystem_vendor", fmt.Sprintf("0x%04x", d.SubVendor))
	f("subsystem_device", fmt.Sprintf("0x%04x", d.SubDevice))
	f("numa_node", strconv.Itoa(d.NUMA))
	f("local_cpulist", s.cpusOf(d, all))
	if d.MaxGen > 0 {
		f("max_link_speed", speedText[d.MaxGen])
		f("current_link_speed", speedText[d.CurGen])
		f("max_link_width", strconv.Itoa(d.MaxWidth))
		f("current_link_width", strconv.Itoa(d.CurWidth))
	}
	if d.Driver != "" {
		w.mkdir("sys/bus/pci/drivers/" + d.Driver)
		w.link(p+"/driver", "sys/bus/pci/drivers/"+d.Driver)
	}
	if d.IOMMU != nil {
		g := fmt.Sprintf("sys/kernel/iommu_groups/%d", *d.IOMMU)
		w.mkdir(g + "/devices")
		w.link(p+"/iommu_group", g)
		w.link(g+"/devices/"+d.Addr, p)
	}
	switch {
	case d.Config == "none":
	case d.Config == "short" || !s.Privileged:
		w.bytes(p+"/config", d.configBytes()[:pci.UnprivilegedConfigLen])
	default:
		w.bytes(p+"/config", d.configBytes())
	}
	for _, file := range counters.AERFiles {
		if d.AER == nil {
			break
		}
		var b strings.Builder
		var total uint64
		for _, field := range AERFields[file] {
			fmt.Fprintf(&b, "%s %d\n", field, d.AER[file][field])
			total += d.AER[file][field]
		}
		fmt.Fprintf(&b, "%s %d\n", counters.AERTotal(file), total)
		w.file(p+"/"+file, b.String())
	}
	w.link("sys/bus/pci/devices/"+d.Addr, p)
	for _, c := range d.Children {
		s.writeDev(w, c, p, all)
	}
}

// configBytes synthesises a config space that carries what the tree says:
// ids, class, header type, a PCI Express capability with port type, link
// capability/status and device control, and ACS when set.
func (d *Dev) configBytes() []byte {
	b := make([]byte, pci.ExtendedConfigLen)
	le := binary.LittleEndian
	le.PutUint16(b[0:], d.Vendor)
	le.PutUint16(b[2:], d.Device)
	b[0x09] = byte(d.Class)
	b[0x0a] = byte(d.Class >> 8)
	b[0x0b] = byte(d.Class >> 16)
	if d.Class>>8 == 0x0604 {
		b[0x0e] = 1
	}
	le.PutUint16(b[0x2c:], d.SubVendor)
	le.PutUint16(b[0x2e:], d.SubDevice)
	if d.Port != pci.PortUnknown {
		le.PutUint16(b[6:], 0x10) // capability list
		b[0x34] = 0x40
		off := 0x40
		b[off] = pci.CapPCIExpress
		b[off+1] = 0
		le.PutUint16(b[off+2:], uint16(2|int(d.Port)<<4))
		le.PutUint32(b[off+4:], uint32(log2(512/128)))
		ctl := uint16(log2(d.MPS/128))<<5 | uint16(log2(d.MRRS/128))<<12 | 1<<4
		le.PutUint16(b[off+8:], ctl)
		le.PutUint32(b[off+0x0c:], uint32(d.MaxGen)|uint32(d.MaxWidth)<<4)
		le.PutUint16(b[off+0x12:], uint16(d.CurGen)|uint16(d.CurWidth)<<4)
	}
	if d.ACS != nil {
		le.PutUint32(b[0x100:], uint32(pci.ExtCapACS)|1<<16)
		le.PutUint16(b[0x104:], d.ACSCap)
		le.PutUint16(b[0x106:], *d.ACS)
	}
	return b
}

func log2(v int) int {
	n := 0
	for v > 1 {
		v >>= 1
		n++
	}
	return n
}

func (s *Spec) devPath(addr string) string {
	d := s.devs[addr]
	if d == nil {
		return ""
	}
	var chain []string
	for x := d; x != nil; x = x.parent {
		chain = append([]string{x.Addr}, chain...)
	}
	return "sys/devices/" + d.bridge.Name + "/" + strings.Join(chain, "/")
}

var portStates = map[string]string{"ACTIVE": "4: ACTIVE", "DOWN": "1: DOWN", "INIT": "2: INIT", "ARMED": "3: ARMED"}
var physStates = map[string]string{"LinkUp": "5: LinkUp", "Disabled": "3: Disabled", "Polling": "2: Polling", "Sleep": "1: Sleep"}

func (s *Spec) writeRDMA(w *writer, rd *RDMA) error {
	var base string
	if rd.Addr != "" {
		dp := s.devPath(rd.Addr)
		if dp == "" {
			return fmt.Errorf("%s:%d: rdma %s on unknown device %s", s.Name, rd.line, rd.Name, rd.Addr)
		}
		base = dp + "/infiniband/" + rd.Name
		w.link(base+"/device", dp)
	} else {
		base = "sys/devices/virtual/infiniband/" + rd.Name
	}
	f := func(name, v string) { w.file(base+"/"+name, v+"\n") }
	guid := rd.GUID
	if guid == "" {
		guid = fmt.Sprintf("b83f:d203:00%02x:%04x", len(rd.Name), hash(rd.Name)&0xffff)
	}
	f("node_guid", guid)
	f("sys_image_guid", guid)
	f("fw_ver", rd.FW)
	f("hca_type", rd.HCA)
	f("board_id", rd.Board)
	f("node_type", "1: CA")
	for i, p := range rd.Ports {
		pb := fmt.Sprintf("%s/ports/%d/", base, i+1)
		st, ok := portStates[p.State]
		if !ok {
			st = p.State
		}
		ph, ok := physStates[p.Phys]
		if !ok {
			ph = p.Phys
		}
		w.file(pb+"state", st+"\n")
		w.file(pb+"phys_state", ph+"\n")
		w.file(pb+"rate", p.Rate+"\n")
		w.file(pb+"link_layer", p.LinkLayer+"\n")
		w.file(pb+"lid", fmt.Sprintf("0x%x\n", i+1))
		w.file(pb+"sm_lid", "0x1\n")
		for _, c := range []string{"symbol_error", "link_downed", "port_rcv_errors", "link_error_recovery", "port_xmit_discards"} {
			w.file(pb+"counters/"+c, strconv.FormatUint(p.Counters[c], 10)+"\n")
		}
		for c, v := range p.Counters {
			w.file(pb+"counters/"+c, strconv.FormatUint(v, 10)+"\n")
		}
		if p.HW != nil {
			for _, c := range counters.HWCounters {
				w.file(pb+"hw_counters/"+c, strconv.FormatUint(p.HW[c], 10)+"\n")
			}
			for c, v := range p.HW {
				w.file(pb+"hw_counters/"+c, strconv.FormatUint(v, 10)+"\n")
			}
		}
		if rd.NetDev != "" && p.LinkLayer == "Ethernet" {
			w.file(pb+"gid_attrs/ndevs/0", rd.NetDev+"\n")
			if rd.IP.IsValid() {
				writeGIDs(w, pb, guid, rd.NetDev, rd.IP)
			}
		}
	}
	w.link("sys/class/infiniband/"+rd.Name, base)
	if rd.NetDev != "" && rd.Addr != "" {
		typ := 32
		if len(rd.Ports) > 0 && rd.Ports[0].LinkLayer == "Ethernet" {
			typ = 1
		}
		state := "up"
		if len(rd.Ports) > 0 && rd.Ports[0].State != "ACTIVE" {
			state = "down"
		}
		s.writeNetdev(w, rd.Addr, rd.NetDev, rd.NetMTU, 400000, state, typ)
	}
	return nil
}

func (s *Spec) writeNetdev(w *writer, addr, name string, mtu, speed int, state string, typ int) {
	dp := s.devPath(addr)
	nb := dp + "/net/" + name
	w.file(nb+"/mtu", strconv.Itoa(mtu)+"\n")
	w.file(nb+"/operstate", state+"\n")
	w.file(nb+"/speed", strconv.Itoa(speed)+"\n")
	w.file(nb+"/type", strconv.Itoa(typ)+"\n")
	w.link(nb+"/device", dp)
	w.link("sys/class/net/"+name, nb)
}

// gidTableLen is the table length the fixtures show (mlx5 has 255; the
// unpopulated rest reads as zeros).
const gidTableLen = 16

// writeGIDs writes the GID table the kernel builds for a RoCE port whose
// netdev has one IPv4 address: 0 and 1 the link-local fe80:: GID (from the
// port GUID) as RoCE v1 and v2, 2 and 3 the IPv4-mapped ::ffff:a.b.c.d as
// RoCE v1 and v2, the rest zero. A zero entry has no type or netdev file
// (the kernel answers EINVAL for them).
func writeGIDs(w *writer, pb, guid, netdev string, ip netip.Addr) {
	v4 := ip.As4()
	ll := "fe80:0000:0000:0000:" + guid
	mapped := fmt.Sprintf("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", v4[0], v4[1], v4[2], v4[3])
	types := []string{"IB/RoCE v1", "RoCE v2", "IB/RoCE v1", "RoCE v2"}
	for i := 0; i < gidTableLen; i++ {
		n := strconv.Itoa(i)
		g := "0000:0000:0000:0000:0000:0000:0000:0000"
		switch {
		case i < 2:
			g = ll
		case i < 4:
			g = mapped
		}
		w.file(pb+"gids/"+n, g+"\n")
		if i < 4 {
			w.file(pb+"gid_attrs/types/"+n, types[i]+"\n")
			w.file(pb+"gid_attrs/ndevs/"+n, netdev+"\n")
		}
	}
}

func hash(s string) uint32 {
	var h uint32 = 2166136261
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

func (s *Spec) facts() ([]byte, error) {
	n := s.NVML
	f := &gpu.Facts{Source: "fakehost", CollectedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), DriverVersion: n.Driver, CUDADriverVersion: n.CUDA}
	for i, g := range n.GPUs {
		gf, err := gpuFacts(i, g)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", s.Name, g.line, err)
		}
		f.GPUs = append(f.GPUs, gf)
	}
	for a := range f.GPUs {
		for b := range f.GPUs {
			if a == b {
				continue
			}
			st := n.P2PDefault
			if st == "" {
				st = gpu.P2PUnknown
			}
			p := gpu.P2P{A: a, B: b, Read: st, Write: st, NVLink: gpu.P2PNotSupported, Atomics: st}
			if tieNVLink(f.GPUs[a], f.GPUs[b]) {
				p.NVLink = gpu.P2POK
			}
			if o, ok := n.P2P[[2]string{f.GPUs[a].BusID, f.GPUs[b].BusID}]; ok {
				kv := keyvals(strings.Fields(o))
				if v, ok := kv["read"]; ok {
					p.Read = v
				}
				if v, ok := kv["write"]; ok {
					p.Write = v
				}
				if v, ok := kv["nvlink"]; ok {
					p.NVLink = v
				}
			}
			f.P2P = append(f.P2P, p)
		}
	}
	return json.MarshalIndent(f, "", "  ")
}

func tieNVLink(a, b gpu.GPU) bool {
	sw := func(g gpu.GPU) bool {
		for _, l := range g.NVLinks {
			if l.Active && l.RemoteType == "nvswitch" {
				return true
			}
		}
		return false
	}
	if sw(a) && sw(b) {
		return true
	}
	for _, l := range a.NVLinks {
		if l.Active && l.RemoteBusID == b.BusID {
			return true
		}
	}
	return false
}

func bptr(b bool) *bool     { return &b }
func iptr(i int) *int       { return &i }
func uptr(u uint64) *uint64 { return &u }

func gpuFacts(i int, g *NVMLGPU) (gpu.GPU, error) {
	a := g.Attrs
	addr, err := pci.ParseAddress(g.Addr)
	if err != nil {
		return gpu.GPU{}, err
	}
	gf := gpu.GPU{Index: i, BusID: addr.String(), Name: "NVIDIA H100 80GB HBM3", UUID: fmt.Sprintf("GPU-%08x-0000-0000-0000-%012d", hash(g.Addr), i),
		Architecture: "Hopper", NVLinkQueried: true, ClockEvents: []string{}}
	onoff := func(k string, def bool) (*bool, error) {
		v, ok := a[k]
		if !ok {
			return bptr(def), nil
		}
		switch v {
		case "on", "yes", "true":
			return bptr(true), nil
		case "off", "no", "false":
			return bptr(false), nil
		case "unknown":
			return nil, nil
		}
		return nil, fmt.Errorf("%s=%q: want on/off", k, v)
	}
	num := func(k string, def uint64) (*uint64, error) {
		v, ok := a[k]
		if !ok {
			return uptr(def), nil
		}
		if v == "unknown" {
			return nil, nil
		}
		u, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: not a number", k, v)
		}
		return &u, nil
	}
	inum := func(k string, def int) (*int, error) {
		u, err := num(k, uint64(def))
		if err != nil || u == nil {
			return nil, err
		}
		return iptr(int(*u)), nil
	}
	var errs []error
	chk := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var e error
	if v, ok := a["name"]; ok {
		gf.Name = v
	}
	if v, ok := a["arch"]; ok {
		gf.Architecture = v
	}
	gf.Persistence, e = onoff("persistence", true)
	chk(e)
	gf.MIGEnabled, e = onoff("mig", false)
	chk(e)
	gf.ECC.Current, e = onoff("ecc", true)
	chk(e)
	gf.ECC.Pending = gf.ECC.Current
	gf.ECC.VolatileUncorrected, e = num("ecc_unc", 0)
	chk(e)
	gf.ECC.AggregateUncorrected, e = num("ecc_unc_total", 0)
	chk(e)
	gf.ECC.VolatileCorrected, e = num("ecc_corr", 0)
	chk(e)
	gf.ECC.AggregateCorrected = gf.ECC.VolatileCorrected
	gf.Remapped.Correctable, e = num("remap_corr", 0)
	chk(e)
	gf.Remapped.Uncorrectable, e = num("remap_unc", 0)
	chk(e)
	gf.Remapped.Pending, e = onoff("remap_pending", false)
	chk(e)
	gf.Remapped.Failure, e = onoff("remap_failure", false)
	chk(e)
	gf.PCIe.MaxGen, e = inum("maxgen", 5)
	chk(e)
	gf.PCIe.CurGen, e = inum("curgen", 5)
	chk(e)
	gf.PCIe.MaxWidth, e = inum("maxwidth", 16)
	chk(e)
	gf.PCIe.CurWidth, e = inum("curwidth", 16)
	chk(e)
	gf.PCIe.ReplayCounter, e = num("replay", 0)
	chk(e)
	if v, ok := a["clock_events"]; ok && v != "" {
		gf.ClockEvents = strings.Split(v, ",")
	}
	// Sensors only where the description gives them (sm_clock=MHz
	// power=W temp=C): most fixtures are snapshots taken without them.
	if v, ok := a["sm_clock"]; ok {
		c, err := strconv.ParseUint(v, 10, 32)
		chk(err)
		gf.Sensors.SMClockMHz = new(uint32(c))
	}
	if v, ok := a["power"]; ok {
		p, err := strconv.ParseFloat(v, 64)
		chk(err)
		gf.Sensors.PowerW = &p
	}
	if v, ok := a["temp"]; ok {
		c, err := strconv.ParseUint(v, 10, 32)
		chk(err)
		gf.Sensors.TempC = new(uint32(c))
	}
	if v, ok := a["numa"]; ok {
		n, err := strconv.Atoi(v)
		chk(err)
		gf.NUMANode = &n
	}
	if v, ok := a["mem"]; ok {
		m, err := strconv.ParseUint(v, 10, 64)
		chk(err)
		gf.MemoryMiB = &m
	} else {
		gf.MemoryMiB = uptr(81559)
	}
	link := 0
	if v, ok := a["nvswitch"]; ok {
		n, err := strconv.Atoi(v)
		chk(err)
		down, _ := strconv.Atoi(a["nvlink_down"])
		for k := 0; k < n; k++ {
			gf.NVLinks = append(gf.NVLinks, gpu.NVLink{Link: link, Active: k < n-down, Version: 4, RemoteBusID: "ffffffff:ff:ff.0", RemoteType: "nvswitch"})
			link++
		}
	}
	if v, ok := a["peers"]; ok {
		// peers=0000:01:00.0*12,0000:02:00.0*2
		for _, pp := range strings.Split(v, ",") {
			pa, cnt, _ := strings.Cut(pp, "*")
			n, err := strconv.Atoi(cnt)
			chk(err)
			paddr, err := pci.ParseAddress(pa)
			chk(err)
			for k := 0; k < n; k++ {
				gf.NVLinks = append(gf.NVLinks, gpu.NVLink{Link: link, Active: true, Version: 3, RemoteBusID: paddr.String(), RemoteType: "gpu"})
				link++
			}
		}
	}
	if v, ok := a["nvlink"]; ok && v == "unknown" {
		gf.NVLinkQueried = false
		gf.NVLinks = nil
	}
	if v, ok := a["fabric"]; ok {
		gf.Fabric = gpu.Fabric{Supported: true, State: v, Status: a["fabric_status"], ClusterUUID: a["fabric_cluster"], Health: a["fabric_health"]}
		if c, err := strconv.ParseUint(a["fabric_clique"], 10, 32); err == nil {
			gf.Fabric.CliqueID = new(uint32(c))
		}
	}
	if len(errs) > 0 {
		return gf, errs[0]
	}
	return gf, nil
}
