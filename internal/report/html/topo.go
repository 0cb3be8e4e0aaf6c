package html

import (
	"fmt"
	"html/template"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// tnode is one box of the topology drawing: a NUMA node, a root port, a
// PCIe switch (its upstream and downstream ports as one), a bridge, or an
// endpoint (GPU, NIC, NVSwitch).
type tnode struct {
	kind     string // numa, root, switch, bridge, gpu, nic, nvswitch
	key      string // address or name; unique among siblings
	label    string
	sub      []string
	status   result.Status
	title    string
	children []*tnode
	// layout
	x, w  float64
	depth int
	gpu   int // GPU index for gpu nodes
}

func (n *tnode) child(kind, key, label string) *tnode {
	for _, c := range n.children {
		if c.kind == kind && c.key == key {
			return c
		}
	}
	c := &tnode{kind: kind, key: key, label: label, gpu: -1}
	n.children = append(n.children, c)
	return c
}

// topoTree builds the drawing's tree: NUMA node → root port → switches
// (and bridges) → GPUs and NICs, from each endpoint's upstream bridges
// (a switch's upstream and downstream ports are one box).
func topoTree(r *dossier.Report, j *judged) *tnode {
	root := &tnode{kind: "host"}
	h := r.Topology.Summary
	if h == nil {
		return root
	}
	type ep struct {
		kind, key, label string
		numa             int
		upstream, sub    []string
		gpu              int
		status           result.Status
		title            string
	}
	var eps []ep
	for _, g := range h.GPUs {
		label := fmt.Sprintf("GPU%d", g.Index)
		sub := []string{shortName(g.Name), g.Address, linkText(g.Link)}
		st := j.worstFor(label, g.Address)
		switch {
		case g.NVLinksTotal > 0:
			sub = append(sub, fmt.Sprintf("NVLink %d/%d", g.NVLinksActive, g.NVLinksTotal))
			st = worse(st, nvlinkStatus(topologyGPU{g.NVLinksActive, g.NVLinksTotal}))
		case g.NVLinksTotal == 0:
			sub = append(sub, "no NVLink")
		default:
			sub = append(sub, "NVLink unknown")
		}
		eps = append(eps, ep{kind: "gpu", key: g.Address, label: label, numa: g.NUMA, upstream: g.Upstream, sub: sub, gpu: g.Index,
			status: st, title: label + " " + g.Address + " " + g.Name})
	}
	for _, n := range r.Inventory.NICs {
		sub := []string{n.HCAType + " " + n.BusID}
		var ports []topology.Port
		for _, p := range n.Ports {
			tp := topology.Port{Number: p.Number, State: p.State, RateGbps: p.RateGbps, LinkLayer: p.LinkLayer}
			ports = append(ports, tp)
			sub = append(sub, portText(tp))
		}
		keys := []string{n.Name}
		if n.BusID != "" {
			keys = append(keys, n.BusID)
		}
		st := worse(j.worstFor(keys...), portsStatus(ports))
		eps = append(eps, ep{kind: "nic", key: n.Name, label: n.Name, numa: n.NUMA, upstream: n.Upstream, sub: sub, gpu: -1,
			status: st, title: n.Name + " " + n.BusID + " firmware " + n.Firmware})
	}
	for _, e := range eps {
		type hop struct{ kind, addr string }
		var chain []hop
		up := e.upstream
		for i := len(up) - 1; i >= 0; i-- {
			addr, typ, _ := strings.Cut(up[i], " ")
			switch {
			case strings.Contains(typ, "downstream") && i+1 < len(up) && strings.Contains(up[i+1], "upstream"):
				continue // a port of the switch its upstream port stands for
			case strings.Contains(typ, "upstream"):
				chain = append(chain, hop{"switch", addr})
			case strings.Contains(typ, "root") || i == len(up)-1:
				chain = append(chain, hop{"root", addr})
			default:
				chain = append(chain, hop{"bridge", addr})
			}
		}
		var n *tnode
		if e.numa < 0 {
			n = root.child("numa", "~", "NUMA node unknown")
		} else {
			n = root.child("numa", fmt.Sprint(e.numa), fmt.Sprintf("NUMA node %d", e.numa))
		}
		for _, c := range chain {
			label := map[string]string{"root": "root port", "switch": "PCIe switch", "bridge": "bridge"}[c.kind]
			n = n.child(c.kind, c.addr, label)
		}
		leaf := n.child(e.kind, e.key, e.label)
		leaf.sub, leaf.gpu, leaf.status, leaf.title = e.sub, e.gpu, e.status, e.title
	}
	var walk func(n *tnode, depth int)
	walk = func(n *tnode, depth int) {
		n.depth = depth
		switch n.kind {
		case "root", "switch", "bridge":
			n.sub = []string{n.key}
			n.status = j.worstFor(n.key)
			n.title = n.label + " " + n.key
		case "numa":
			n.title = n.label
		}
		sort.SliceStable(n.children, func(a, b int) bool { return order(n.children[a]) < order(n.children[b]) })
		for _, c := range n.children {
			walk(c, depth+1)
		}
	}
	sort.SliceStable(root.children, func(a, b int) bool { return topology.NaturalLess(root.children[a].key, root.children[b].key) })
	walk(root, 0)
	return root
}

// worse is the more severe of two statuses ("" is none).
func worse(a, b result.Status) result.Status {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	case b.Severity() < a.Severity():
		return b
	}
	return a
}

// order keeps a subtree's GPUs before its NICs, bridges in address order.
func order(n *tnode) string {
	rank := map[string]string{"gpu": "2", "nic": "3", "nvswitch": "4"}[n.kind]
	if rank == "" {
		rank = "1"
	}
	return rank + n.key
}

func shortName(s string) string {
	s = strings.TrimPrefix(s, "NVIDIA ")
	if len(s) > 20 {
		s = s[:20] + "…"
	}
	return s
}

// linkText is a PCIe link in a few characters: "x16 32 GT/s", with the
// maximum where the link trained below it ("x16 2.5 GT/s (max 32)").
func linkText(l topology.Link) string {
	if l.CurWidth == 0 && l.CurSpeed == 0 {
		return "PCIe link unknown"
	}
	s := fmt.Sprintf("x%d %s", l.CurWidth, speedText(float64(l.CurSpeed)))
	switch {
	case l.MaxWidth > 0 && l.CurWidth < l.MaxWidth:
		s += fmt.Sprintf(" (max x%d %s)", l.MaxWidth, Number(float64(l.MaxSpeed)))
	case l.CurSpeed < l.MaxSpeed:
		s += fmt.Sprintf(" (max %s)", Number(float64(l.MaxSpeed)))
	}
	return s
}

func speedText(gts float64) string { return Number(gts) + " GT/s" }

func portText(p topology.Port) string {
	s := fmt.Sprintf("p%d %s", p.Number, p.State)
	if p.RateGbps > 0 {
		s += " " + Number(p.RateGbps) + " Gb/s"
	}
	switch p.LinkLayer {
	case "InfiniBand":
		s += " IB"
	case "Ethernet":
		s += " Eth"
	}
	return s
}

// portsStatus: a port that is not ACTIVE fails; all active pass; none
// known is not judged.
func portsStatus(ps []topology.Port) result.Status {
	if len(ps) == 0 {
		return ""
	}
	for _, p := range ps {
		if !strings.EqualFold(p.State, "ACTIVE") {
			return result.Fail
		}
	}
	return result.Pass
}

// The drawing's dimensions.
const (
	leafW   = 132.0
	leafGap = 12.0
	rowH    = 64.0
	boxH    = 40.0
	leafH   = 78.0
	padX    = 10.0
)

// layout gives every node its x and width: leaves side by side, each
// inner node spanning its children.
func layout(n *tnode, x float64) float64 {
	if len(n.children) == 0 {
		n.x, n.w = x, leafW
		return x + leafW + leafGap
	}
	start := x
	for _, c := range n.children {
		x = layout(c, x)
	}
	n.x, n.w = start, x-leafGap-start
	return x
}

func maxDepth(n *tnode) int {
	d := n.depth
	for _, c := range n.children {
		d = max(d, maxDepth(c))
	}
	return d
}

// drawTopology is the topology as inline SVG: one band per NUMA node,
// stacked. In a band the inner boxes stand at their depth and span their
// children; the endpoints share the band's bottom row; below them the
// GPUs' NVLink (a bar for NVSwitch systems, arcs between directly linked
// GPUs) and the NICs' ports down to the fabric.
func drawTopology(r *dossier.Report, j *judged) template.HTML {
	t := topoTree(r, j)
	if len(t.children) == 0 {
		return ""
	}
	body := &svg{}
	body.group("topo")
	y, width := 8.0, 0.0
	var cross []string
	var bus nvBus
	for _, band := range t.children {
		w := layout(band, padX) - leafGap + padX
		width = max(width, w)
		leafY := y + float64(maxDepth(band)-1)*rowH
		var gpus, nics []*tnode
		var walk func(n *tnode)
		walk = func(n *tnode) {
			switch n.kind {
			case "gpu":
				gpus = append(gpus, n)
			case "nic":
				nics = append(nics, n)
			}
			for _, c := range n.children {
				walk(c)
			}
		}
		walk(band)
		drawBox(body, band, y, leafY)
		bottom := leafY + leafH
		end := bottom
		if len(gpus) > 0 {
			c, below := drawNVLink(body, r, j, gpus, bottom, bottom+26, &bus)
			cross = append(cross, c...)
			end = below
		}
		if len(nics) > 0 {
			fabY := max(end+14, bottom+26)
			end = drawFabric(body, r, nics, bottom, fabY)
		}
		y = end + 24
	}
	if len(cross) > 0 {
		body.text(padX, y, "start", "sub", "NVLink between NUMA nodes: "+strings.Join(cross, ", "))
		y += 20
	}
	if len(bus.taps) > 0 {
		// One NVLink domain, whatever NUMA node a GPU hangs off: every
		// band's GPUs reach one box, drawn once below the bands.
		h := r.Topology.Summary
		busX := width + 12
		cls := "nvl " + statusClass(j.worstID("nvlink"))
		for _, tp := range bus.taps {
			body.line(tp[0], tp[1], busX, tp[1], cls)
		}
		body.line(busX, bus.taps[0][1], busX, y, cls)
		label := fmt.Sprintf("one NVLink domain: %d NVSwitch(es) joining all %d GPUs", len(h.NVSwitches), len(h.GPUs))
		body.rect(padX, y, busX-padX+12, 22, "box nvswitch "+statusClass(j.worstID("nvlink")), "NVLink fabric")
		body.text((padX+busX+12)/2, y+15, "middle", "lbl", label)
		width = busX + 12 + padX
		y += 30
	}
	body.endGroup()
	s := newSVG(width, y, "topology of "+hostName(r))
	s.b.WriteString(body.b.String())
	return s.done()
}

// drawBox draws n and its subtree: inner boxes at their depth below top,
// leaves at leafY, each joined to its parent.
func drawBox(s *svg, n *tnode, top, leafY float64) {
	at := func(c *tnode) (float64, float64) {
		if len(c.children) == 0 {
			return leafY, leafH
		}
		return top + float64(c.depth-1)*rowH, boxH
	}
	y, h := at(n)
	for _, c := range n.children {
		cy, _ := at(c)
		cx := c.x + c.w/2
		s.line(cx, y+h, cx, cy, "edge "+statusClass(c.status))
	}
	s.rect(n.x, y, n.w, h, "box "+n.kind+" "+statusClass(n.status), n.title)
	cx := n.x + n.w/2
	s.text(cx, y+15, "middle", "lbl", n.label)
	for i, line := range n.sub {
		if i >= 4 {
			break
		}
		s.text(cx, y+29+float64(i)*12, "middle", "sub", line)
	}
	for _, c := range n.children {
		drawBox(s, c, top, leafY)
	}
}

// nvBus collects where each band's NVSwitch rail ends (x, y), so the one
// NVLink domain is drawn once, joined to every band.
type nvBus struct{ taps [][2]float64 }

// drawNVLink draws the band's GPUs' NVLink from top (the GPUs' bottom):
// with NVSwitches a bar at y that every GPU's links reach (labelled
// active/total), without them an arc per pair of directly linked GPUs of
// the band (from the matrix' NV# cells). It returns the pairs linked to
// GPUs outside the band, and the lowest y it drew at.
func drawNVLink(s *svg, r *dossier.Report, j *judged, gpus []*tnode, top, y float64, bus *nvBus) ([]string, float64) {
	h := r.Topology.Summary
	byIndex := map[int]*tnode{}
	for _, g := range gpus {
		byIndex[g.gpu] = g
	}
	links := map[int]topologyGPU{}
	for _, g := range h.GPUs {
		links[g.Index] = topologyGPU{g.NVLinksActive, g.NVLinksTotal}
	}
	if len(h.NVSwitches) > 0 {
		x0, x1 := gpus[0].x, gpus[0].x+gpus[0].w
		for _, g := range gpus {
			x0, x1 = min(x0, g.x), max(x1, g.x+g.w)
		}
		for _, g := range gpus {
			l := links[g.gpu]
			cx := g.x + g.w/2
			s.line(cx, top, cx, y, "nvl "+statusClass(nvlinkStatus(l)))
			s.text(cx+4, top+16, "start", "sub", "NVLink "+nvText(l))
		}
		// The band's GPUs join a rail that taps the one NVLink domain
		// drawTopology draws below every band.
		s.line(x0+gpus[0].w/2, y, x1, y, "nvl "+statusClass(j.worstID("nvlink")))
		bus.taps = append(bus.taps, [2]float64{x1, y})
		return nil, y + 4
	}
	m := h.Matrix
	if m == nil {
		return nil, top
	}
	var cross []string
	low := top
	for a := range m.Labels {
		for b := a + 1; b < len(m.Labels); b++ {
			if a >= len(m.Cells) || b >= len(m.Cells[a]) || m.Cells[a][b].Level != level.NVLink {
				continue
			}
			ia, ib := labelIndex(m.Labels[a], "GPU"), labelIndex(m.Labels[b], "GPU")
			ga, oka := byIndex[ia]
			gb, okb := byIndex[ib]
			pair := fmt.Sprintf("%s–%s NV%d", m.Labels[a], m.Labels[b], m.Cells[a][b].NVLinks)
			switch {
			case oka && okb:
				x1, x2 := ga.x+ga.w/2, gb.x+gb.w/2
				depth := min(80, 16+(x2-x1)/8)
				s.curve(x1, top, (x1+x2)/2, top+2*depth, x2, top, "nvl st-none", pair)
				s.text((x1+x2)/2, top+depth+12, "middle", "sub", fmt.Sprintf("NV%d", m.Cells[a][b].NVLinks))
				low = max(low, top+depth+14)
			case oka || okb:
				if oka && ia < ib || okb && ib < ia {
					cross = append(cross, pair)
				}
			}
		}
	}
	return cross, low
}

type topologyGPU struct{ active, total int }

func nvText(l topologyGPU) string {
	if l.total < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d/%d", l.active, l.total)
}

func nvlinkStatus(l topologyGPU) result.Status {
	switch {
	case l.total < 0:
		return result.Unknown
	case l.active < l.total:
		return result.Fail
	}
	return result.Pass
}

func labelIndex(label, prefix string) int {
	var i int
	if _, err := fmt.Sscanf(label, prefix+"%d", &i); err != nil {
		return -1
	}
	return i
}

// drawFabric draws each NIC's ports down to its fabric: one bar for the
// rail NICs (paired with a GPU) of each link layer and one for the other
// NICs (front-end, storage) of each, stacked from y; it returns the
// bottom of the last.
func drawFabric(s *svg, r *dossier.Report, nics []*tnode, top, y float64) float64 {
	rails := map[string]bool{}
	for _, dp := range r.Topology.DataPaths {
		if dp.NIC != "" {
			rails[dp.NIC] = true
		}
	}
	type fabric struct {
		rail   bool
		layer  string
		x0, x1 float64
		nics   []*tnode
		sts    []result.Status
	}
	var order []string
	fabrics := map[string]*fabric{}
	for _, n := range nics {
		st, layer := result.Status(""), ""
		for _, nic := range r.Inventory.NICs {
			if nic.Name != n.key {
				continue
			}
			for _, p := range nic.Ports {
				st = worse(st, portsStatus([]topology.Port{{State: p.State}}))
				if layer == "" {
					layer = p.LinkLayer
				}
			}
		}
		k := fmt.Sprintf("%t/%s", rails[n.key], layer)
		f := fabrics[k]
		if f == nil {
			f = &fabric{rail: rails[n.key], layer: layer, x0: n.x, x1: n.x + n.w}
			fabrics[k] = f
			order = append(order, k)
		}
		f.x0, f.x1 = min(f.x0, n.x), max(f.x1, n.x+n.w)
		f.nics, f.sts = append(f.nics, n), append(f.sts, st)
	}
	// Rails first, then the others; each kind by link layer.
	sort.SliceStable(order, func(a, b int) bool {
		fa, fb := fabrics[order[a]], fabrics[order[b]]
		return fa.rail && !fb.rail || fa.rail == fb.rail && fa.layer < fb.layer
	})
	bottom := y
	for _, k := range order {
		f := fabrics[k]
		for i, n := range f.nics {
			cx := n.x + n.w/2
			s.line(cx, top, cx, y, "fab "+statusClass(f.sts[i]))
		}
		layer := f.layer
		if layer == "" {
			layer = "link layer unknown"
		}
		label := layer + " rails: the GPUs' NICs"
		if !f.rail {
			label = layer + ": no GPU (front-end, storage)"
		}
		s.rect(f.x0, y, f.x1-f.x0, 24, "box fabric", label)
		s.text((f.x0+f.x1)/2, y+16, "middle", "lbl", label)
		bottom = y + 24
		y += 32
	}
	return bottom
}
