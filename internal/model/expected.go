package model

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/hw"
	"github.com/gdrcheck/gdrcheck/internal/profile"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// Want is what the site profile says a node must have; a zero field
// leaves that part to the catalogue or, where the catalogue has nothing
// (a NIC's rate), to the node as found.
type Want struct {
	GPUs int // gpus.count
	// Model is gpus.model, a part of the GPU's name ("H200"). It names
	// no one catalogue entry (H100 is SXM, PCIe or NVL), so the
	// expectation stays the GPU found's; a GPU whose name lacks it is a
	// deviation ("NVIDIA H100 80GB HBM3, not the profile's H200").
	Model       string
	NVLinks     int     // gpus.nvlinks
	PCIeGen     int     // gpus.pcie_gen
	PCIeWidth   int     // gpus.pcie_width
	NICs        int     // nics.count
	NICRateGbps float64 // nics.rate_gbps
	NICLayer    string  // nics.link_layer: InfiniBand or Ethernet
}

// WantOf is the part of a site profile that sets expectations (of
// benchmarks, of analyzed outputs, of the model's own report); nil: none.
// It is the one place a profile field becomes an expectation.
func WantOf(p *profile.Profile) Want {
	var w Want
	if p == nil {
		return w
	}
	if g := p.GPUs; g != nil {
		w.GPUs, w.Model, w.NVLinks, w.PCIeGen, w.PCIeWidth = g.Count, g.Model, g.NVLinks, g.PCIeGen, g.PCIeWidth
	}
	if n := p.NICs; n != nil {
		w.NICs, w.NICRateGbps, w.NICLayer = n.Count, n.RateGbps, n.LinkLayer
	}
	return w
}

// Basis is what a measurement is judged against: Should, the node as it
// should be (the catalogue's GPU and the site profile), and Found, the node
// as discovered, whose prediction explains a shortfall. Deviations name
// each way Found falls short of Should ("16 NVLinks", "PCIe x8", "7
// GPUs"); none: the two are the same hardware.
type Basis struct {
	Should     System   `json:"should"`
	Found      System   `json:"found"`
	Deviations []string `json:"deviations,omitempty"`
}

// Healthy is the Basis for found, one node of host h (h may be nil): the
// GPU's NVLink count and PCIe width from the catalogue (a profile's
// nvlinks, pcie_gen and pcie_width override it), the GPU count and the
// rails from the profile, else from the node as discovered counting rails
// whose port is down, and the NIC rate from the profile, else the fastest
// rail found. What the node is built as (GDR, the NIC's socket, the
// NVLink topology) is kept as found: those are design, not damage.
func Healthy(found System, h *topology.Host, w Want) Basis {
	s := found
	s.Notes = nil
	spec, known := hw.GPUByKey(found.GPU)
	if w.GPUs > s.GPUsPerNode {
		s.GPUsPerNode = w.GPUs
	}
	links := w.NVLinks
	if links == 0 && known {
		links = spec.NVLinks
	}
	if s.NVLinkTopology == NVLinkNone && known && spec.FormFactor == "SXM" && links > 0 && s.GPUsPerNode > 1 {
		// SXM GPUs always have their NVLinks (a baseboard's mesh or
		// NVSwitches): none active is damage (links or fabric down).
		s.NVLinkTopology = NVLinkMesh
		if spec.NVSwitchBoard && s.GPUsPerNode > 4 {
			s.NVLinkTopology = NVLinkSwitch
		}
		s.NVLinks = links
		s.NVLinkPairLinks = datasheetPairLinks(s.NVLinkTopology, links, s.GPUsPerNode)
	} else if s.NVLinkTopology != NVLinkNone && links > s.NVLinks {
		if s.NVLinkTopology == NVLinkSwitch || s.NVLinks == 0 {
			s.NVLinkPairLinks = links
		} else {
			s.NVLinkPairLinks = max(s.NVLinkPairLinks, (s.NVLinkPairLinks*links+s.NVLinks/2)/s.NVLinks)
		}
		s.NVLinks = links
	}
	// The generation as found is already the link's capability (its
	// maximum speed, bounded by the slot): only a profile raises it. The
	// width as found is the trained one: the catalogue's is the card's.
	s.PCIeGen = max(s.PCIeGen, w.PCIeGen)
	width := w.PCIeWidth
	if known {
		width = cmp.Or(width, spec.PCIeWidth)
	}
	s.PCIeWidth = max(s.PCIeWidth, width)
	rails, fastest := railsOf(h)
	s.NICsPerNode = max(s.NICsPerNode, w.NICs, rails)
	if w.NICRateGbps > 0 {
		s.NICRateGbps = w.NICRateGbps
	} else if fastest > s.NICRateGbps && s.NICsPerNode > 0 {
		s.NICRateGbps = fastest
	}
	if s.NICsPerNode > 0 && s.NICRateGbps <= 0 {
		s.NICsPerNode = 0 // no rate to predict with, as FromHost
	}
	s.NVLS = known && spec.NVLS && s.NVLinkTopology == NVLinkSwitch && s.GPUsPerNode > 1
	if s.Validate() != nil {
		s = found // a profile the model cannot use: judge as found
	}
	b := Basis{Should: s, Found: found}
	dev := func(ok bool, f string, a ...any) {
		if ok {
			b.Deviations = append(b.Deviations, fmt.Sprintf(f, a...))
		}
	}
	dev(found.GPUsPerNode < s.GPUsPerNode, "%d GPUs", found.GPUsPerNode)
	dev(found.NVLinks < s.NVLinks, "%d NVLinks", found.NVLinks)
	dev(found.PCIeGen < s.PCIeGen || found.PCIeWidth < s.PCIeWidth, "PCIe Gen%d x%d", found.PCIeGen, found.PCIeWidth)
	dev(found.NICsPerNode < s.NICsPerNode, "%d active rails", found.NICsPerNode)
	dev(found.NICsPerNode > 0 && found.NICRateGbps < s.NICRateGbps, "NICs at %g Gb/s", found.NICRateGbps)
	dev(w.Model != "" && !strings.Contains(strings.ToLower(found.GPUName), strings.ToLower(w.Model)), "%s, not the profile's %s", found.GPUName, w.Model)
	return b
}

// railsOf counts the NICs the pairing assigns to a GPU, active or not, and
// the fastest rate among them.
func railsOf(h *topology.Host) (int, float64) {
	if h == nil {
		return 0, 0
	}
	seen := map[string]bool{}
	fastest := 0.0
	for _, e := range h.Pairing().GPUs {
		if e.NIC == "" || seen[e.NIC] {
			continue
		}
		seen[e.NIC] = true
		fastest = max(fastest, e.RateGbps)
	}
	return len(seen), fastest
}

// Name is "8×H200 with 18 NVLinks", the hardware a Basis's Should
// describes, for a judgement's message.
func (s System) Name() string {
	n := fmt.Sprintf("%d×%s", s.GPUsPerNode, s.GPUName)
	if s.NVLinkTopology != NVLinkNone && s.NVLinks > 0 {
		n += fmt.Sprintf(" with %d NVLinks", s.NVLinks)
	} else {
		n += fmt.Sprintf(" on PCIe Gen%d x%d", s.PCIeGen, s.PCIeWidth)
	}
	if s.Nodes > 1 && s.NICsPerNode > 0 {
		n += fmt.Sprintf(", %d×%g Gb/s rails", s.NICsPerNode, s.NICRateGbps)
	}
	return n
}

// Source says where b.Should came from, for a document that names what it
// judged against: "catalogue", "catalogue + site profile FILE" (profile:
// the site profile's path, "" none), or the node as found where its GPU
// is not in the catalogue.
func (b Basis) Source(profile string) string {
	src := "catalogue"
	if _, ok := hw.GPUByKey(b.Found.GPU); !ok {
		src = fmt.Sprintf("the node as found (%s is not in the catalogue)", b.Found.GPUName)
	}
	if profile != "" {
		src += " + site profile " + profile
	}
	return src
}

// Explain is the as-found half of a judgement's message: "" when the node
// is as it should be, else "this node as found (16 NVLinks) would reach
// 400.0 GB/s".
func (b Basis) Explain(foundGBps float64) string {
	if len(b.Deviations) == 0 {
		return ""
	}
	return fmt.Sprintf("this node as found (%s) would reach %.1f GB/s", strings.Join(b.Deviations, ", "), foundGBps)
}
