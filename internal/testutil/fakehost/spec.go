// Package fakehost builds realistic host trees (sysfs, procfs, captured
// command outputs) from a short text description, so tests exercise the
// real discovery and check code on machines we do not have: an 8-GPU HGX
// with a NIC per GPU, an AMD EPYC PCIe server, a host with ACS enabled.
//
// The description is line oriented. Indentation under a hostbridge line
// gives the PCI tree:
//
//	numa 0 0-63,128-191
//	hostbridge pci0000:15 numa=0
//	  0000:15:01.0 rootport gen=5 width=16
//	    0000:16:00.0 usp gen=5 width=16
//	      0000:17:00.0 dsp
//	        0000:18:00.0 gpu id=10de:2335
//	rdma mlx5_0 0000:1a:00.0 rate=400 layer=InfiniBand
//	nvml-gpu 0000:18:00.0 name="NVIDIA H200" nvswitch=18
//
// See Parse for every directive. Generated files never carry ':' in the
// repository: the tree exists only under a test's temporary directory.
package fakehost

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
)

// Spec is a parsed host description.
type Spec struct {
	Name       string
	Hostname   string
	Kernel     string
	Privileged bool // config space fully readable (root)
	NUMA       []NUMA
	Bridges    []*HostBridge
	RDMA       []*RDMA
	NetDevs    []*NetDev
	Modules    []string
	Files      map[string]string // extra files, root-relative
	NVML       *NVMLSpec
	devs       map[string]*Dev
}

// NUMA is a NUMA node.
type NUMA struct {
	ID   int
	CPUs string
}

// HostBridge is a PCI root bus (pciDDDD:BB).
type HostBridge struct {
	Name    string
	NUMA    int
	Devices []*Dev
}

// Dev is a PCI function.
type Dev struct {
	Addr      string
	Kind      string
	Class     uint32
	Vendor    uint16
	Device    uint16
	SubVendor uint16
	SubDevice uint16
	Port      pci.PortType // PortUnknown: no PCI Express capability
	MaxGen    int
	MaxWidth  int
	CurGen    int
	CurWidth  int
	NUMA      int
	CPUs      string
	Driver    string
	ACS       *uint16 // ACS control; nil: no ACS capability
	ACSCap    uint16
	MPS       int
	MRRS      int
	IOMMU     *int
	Config    string // "", "none", "short"
	// AER are the AER statistics files (aer=yes, aer.cor.NAME=N,
	// aer.nonfatal.NAME=N, aer.fatal.NAME=N): file ("aer_dev_correctable")
	// -> field -> count; nil: the device has no AER files.
	AER      map[string]map[string]uint64
	Children []*Dev
	bridge   *HostBridge
	parent   *Dev
	line     int
}

// RDMA is an RDMA device in /sys/class/infiniband.
type RDMA struct {
	Name   string
	Addr   string // "" for a software device
	Ports  []RDMAPort
	FW     string
	Board  string
	HCA    string
	GUID   string
	NetDev string
	NetMTU int
	// IP is the IPv4 address on the netdev (ip=A.B.C.D): an Ethernet port
	// then gets the GID table the kernel builds for it (see writeRDMA).
	IP   netip.Addr
	line int
}

// RDMAPort is one port.
type RDMAPort struct {
	State     string // ACTIVE, DOWN
	Phys      string // LinkUp, Disabled
	Rate      string // "400 Gb/sec (4X NDR)"
	LinkLayer string
	Counters  map[string]uint64
	// HW are the port's hw_counters (hw=yes, hw.NAME=N); nil: the port has
	// no hw_counters directory.
	HW map[string]uint64
}

// NetDev is a PCI-backed network interface.
type NetDev struct {
	Name  string
	Addr  string
	Speed int
	MTU   int
	State string
}

// NVMLSpec describes the driver facts (written as commands/nvml.json).
type NVMLSpec struct {
	Driver     string
	CUDA       string
	GPUs       []*NVMLGPU
	P2P        map[[2]string]string // "read=..,write=.." overrides per pair
	P2PDefault string
}

// NVMLGPU is one GPU's driver facts.
type NVMLGPU struct {
	Addr  string
	Attrs map[string]string
	line  int
}

// Load reads a description file.
func Load(path string) (*Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(path, f)
}

type specError struct {
	name string
	line int
	msg  string
}

func (e *specError) Error() string { return fmt.Sprintf("%s:%d: %s", e.name, e.line, e.msg) }

// Parse reads a host description. Directives:
//
//	hostname NAME | kernel RELEASE | privileged yes|no
//	numa ID CPULIST
//	hostbridge pciDDDD:BB [numa=N]
//	  ADDR KIND [key=value...]   (indented: the PCI tree; KIND is rootport,
//	                              usp, dsp, bridge, gpu, nvswitch, nic, eth,
//	                              nvme, audio, other; aer=yes writes the AER
//	                              statistics files at 0, aer.cor.NAME=N,
//	                              aer.nonfatal.NAME=N, aer.fatal.NAME=N set a
//	                              field and write them too)
//	rdma NAME [ADDR] [ports=N rate=GBPS layer=.. state=.. phys=.. fw=..
//	               board=.. hca=.. netdev=IF mtu=N ip=A.B.C.D COUNTER=N
//	               hw=yes hw.COUNTER=N]
//	                             (COUNTER: a file of ports/N/counters/, every
//	                             port; hw=yes writes ports/N/hw_counters/ with
//	                             the RoCE counters at 0, hw.COUNTER=N sets one)
//	netdev NAME ADDR [speed=MBPS mtu=N state=up]
//	module NAME
//	file PATH "go-quoted content"   |   file PATH <<END ... END
//	nvml [driver=V cuda=V p2p=OK]
//	nvml-gpu ADDR [key=value...]
//	nvml-p2p ADDR ADDR read=.. write=.. nvlink=..
func Parse(name string, r io.Reader) (*Spec, error) {
	s := &Spec{Name: name, Privileged: true, Files: map[string]string{}, devs: map[string]*Dev{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	lineNo := 0
	var cur *HostBridge
	type frame struct {
		indent int
		dev    *Dev
	}
	var stack []frame
	fail := func(format string, a ...any) error {
		return &specError{name, lineNo, fmt.Sprintf(format, a...)}
	}
	for sc.Scan() {
		lineNo++
		raw := sc.Text()
		line := raw
		if i := strings.Index(line, "#"); i >= 0 && !strings.Contains(line[:i], "\"") {
			line = line[:i]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " \t"))
		fields, err := splitFields(strings.TrimSpace(line))
		if err != nil {
			return nil, fail("%v", err)
		}
		if indent > 0 {
			if cur == nil {
				return nil, fail("indented device line outside a hostbridge block")
			}
			d, err := s.parseDev(fields, cur)
			if err != nil {
				return nil, fail("%v", err)
			}
			d.line = lineNo
			for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 {
				cur.Devices = append(cur.Devices, d)
			} else {
				p := stack[len(stack)-1].dev
				d.parent = p
				p.Children = append(p.Children, d)
			}
			stack = append(stack, frame{indent, d})
			continue
		}
		cur, stack = nil, nil
		kv := keyvals(fields[1:])
		switch fields[0] {
		case "hostname":
			s.Hostname = arg(fields, 1)
		case "kernel":
			s.Kernel = arg(fields, 1)
		case "privileged":
			s.Privileged = arg(fields, 1) != "no"
		case "numa":
			id, err := strconv.Atoi(arg(fields, 1))
			if err != nil {
				return nil, fail("numa: bad id %q", arg(fields, 1))
			}
			if _, err := pci.ParseCPUList(arg(fields, 2)); err != nil {
				return nil, fail("numa: %v", err)
			}
			s.NUMA = append(s.NUMA, NUMA{ID: id, CPUs: arg(fields, 2)})
		case "hostbridge":
			hb := &HostBridge{Name: arg(fields, 1), NUMA: -1}
			if v, ok := kv["numa"]; ok {
				hb.NUMA, err = strconv.Atoi(v)
				if err != nil {
					return nil, fail("hostbridge: bad numa %q", v)
				}
			}
			s.Bridges = append(s.Bridges, hb)
			cur = hb
		case "rdma":
			rd, err := parseRDMA(fields, kv)
			if err != nil {
				return nil, fail("%v", err)
			}
			rd.line = lineNo
			s.RDMA = append(s.RDMA, rd)
		case "netdev":
			nd := &NetDev{Name: arg(fields, 1), Addr: arg(fields, 2), State: "up", MTU: 1500}
			nd.Speed, _ = strconv.Atoi(kv["speed"])
			if v, ok := kv["mtu"]; ok {
				nd.MTU, _ = strconv.Atoi(v)
			}
			if v, ok := kv["state"]; ok {
				nd.State = v
			}
			s.NetDevs = append(s.NetDevs, nd)
		case "module":
			s.Modules = append(s.Modules, fields[1:]...)
		case "file", "command":
			path := arg(fields, 1)
			if fields[0] == "command" {
				path = "commands/" + path
			}
			content := arg(fields, 2)
			if strings.HasPrefix(content, "<<") {
				end := strings.TrimPrefix(content, "<<")
				var b strings.Builder
				closed := false
				for sc.Scan() {
					lineNo++
					if strings.TrimSpace(sc.Text()) == end {
						closed = true
						break
					}
					b.WriteString(sc.Text() + "\n")
				}
				if !closed {
					return nil, fail("file %s: heredoc not closed by %s", path, end)
				}
				content = b.String()
			}
			s.Files[path] = content
		case "nvml":
			n := s.nvml()
			n.Driver, n.CUDA, n.P2PDefault = kv["driver"], kv["cuda"], kv["p2p"]
		case "nvml-gpu":
			s.nvml().GPUs = append(s.nvml().GPUs, &NVMLGPU{Addr: arg(fields, 1), Attrs: kv, line: lineNo})
		case "nvml-p2p":
			s.nvml().P2P[[2]string{arg(fields, 1), arg(fields, 2)}] = strings.Join(fields[3:], " ")
		default:
			return nil, fail("unknown directive %q", fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fail("%v", err)
	}
	return s, nil
}

// nvml is the driver facts section, started by the first nvml* directive.
func (s *Spec) nvml() *NVMLSpec {
	if s.NVML == nil {
		s.NVML = &NVMLSpec{P2P: map[[2]string]string{}}
	}
	return s.NVML
}

func arg(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

// splitFields splits on white space, keeping "quoted strings" whole.
func splitFields(s string) ([]string, error) {
	var out []string
	for s != "" {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			break
		}
		i := 0
		for i < len(s) && s[i] != ' ' && s[i] != '\t' {
			if s[i] == '"' {
				j := i + 1
				for j < len(s) && s[j] != '"' {
					if s[j] == '\\' {
						j++
					}
					j++
				}
				if j >= len(s) {
					return nil, fmt.Errorf("unterminated quote in %q", s)
				}
				i = j
			}
			i++
		}
		tok := s[:i]
		if strings.Contains(tok, "\"") {
			k := strings.Index(tok, "\"")
			u, err := strconv.Unquote(tok[k:])
			if err != nil {
				return nil, fmt.Errorf("bad quoted string %s", tok[k:])
			}
			tok = tok[:k] + u
		}
		out = append(out, tok)
		s = s[i:]
	}
	return out, nil
}

func keyvals(f []string) map[string]string {
	kv := map[string]string{}
	for _, x := range f {
		if k, v, ok := strings.Cut(x, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

var kindDefaults = map[string]struct {
	class  uint32
	port   pci.PortType
	driver string
	vendor uint16
	device uint16
}{
	"rootport": {0x060400, pci.PortRootPort, "pcieport", 0x8086, 0x352a},
	"usp":      {0x060400, pci.PortUpstream, "pcieport", 0x1000, 0xc030},
	"dsp":      {0x060400, pci.PortDownstream, "pcieport", 0x1000, 0xc030},
	"bridge":   {0x060400, pci.PortUnknown, "", 0x1b36, 0x0001},
	"gpu":      {0x030200, pci.PortEndpoint, "nvidia", 0x10de, 0x2330},
	"nvswitch": {0x068000, pci.PortEndpoint, "nvidia-nvswitch", 0x10de, 0x22a3},
	"nic":      {0x020700, pci.PortEndpoint, "mlx5_core", 0x15b3, 0x1021},
	"eth":      {0x020000, pci.PortEndpoint, "mlx5_core", 0x15b3, 0x101d},
	"nvme":     {0x010802, pci.PortEndpoint, "nvme", 0x144d, 0xa80a},
	"audio":    {0x040300, pci.PortEndpoint, "snd_hda_intel", 0x10de, 0x22ba},
	"other":    {0x088000, pci.PortUnknown, "", 0x8086, 0x0b00},
	"host":     {0x060000, pci.PortRCIntegrated, "", 0x8086, 0x09a2},
}

func (s *Spec) parseDev(f []string, hb *HostBridge) (*Dev, error) {
	if len(f) < 2 {
		return nil, fmt.Errorf("device line needs ADDRESS KIND")
	}
	a, err := pci.ParseAddress(f[0])
	if err != nil {
		return nil, err
	}
	if s.devs[a.String()] != nil {
		return nil, fmt.Errorf("device %s defined twice", a)
	}
	def, ok := kindDefaults[f[1]]
	if !ok {
		return nil, fmt.Errorf("unknown device kind %q", f[1])
	}
	d := &Dev{Addr: a.String(), Kind: f[1], Class: def.class, Port: def.port, Driver: def.driver, Vendor: def.vendor, Device: def.device,
		MaxGen: 5, MaxWidth: 16, NUMA: hb.NUMA, MPS: 256, MRRS: 512, bridge: hb}
	if f[1] == "bridge" || f[1] == "other" || f[1] == "host" {
		d.MaxGen, d.MaxWidth = 0, 0
	}
	if d.Class>>8 == 0x0604 && d.Port != pci.PortUnknown {
		zero := uint16(0)
		d.ACS, d.ACSCap = &zero, 0x5f
	}
	kv := keyvals(f[2:])
	for k, v := range kv {
		var err error
		switch k {
		case "id", "subsys":
			vv, dd, ok := strings.Cut(v, ":")
			x, e1 := strconv.ParseUint(vv, 16, 16)
			y, e2 := strconv.ParseUint(dd, 16, 16)
			if !ok || e1 != nil || e2 != nil {
				return nil, fmt.Errorf("%s=%q: want VVVV:DDDD", k, v)
			}
			if k == "id" {
				d.Vendor, d.Device = uint16(x), uint16(y)
			} else {
				d.SubVendor, d.SubDevice = uint16(x), uint16(y)
			}
		case "class":
			var c uint64
			c, err = pci.ParseHex(v, 32)
			d.Class = uint32(c)
		case "gen":
			d.MaxGen, err = strconv.Atoi(v)
		case "width":
			d.MaxWidth, err = strconv.Atoi(v)
		case "curgen":
			d.CurGen, err = strconv.Atoi(v)
		case "curwidth":
			d.CurWidth, err = strconv.Atoi(v)
		case "numa":
			d.NUMA, err = strconv.Atoi(v)
		case "cpus":
			d.CPUs = v
		case "driver":
			d.Driver = v
			if v == "none" {
				d.Driver = ""
			}
		case "acs":
			if v == "none" {
				d.ACS = nil
				break
			}
			var c uint64
			c, err = pci.ParseHex(v, 16)
			cc := uint16(c)
			d.ACS, d.ACSCap = &cc, 0x5f
		case "mps":
			d.MPS, err = strconv.Atoi(v)
		case "mrrs":
			d.MRRS, err = strconv.Atoi(v)
		case "iommu":
			var g int
			g, err = strconv.Atoi(v)
			d.IOMMU = &g
		case "config":
			d.Config = v
		case "port":
			var p pci.PortType
			_ = p.UnmarshalText([]byte(v))
			d.Port = p
		case "aer":
			if v != "yes" {
				return nil, fmt.Errorf("aer=%q: want aer=yes", v)
			}
			d.aer()
		default:
			if file, field, ok := aerKey(k); ok {
				if !slices.Contains(AERFields[file], field) {
					return nil, fmt.Errorf("%s: no such field in %s (want one of %s)", k, file, strings.Join(AERFields[file], ", "))
				}
				var n uint64
				n, err = strconv.ParseUint(v, 10, 64)
				d.aer()[file][field] = n
				break
			}
			return nil, fmt.Errorf("unknown device attribute %q", k)
		}
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %v", k, v, err)
		}
	}
	if d.CurGen == 0 {
		d.CurGen = d.MaxGen
	}
	if d.CurWidth == 0 {
		d.CurWidth = d.MaxWidth
	}
	s.devs[d.Addr] = d
	return d, nil
}

var ibRates = map[string]string{
	"400": "400 Gb/sec (4X NDR)", "200": "200 Gb/sec (4X HDR)", "100": "100 Gb/sec (4X EDR)",
	"800": "800 Gb/sec (4X XDR)", "50": "50 Gb/sec (2X HDR)", "25": "25 Gb/sec (1X EDR)", "10": "10 Gb/sec (4X SDR)",
}

// counterNames are the files of ports/N/counters/ a description may set.
var counterNames = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range counters.PMACounters {
		m[c] = true
	}
	return m
}()

// AERFields are the fields of each AER statistics file, as current kernels
// print them (drivers/pci/pcie/aer.c), before the TOTAL_ line.
var AERFields = map[string][]string{
	counters.GroupAERCor: {"RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"},
	counters.GroupAERNonfat: {"Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF",
		"MalfTLP", "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr", "PoisonTLPBlocked"},
}

func init() { AERFields[counters.GroupAERFatal] = AERFields[counters.GroupAERNonfat] }

// aerKey reads a device attribute aer.cor.NAME, aer.nonfatal.NAME or
// aer.fatal.NAME.
func aerKey(k string) (file, field string, ok bool) {
	rest, ok := strings.CutPrefix(k, "aer.")
	if !ok {
		return "", "", false
	}
	kind, field, ok := strings.Cut(rest, ".")
	if !ok || field == "" {
		return "", "", false
	}
	file = map[string]string{"cor": counters.GroupAERCor, "nonfatal": counters.GroupAERNonfat, "fatal": counters.GroupAERFatal}[kind]
	return file, field, file != ""
}

// aer is the device's AER files, made (all fields 0) on first use.
func (d *Dev) aer() map[string]map[string]uint64 {
	if d.AER == nil {
		d.AER = map[string]map[string]uint64{}
		for _, f := range counters.AERFiles {
			d.AER[f] = map[string]uint64{}
		}
	}
	return d.AER
}

func parseRDMA(f []string, kv map[string]string) (*RDMA, error) {
	rd := &RDMA{Name: arg(f, 1), FW: "28.39.1002", HCA: "MT4129", Board: "MT_0000000838"}
	if rd.Name == "" {
		return nil, fmt.Errorf("rdma: needs a name")
	}
	if a := arg(f, 2); a != "" && !strings.Contains(a, "=") {
		pa, err := pci.ParseAddress(a)
		if err != nil {
			return nil, err
		}
		rd.Addr = pa.String()
	}
	n := 1
	if v, ok := kv["ports"]; ok {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 8 {
			return nil, fmt.Errorf("rdma: bad ports=%q", v)
		}
	}
	rate := "400"
	if v, ok := kv["rate"]; ok {
		rate = v
	}
	rt, ok := ibRates[rate]
	if !ok {
		rt = rate + " Gb/sec"
	}
	layer := "InfiniBand"
	if v, ok := kv["layer"]; ok {
		layer = v
	}
	for i := 0; i < n; i++ {
		p := RDMAPort{State: "ACTIVE", Phys: "LinkUp", Rate: rt, LinkLayer: layer, Counters: map[string]uint64{}}
		if v, ok := kv["state"]; ok {
			p.State = v
		}
		if v, ok := kv["phys"]; ok {
			p.Phys = v
		}
		for k, v := range kv {
			hw, isHW := strings.CutPrefix(k, "hw.")
			if !counterNames[k] && !isHW {
				continue
			}
			c, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("rdma: counter %s=%q", k, v)
			}
			if isHW {
				if p.HW == nil {
					p.HW = map[string]uint64{}
				}
				p.HW[hw] = c
				continue
			}
			p.Counters[k] = c
		}
		if v, ok := kv["hw"]; ok {
			if v != "yes" {
				return nil, fmt.Errorf("rdma: hw=%q: want hw=yes", v)
			}
			if p.HW == nil {
				p.HW = map[string]uint64{}
			}
		}
		rd.Ports = append(rd.Ports, p)
	}
	for k, dst := range map[string]*string{"fw": &rd.FW, "board": &rd.Board, "hca": &rd.HCA, "guid": &rd.GUID, "netdev": &rd.NetDev} {
		if v, ok := kv[k]; ok {
			*dst = v
		}
	}
	if v, ok := kv["ip"]; ok {
		a, err := netip.ParseAddr(v)
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf("rdma: ip=%q: want an IPv4 address", v)
		}
		rd.IP = a
	}
	rd.NetMTU = 4096
	if v, ok := kv["mtu"]; ok {
		rd.NetMTU, _ = strconv.Atoi(v)
	}
	return rd, nil
}
