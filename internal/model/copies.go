package model

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/internal/hw"
)

// CopyTest names a copy or perftest benchmark.
type CopyTest string

// Copy benchmarks (nvbandwidth/bandwidthTest style) and perftest.
const (
	CopyDeviceLocal    CopyTest = "device_local_copy"        // HBM: read + write counted
	CopyH2DPinned      CopyTest = "host_to_device_pinned"    // one GPU, pinned host memory
	CopyD2HPinned      CopyTest = "device_to_host_pinned"    //
	CopyBidirPinned    CopyTest = "host_device_bidir_pinned" // each direction while the other runs
	CopyH2DPageable    CopyTest = "host_to_device_pageable"  // judged loosely
	CopyD2HPageable    CopyTest = "device_to_host_pageable"  // judged loosely
	CopyP2PNVLink      CopyTest = "p2p_nvlink"               // one pair, one direction
	CopyP2PNVLinkBidir CopyTest = "p2p_nvlink_bidir"         // one pair, both directions summed
	CopyP2PPCIe        CopyTest = "p2p_pcie"                 // one pair without NVLink
	PerftestWriteCUDA  CopyTest = "ib_write_bw_cuda"         // perftest --use_cuda, one NIC
	PerftestWriteHost  CopyTest = "ib_write_bw_host"         // perftest, host memory, one NIC
)

// CopyExpectation is the expected bandwidth of a copy benchmark at large
// sizes.
type CopyExpectation struct {
	Test        CopyTest   `json:"test"`
	Description string     `json:"description"`
	GBps        float64    `json:"gbps"`
	Gbps        float64    `json:"gbit_s,omitempty"` // perftest --report_gbits
	Bottleneck  Bottleneck `json:"bottleneck"`
	Formula     string     `json:"formula"`
	// Loose: an estimate, judged with the loose margin only.
	Loose bool `json:"loose,omitempty"`
	// PeakGBps is the hardware limit the copy runs against, in the same
	// terms as GBps (HBM peak, or a link's raw rate per direction); zero
	// where no single limit applies. Limit names it.
	PeakGBps float64 `json:"peak_gbps,omitempty"`
	Limit    string  `json:"limit,omitempty"`
}

// Copies lists the copy and perftest expectations that apply.
func Copies(s System) ([]CopyExpectation, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return copies(newPaths(s)), nil
}

// copies is Copies on a validated system's paths.
func copies(p paths) []CopyExpectation {
	s := p.s
	var out []CopyExpectation
	add := func(t CopyTest, d string, v float64, by Bottleneck, f string, loose bool) {
		out = append(out, CopyExpectation{Test: t, Description: d, GBps: sig(v), Bottleneck: by, Formula: f, Loose: loose})
	}
	// limit sets the hardware limit of the expectation added last.
	limit := func(gbps float64, what string) {
		out[len(out)-1].PeakGBps, out[len(out)-1].Limit = sig(gbps), what
	}
	pcieRaw := hw.PCIeGBps(s.PCIeGen, s.PCIeWidth)
	pcieLimit := fmt.Sprintf("PCIe Gen%d x%d, %.1f GB/s per direction", s.PCIeGen, s.PCIeWidth, pcieRaw)
	add(CopyDeviceLocal, "device-to-device copy in one GPU's memory, read and write both counted", p.hbm.gbps, ByHBM,
		fmt.Sprintf("%s (peak × copy efficiency)", p.hbm), false)
	limit(s.MemGBps, fmt.Sprintf("memory peak %.0f GB/s", s.MemGBps))
	add(CopyH2DPinned, "host to device, pinned host memory", p.pcie.gbps, ByPCIe, p.pcie.String(), false)
	limit(pcieRaw, pcieLimit)
	add(CopyD2HPinned, "device to host, pinned host memory", p.pcie.gbps, ByPCIe, p.pcie.String(), false)
	limit(pcieRaw, pcieLimit)
	add(CopyBidirPinned, "host↔device at once, pinned, each direction", p.pcie.gbps*pcieBidirFactor, ByPCIe,
		fmt.Sprintf("%s × %.2f (both directions at once)", p.pcie, pcieBidirFactor), false)
	limit(pcieRaw, pcieLimit)
	staging := term{ByHostStaging, pageableStagingGBps, "staging (estimate)"}
	pg, pgText := minTerm(p.pcie, staging), boundText(p.pcie, staging)
	add(CopyH2DPageable, "host to device, pageable host memory", pg.gbps, pg.by, pgText, true)
	limit(pcieRaw, pcieLimit)
	add(CopyD2HPageable, "device to host, pageable host memory", pg.gbps, pg.by, pgText, true)
	limit(pcieRaw, pcieLimit)

	if s.GPUsPerNode > 1 {
		if s.NVLinkTopology != NVLinkNone {
			links := s.NVLinkPairLinks
			eff, bidir := ceEfficiencyOther, ceEfficiencyOther
			switch s.NVLinkGen {
			case 3:
				eff, bidir = ceEfficiencyNVLink3, ceEfficiencyNVLink3
			case 4:
				eff, bidir = ceEfficiencyNVLink4, ceBidirEfficiencyNVLink4
			}
			raw := float64(links) * s.NVLinkLinkGBps
			add(CopyP2PNVLink, "GPU→GPU copy over NVLink, one pair, one direction (copy engine)", raw*eff, ByNVLink,
				fmt.Sprintf("%d links × %g GB/s × %.3f (copy-engine efficiency, NVLink%d)", links, s.NVLinkLinkGBps, eff, s.NVLinkGen), false)
			limit(raw, fmt.Sprintf("NVLink %d links × %g GB/s per direction", links, s.NVLinkLinkGBps))
			add(CopyP2PNVLinkBidir, "GPU↔GPU copies over NVLink, one pair, both directions summed", 2*raw*bidir, ByNVLink,
				fmt.Sprintf("2 × %d links × %g GB/s × %.3f", links, s.NVLinkLinkGBps, bidir), false)
			limit(2*raw, fmt.Sprintf("NVLink %d links × %g GB/s, both directions", links, s.NVLinkLinkGBps))
		}
		if s.NVLinkTopology == NVLinkNone || s.NVLinkTopology == NVLinkPartial {
			pp := p.intra
			add(CopyP2PPCIe, fmt.Sprintf("GPU→GPU copy over PCIe (%s), one pair", s.GPUPath), pp.gbps, pp.by, pp.String(), false)
		}
	}

	if s.NICsPerNode > 0 {
		eff := perftestIBEfficiency
		if s.NICLinkLayer == "Ethernet" {
			eff = perftestEthernetEfficiency
		}
		wire := term{ByNIC, s.NICRateGbps / 8 * eff, fmt.Sprintf("NIC %g Gb/s / 8 × %.3f (perftest, %s) =", s.NICRateGbps, eff, s.NICLinkLayer)}
		host := minTerm(wire, p.nicPCIe)
		out = append(out, CopyExpectation{Test: PerftestWriteHost, Description: "ib_write_bw, host memory, one NIC", GBps: sig(host.gbps),
			Gbps: sig(host.gbps * 8), Bottleneck: host.by, Formula: boundText(wire, p.nicPCIe)})
		// With --use_cuda the NIC reads and writes GPU memory over the
		// GPU↔NIC PCIe path: through a shared switch when GDR-close, else
		// turned around in the CPU (and across sockets when remote).
		gpu := p.pcie
		where := "through the shared PCIe switch"
		if !s.GDR || s.NICRemoteSocket {
			gpu = term{p.viaCPU.by, p.viaCPU.gbps, "GPU " + p.viaCPU.text}
			where = "through the CPU's root complex"
		}
		terms := []term{wire, p.nicPCIe, gpu}
		if s.NICRemoteSocket {
			terms = append(terms, term{ByCPULink, s.InterSocketGBps, "CPU interconnect"})
			where = "across the CPU interconnect"
		}
		cuda := minTerm(terms...)
		out = append(out, CopyExpectation{Test: PerftestWriteCUDA, Description: "ib_write_bw --use_cuda (GPU memory), one NIC and its GPU, path " + where,
			GBps: sig(cuda.gbps), Gbps: sig(cuda.gbps * 8), Bottleneck: cuda.by, Formula: boundText(terms...)})
	}
	return out
}

// ExpectCopy is one copy expectation.
func ExpectCopy(s System, t CopyTest) (CopyExpectation, error) {
	cs, err := Copies(s)
	if err != nil {
		return CopyExpectation{}, err
	}
	for _, c := range cs {
		if c.Test == t {
			return c, nil
		}
	}
	return CopyExpectation{}, fmt.Errorf("%s does not apply to this system", t)
}
