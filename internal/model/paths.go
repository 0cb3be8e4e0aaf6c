package model

import (
	"fmt"
	"math"

	"github.com/gdrcheck/gdrcheck/internal/hw"
)

// Bottleneck names what limits a prediction.
type Bottleneck string

// Bottlenecks.
const (
	ByNVLink      Bottleneck = "NVLink"
	ByNIC         Bottleneck = "NIC"
	ByPCIe        Bottleneck = "PCIe"
	ByHBM         Bottleneck = "HBM"
	ByLatency     Bottleneck = "latency"
	ByCPULink     Bottleneck = "CPU interconnect"
	ByHostMemory  Bottleneck = "host memory"
	ByHostStaging Bottleneck = "host staging"
)

// term is one bandwidth bound: what it is, how much, and how it was had.
type term struct {
	by   Bottleneck
	gbps float64
	text string
}

func (t term) String() string { return fmt.Sprintf("%s %s", t.text, gb(t.gbps)) }

// minTerm is the tightest of some bounds (the first among equals).
func minTerm(ts ...term) term {
	best := term{gbps: math.Inf(1)}
	for _, t := range ts {
		if t.gbps < best.gbps {
			best = t
		}
	}
	return best
}

func gb(v float64) string {
	if math.IsInf(v, 1) {
		return "unbounded"
	}
	return fmt.Sprintf("%.1f GB/s", v)
}

// paths are the system's bandwidths, computed once.
type paths struct {
	s System
	n int // ranks

	intra   term // per GPU, ring/chain traffic inside a node (+Inf with one GPU)
	intraHW hop  // what NCCL's latency table charges per intra-node hop
	nvl     term // NCCL-effective NVLink per GPU; zero when no NVLink
	pair    term // one GPU pair inside a node (sendrecv)
	a2aPair term // one pair's direct links (mesh) for alltoall
	inter   term // per node, all rails (+Inf on one node)
	rail    term // one GPU's NIC path
	hbm     term // device copy, read+write counted
	pcie    term // one GPU's PCIe link, DMA
	viaCPU  term // pcie turned around in the CPU's root complex
	nicPCIe term // one NIC's PCIe link, DMA (zero without NICs)
	llMax   float64
	ll128   bool
}

func newPaths(s System) paths {
	p := paths{s: s, n: s.Ranks(), intraHW: hwPCI}
	g := s.GPUsPerNode
	p.pcie = term{ByPCIe, hw.PCIeGBps(s.PCIeGen, s.PCIeWidth) * pcieDMAEfficiency,
		fmt.Sprintf("PCIe Gen%d x%d %.1f GB/s × %.2f =", s.PCIeGen, s.PCIeWidth, hw.PCIeGBps(s.PCIeGen, s.PCIeWidth), pcieDMAEfficiency)}
	p.hbm = term{ByHBM, s.MemGBps * hbmCopyEfficiency, fmt.Sprintf("HBM %.0f GB/s × %.3f =", s.MemGBps, hbmCopyEfficiency)}
	if s.MemGBps < 1500 {
		p.hbm.text = fmt.Sprintf("memory %.0f GB/s × %.3f =", s.MemGBps, hbmCopyEfficiency)
	}

	p.viaCPU = term{ByPCIe, p.pcie.gbps * pcieViaCPUFactor, fmt.Sprintf("PCIe Gen%d x%d %.1f × %.2f × %.2f (through the CPU) =", s.PCIeGen, s.PCIeWidth, hw.PCIeGBps(s.PCIeGen, s.PCIeWidth), pcieDMAEfficiency, pcieViaCPUFactor)}

	// A PCIe path between two GPUs of the node.
	pcieP2P := p.pcie
	switch s.GPUPath {
	case "PHB", "NODE", "SYS":
		pcieP2P = p.viaCPU
	}
	if s.GPUPath == "SYS" {
		pcieP2P = minTerm(pcieP2P, term{ByCPULink, s.InterSocketGBps, "CPU interconnect"})
	}

	link := ncclNVLinkBW(s.ComputeCap)
	switch s.NVLinkTopology {
	case NVLinkSwitch:
		p.nvl = term{ByNVLink, float64(s.NVLinks) * link, fmt.Sprintf("NVLink %d × %.1f GB/s (NCCL) =", s.NVLinks, link)}
		p.intra, p.pair, p.a2aPair, p.intraHW = p.nvl, p.nvl, p.nvl, hwNVLink
	case NVLinkMesh:
		links := min(s.NVLinks, s.NVLinkPairLinks*(g-1))
		p.nvl = term{ByNVLink, float64(links) * link, fmt.Sprintf("NVLink %d × %.1f GB/s (NCCL) =", links, link)}
		p.intra, p.intraHW = p.nvl, hwNVLink
		p.pair = term{ByNVLink, float64(s.NVLinkPairLinks) * link, fmt.Sprintf("NVLink %d × %.1f GB/s (NCCL, one pair) =", s.NVLinkPairLinks, link)}
		p.a2aPair = p.pair
	case NVLinkPartial:
		// NVLink joins pairs; the ring crosses PCIe between them. NCCL runs
		// rings both ways round (e.g. Azure's NC A100 v4 graph file:
		// 0-1-2-3 and 0-3-2-1), so each GPU's PCIe link sends for one ring
		// and its NVLink for the other: twice the slower of the two.
		p.nvl = term{ByNVLink, float64(s.NVLinkPairLinks) * link, fmt.Sprintf("NVLink %d × %.1f GB/s (NCCL, bridged pair) =", s.NVLinkPairLinks, link)}
		hop := minTerm(pcieP2P, p.nvl)
		p.intra = term{hop.by, 2 * hop.gbps, fmt.Sprintf("2 rings × (%s) =", hop)}
		p.pair, p.a2aPair = pcieP2P, pcieP2P
		p.intraHW = hwPCI
	default:
		// No NVLink: every hop crosses PCIe, both rings share each link.
		p.intra, p.pair, p.a2aPair = pcieP2P, pcieP2P, pcieP2P
	}
	if g == 1 {
		inf := term{gbps: math.Inf(1)}
		p.intra, p.pair, p.a2aPair = inf, inf, inf
	}

	p.inter, p.rail = term{gbps: math.Inf(1)}, term{gbps: math.Inf(1)}
	if s.NICsPerNode > 0 {
		nic := s.NICRateGbps / 8 * ncclNetEfficiency
		nicT := term{ByNIC, nic, fmt.Sprintf("NIC %g Gb/s / 8 × %.2f =", s.NICRateGbps, ncclNetEfficiency)}
		p.nicPCIe = term{ByPCIe, hw.PCIeGBps(s.NICPCIeGen, s.NICPCIeWidth) * pcieDMAEfficiency,
			fmt.Sprintf("NIC PCIe Gen%d x%d × %.2f =", s.NICPCIeGen, s.NICPCIeWidth, pcieDMAEfficiency)}
		one := []term{nicT, p.nicPCIe, p.pcie}
		if !s.GDR && s.NICSharesSwitch {
			one = append(one, term{ByHostStaging, min(p.pcie.gbps, p.nicPCIe.gbps) / 2, "host staging: switch uplink carries GPU↔host and host↔NIC, (PCIe)/2 ="})
		}
		p.rail = minTerm(one...)
		nics := float64(s.NICsPerNode)
		all := []term{
			{p.rail.by, nics * p.rail.gbps, fmt.Sprintf("%d × (%s) =", s.NICsPerNode, p.rail.String())},
			{ByPCIe, float64(g) * p.pcie.gbps, fmt.Sprintf("%d GPU PCIe links × %.1f =", g, p.pcie.gbps)},
		}
		if s.NICRemoteSocket {
			x := term{ByCPULink, s.InterSocketGBps, "CPU interconnect"}
			all = append(all, x)
			p.rail = minTerm(p.rail, x)
		}
		if !s.GDR && s.HostMemGBps > 0 {
			all = append(all, term{ByHostMemory, s.HostMemGBps / 4, fmt.Sprintf("host memory %.0f GB/s / 4 (written and read once each way) =", s.HostMemGBps)})
		}
		p.inter = minTerm(all...)
	}
	if s.Nodes == 1 {
		p.inter = term{gbps: math.Inf(1)}
	}
	p.llMax = llMaxBW(s.ComputeCap, s.Nodes)
	p.ll128 = p.intraHW == hwNVLink && (s.Nodes == 1 || s.GDR) && s.ComputeCap >= 70
	if g == 1 {
		p.ll128 = s.GDR && s.ComputeCap >= 70
	}
	return p
}

// nvlsEfficiency is NCCL's, by architecture.
func (p paths) nvlsEfficiency() float64 {
	if p.s.ComputeCap >= 100 {
		return nvlsEfficiencyBlackwell
	}
	return nvlsEfficiencyHopper
}

// nvlsDomain is the rack-scale factor on NVLS (1 on a baseboard's domain
// of up to nvlsBaseboardGPUs GPUs) and its text for a formula.
func (p paths) nvlsDomain() (float64, string) {
	if p.s.GPUsPerNode <= nvlsBaseboardGPUs {
		return 1, ""
	}
	return nvlsDomainEfficiency, fmt.Sprintf(" × %.3g (NVLink domain of %d GPUs, beyond one baseboard: calibrated)", nvlsDomainEfficiency, p.s.GPUsPerNode)
}
