package nccltopo

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze/verdict"
	"github.com/gdrcheck/gdrcheck/internal/hw"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

const maxEvidence = 10

var titles = verdict.Titles{
	"nccl.topo.file":         "Topology file read to the end",
	"nccl.topo.gdr":          "NICs and GPUs that NCCL marks GPU Direct RDMA capable",
	"nccl.topo.nic-affinity": "Every GPU near an RDMA NIC (PIX/PXB)",
	"nccl.topo.nvlink":       "NVLink counts consistent between GPUs",
	"nccl.topo.pcie":         "PCIe links at the speed and width of the devices",
	"nccl.graph.intra":       "Intra-node path type of the graphs",
	"nccl.graph.inter":       "GPU to NIC path type of the graphs",
	"nccl.graph.channels":    "Graph channels consistent",
}

type judge struct {
	r *Report
}

func (j judge) ev(line int, value, note string) result.Evidence {
	return result.Evidence{Source: fmt.Sprintf("%s:%d", j.r.File, line), Value: value, Note: note}
}

func verdicts(r *Report) []result.Result {
	j := judge{r}
	var out []result.Result
	if r.Truncated {
		out = append(out, titles.New("nccl.topo.file", result.Warn, r.Kind, "Truncated",
			r.Problem+"; the verdicts below judge only what was read", nil))
	}
	if r.System != nil {
		out = append(out, j.gdr(), j.affinity(), j.nvlink(), j.pcie())
	}
	if r.Kind == "graphs" {
		out = append(out, j.graphIntra(), j.graphInter(), j.graphChannels())
	}
	return out
}

func gpuName(g GPU) string {
	if g.Dev != nil {
		return fmt.Sprintf("GPU %d (%s)", *g.Dev, g.BusID)
	}
	return "GPU " + g.BusID
}

func (j judge) gdr() result.Result {
	const id = "nccl.topo.gdr"
	s := j.r.System
	var rdma, bad, unknown []Net
	sockets := 0
	for _, n := range s.NICs {
		for _, x := range n.Nets {
			switch {
			case !x.RDMA:
				sockets++
			case x.GDR == nil:
				unknown = append(unknown, x)
				rdma = append(rdma, x)
			case !*x.GDR:
				bad = append(bad, x)
				rdma = append(rdma, x)
			default:
				rdma = append(rdma, x)
			}
		}
	}
	var badGPU []GPU
	for _, g := range s.GPUs {
		if g.GDR != nil && !*g.GDR {
			badGPU = append(badGPU, g)
		}
	}
	if len(bad) > 0 || len(badGPU) > 0 {
		var names []string
		var evs []result.Evidence
		for _, x := range bad {
			names = append(names, x.Name)
			if len(evs) < maxEvidence {
				evs = append(evs, j.ev(x.Line, fmt.Sprintf("<net name=%q gdr=\"0\">", x.Name), "NCCL found no way to register GPU memory with this NIC"))
			}
		}
		for _, g := range badGPU {
			names = append(names, gpuName(g))
			if len(evs) < maxEvidence {
				evs = append(evs, j.ev(g.Line, fmt.Sprintf("<gpu gdr=\"0\"> at %s", g.BusID), "this GPU does not support GPU Direct RDMA"))
			}
		}
		msg := fmt.Sprintf("gdr=\"0\" on %s: NCCL will stage network traffic through host memory", strings.Join(names, ", "))
		if len(bad) > 0 {
			msg = fmt.Sprintf("%d of %d RDMA net(s) have gdr=\"0\" (%s): NCCL will stage network traffic through host memory", len(bad), len(rdma), strings.Join(names, ", "))
		}
		o := titles.New(id, result.Fail, "system", "GDRUnsupported", msg, evs)
		o.Remedy = "Load nvidia-peermem or use a dma-buf capable kernel and driver (NCCL_DMABUF_ENABLE), then dump the topology again."
		return o
	}
	if len(rdma) == 0 {
		if sockets > 0 {
			return titles.New(id, result.Skip, "system", "NoRDMANIC", fmt.Sprintf("only socket NICs (%d net(s) whose guid is 0 or their device index, port 0): no GPU Direct RDMA to judge", sockets), nil)
		}
		return titles.New(id, result.Skip, "system", "NoNetElements",
			"the file lists no <net> elements (a hand-written NCCL_TOPO_FILE: NCCL adds the NICs it finds at run time)", nil)
	}
	if len(unknown) == len(rdma) {
		return titles.New(id, result.Unknown, "system", "NoGDRAttribute", "no RDMA net carries a gdr attribute", nil)
	}
	msg := fmt.Sprintf("all %d RDMA net(s) have gdr=\"1\"", len(rdma)-len(unknown))
	if len(unknown) > 0 {
		msg += fmt.Sprintf(" (%d without a gdr attribute)", len(unknown))
	}
	return titles.New(id, result.Pass, "system", "GDRCapable", msg, nil)
}

func (j judge) affinity() result.Result {
	const id = "nccl.topo.nic-affinity"
	s := j.r.System
	if len(s.GPUs) == 0 {
		return titles.New(id, result.Skip, "system", "NoGPU", "no GPU in the file", nil)
	}
	rdma := 0
	for _, n := range s.NICs {
		if n.RDMA {
			rdma++
		}
	}
	if rdma == 0 {
		return titles.New(id, result.Skip, "system", "NoRDMANIC", "no RDMA NIC in the file", nil)
	}
	var far []GPUPath
	count := map[string]int{}
	for _, p := range s.Paths {
		count[p.Type]++
		if p.Type == "PHB" || p.Type == "SYS" {
			far = append(far, p)
		}
	}
	var dist []string
	for _, t := range []string{"PIX", "PXB", "PHB", "SYS"} {
		if count[t] > 0 {
			dist = append(dist, fmt.Sprintf("%s x%d", t, count[t]))
		}
	}
	if len(far) > 0 {
		var parts []string
		var evs []result.Evidence
		for _, p := range far {
			g := findGPU(s, p.GPU)
			if len(parts) < 4 {
				parts = append(parts, fmt.Sprintf("%s: %s to %s", gpuName(g), p.Type, strings.Join(p.NICs, ", ")))
			}
			if len(evs) < maxEvidence {
				evs = append(evs, j.ev(g.Line, "GPU "+p.GPU, fmt.Sprintf("nearest RDMA NIC %s (%s)", strings.Join(p.NICs, ", "), p.Type)))
			}
		}
		if len(far) > 4 {
			parts = append(parts, fmt.Sprintf("and %d more", len(far)-4))
		}
		msg := fmt.Sprintf("%d of %d GPU(s) reach their nearest RDMA NIC only through the CPU (%s): NCCL's automatic GDR level normally stops at PXB, so GPU Direct RDMA is off unless NCCL_NET_GDR_LEVEL allows it; %s",
			len(far), len(s.GPUs), strings.Join(dist, ", "), strings.Join(parts, "; "))
		o := titles.New(id, result.Warn, "system", "GDRPathTooFar", msg, evs)
		o.Remedy = "Put each GPU and its NIC under one PCIe switch (in a VM: behind one emulated switch, mirroring the host), or set NCCL_NET_GDR_LEVEL=PHB on every rank where the platform supports peer-to-peer through the root complex."
		return o
	}
	return titles.New(id, result.Pass, "system", "NICNearGPU",
		fmt.Sprintf("every GPU has an RDMA NIC within one PCIe switch tree (%s)", strings.Join(dist, ", ")), nil)
}

func findGPU(s *System, bus string) GPU {
	for _, g := range s.GPUs {
		if g.BusID == bus {
			return g
		}
	}
	return GPU{BusID: bus}
}

// catalogueGPU is the hardware catalogue's entry of a GPU, by its PCI
// device ID.
func catalogueGPU(g GPU) (hw.GPU, bool) {
	v, d, ok := strings.Cut(g.VendorDevice, ":")
	if !ok || v != "10de" {
		return hw.GPU{}, false
	}
	id, err := strconv.ParseUint(d, 16, 16)
	if err != nil {
		return hw.GPU{}, false
	}
	return hw.GPUByDevice(uint16(id))
}

// nvswitchLinks is how many NVLinks a GPU has to the NVSwitches, from the
// hardware catalogue: its part's by PCI device ID, else its SM's where
// every NVSwitch part of that SM agrees (not sm_90: H100 18, H800 8).
func nvswitchLinks(g GPU) (int, bool) {
	if c, ok := catalogueGPU(g); ok {
		return c.NVLinks, c.NVSwitchBoard
	}
	if g.SM != nil && !otherVendor(g) {
		return hw.NVSwitchLinksOfSM(*g.SM)
	}
	return 0, false
}

// otherVendor: a GPU whose PCI vendor is not NVIDIA's (an RCCL dump of AMD
// GPUs has the same layout): its "sm" says nothing of an NVIDIA generation.
func otherVendor(g GPU) bool {
	return g.VendorDevice != "" && !strings.HasPrefix(g.VendorDevice, "10de:")
}

func isNVSwitchTarget(l NVLink, gpus map[string]bool) bool {
	return l.TClass == "0x068000" || !gpus[l.Target] && strings.HasPrefix(l.Target, "fffffff")
}

func (j judge) nvlink() result.Result {
	const id = "nccl.topo.nvlink"
	s := j.r.System
	gpus := map[string]bool{}
	for _, g := range s.GPUs {
		gpus[g.BusID] = true
	}
	type link struct {
		g GPU
		l NVLink
	}
	var all []link
	pair := map[[2]string]link{}
	for _, g := range s.GPUs {
		for _, l := range g.NVLinks {
			all = append(all, link{g, l})
			if gpus[l.Target] {
				pair[[2]string{g.BusID, l.Target}] = link{g, l}
			}
		}
	}
	if len(all) == 0 {
		return titles.New(id, result.Skip, "system", "NoNVLink", "no <nvlink> element: PCIe only, or a file that does not list NVLinks", nil)
	}
	cnt := func(l NVLink) int { return deref(l.Count) }
	var fails, warns []string
	var evs []result.Evidence
	add := func(list *[]string, msg string, line int, value string) {
		*list = append(*list, msg)
		if len(evs) < maxEvidence {
			evs = append(evs, j.ev(line, value, msg))
		}
	}
	for _, x := range all {
		if x.l.Target == x.g.BusID {
			add(&warns, fmt.Sprintf("%s has an NVLink to itself (count %d), a bogus entry", gpuName(x.g), cnt(x.l)),
				x.l.Line, fmt.Sprintf("<nvlink target=%q count=\"%d\">", x.l.Target, cnt(x.l)))
			continue
		}
		if gpus[x.l.Target] {
			back, ok := pair[[2]string{x.l.Target, x.g.BusID}]
			switch {
			case !ok:
				add(&warns, fmt.Sprintf("%s -> %s has %d NVLinks but no link back", gpuName(x.g), x.l.Target, cnt(x.l)),
					x.l.Line, fmt.Sprintf("<nvlink target=%q count=\"%d\">", x.l.Target, cnt(x.l)))
			case cnt(back.l) != cnt(x.l) && x.g.BusID < x.l.Target:
				lo := x
				if cnt(back.l) < cnt(x.l) {
					lo = back
				}
				add(&fails, fmt.Sprintf("%s -> %s count %d but %s -> %s count %d", x.g.BusID, x.l.Target, cnt(x.l), x.l.Target, x.g.BusID, cnt(back.l)),
					lo.l.Line, fmt.Sprintf("<nvlink target=%q count=\"%d\">", lo.l.Target, cnt(lo.l)))
			}
		}
	}
	// NVSwitch links: the same total on every GPU, and what the GPU has.
	// A dump lists them as one <nvlink> to fffffff:ff:ff.0 or as one per
	// NVSwitch (older NCCL: count 2 to each of six on HGX A100): the total
	// over the NVSwitch targets is what counts. In a file cut off inside
	// a GPU (its last), that GPU's list may be incomplete: not judged.
	type swTotal struct {
		n     int
		first link
	}
	totals := map[string]*swTotal{}
	var order []string
	for _, x := range all {
		if !isNVSwitchTarget(x.l, gpus) {
			continue
		}
		t := totals[x.g.BusID]
		if t == nil {
			t = &swTotal{first: x}
			totals[x.g.BusID] = t
			order = append(order, x.g.BusID)
		}
		t.n += cnt(x.l)
	}
	cut, cutNote := "", ""
	if j.r.gpuOpen && len(s.GPUs) > 0 {
		cut = s.GPUs[len(s.GPUs)-1].BusID
	}
	best := 0
	for bus, t := range totals {
		if bus != cut {
			best = max(best, t.n)
		}
	}
	for _, bus := range order {
		t := totals[bus]
		if bus == cut {
			cutNote = fmt.Sprintf("%s is cut off in the file: its %d NVLinks to the NVSwitches listed so far are not judged", gpuName(t.first.g), t.n)
			continue
		}
		want := best
		if n, ok := nvswitchLinks(t.first.g); ok && n > want {
			want = n
		}
		if t.n < want {
			add(&fails, fmt.Sprintf("%s has %d NVLinks to the NVSwitches, expected %d", gpuName(t.first.g), t.n, want),
				t.first.l.Line, fmt.Sprintf("<nvlink target=%q count=\"%d\">", t.first.l.Target, cnt(t.first.l)))
		}
	}
	switch {
	case len(fails) > 0:
		o := titles.New(id, result.Fail, "system", "NVLinkDegraded", "NVLink counts are inconsistent: "+joinN(fails, 4), evs)
		o.Remedy = "Check nvidia-smi nvlink -s on the host; if this is a hand-written NCCL_TOPO_FILE, correct its counts."
		return o
	case len(warns) > 0:
		return titles.New(id, result.Warn, "system", "BogusNVLink", "NVLink entries NCCL cannot use as written: "+joinN(warns, 4), evs)
	case cutNote != "" && len(totals) == 1:
		return titles.New(id, result.Unknown, "system", "CutOff", cutNote, nil)
	}
	var parts []string
	byCount := map[int]int{}
	for _, x := range all {
		byCount[cnt(x.l)]++
	}
	for _, c := range sortedIntKeys(byCount) {
		parts = append(parts, fmt.Sprintf("%d link(s) with count %d", byCount[c], c))
	}
	msg := "NVLink counts agree in both directions and across GPUs: " + strings.Join(parts, ", ")
	if cutNote != "" {
		msg += "; " + cutNote
	}
	return titles.New(id, result.Pass, "system", "NVLinkConsistent", msg, nil)
}

func sortedIntKeys(m map[int]int) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func joinN(list []string, n int) string {
	if len(list) > n {
		return strings.Join(list[:n], "; ") + fmt.Sprintf("; and %d more", len(list)-n)
	}
	return strings.Join(list, "; ")
}

// gpuPCIeGTs is the PCIe link speed (GT/s) a GPU supports, from the
// hardware catalogue: its part's by PCI device ID, else the least of the
// parts of its SM; 0 when unknown.
func gpuPCIeGTs(g GPU) float64 {
	if c, ok := catalogueGPU(g); ok {
		return hw.PCIeGTs(c.PCIeGen)
	}
	if g.SM != nil && !otherVendor(g) {
		if gen, ok := hw.PCIeGenOfSM(*g.SM); ok {
			return hw.PCIeGTs(gen)
		}
	}
	return 0
}

// nicPCIeGTs is the PCIe link speed (GT/s) of a NIC by its PCI ID, from
// the hardware catalogue; 0 when unknown.
func nicPCIeGTs(vendorDevice string) float64 {
	if n, ok := hw.NICByID(vendorDevice); ok {
		return hw.PCIeGTs(n.PCIeGen)
	}
	return 0
}

func (j judge) pcie() result.Result {
	const id = "nccl.topo.pcie"
	s := j.r.System
	var slow []string
	var evs []result.Evidence
	known, unknown, endpoints := 0, 0, 0
	bridgeSeen := map[string]bool{}
	note := func(msg string, line int, value string) {
		slow = append(slow, msg)
		if len(evs) < maxEvidence {
			evs = append(evs, j.ev(line, value, msg))
		}
	}
	byBus := map[string]*PCI{}
	for _, c := range s.CPUs {
		for _, p := range c.PCI {
			index(byBus, p)
		}
	}
	type ep struct {
		name  string
		bus   string
		speed float64
		width *int
		want  float64
		path  []string
		line  int
	}
	var eps []ep
	for _, g := range s.GPUs {
		eps = append(eps, ep{name: gpuName(g), bus: g.BusID, speed: g.LinkSpeedGTs, width: g.LinkWidth, want: gpuPCIeGTs(g), path: g.Path, line: g.Line})
	}
	for _, n := range s.NICs {
		if n.BusID == "" {
			continue
		}
		label := "NIC " + n.BusID
		if len(n.Nets) > 0 {
			label = "NIC " + nicLabel(n)
		}
		eps = append(eps, ep{name: label, bus: n.BusID, speed: n.LinkSpeedGTs, width: n.LinkWidth, want: nicPCIeGTs(n.VendorDevice), path: n.Path, line: n.Line})
	}
	for _, e := range eps {
		w := deref(e.width)
		if e.speed <= 0 || w <= 0 {
			unknown++
			continue
		}
		known++
		if e.want > 0 && e.speed < e.want {
			endpoints++
			note(fmt.Sprintf("%s links at %g GT/s, the device supports %g GT/s", e.name, e.speed, e.want), e.line,
				fmt.Sprintf("<pci busid=%q link_speed=\"%g GT/s\" link_width=\"%d\">", e.bus, e.speed, w))
		}
		if strings.HasPrefix(e.name, "GPU") && w < 16 {
			endpoints++
			note(fmt.Sprintf("%s links at x%d, GPUs have x16", e.name, w), e.line,
				fmt.Sprintf("<pci busid=%q link_width=\"%d\">", e.bus, w))
		}
		for _, b := range e.path {
			p := byBus[b]
			if p == nil || p.LinkSpeedGTs <= 0 || deref(p.LinkWidth) <= 0 {
				continue
			}
			if p.LinkSpeedGTs*float64(deref(p.LinkWidth)) < 0.25*e.speed*float64(w) && !bridgeSeen[p.BusID] {
				bridgeSeen[p.BusID] = true
				note(fmt.Sprintf("bridge %s above %s links at %g GT/s x%d, far below the device's %g GT/s x%d (an emulated bridge?)",
					p.BusID, e.name, p.LinkSpeedGTs, deref(p.LinkWidth), e.speed, w), p.Line,
					fmt.Sprintf("<pci busid=%q link_speed=%q link_width=\"%d\">", p.BusID, p.LinkSpeed, deref(p.LinkWidth)))
			}
		}
	}
	if len(slow) > 0 {
		reason := "SlowPCIeLink"
		if endpoints == 0 {
			reason = "SlowPCIeBridge"
		}
		o := titles.New(id, result.Warn, "system", reason, "PCIe links below what the devices support: "+joinN(slow, 4), evs)
		o.Remedy = "Check lspci -vv LnkSta under load (idle GPUs train down to save power); in a VM, the emulated root ports must advertise the real speed and width."
		return o
	}
	if known == 0 {
		if unknown == 0 {
			return titles.New(id, result.Skip, "system", "NoDevices", "no GPU or NIC with a PCI link in the file", nil)
		}
		return titles.New(id, result.Unknown, "system", "NoLinkInfo",
			fmt.Sprintf("no GPU or NIC has a link speed and width (%d with link_speed=\"\" or link_width=\"0\", as in VMs)", unknown), nil)
	}
	msg := fmt.Sprintf("%d device link(s) at the speed and width expected", known)
	if unknown > 0 {
		msg += fmt.Sprintf("; %d without link speed or width", unknown)
	}
	return titles.New(id, result.Pass, "system", "PCIeLinksOK", msg, nil)
}

// pathGood says whether an intra- or inter-node path type is a direct one.
var pathGood = map[string]bool{"LOC": true, "NVL": true, "NVB": true, "C2C": true, "PIX": true, "PXB": true, "PXN": true}

func (j judge) graphIntra() result.Result {
	const id = "nccl.graph.intra"
	if len(j.r.Graphs) == 0 {
		return titles.New(id, result.Skip, "graphs", "NoGraph", "no <graph> element", nil)
	}
	var parts, bad []string
	var evs []result.Evidence
	for _, g := range j.r.Graphs {
		parts = append(parts, fmt.Sprintf("%s (%d ch): %s at %g GB/s", graphName(g), g.NChannels, g.TypeIntra, g.SpeedIntra))
		if g.TypeIntra != "" && !pathGood[g.TypeIntra] {
			bad = append(bad, parts[len(parts)-1])
			if len(evs) < maxEvidence {
				evs = append(evs, j.ev(g.Line, fmt.Sprintf("<graph id=\"%d\" pattern=\"%d\" typeintra=%q speedintra=\"%g\">", g.ID, g.Pattern, g.TypeIntra, g.SpeedIntra), "GPUs reach each other only through the CPU"))
			}
		}
	}
	if len(bad) > 0 {
		return titles.New(id, result.Warn, "graphs", "IntraThroughCPU",
			fmt.Sprintf("in %d of %d graph(s) the GPUs of a node reach each other only through the CPU (PHB/SYS, no NVLink or PCIe switch): %s",
				len(bad), len(parts), strings.Join(bad, "; ")), evs)
	}
	return titles.New(id, result.Pass, "graphs", "IntraDirect", strings.Join(parts, "; "), nil)
}

func graphName(g Graph) string {
	if g.PatternName != "" {
		return fmt.Sprintf("graph %d %s", g.ID, g.PatternName)
	}
	return fmt.Sprintf("graph %d pattern %d", g.ID, g.Pattern)
}

func (j judge) graphInter() result.Result {
	const id = "nccl.graph.inter"
	var parts, bad []string
	var evs []result.Evidence
	for _, g := range j.r.Graphs {
		nets := 0
		for _, c := range g.Channels {
			for _, d := range c.Devices {
				if d.Kind == "net" {
					nets++
				}
			}
		}
		if nets == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %s at %g GB/s", graphName(g), g.TypeInter, g.SpeedInter))
		if g.TypeInter != "" && !pathGood[g.TypeInter] {
			bad = append(bad, parts[len(parts)-1])
			if len(evs) < maxEvidence {
				evs = append(evs, j.ev(g.Line, fmt.Sprintf("<graph id=\"%d\" typeinter=%q speedinter=\"%g\">", g.ID, g.TypeInter, g.SpeedInter), "GPU to NIC through the CPU"))
			}
		}
	}
	if len(parts) == 0 {
		return titles.New(id, result.Skip, "graphs", "NoNetInGraph", "no channel goes through a NET: a single-node graph", nil)
	}
	if len(bad) > 0 {
		o := titles.New(id, result.Warn, "graphs", "InterThroughCPU",
			fmt.Sprintf("%d of %d graph(s) reach the NIC only through the CPU (PHB/SYS), where GPU Direct RDMA is off by default: %s (all: %s)",
				len(bad), len(parts), strings.Join(bad, "; "), strings.Join(parts, "; ")), evs)
		o.Remedy = "Pair each GPU with a NIC under one PCIe switch, or set NCCL_NET_GDR_LEVEL where peer-to-peer through the root complex works."
		return o
	}
	return titles.New(id, result.Pass, "graphs", "InterDirect", strings.Join(parts, "; "), nil)
}

func (j judge) graphChannels() result.Result {
	const id = "nccl.graph.channels"
	if len(j.r.Graphs) == 0 {
		return titles.New(id, result.Skip, "graphs", "NoGraph", "no <graph> element", nil)
	}
	var probs, parts []string
	var evs []result.Evidence
	for _, g := range j.r.Graphs {
		parts = append(parts, fmt.Sprintf("%s %d", graphName(g), len(g.Channels)))
		if g.NChannels != len(g.Channels) {
			probs = append(probs, fmt.Sprintf("%s says nchannels=%d but lists %d", graphName(g), g.NChannels, len(g.Channels)))
			if len(evs) < maxEvidence {
				evs = append(evs, j.ev(g.Line, fmt.Sprintf("<graph id=\"%d\" nchannels=\"%d\">", g.ID, g.NChannels), ""))
			}
		}
		for _, c := range g.Channels {
			seen := map[int]bool{}
			gpus := 0
			dup := false
			for _, d := range c.Devices {
				if d.Kind != "gpu" {
					continue
				}
				gpus++
				if seen[d.Dev] {
					dup = true
				}
				seen[d.Dev] = true
			}
			switch {
			case gpus == 0:
				probs = append(probs, fmt.Sprintf("a channel of %s lists no GPU", graphName(g)))
			case dup:
				probs = append(probs, fmt.Sprintf("a channel of %s lists a GPU twice", graphName(g)))
			default:
				continue
			}
			if len(evs) < maxEvidence {
				evs = append(evs, j.ev(c.Line, "<channel>", probs[len(probs)-1]))
			}
		}
	}
	if len(probs) > 0 {
		return titles.New(id, result.Warn, "graphs", "InconsistentChannels", joinN(probs, 4), evs)
	}
	return titles.New(id, result.Pass, "graphs", "ChannelsConsistent", "channels per graph: "+strings.Join(parts, ", "), nil)
}
