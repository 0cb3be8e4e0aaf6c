package nccltopo

import (
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Bounds on what one file may make this reader hold.
const (
	// MaxBytes is the most of a file that is read (a real dump of a large
	// node is tens of kilobytes).
	MaxBytes    = 64 << 20
	maxElements = 1 << 20
	maxDepth    = 256
	maxUnknown  = 32
)

type frame struct {
	name string
	obj  any // *CPU, *PCI, *GPUElem, *NICElem, *Graph, *Channel, or nil
}

type countingReader struct {
	r    io.Reader
	n    int64
	lim  int64
	over bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= c.lim {
		c.over = true
		return 0, io.EOF
	}
	if int64(len(p)) > c.lim-c.n {
		p = p[:c.lim-c.n]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// attrs maps normalised attribute names (lower case, without '_' and '-')
// to values, keeping the names as written for the ones not interpreted.
type attrs struct {
	m   map[string]string
	raw map[string]string
}

func newAttrs(as []xml.Attr) attrs {
	a := attrs{m: map[string]string{}, raw: map[string]string{}}
	for _, x := range as {
		k := strings.ToLower(x.Name.Local)
		if x.Name.Space != "" {
			k = strings.ToLower(x.Name.Space) + k
		}
		n := strings.NewReplacer("_", "", "-", "").Replace(k)
		v := strings.TrimSpace(x.Value)
		a.m[n] = v
		a.raw[n] = x.Name.Local
	}
	return a
}

func (a attrs) str(k string) string {
	v := a.m[k]
	delete(a.raw, k)
	return v
}

func (a attrs) intp(k string) *int {
	v, ok := a.m[k]
	delete(a.raw, k)
	if !ok {
		return nil
	}
	n, err := parseInt(v)
	if err != nil {
		return nil
	}
	return &n
}

func (a attrs) boolp(k string) *bool {
	v, ok := a.m[k]
	delete(a.raw, k)
	if !ok {
		return nil
	}
	var b bool
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		b = true
	case "0", "false", "no", "off":
	default:
		return nil
	}
	return &b
}

func (a attrs) float(k string) float64 {
	f, _ := leadingFloat(a.str(k))
	return f
}

// extra returns the attributes not interpreted, by their written names.
func (a attrs) extra() map[string]string {
	if len(a.raw) == 0 {
		return nil
	}
	out := map[string]string{}
	for n, name := range a.raw {
		out[name] = a.m[n]
	}
	return out
}

func parseInt(v string) (int, error) {
	v = strings.TrimSpace(v)
	base := 10
	if strings.HasPrefix(v, "0x") || strings.HasPrefix(v, "0X") {
		v, base = v[2:], 16
	}
	n, err := strconv.ParseInt(v, base, 64)
	if err != nil || n > 1<<40 || n < -(1<<40) {
		return 0, fmt.Errorf("bad number")
	}
	return int(n), nil
}

// leadingFloat reads the number that starts "16.0 GT/s PCIe" or "16 GT/s".
func leadingFloat(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(s[:i], 64)
	return f, err == nil
}

func parse(name string, r io.Reader) (*Report, error) {
	cr := &countingReader{r: r, lim: MaxBytes}
	br := bufio.NewReaderSize(cr, 64<<10)
	head, _ := br.Peek(64 << 10)
	kind := rootKind(textio.CleanHead(head))
	paste := textio.DetectPaste(head, 0)
	d := xml.NewDecoder(bufio.NewReaderSize(textio.NewPasteReader(paste, br), 64<<10))
	d.Strict = false
	d.AutoClose = nil
	d.Entity = xml.HTMLEntity
	d.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }

	rep := &Report{File: name}
	var stack []frame
	elements := 0
	unknown := map[string]bool{}
	line := func() int { l, _ := d.InputPos(); return l }
	rootDone := false

	stop := func(msg string) {
		rep.Truncated = true
		for _, f := range stack {
			if f.name == "gpu" {
				rep.gpuOpen = true
			}
		}
		if rep.Problem == "" {
			rep.Problem = fmt.Sprintf("%s:%d: %s", name, line(), msg)
		}
	}

	for !rootDone {
		tok, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				if cr.over {
					if rep.Kind == "" {
						return nil, textio.Errorf(name, line(), "no <system> or <graphs> element in the first %d MiB", MaxBytes>>20)
					}
					stop(fmt.Sprintf("file larger than %d MiB: read only the first %d MiB", MaxBytes>>20, MaxBytes>>20))
					break
				}
				if rep.Kind == "" {
					if cr.n == 0 {
						return nil, textio.Errorf(name, 1, "empty input")
					}
					return nil, textio.Errorf(name, line(), "no <system> or <graphs> element: not an NCCL topology or graph file")
				}
				if len(stack) > 0 {
					stop(fmt.Sprintf("input ends with %s not closed: the file is truncated", openList(stack)))
				}
				break
			}
			var se *xml.SyntaxError
			msg := err.Error()
			if errors.As(err, &se) {
				msg = se.Msg
			}
			if rep.Kind == "" {
				if cr.n == 0 {
					return nil, textio.Errorf(name, 1, "empty input")
				}
				if kind == "" {
					return nil, textio.Errorf(name, line(), "not XML: %s", msg)
				}
				// cut or broken inside the root tag itself
				rep.Kind = kind
				if kind == "system" {
					rep.System = &System{}
				}
				stop(fmt.Sprintf("input ends or breaks inside the <%s> tag (%s): nothing but the root was read", kind, msg))
				break
			}
			if strings.Contains(msg, "unexpected EOF") {
				if len(stack) > 0 {
					stop(fmt.Sprintf("input ends with %s not closed: the file is truncated", openList(stack)))
				} else {
					stop("input ends inside a tag: the file is truncated")
				}
			} else {
				stop("XML error, reading stopped: " + msg)
			}
			break
		}
		switch t := tok.(type) {
		case xml.Comment:
			rep.Comments++
		case xml.StartElement:
			elements++
			if elements > maxElements {
				stop(fmt.Sprintf("more than %d elements: reading stopped", maxElements))
				rootDone = true
				break
			}
			if len(stack) >= maxDepth {
				stop(fmt.Sprintf("elements nested deeper than %d: reading stopped", maxDepth))
				rootDone = true
				break
			}
			el := strings.ToLower(t.Name.Local)
			a := newAttrs(t.Attr)
			ln := line()
			var parent frame
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			obj := any(nil)
			if rep.Kind == "" {
				switch el {
				case "system":
					rep.Kind = "system"
					rep.Version = a.str("version")
					rep.System = &System{}
					obj = rep.System
				case "graphs":
					rep.Kind = "graphs"
					rep.Version = a.str("version")
					obj = rep
				case "graph":
					rep.Kind = "graphs"
					g := newGraph(a, ln)
					rep.Graphs = append(rep.Graphs, g)
					obj = &rep.Graphs[len(rep.Graphs)-1]
				default:
					return nil, textio.Errorf(name, ln, "root element <%s> is not <system> or <graphs>: not an NCCL topology or graph file", t.Name.Local)
				}
				stack = append(stack, frame{el, obj})
				continue
			}
			obj = child(rep, parent, el, a, ln)
			if obj == nil && len(unknown) < maxUnknown && !unknown[el] {
				unknown[el] = true
				rep.UnknownElements = append(rep.UnknownElements, t.Name.Local)
			}
			stack = append(stack, frame{el, obj})
		case xml.EndElement:
			el := strings.ToLower(t.Name.Local)
			// pop to the matching element (the decoder is lenient)
			for i := len(stack) - 1; i >= 0; i-- {
				if stack[i].name == el {
					stack = stack[:i]
					break
				}
			}
			if len(stack) == 0 && rep.Kind != "" {
				rootDone = true
			}
		}
	}
	rep.Lines = line()
	rep.Paste = paste.Note()
	return rep, nil
}

func openList(stack []frame) string {
	var open []string
	for _, f := range stack {
		open = append(open, "<"+f.name+">")
	}
	return strings.Join(open, " ")
}

// child interprets element el under parent; it returns nil for elements it
// does not know.
func child(rep *Report, parent frame, el string, a attrs, ln int) any {
	switch p := parent.obj.(type) {
	case *System:
		if el == "cpu" {
			c := &CPU{NUMAID: a.intp("numaid"), Affinity: a.str("affinity"), Arch: a.str("arch"),
				Vendor: a.str("vendor"), FamilyID: a.intp("familyid"), ModelID: a.intp("modelid"),
				HostHash: a.str("hosthash"), Line: ln}
			c.Extra = a.extra()
			p.CPUs = append(p.CPUs, c)
			return c
		}
	case *CPU:
		switch el {
		case "pci":
			x := newPCI(a, ln)
			p.PCI = append(p.PCI, x)
			return x
		case "nic":
			n := &NICElem{Line: ln}
			p.NICs = append(p.NICs, n)
			return n
		}
	case *PCI:
		switch el {
		case "pci":
			x := newPCI(a, ln)
			p.Children = append(p.Children, x)
			return x
		case "gpu":
			if p.GPU == nil {
				p.GPU = &GPUElem{Dev: a.intp("dev"), SM: a.intp("sm"), Rank: a.intp("rank"), GDR: a.boolp("gdr"), Line: ln}
				p.GPU.Extra = a.extra()
				return p.GPU
			}
		case "nic":
			if p.NIC == nil {
				p.NIC = &NICElem{Line: ln}
				return p.NIC
			}
		}
	case *GPUElem:
		if el == "nvlink" {
			p.NVLinks = append(p.NVLinks, NVLink{Target: strings.ToLower(a.str("target")), Count: a.intp("count"),
				TClass: strings.ToLower(a.str("tclass")), Line: ln})
			return &p.NVLinks[len(p.NVLinks)-1]
		}
	case *NICElem:
		if el == "net" {
			n := Net{Name: a.str("name"), Dev: a.intp("dev"), Speed: a.intp("speed"), Port: a.intp("port"),
				Latency: a.str("latency"), GUID: a.str("guid"), MaxConn: a.intp("maxconn"), GDR: a.boolp("gdr"),
				Coll: a.boolp("coll"), Line: ln}
			n.RDMA = isRDMANet(n)
			n.Extra = a.extra()
			p.Nets = append(p.Nets, n)
			return &p.Nets[len(p.Nets)-1]
		}
	case *Report:
		if el == "graph" {
			p.Graphs = append(p.Graphs, newGraph(a, ln))
			return &p.Graphs[len(p.Graphs)-1]
		}
	case *Graph:
		if el == "channel" {
			p.Channels = append(p.Channels, Channel{Line: ln, Devices: []ChannelDev{}})
			return &p.Channels[len(p.Channels)-1]
		}
	case *Channel:
		if el == "gpu" || el == "net" {
			if d := a.intp("dev"); d != nil {
				p.Devices = append(p.Devices, ChannelDev{Kind: el, Dev: *d})
			}
			return p
		}
	}
	_ = rep
	return nil
}

func newPCI(a attrs, ln int) *PCI {
	x := &PCI{BusID: strings.ToLower(a.str("busid")), Class: strings.ToLower(a.str("class")),
		Vendor: strings.ToLower(a.str("vendor")), Device: strings.ToLower(a.str("device")),
		SubsystemVendor: strings.ToLower(a.str("subsystemvendor")), SubsystemDevice: strings.ToLower(a.str("subsystemdevice")),
		LinkSpeed: a.m["linkspeed"], LinkWidth: a.intp("linkwidth"), Line: ln}
	x.LinkSpeedGTs = a.float("linkspeed")
	x.Extra = a.extra()
	return x
}

func newGraph(a attrs, ln int) Graph {
	g := Graph{Line: ln, Channels: []Channel{}}
	g.ID = deref(a.intp("id"))
	g.Pattern = deref(a.intp("pattern"))
	g.PatternName = patternNames[g.Pattern]
	g.CrossNIC = deref(a.intp("crossnic"))
	g.NChannels = deref(a.intp("nchannels"))
	g.SpeedIntra = a.float("speedintra")
	g.SpeedInter = a.float("speedinter")
	g.LatencyInter = a.float("latencyinter")
	g.TypeIntra = strings.ToUpper(a.str("typeintra"))
	g.TypeInter = strings.ToUpper(a.str("typeinter"))
	g.SameChannels = deref(a.intp("samechannels"))
	return g
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// patternNames are NCCL's graph search patterns (graph.h in NCCL).
var patternNames = map[int]string{
	1: "balanced tree", 2: "split tree", 3: "tree", 4: "ring", 5: "nvls", 6: "collnet direct",
}

var rdmaPrefixes = []string{"mlx", "ib", "efa", "bnxt", "irdma", "rdma", "roce", "hfi", "qedr", "ionic", "erdma", "cxi"}

// isRDMANet: NCCL's socket transport writes the device index as the guid
// and port 0 (guid="0x0" for eth0, guid="0x1" port="0" for a second
// Ethernet NIC); an InfiniBand/RoCE port has its port GUID and a port
// number from 1. A net without a guid attribute (hand-written) is judged
// by its name.
func isRDMANet(n Net) bool {
	if n.GUID != "" {
		g, err := parseInt(n.GUID)
		if err != nil {
			return true
		}
		socket := g == 0 || n.Dev != nil && n.Port != nil && *n.Port == 0 && g == *n.Dev
		return !socket
	}
	name := strings.ToLower(n.Name)
	for _, p := range rdmaPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
