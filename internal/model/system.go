package model

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/hw"
	"github.com/gdrcheck/gdrcheck/internal/topology"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// NVLink topologies inside a node.
const (
	NVLinkNone    = "none"    // no NVLink: GPUs talk over PCIe
	NVLinkSwitch  = "switch"  // every GPU's links go to NVSwitches
	NVLinkMesh    = "mesh"    // every GPU pair has direct links
	NVLinkPartial = "partial" // some pairs have links (bridged pairs), others only PCIe
)

// System is what the model predicts for: identical nodes of identical
// GPUs. Every field is a hardware fact or a what-if; nothing is measured.
type System struct {
	GPU         string `json:"gpu"`      // spec key, h100-sxm
	GPUName     string `json:"gpu_name"` // what the driver calls it, else the spec's name
	Nodes       int    `json:"nodes"`
	GPUsPerNode int    `json:"gpus_per_node"`

	Arch       string  `json:"arch"`
	ComputeCap int     `json:"compute_capability"`
	MemGBps    float64 `json:"memory_gbps"` // peak memory bandwidth

	NVLinkGen      int     `json:"nvlink_gen"`
	NVLinks        int     `json:"nvlinks"`          // active links per GPU, the fewest of any GPU
	NVLinkLinkGBps float64 `json:"nvlink_link_gbps"` // line rate per link and direction
	NVLinkTopology string  `json:"nvlink_topology"`  // none, switch, mesh, partial
	// NVLinkPairLinks are the links joining the least-connected pair of
	// NVLink-connected GPUs (with NVSwitches: NVLinks).
	NVLinkPairLinks int  `json:"nvlink_pair_links"`
	NVLS            bool `json:"nvls"` // NVLink SHARP in use

	PCIeGen   int `json:"pcie_gen"`   // of each GPU's link (the slowest GPU)
	PCIeWidth int `json:"pcie_width"` //
	// GPUPath is the farthest PCIe relation between two GPUs of a node
	// (PIX, PXB, PHB, NODE, SYS): a ring over PCIe has to cross it.
	GPUPath string `json:"gpu_path"`

	NICsPerNode  int     `json:"nics_per_node"` // active rails
	NICRateGbps  float64 `json:"nic_rate_gbps"` // per NIC (the slowest rail)
	NICLinkLayer string  `json:"nic_link_layer,omitempty"`
	NICPCIeGen   int     `json:"nic_pcie_gen,omitempty"`
	NICPCIeWidth int     `json:"nic_pcie_width,omitempty"`
	// GDR: the NICs read and write GPU memory directly (GPU Direct RDMA);
	// false: NCCL stages network traffic through host memory.
	GDR bool `json:"gdr"`
	// NICSharesSwitch: each GPU and its NIC sit behind one PCIe switch, so
	// host staging (GDR off) crosses the switch's uplink twice.
	NICSharesSwitch bool `json:"nic_shares_switch"`
	// NICRemoteSocket: the rails sit on the other CPU socket from the GPUs.
	NICRemoteSocket bool    `json:"nic_remote_socket"`
	InterSocketGBps float64 `json:"inter_socket_gbps"`
	// HostMemGBps bounds host staging by the DRAM bandwidth; 0: not modelled.
	HostMemGBps float64 `json:"host_mem_gbps,omitempty"`
	SHARP       bool    `json:"sharp"` // in-network reduction (CollNet/SHARP)

	Source string   `json:"source"` // "flags" or "host <root>"
	Notes  []string `json:"notes,omitempty"`
}

// Ranks is the number of GPUs in the job.
func (s System) Ranks() int { return s.Nodes * s.GPUsPerNode }

// Validate reports a description the model cannot predict for.
func (s System) Validate() error {
	var errs []error
	if s.Nodes < 1 {
		errs = append(errs, fmt.Errorf("nodes %d: at least 1", s.Nodes))
	}
	if s.GPUsPerNode < 1 {
		errs = append(errs, fmt.Errorf("GPUs per node %d: at least 1", s.GPUsPerNode))
	}
	if s.MemGBps <= 0 {
		errs = append(errs, fmt.Errorf("memory bandwidth unknown"))
	}
	if hw.PCIeGTs(s.PCIeGen) == 0 || s.PCIeWidth < 1 || s.PCIeWidth > 32 {
		errs = append(errs, fmt.Errorf("PCIe Gen%d x%d: want generation 1-7 and width 1-32", s.PCIeGen, s.PCIeWidth))
	}
	switch s.NVLinkTopology {
	case NVLinkNone:
	case NVLinkSwitch, NVLinkMesh, NVLinkPartial:
		if s.NVLinks < 1 || s.NVLinkLinkGBps <= 0 {
			errs = append(errs, fmt.Errorf("NVLink topology %s with %d links at %g GB/s", s.NVLinkTopology, s.NVLinks, s.NVLinkLinkGBps))
		}
	default:
		errs = append(errs, fmt.Errorf("NVLink topology %q: want none, switch, mesh or partial", s.NVLinkTopology))
	}
	if s.NVLS && s.NVLinkTopology != NVLinkSwitch {
		errs = append(errs, errors.New("NVLS needs NVSwitches"))
	}
	if _, _, err := level.Parse(s.GPUPath); err != nil || s.GPUPath == "X" || strings.HasPrefix(s.GPUPath, "NV") {
		errs = append(errs, fmt.Errorf("GPU path %q: want PIX, PXB, PHB, NODE or SYS", s.GPUPath))
	}
	if s.Nodes > 1 {
		if s.NICsPerNode < 1 || s.NICRateGbps <= 0 {
			errs = append(errs, fmt.Errorf("%d nodes need NICs: %d per node at %g Gb/s", s.Nodes, s.NICsPerNode, s.NICRateGbps))
		}
	}
	if s.NICsPerNode > 0 && (hw.PCIeGTs(s.NICPCIeGen) == 0 || s.NICPCIeWidth < 1) {
		errs = append(errs, fmt.Errorf("NIC PCIe Gen%d x%d: want generation 1-7 and a width", s.NICPCIeGen, s.NICPCIeWidth))
	}
	if s.InterSocketGBps <= 0 {
		errs = append(errs, errors.New("inter-socket bandwidth must be positive"))
	}
	if s.HostMemGBps < 0 {
		errs = append(errs, errors.New("host memory bandwidth must not be negative"))
	}
	return errors.Join(errs...)
}

// Params describe a system from the command line. Zero values take the
// GPU's datasheet defaults; the pointers are "not given" when nil.
type Params struct {
	GPU         string
	Nodes       int
	GPUsPerNode int
	NICsPerNode int
	NICRateGbps float64
	NICLayer    string // InfiniBand (default) or Ethernet
	// NVLinks overrides the datasheet's link count (e.g. a degraded GPU).
	NVLinks        int
	NVLinkTopology string // "" derives it from the GPU
	NVLS           *bool  // nil: on where the GPU and NVSwitches support it
	SHARP          bool
	PCIeGen        int
	PCIeWidth      int
	GPUPath        string // "" derives it: NODE up to 4 GPUs, SYS above
	GDR            *bool  // nil: on
	NICShares      *bool  // nil: on (HGX layout: a NIC under each GPU's switch)
	InterSocket    float64
	HostMemGBps    float64
}

// NewSystem builds a system from parameters and the GPU table.
func NewSystem(p Params) (System, error) {
	spec, err := hw.LookupGPU(p.GPU)
	if err != nil {
		return System{}, err
	}
	s := System{GPU: spec.Key, GPUName: spec.Name, Nodes: p.Nodes, GPUsPerNode: p.GPUsPerNode,
		Arch: spec.Arch, ComputeCap: spec.ComputeCap, MemGBps: spec.MemGBps,
		NVLinkGen: spec.NVLinkGen, NVLinks: spec.NVLinks, NVLinkLinkGBps: spec.NVLinkLinkGBps,
		PCIeGen: spec.PCIeGen, PCIeWidth: spec.PCIeWidth,
		NICsPerNode: p.NICsPerNode, NICRateGbps: p.NICRateGbps, NICLinkLayer: "InfiniBand",
		NICPCIeGen: 5, NICPCIeWidth: 16, GDR: true, NICSharesSwitch: true,
		InterSocketGBps: interSocketDefault, HostMemGBps: p.HostMemGBps, SHARP: p.SHARP, Source: "flags"}
	if s.Nodes == 0 {
		s.Nodes = 1
	}
	if s.GPUsPerNode == 0 {
		s.GPUsPerNode = 8
	}
	if p.NICLayer != "" {
		switch strings.ToLower(p.NICLayer) {
		case "ib", "infiniband":
			s.NICLinkLayer = "InfiniBand"
		case "eth", "ethernet", "roce":
			s.NICLinkLayer = "Ethernet"
		default:
			return System{}, fmt.Errorf("NIC link layer %q: want InfiniBand or Ethernet", p.NICLayer)
		}
	}
	if p.NVLinks > 0 {
		if spec.NVLinks == 0 {
			return System{}, fmt.Errorf("%s has no NVLink", spec.Name)
		}
		s.NVLinks = p.NVLinks
	}
	if p.PCIeGen > 0 {
		s.PCIeGen = p.PCIeGen
	}
	if p.PCIeWidth > 0 {
		s.PCIeWidth = p.PCIeWidth
	}
	// A NIC of the GPU's generation, at least Gen4 x16 (ConnectX-6/7 class).
	s.NICPCIeGen = max(4, s.PCIeGen)
	if p.InterSocket > 0 {
		s.InterSocketGBps = p.InterSocket
	}
	if p.GDR != nil {
		s.GDR = *p.GDR
	}
	if p.NICShares != nil {
		s.NICSharesSwitch = *p.NICShares
	}
	topo := p.NVLinkTopology
	switch {
	case topo != "":
	case s.NVLinks == 0 || s.GPUsPerNode == 1:
		topo = NVLinkNone
	case spec.NVSwitchBoard && !spec.NVLinkBridge && s.GPUsPerNode > 4:
		topo = NVLinkSwitch
	case spec.NVLinkBridge && s.GPUsPerNode > 2:
		topo = NVLinkPartial // bridges join pairs of cards
	default:
		topo = NVLinkMesh
	}
	s.NVLinkTopology = topo
	if topo == NVLinkNone {
		s.NVLinks = 0
	}
	s.NVLinkPairLinks = datasheetPairLinks(topo, s.NVLinks, s.GPUsPerNode)
	if topo == NVLinkMesh && s.NVLinkPairLinks == 0 {
		return System{}, fmt.Errorf("%d NVLinks cannot join each of %d GPUs to every other", s.NVLinks, s.GPUsPerNode)
	}
	s.NVLS = spec.NVLS && topo == NVLinkSwitch
	if p.NVLS != nil {
		if *p.NVLS && !(spec.NVLS && topo == NVLinkSwitch) {
			return System{}, fmt.Errorf("NVLS needs a Hopper or newer SXM GPU on NVSwitches (have %s, NVLink %s)", spec.Name, topo)
		}
		s.NVLS = *p.NVLS
	}
	s.GPUPath = p.GPUPath
	if s.GPUPath == "" {
		s.GPUPath = "NODE"
		if s.GPUsPerNode > 4 {
			s.GPUPath = "SYS"
		}
	}
	s.GPUPath = strings.ToUpper(s.GPUPath)
	if s.Nodes > 1 && s.NICsPerNode == 0 {
		hint := ""
		if s.GPUsPerNode > nvlsBaseboardGPUs {
			hint = fmt.Sprintf(" (a node here is the NVLink domain of %d GPUs: its NICs are those of all its trays, e.g. one per GPU, --nics-per-node %d)", s.GPUsPerNode, s.GPUsPerNode)
		}
		return System{}, fmt.Errorf("%d nodes need NICs: give --nics-per-node and --nic-rate%s", s.Nodes, hint)
	}
	if s.GPUsPerNode > nvlsBaseboardGPUs && s.NVLinkTopology == NVLinkSwitch {
		s.Notes = append(s.Notes, fmt.Sprintf("%d GPUs in one NVLink domain: a rack-scale system (NVL72-class), where a \"node\" is the NVLink domain and its NICs those of all its trays; NVLS there is scaled by %.3g, calibrated on one GB200 NVL72 rack", s.GPUsPerNode, nvlsDomainEfficiency))
	}
	if s.NICsPerNode > 0 && s.NICRateGbps == 0 {
		return System{}, errors.New("NICs need a rate (--nic-rate, Gb/s)")
	}
	return s, s.Validate()
}

// datasheetPairLinks are the links joining a GPU pair when only the count
// per GPU is known: all of them through NVSwitches or a bridge, an equal
// share for each peer in a mesh.
func datasheetPairLinks(topo string, links, gpus int) int {
	switch topo {
	case NVLinkSwitch, NVLinkPartial:
		return links
	case NVLinkMesh:
		return links / max(1, gpus-1)
	}
	return 0
}

// WhatIf changes a system the way a fault or a setting would.
type WhatIf struct {
	GDROff     bool // NCCL stages network traffic through host memory
	RemoteNIC  bool // the rails sit on the other CPU socket
	HalfRails  bool // half the NICs of every node are down
	Downtrain  *PCIeLink
	SHARP      *bool // SHARP on or off
	NVLinkDown int   // NVLinks lost on (at least) one GPU
}

// PCIeLink is a PCIe generation and width.
type PCIeLink struct {
	Gen, Width int
}

func (l PCIeLink) String() string { return fmt.Sprintf("Gen%d x%d", l.Gen, l.Width) }

// ParsePCIeLink reads "gen4x8", "4x16", "Gen3 x16" or "x8" (width only:
// the generation is kept).
func ParsePCIeLink(s string) (PCIeLink, error) {
	t := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	t = strings.TrimPrefix(t, "gen")
	g, w, ok := strings.Cut(t, "x")
	var l PCIeLink
	if !ok {
		return l, fmt.Errorf("PCIe link %q: want GENxWIDTH, e.g. gen4x8 or x8", s)
	}
	if g != "" {
		if _, err := fmt.Sscanf(g, "%d", &l.Gen); err != nil || hw.PCIeGTs(l.Gen) == 0 || fmt.Sprint(l.Gen) != g {
			return l, fmt.Errorf("PCIe link %q: generation %q not 1-7", s, g)
		}
	}
	if _, err := fmt.Sscanf(w, "%d", &l.Width); err != nil || fmt.Sprint(l.Width) != w || !validWidth(l.Width) {
		return l, fmt.Errorf("PCIe link %q: width %q not 1, 2, 4, 8, 16 or 32", s, w)
	}
	return l, nil
}

func validWidth(w int) bool {
	switch w {
	case 1, 2, 4, 8, 16, 32:
		return true
	}
	return false
}

// Apply returns the system with the what-ifs applied and a line for each.
func (s System) Apply(w WhatIf) (System, []string, error) {
	out := s
	out.Notes = append([]string(nil), s.Notes...)
	var said []string
	if w.GDROff && out.GDR {
		out.GDR = false
		said = append(said, "GDR off: network traffic is staged through host memory over each GPU's PCIe link")
	}
	if w.RemoteNIC && !out.NICRemoteSocket {
		out.NICRemoteSocket = true
		out.GDR = false
		said = append(said, fmt.Sprintf("NICs on the remote socket: traffic crosses the CPU interconnect (%g GB/s) and NCCL, by default, gives up GDR beyond PXB", out.InterSocketGBps))
	}
	if w.HalfRails {
		if out.NICsPerNode < 2 {
			return s, nil, fmt.Errorf("half the rails down: the node has %d NIC(s)", out.NICsPerNode)
		}
		out.NICsPerNode /= 2
		said = append(said, fmt.Sprintf("half the rails down: %d NICs per node left, shared by %d GPUs", out.NICsPerNode, out.GPUsPerNode))
	}
	if w.Downtrain != nil {
		l := *w.Downtrain
		if l.Gen == 0 {
			l.Gen = out.PCIeGen
		}
		if l.Gen > out.PCIeGen || l.Width > out.PCIeWidth {
			return s, nil, fmt.Errorf("downtrained link %s is not below the GPU's Gen%d x%d", l, out.PCIeGen, out.PCIeWidth)
		}
		out.PCIeGen, out.PCIeWidth = l.Gen, l.Width
		said = append(said, fmt.Sprintf("a GPU's PCIe link downtrained to %s: copies to and from that GPU, its GDR path and any PCIe ring slow to it, and collectives wait for the slowest GPU", l))
	}
	if w.NVLinkDown > 0 {
		if out.NVLinks == 0 {
			return s, nil, errors.New("NVLinks down: the system has no NVLink")
		}
		if w.NVLinkDown >= out.NVLinks {
			return s, nil, fmt.Errorf("%d NVLinks down of %d: nothing left", w.NVLinkDown, out.NVLinks)
		}
		out.NVLinks -= w.NVLinkDown
		if out.NVLinkTopology == NVLinkSwitch || out.NVLinkTopology == NVLinkPartial {
			out.NVLinkPairLinks = out.NVLinks
		} else {
			out.NVLinkPairLinks = max(1, out.NVLinkPairLinks-w.NVLinkDown)
		}
		said = append(said, fmt.Sprintf("%d NVLink(s) down on a GPU: %d left; collectives wait for that GPU", w.NVLinkDown, out.NVLinks))
	}
	if w.SHARP != nil && *w.SHARP != out.SHARP {
		out.SHARP = *w.SHARP
		if out.SHARP {
			said = append(said, "SHARP on: the switches reduce (CollNet); each node sends its data once")
		} else {
			said = append(said, "SHARP off")
		}
	}
	return out, said, out.Validate()
}

// InDomain models s, one host (a tray) of a rack-scale NVLink domain of
// gpus GPUs (a GB200 NVL72 tray has 4 of its 72), as that domain: the
// node becomes the domain, with the GPUs and NICs of all its trays
// (gpus/GPUsPerNode of them, each like this one). The host's GPUs must
// reach their peers through NVSwitches. gpus no more than the host's
// leaves s as it is.
func (s System) InDomain(gpus int) (System, error) {
	g := s.GPUsPerNode
	if gpus <= g {
		return s, nil
	}
	if s.NVLinkTopology != NVLinkSwitch {
		return s, fmt.Errorf("an NVLink domain of %d GPUs needs NVSwitches; this host's GPUs are on NVLink %s", gpus, s.NVLinkTopology)
	}
	if gpus%g != 0 {
		return s, fmt.Errorf("an NVLink domain of %d GPUs is not a whole number of hosts of %d", gpus, g)
	}
	trays := gpus / g
	s.GPUsPerNode = gpus
	s.NICsPerNode *= trays
	var notes []string
	for _, n := range s.Notes {
		if !strings.HasPrefix(n, trayNote) { // answered now
			notes = append(notes, n)
		}
	}
	s.Notes = append(notes, fmt.Sprintf("modelled as one NVLink domain of %d GPUs: %d hosts like this one, their NICs together (%d)", gpus, trays, s.NICsPerNode))
	return s, s.Validate()
}

// WithNVLS turns NVLink SHARP on or off; on needs an NVLS-capable GPU on
// NVSwitches.
func (s System) WithNVLS(on bool) (System, error) {
	if on {
		spec, ok := hw.GPUByKey(s.GPU)
		if !ok || !spec.NVLS || s.NVLinkTopology != NVLinkSwitch {
			return s, fmt.Errorf("NVLS needs a Hopper or newer SXM GPU on NVSwitches (have %s, NVLink %s)", s.GPUName, s.NVLinkTopology)
		}
	}
	s.NVLS = on
	return s, nil
}

// FromHost describes one node as discovered (nodes = 1; set Nodes to
// extrapolate a cluster of identical nodes). It takes the GPU model from
// the driver's name (else the PCI device ID), NVLink from the driver's
// active links, each GPU's PCIe link at its maximum speed and current width
// (an idle GPU drops its speed, never its width), and the rails from the
// GPU→NIC pairing.
func FromHost(h *topology.Host) (System, error) {
	if h == nil || len(h.GPUs) == 0 {
		return System{}, errors.New("no NVIDIA GPU on this host: nothing to predict")
	}
	var spec hw.GPU
	var ok bool
	first := h.GPUs[0]
	if spec, ok = hw.GPUByName(first.Name); !ok && first.Dev != nil {
		spec, ok = hw.GPUByDevice(first.Dev.DeviceID)
	}
	if !ok {
		name := first.Name
		if name == "" && first.Dev != nil {
			name = fmt.Sprintf("PCI device 10de:%04x", first.Dev.DeviceID)
		}
		return System{}, fmt.Errorf("GPU %q is not in the model's table: describe it with --gpu", name)
	}
	s := System{GPU: spec.Key, GPUName: spec.Name, Nodes: 1, GPUsPerNode: len(h.GPUs),
		Arch: spec.Arch, ComputeCap: spec.ComputeCap, MemGBps: spec.MemGBps,
		NVLinkGen: spec.NVLinkGen, NVLinkLinkGBps: spec.NVLinkLinkGBps,
		InterSocketGBps: interSocketDefault, Source: "host " + h.Root}
	if first.Name != "" {
		s.GPUName = first.Name
	}
	note := func(f string, a ...any) { s.Notes = append(s.Notes, fmt.Sprintf(f, a...)) }
	for _, g := range h.GPUs[1:] {
		if g.Name != first.Name {
			note("mixed GPUs (%s and %s): predicted for %s", first.Name, g.Name, spec.Name)
			break
		}
	}
	// A tray of a rack-scale NVLink domain (GB200/GB300 NVL72) says so in
	// its GPUs' fabric registration; how many GPUs the domain has it does
	// not say, so the model keeps the host as it is and says what to give.
	if cluster := multiNodeCluster(h); cluster != "" && s.GPUsPerNode <= nvlsBaseboardGPUs {
		note(trayNote+" (cluster %s): this host is one tray of a rack-scale NVLink domain, modelled here as a node of its own over the network; give --nvlink-domain N (72 for an NVL72 rack) to model the domain", cluster)
	}

	// PCIe: the slowest GPU bounds every collective.
	s.PCIeGen, s.PCIeWidth = 0, 0
	for _, g := range h.GPUs {
		gen, width := gpuLink(g, spec)
		if s.PCIeGen == 0 || gen < s.PCIeGen || (gen == s.PCIeGen && width < s.PCIeWidth) {
			s.PCIeGen, s.PCIeWidth = gen, width
		}
	}
	if s.PCIeGen < spec.PCIeGen || s.PCIeWidth < spec.PCIeWidth {
		note("PCIe Gen%d x%d on the slowest GPU, below the datasheet's Gen%d x%d: predictions use the link as found", s.PCIeGen, s.PCIeWidth, spec.PCIeGen, spec.PCIeWidth)
	}

	// NVLink.
	s.NVLinkTopology = NVLinkNone
	known := true
	for _, g := range h.GPUs {
		known = known && g.NVLinkKnown
	}
	switch {
	case spec.NVLinks == 0:
	case !known && len(h.GPUs) > 1:
		// The driver could not say: assume the datasheet, and say so.
		s.NVLinks = spec.NVLinks
		s.NVLinkTopology = NVLinkMesh
		if spec.NVSwitchBoard && len(h.GPUs) > 4 {
			s.NVLinkTopology = NVLinkSwitch
		}
		s.NVLinkPairLinks = datasheetPairLinks(s.NVLinkTopology, s.NVLinks, len(h.GPUs))
		note("NVLink state not reported by the driver: assumed the datasheet's %d links per GPU, %s", spec.NVLinks, s.NVLinkTopology)
	case known:
		active := -1
		var short []string
		toSwitch := false
		for _, g := range h.GPUs {
			n := 0
			for _, l := range g.NVLinks {
				if l.Active {
					n++
					toSwitch = toSwitch || l.RemoteType == "nvswitch"
				}
			}
			if active < 0 || n < active {
				active = n
			}
			if n < spec.NVLinks {
				short = append(short, fmt.Sprintf("GPU%d %d/%d", g.Index, n, spec.NVLinks))
			}
		}
		if active == 0 && len(h.GPUs) > 1 {
			note("no NVLink active on at least one GPU (the datasheet has %d per GPU): predictions use PCIe between GPUs", spec.NVLinks)
		}
		if len(short) > 0 && active > 0 {
			note("NVLinks active below the datasheet's %d: %s; predictions use the fewest (%d), a healthy GPU has %d", spec.NVLinks, strings.Join(short, ", "), active, spec.NVLinks)
		}
		if len(h.GPUs) > 1 && active > 0 {
			s.NVLinks = active
			minPair, allPairs := -1, true
			for i, a := range h.GPUs {
				for _, b := range h.GPUs[i+1:] {
					n := topology.NVLinksBetween(a, b)
					if n <= 0 {
						allPairs = false
						continue
					}
					if minPair < 0 || n < minPair {
						minPair = n
					}
				}
			}
			switch {
			case toSwitch && (len(h.NVSwitches) > 0 || allPairs):
				s.NVLinkTopology = NVLinkSwitch
				s.NVLinkPairLinks = s.NVLinks
			case minPair > 0 && allPairs:
				s.NVLinkTopology = NVLinkMesh
				s.NVLinkPairLinks = minPair
			case minPair > 0:
				s.NVLinkTopology = NVLinkPartial
				s.NVLinkPairLinks = minPair
			}
		} else if len(h.GPUs) == 1 && active == 0 && spec.NVLinks > 0 {
			note("NVLink inactive on the only GPU (does not matter for one GPU)")
		}
	default:
		note("NVLink state not reported by the driver; with one GPU it does not matter")
	}
	if s.NVLinkTopology == NVLinkNone {
		s.NVLinks, s.NVLinkPairLinks = 0, 0
	}
	s.NVLS = spec.NVLS && s.NVLinkTopology == NVLinkSwitch && s.GPUsPerNode > 1

	// The farthest PCIe relation between two GPUs.
	worst := level.PIX
	for i, a := range h.GPUs {
		for _, b := range h.GPUs[i+1:] {
			if r := h.PCIeRelation(a.Dev, b.Dev); r.Level > worst && r.Level != level.Unknown {
				worst = r.Level
			}
		}
	}
	s.GPUPath = worst.String()

	// Rails from the pairing: active ports only, the slowest bounds a ring.
	p := h.Pairing()
	seen := map[string]bool{}
	var down []string
	allGDR, remote, shares := true, false, true
	for _, e := range p.GPUs {
		if e.NIC == "" {
			allGDR, shares = false, false
			continue
		}
		if !e.GDR {
			allGDR = false
		}
		if e.Level == level.SYS {
			remote = true
		}
		if e.Level > level.PXB {
			shares = false
		}
		if seen[e.NIC] {
			continue
		}
		seen[e.NIC] = true
		if !strings.EqualFold(e.PortState, "ACTIVE") {
			state := strings.ToLower(e.PortState)
			if state == "" {
				state = "state unknown"
			}
			down = append(down, e.NIC+" ("+state+")")
			continue
		}
		s.NICsPerNode++
		if s.NICRateGbps == 0 || (e.RateGbps > 0 && e.RateGbps < s.NICRateGbps) {
			s.NICRateGbps = e.RateGbps
		}
		if s.NICLinkLayer == "" {
			s.NICLinkLayer = e.LinkLayer
		}
		if n := h.NICByName(e.NIC); n != nil && n.Dev != nil {
			gen, width := n.Dev.Link.MaxSpeed.Gen(), n.Dev.Link.CurWidth
			if width == 0 {
				width = n.Dev.Link.MaxWidth
			}
			if gen == 0 {
				gen = 4
			}
			if width == 0 {
				width = 16
			}
			if s.NICPCIeGen == 0 || gen < s.NICPCIeGen || (gen == s.NICPCIeGen && width < s.NICPCIeWidth) {
				s.NICPCIeGen, s.NICPCIeWidth = gen, width
			}
		}
	}
	if len(down) > 0 {
		note("rail NICs not active: %s; predictions use the %d active", strings.Join(down, ", "), s.NICsPerNode)
	}
	if s.NICsPerNode > 0 {
		s.GDR = allGDR
		s.NICSharesSwitch = shares && allGDR
		s.NICRemoteSocket = remote
		if !allGDR {
			note("not every GPU has a NIC within PXB: NCCL stages network traffic through host memory (GDR off)")
		}
		if remote {
			note("rail NICs on the other socket from their GPUs: network traffic crosses the CPU interconnect (%g GB/s assumed)", s.InterSocketGBps)
		}
		if s.NICRateGbps == 0 {
			note("NIC rate unknown: no network prediction")
			s.NICsPerNode = 0
		}
	} else if len(h.NICs) == 0 {
		note("no RDMA NIC: one node only")
	}
	return s, s.Validate()
}

// gpuLink is a GPU's PCIe link as the model uses it: the maximum speed both
// the GPU and its slot can do (the driver's max generation, else sysfs of
// the GPU and its upstream port), at the current width.
func gpuLink(g *topology.GPU, spec hw.GPU) (int, int) {
	gen, width := 0, 0
	if g.Facts != nil && g.Facts.PCIe.MaxGen != nil {
		gen = *g.Facts.PCIe.MaxGen
	}
	if g.Dev != nil {
		if sg := g.Dev.Link.MaxSpeed.Gen(); sg > 0 && (gen == 0 || sg < gen) {
			gen = sg
		}
		if up := g.Dev.ParentDevice(); up != nil {
			if ug := up.Link.MaxSpeed.Gen(); ug > 0 && ug < gen {
				gen = ug
			}
		}
		width = g.Dev.Link.CurWidth
		if width == 0 {
			width = g.Dev.Link.MaxWidth
		}
	}
	if width == 0 && g.Facts != nil && g.Facts.PCIe.CurWidth != nil {
		width = *g.Facts.PCIe.CurWidth
	}
	if gen == 0 {
		gen = spec.PCIeGen
	}
	if width == 0 {
		width = spec.PCIeWidth
	}
	return gen, width
}

// sig rounds to 6 significant digits: outputs stay readable and stable
// without losing small values (a 8-byte algbw is 5e-4 GB/s).
func sig(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	e := math.Pow(10, 5-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*e) / e
}

// trayNote opens the note of a host whose NVLink fabric spans nodes.
const trayNote = "the GPUs' NVLink fabric spans nodes"

// multiNodeCluster is the NVLink fabric cluster every GPU of h registered
// in when it spans nodes (the fabric manager's cluster UUID), "" when any
// GPU's registration is unknown or local.
func multiNodeCluster(h *topology.Host) string {
	cluster := ""
	for _, g := range h.GPUs {
		if g.Facts == nil || !g.Facts.Fabric.MultiNode() {
			return ""
		}
		if cluster != "" && g.Facts.Fabric.ClusterUUID != cluster {
			return ""
		}
		cluster = g.Facts.Fabric.ClusterUUID
	}
	return cluster
}
