// Package discover builds the topology model (topology.Host) of a node by
// reading it through a machine.Root: sysfs' PCI tree, NUMA nodes, RDMA and
// network devices, the PCI ID database and the driver's facts. It runs the
// same on the live host, on a snapshot and on test fixtures.
package discover

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvlib/pkg/pciids"

	"github.com/gdrcheck/gdrcheck/internal/collect/nvml"
	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/textio"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// Option configures discovery.
type Option func(*options)

type options struct {
	root    machine.Root
	facts   nvml.Source // nil: nvml.Replay(root)
	noFacts bool
	db      deviceNamer
	noNames bool
}

// WithRoot reads the host (or snapshot) at r.
func WithRoot(r machine.Root) Option { return func(o *options) { o.root = r } }

// WithGPUFacts sets where the driver's GPU facts come from. The runners
// pass collect/nvml/live (NVML on the live host); without it discovery
// reads what the root holds (nvml.Replay: a snapshot's nvml.json or
// nvidia-smi -q -x), so discovery itself links no NVML.
func WithGPUFacts(src nvml.Source) Option { return func(o *options) { o.facts = src } }

// WithoutGPUFacts skips the driver entirely (sysfs only).
func WithoutGPUFacts() Option { return func(o *options) { o.noFacts = true } }

// WithPCIDB shares an already parsed PCI ID database. Without it, the
// database is read through the root (see loadPCINames).
func WithPCIDB(db pciids.Interface) Option { return func(o *options) { o.db = db } }

// WithoutNames skips PCI ID name lookups.
func WithoutNames() Option { return func(o *options) { o.noNames = true } }

// ErrNoPCI means the root has no PCI devices to read at all.
var ErrNoPCI = errors.New("no PCI devices found")

var (
	reHostBridge = regexp.MustCompile(`^pci[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}$`)
	reNodeDir    = regexp.MustCompile(`^node([0-9]+)$`)
)

// Discover reads the host's topology. It fails only when there is no PCI
// tree to read; every other unreadable or malformed fact is recorded in
// Host.Problems and left unknown.
func Discover(ctx context.Context, opts ...Option) (*topology.Host, error) {
	start := time.Now()
	o := options{root: machine.NewRoot("/")}
	for _, opt := range opts {
		opt(&o)
	}
	h := &topology.Host{Root: o.root.Dir()}
	// Parsing the PCI ID database is CPU work; reading sysfs is system
	// calls. Overlap them.
	dbc := make(chan deviceNamer, 1)
	if !o.noNames {
		if o.db != nil {
			dbc <- o.db
		} else {
			go func() { dbc <- loadPCINames(o.root) }()
		}
	}
	d := discoverer{root: o.root, h: h, byAddr: map[string]*topology.Device{}}
	d.hostInfo()
	d.numa()
	if err := d.pciDevices(); err != nil {
		if !o.noNames {
			<-dbc // the database is read through the root: let it finish first
		}
		return nil, err
	}
	if !o.noNames {
		db := <-dbc
		for _, dev := range h.Devices {
			if n, err := db.GetDeviceName(dev.Vendor, dev.DeviceID); err == nil {
				dev.Name = n
			}
		}
	}
	d.gpus()
	d.rdma()
	d.netdevs()
	if !o.noFacts {
		src := o.facts
		if src == nil {
			src = nvml.Replay(o.root)
		}
		f, err := src.Collect(ctx)
		if err != nil {
			h.GPUFactsError = err.Error()
		}
		if f != nil {
			h.GPUFacts = f
			d.attachFacts(f)
		}
	}
	h.Finish()
	h.DiscoveryMS = float64(time.Since(start).Microseconds()) / 1000
	return h, nil
}

type discoverer struct {
	root machine.Root
	h    *topology.Host
	// byAddr is every PCI function by its address.
	byAddr map[string]*topology.Device
}

func (d *discoverer) problem(rel string, err error) {
	d.h.Problems = append(d.h.Problems, topology.Problem{Path: d.root.Display(rel), Message: err.Error()})
}

// read returns a trimmed attribute; a missing file is "" with ok=false and
// no problem recorded (many attributes are optional), other errors are
// recorded.
func (d *discoverer) read(rel string) (string, bool) {
	s, err := d.root.ReadString(rel)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.problem(rel, err)
		}
		return "", false
	}
	return s, true
}

// Bounds on what discovery walks: well past the largest real hosts, so
// that a snapshot built to exhaust memory is cut short with a problem
// instead (docs/performance.md).
const (
	MaxPCIFunctions = 16384 // a PCI domain has at most 256 buses × 32 devices × 8 functions; real hosts a few hundred
	MaxRDMADevices  = 1024
	MaxPorts        = 256
	MaxNUMANodes    = 1024 // Linux's MAX_NUMNODES
	MaxNetDevs      = 4096
)

// names lists the directory rel; an error is recorded as a problem and
// lists nothing.
func (d *discoverer) names(rel string) []string {
	names, err := d.root.Names(rel)
	if err != nil {
		d.problem(rel, err)
		return nil
	}
	return names
}

// capped keeps the first max names of the directory rel, recording a
// problem when there are more.
func (d *discoverer) capped(rel string, names []string, max int, what string) []string {
	if len(names) <= max {
		return names
	}
	d.problem(rel, fmt.Errorf("%d %s listed; only the first %d are read (no real host has more)", len(names), what, max))
	return names[:max]
}

// parseAttr reads the attribute rel and parses it; a parse error is
// recorded as a problem. The zero value stands for a missing attribute;
// on a parse error the value is what parse returned.
func parseAttr[T any](d *discoverer, rel string, parse func(string) (T, error)) T {
	s, ok := d.read(rel)
	if !ok {
		var zero T
		return zero
	}
	v, err := parse(s)
	if err != nil {
		d.problem(rel, err)
	}
	return v
}

func (d *discoverer) hostInfo() {
	if s, ok := d.read("proc/sys/kernel/hostname"); ok {
		d.h.Hostname = s
	} else if s, ok := d.read("etc/hostname"); ok {
		d.h.Hostname = s
	}
	if s, ok := d.read("proc/cpuinfo"); ok {
		c, err := topology.ParseCPUInfo(s)
		if err != nil {
			d.problem("proc/cpuinfo", err)
		}
		d.h.CPU = c
	}
	if s, ok := d.read("proc/sys/kernel/osrelease"); ok {
		d.h.Kernel = s
	} else if s, ok := d.read("proc/version"); ok {
		if f := strings.Fields(s); len(f) >= 3 {
			d.h.Kernel = f[2]
		}
	}
}

func (d *discoverer) numa() {
	const nodes = "sys/devices/system/node"
	for _, n := range d.capped(nodes, d.names(nodes), MaxNUMANodes, "NUMA node entries") {
		m := reNodeDir.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		id, _ := strconv.Atoi(m[1])
		rel := "sys/devices/system/node/" + n + "/cpulist"
		s, _ := d.read(rel)
		cpus, err := pci.ParseCPUList(s)
		if err != nil {
			d.problem(rel, err)
		}
		d.h.NUMANodes = append(d.h.NUMANodes, topology.NUMANode{ID: id, CPUs: cpus})
	}
	sort.Slice(d.h.NUMANodes, func(i, j int) bool { return d.h.NUMANodes[i].ID < d.h.NUMANodes[j].ID })
}

func (d *discoverer) pciDevices() error {
	const dir = "sys/bus/pci/devices"
	names, err := d.root.Names(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoPCI, err)
	}
	if len(names) == 0 {
		return fmt.Errorf("%w under %s (is the root a host or a snapshot?)", ErrNoPCI, d.root.Display(dir))
	}
	type found struct {
		addr pci.Address
		dev  *topology.Device
	}
	var devs []found
	for _, name := range d.capped(dir, names, MaxPCIFunctions, "PCI functions") {
		addr, err := pci.ParseAddress(name)
		if err != nil {
			d.problem(dir+"/"+name, fmt.Errorf("not a PCI address: %v", err))
			continue
		}
		rel, err := d.root.Resolve(dir + "/" + name)
		if err != nil {
			d.problem(dir+"/"+name, err)
			continue
		}
		if !d.root.Exists(rel) {
			d.problem(dir+"/"+name, fmt.Errorf("broken link to %s", rel))
			continue
		}
		dev := &topology.Device{Address: addr.String(), NUMANode: -1, PortType: pci.PortUnknown, SysPath: rel}
		if err := d.placeInTree(dev, addr, rel); err != nil {
			d.problem(dir+"/"+name, err)
			dev.TreeUnknown = true
		}
		d.attributes(dev)
		devs = append(devs, found{addr, dev})
		d.byAddr[dev.Address] = dev
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].addr.Less(devs[j].addr) })
	for _, f := range devs {
		d.h.Devices = append(d.h.Devices, f.dev)
	}
	for _, dev := range d.h.LinkParents() {
		d.problem(dev.SysPath, fmt.Errorf("upstream bridge %s is not in sys/bus/pci/devices", dev.Parent))
		dev.TreeUnknown = true
	}
	d.portTypes()
	return nil
}

// placeInTree reads a device's position from its sysfs path:
// sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0 has host bridge
// pci0000:00 and parent 0000:00:01.0. Paths with non-PCI elements above the
// host bridge (Hyper-V's VMBus, VMD domains) are handled by taking the last
// host bridge element before the device.
func (d *discoverer) placeInTree(dev *topology.Device, addr pci.Address, rel string) error {
	parts := strings.Split(rel, "/")
	if len(parts) < 3 || parts[0] != "sys" || parts[1] != "devices" {
		return fmt.Errorf("resolves to %s, outside sys/devices", rel)
	}
	parts = parts[2:]
	last := parts[len(parts)-1]
	if a, err := pci.ParseAddress(last); err != nil || a != addr {
		return fmt.Errorf("resolves to %s, which does not end in %s", rel, dev.Address)
	}
	hb := -1
	for i := len(parts) - 2; i >= 0; i-- {
		if reHostBridge.MatchString(parts[i]) {
			hb = i
			break
		}
	}
	if hb < 0 {
		return fmt.Errorf("no host bridge (pciDDDD:BB) in %s", rel)
	}
	dev.HostBridge = parts[hb]
	for i := len(parts) - 2; i > hb; i-- {
		if a, err := pci.ParseAddress(parts[i]); err == nil {
			dev.Parent = a.String()
			break
		}
	}
	return nil
}

func (d *discoverer) attributes(dev *topology.Device) {
	base := dev.SysPath + "/"
	hexAttr := func(name string, bits int) uint64 {
		identifying := name == "class" || name == "vendor" || name == "device"
		s, ok := d.read(base + name)
		if !ok {
			if identifying {
				d.problem(base+name, fmt.Errorf("missing: every PCI function has it"))
				dev.Incomplete = true
			}
			return 0
		}
		v, err := pci.ParseHex(s, bits)
		if err != nil {
			d.problem(base+name, err)
			if identifying {
				dev.Incomplete = true
			}
			return 0
		}
		return v
	}
	dev.Class = uint32(hexAttr("class", 32))
	dev.Vendor = uint16(hexAttr("vendor", 16))
	dev.DeviceID = uint16(hexAttr("device", 16))
	dev.SubVendor = uint16(hexAttr("subsystem_vendor", 16))
	dev.SubDevice = uint16(hexAttr("subsystem_device", 16))
	if s, ok := d.read(base + "numa_node"); ok {
		if v, err := pci.ParseInt(s); err != nil {
			d.problem(base+"numa_node", err)
		} else if v >= 0 {
			dev.NUMANode = v
		}
	}
	if s, ok := d.read(base + "local_cpulist"); ok {
		if c, err := pci.ParseCPUList(s); err != nil {
			d.problem(base+"local_cpulist", err)
		} else {
			dev.LocalCPUs = c
		}
	} else if s, ok := d.read(base + "local_cpus"); ok {
		if c, err := pci.ParseCPUMask(s); err != nil {
			d.problem(base+"local_cpus", err)
		} else {
			dev.LocalCPUs = c
		}
	}
	speed := func(name string) pci.LinkSpeed { return parseAttr(d, base+name, pci.ParseLinkSpeed) }
	width := func(name string) int { return parseAttr(d, base+name, pci.ParseLinkWidth) }
	dev.Link = topology.Link{CurSpeed: speed("current_link_speed"), MaxSpeed: speed("max_link_speed"), CurWidth: width("current_link_width"), MaxWidth: width("max_link_width")}
	if drv, err := d.root.LinkBase(base + "driver"); err == nil {
		dev.Driver = drv
	}
	if g, err := d.root.LinkBase(base + "iommu_group"); err == nil {
		if v, err := strconv.Atoi(g); err == nil {
			dev.IOMMUGroup = &v
		}
	}
	b, err := d.root.ReadFileLimit(base+"config", pci.ExtendedConfigLen)
	switch {
	case err != nil:
		if !errors.Is(err, fs.ErrNotExist) {
			dev.ConfigError = err.Error()
		} else {
			dev.ConfigError = "no config file"
		}
	default:
		c, err := pci.ParseConfig(b)
		if err != nil {
			dev.ConfigError = err.Error()
		}
		dev.Config = c
		if c != nil && !c.CapsReadable() {
			dev.ConfigError = fmt.Sprintf("only %d bytes of config space readable (needs root)", c.Len)
		}
	}
}

// portTypes sets every function's PCIe port type: from config space where
// it was readable, otherwise from the tree's shape (a bridge on a root bus
// is a root port; below a root or downstream port sits an upstream port;
// below an upstream port, downstream ports).
func (d *discoverer) portTypes() {
	for _, dev := range d.h.Devices {
		if dev.Config != nil && dev.Config.Express != nil {
			dev.PortType = dev.Config.Express.PortType
			dev.PortTypeFrom = "config"
		}
	}
	// Parents sort before children (lower bus numbers), but do not rely on
	// it: resolve recursively with a guard.
	var infer func(dev *topology.Device, depth int) pci.PortType
	infer = func(dev *topology.Device, depth int) pci.PortType {
		if dev.PortTypeFrom != "" || depth > 64 {
			return dev.PortType
		}
		dev.PortTypeFrom = "inferred"
		switch {
		case !dev.IsBridge():
			if dev.ParentDevice() == nil {
				dev.PortType = pci.PortRCIntegrated
			} else {
				dev.PortType = pci.PortEndpoint
			}
		case dev.ParentDevice() == nil:
			dev.PortType = pci.PortRootPort
		default:
			switch infer(dev.ParentDevice(), depth+1) {
			case pci.PortRootPort, pci.PortDownstream:
				dev.PortType = pci.PortUpstream
			case pci.PortUpstream:
				dev.PortType = pci.PortDownstream
			default:
				dev.PortType = pci.PortUnknown
			}
		}
		return dev.PortType
	}
	for _, dev := range d.h.Devices {
		infer(dev, 0)
	}
}

func (d *discoverer) gpus() {
	for _, dev := range d.h.Devices {
		switch {
		case dev.IsGPU():
			d.h.GPUs = append(d.h.GPUs, &topology.GPU{Index: len(d.h.GPUs), Address: dev.Address, Name: dev.Name, Dev: dev})
		case dev.IsNVSwitch():
			d.h.NVSwitches = append(d.h.NVSwitches, dev)
		}
	}
}

// addressInPath finds the last PCI address element of a resolved path.
func addressInPath(rel string) (string, bool) {
	parts := strings.Split(rel, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if a, err := pci.ParseAddress(parts[i]); err == nil && strings.Count(parts[i], ":") == 2 {
			return a.String(), true
		}
	}
	return "", false
}

func (d *discoverer) rdma() {
	const dir = "sys/class/infiniband"
	for _, name := range d.capped(dir, d.names(dir), MaxRDMADevices, "RDMA devices") {
		// A device's entry resolves to its own directory, named as it is;
		// anything else (self -> ., a loop) is no device.
		if rel, err := d.root.Resolve(dir + "/" + name); err != nil {
			d.problem(dir+"/"+name, err)
			continue
		} else if path.Base(rel) != name {
			d.problem(dir+"/"+name, fmt.Errorf("resolves to %s, not an RDMA device's directory", rel))
			continue
		}
		base := dir + "/" + name + "/"
		n := &topology.NIC{Name: name}
		if rel, err := d.root.Resolve(base + "device"); err == nil && d.root.Exists(rel) {
			if a, ok := addressInPath(rel); ok {
				n.Address = a
				n.Dev = d.byAddr[a]
			}
		}
		n.NodeGUID, _ = d.read(base + "node_guid")
		n.SysImageGUID, _ = d.read(base + "sys_image_guid")
		n.FWVersion, _ = d.read(base + "fw_ver")
		n.HCAType, _ = d.read(base + "hca_type")
		n.BoardID, _ = d.read(base + "board_id")
		n.NodeType, _ = d.read(base + "node_type")
		if n.Dev != nil {
			n.Driver = n.Dev.Driver
		}
		for _, p := range d.capped(base+"ports", d.names(base+"ports"), MaxPorts, "ports") {
			num, err := strconv.Atoi(p)
			if err != nil {
				continue
			}
			n.Ports = append(n.Ports, d.port(base+"ports/"+p+"/", num))
		}
		sort.Slice(n.Ports, func(i, j int) bool { return n.Ports[i].Number < n.Ports[j].Number })
		if n.Dev != nil {
			n.NetDevs, _ = d.root.Names(n.Dev.SysPath + "/net")
		}
		for i := range n.Ports {
			if n.Ports[i].NetDev == "" && len(n.NetDevs) == 1 {
				n.Ports[i].NetDev = n.NetDevs[0]
			}
			if nd := n.Ports[i].NetDev; nd != "" {
				if s, ok := d.read("sys/class/net/" + nd + "/mtu"); ok {
					n.Ports[i].MTU, _ = strconv.Atoi(s)
				}
			}
		}
		d.h.NICs = append(d.h.NICs, n)
	}
	sort.SliceStable(d.h.NICs, func(i, j int) bool { return topology.NaturalLess(d.h.NICs[i].Name, d.h.NICs[j].Name) })
	// NICn numbers count only devices on a PCI function, as the matrix does.
	i := 0
	for _, n := range d.h.NICs {
		n.Index = -1
		if n.Dev != nil {
			n.Index = i
			i++
		}
	}
}

// errorCounters are the port counters a commissioning run reports.
var errorCounters = []string{
	"symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors",
	"port_rcv_remote_physical_errors", "port_xmit_discards", "local_link_integrity_errors",
	"excessive_buffer_overrun_errors", "port_rcv_constraint_errors", "port_xmit_constraint_errors",
}

func (d *discoverer) port(base string, num int) topology.Port {
	p := topology.Port{Number: num}
	// "4: ACTIVE" -> "ACTIVE"; "5: LinkUp" -> "LinkUp"
	after := func(s string) string {
		if _, v, ok := strings.Cut(s, ":"); ok {
			return strings.TrimSpace(v)
		}
		return s
	}
	if s, ok := d.read(base + "state"); ok {
		p.State = after(s)
	}
	if s, ok := d.read(base + "phys_state"); ok {
		p.PhysState = after(s)
	}
	if s, ok := d.read(base + "rate"); ok {
		p.RateText = s
		p.RateGbps = ParseIBRate(s)
	}
	p.LinkLayer, _ = d.read(base + "link_layer")
	p.LID, _ = d.read(base + "lid")
	p.SMLID, _ = d.read(base + "sm_lid")
	if nd, ok := d.read(base + "gid_attrs/ndevs/0"); ok && nd != "" {
		p.NetDev = nd
	}
	if p.LinkLayer == "Ethernet" {
		p.GIDs, p.GIDsRead = d.gidTable(base, p.NetDev)
	}
	for _, c := range errorCounters {
		if s, ok := d.read(base + "counters/" + c); ok {
			if v, err := strconv.ParseUint(s, 10, 64); err == nil {
				if p.Counters == nil {
					p.Counters = map[string]uint64{}
				}
				p.Counters[c] = v
			}
		}
	}
	return p
}

// Bounds on the GID table scan of a RoCE port: the kernel's table has up
// to 255 entries (mlx5), filled from the bottom (the link-local pair, then
// each IP address's RoCE v1/v2 pair; a freed entry is reused first), so
// the scan stops after MaxGIDZeroRun zero entries in a row or at MaxGIDs.
const (
	MaxGIDs       = 256
	MaxGIDZeroRun = 8
)

const zeroGID = "0000:0000:0000:0000:0000:0000:0000:0000"

// gidTable reads a RoCE port's GID table (ports/P/gids/N) from index 0 up,
// and the type and netdev of each non-zero entry (gid_attrs/types/N,
// gid_attrs/ndevs/N). It stops at the first index that does not exist
// (the end of the table, or a snapshot taken before GIDs were read) or
// after MaxGIDZeroRun zero entries in a row. An entry's type or netdev
// that cannot be read is left empty without a problem: the kernel answers
// EINVAL for an entry that is not populated (or, in a container, not
// mapped), as NCCL also tolerates. read is the number of entries read.
// ndev0 is gid_attrs/ndevs/0, already read for the port.
func (d *discoverer) gidTable(base, ndev0 string) (gids []topology.GID, read int) {
	zeros := 0
	for i := 0; i < MaxGIDs && zeros < MaxGIDZeroRun; i++ {
		n := strconv.Itoa(i)
		s, err := d.root.ReadString(base + "gids/" + n)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && i == 0 {
				d.problem(base+"gids/"+n, err)
			}
			break
		}
		read++
		s = strings.TrimSpace(s)
		if s == zeroGID {
			zeros++
			continue
		}
		zeros = 0
		g := topology.GID{Index: i, GID: s}
		if t, err := d.root.ReadString(base + "gid_attrs/types/" + n); err == nil {
			g.Type = strings.TrimSpace(t)
		}
		if i == 0 {
			g.NetDev = ndev0
		} else if nd, err := d.root.ReadString(base + "gid_attrs/ndevs/" + n); err == nil {
			g.NetDev = strings.TrimSpace(nd)
		}
		gids = append(gids, g)
	}
	return gids, read
}

// ParseIBRate reads the kernel's port rate, "400 Gb/sec (4X NDR)", in Gb/s.
func ParseIBRate(s string) float64 {
	f := strings.Fields(s)
	if len(f) < 2 || !strings.HasPrefix(f[1], "Gb/s") {
		return 0
	}
	v, ok := textio.ParseFloat(f[0])
	if !ok || v < 0 {
		return 0
	}
	return v
}

func (d *discoverer) netdevs() {
	const dir = "sys/class/net"
	names := d.capped(dir, d.names(dir), MaxNetDevs, "network interfaces")
	rdmaOf := map[string]string{}
	for _, n := range d.h.NICs {
		for _, nd := range n.NetDevs {
			rdmaOf[nd] = n.Name
		}
		for _, p := range n.Ports {
			if p.NetDev != "" {
				rdmaOf[p.NetDev] = n.Name
			}
		}
	}
	for _, name := range names {
		rel, err := d.root.Resolve(dir + "/" + name + "/device")
		if err != nil || !d.root.Exists(rel) {
			continue // virtual interface
		}
		a, ok := addressInPath(rel)
		if !ok {
			continue
		}
		nd := &topology.NetDev{Name: name, Address: a, RDMA: rdmaOf[name]}
		if dev := d.byAddr[a]; dev != nil {
			nd.Driver = dev.Driver
		}
		nd.OperState, _ = d.read(dir + "/" + name + "/operstate")
		if s, ok := d.read(dir + "/" + name + "/speed"); ok {
			nd.SpeedMbps, _ = strconv.Atoi(s)
		}
		if s, ok := d.read(dir + "/" + name + "/mtu"); ok {
			nd.MTU, _ = strconv.Atoi(s)
		}
		d.h.NetDevs = append(d.h.NetDevs, nd)
	}
}

func (d *discoverer) attachFacts(f *gpu.Facts) {
	for _, g := range d.h.GPUs {
		gf := f.GPUByBusID(g.Address)
		if gf == nil {
			continue
		}
		g.Facts = gf
		if gf.Name != "" {
			g.Name = gf.Name
		}
		g.UUID = gf.UUID
		if gf.NVLinkQueried {
			g.NVLinks = gf.NVLinks
			g.NVLinkKnown = true
		}
	}
	for _, gf := range f.GPUs {
		if d.h.GPUByAddress(gf.BusID) == nil && gf.BusID != "" {
			d.h.Problems = append(d.h.Problems, topology.Problem{Path: f.Source, Message: fmt.Sprintf("driver reports GPU %d at %s, which sysfs does not show", gf.Index, gf.BusID)})
		}
	}
}
