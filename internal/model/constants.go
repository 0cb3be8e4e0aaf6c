package model

import "strings"

// Every number the model uses that is not a formula lives here or in the
// GPU table (spec.go), each with where it comes from. Three kinds of
// provenance appear:
//
//   - datasheet: a vendor's published figure (a line rate, a peak);
//   - NCCL's tuning model: a constant NCCL itself uses to choose algorithms
//     (src/graph/tuning.cc and src/graph/topo.h of NVIDIA/nccl, read at
//     commit 5067397c, June 2026); these are facts about NCCL, copied as
//     numbers, not code;
//   - measured: a published measurement, named, used to set an
//     efficiency. A validation row that uses the same measurement is marked
//     "calibration" in docs/model.md: it is not independent evidence.
//
// Estimates with no single source say so and are judged loosely.

// Source strings shared by the constants below and printed in docs/JSON.
const (
	srcNCCLTuning = "NCCL tuning model, src/graph/tuning.cc (NVIDIA/nccl 5067397c)"
	srcNCCLTopo   = "NCCL topology model, src/graph/topo.h (NVIDIA/nccl 5067397c)"
)

// NCCL's effective NVLink bandwidth per link and direction, GB/s, by
// compute capability (topo.h SM60..SM100_NVLINK_BW). NCCL's maintainers
// describe it as the line rate less ~20% protocol overhead ("450GB/s is the
// line rate ... NCCL can get an effective NVLink bandwidth of 370GB/s",
// NVIDIA/nccl-tests#212; "25GB/s ... converts to ~20GB/s effective
// bandwidth with a 128B payload size", NVIDIA/nccl-tests#149). The model
// uses it for every NCCL collective over NVLink.
const (
	ncclNVLinkBWSM60  = 18.0
	ncclNVLinkBWSM70  = 20.0
	ncclNVLinkBWSM80  = 20.0
	ncclNVLinkBWSM86  = 12.0
	ncclNVLinkBWSM90  = 20.6
	ncclNVLinkBWSM100 = 40.1
)

// ncclNVLinkBW is topo.h's ncclTopoNVLinkBw: effective GB/s per NVLink.
func ncclNVLinkBW(cc int) float64 {
	switch {
	case cc >= 100:
		return ncclNVLinkBWSM100
	case cc >= 90:
		return ncclNVLinkBWSM90
	case cc == 86:
		return ncclNVLinkBWSM86
	case cc >= 80:
		return ncclNVLinkBWSM80
	case cc >= 70:
		return ncclNVLinkBWSM70
	case cc >= 60:
		return ncclNVLinkBWSM60
	}
	return ncclNVLinkBWSM80
}

// NVLS (NVLink SHARP) efficiency, tuning.cc nvlsEfficiency: Hopper 0.85,
// Blackwell 0.74 (0 before Hopper: no NVLS).
const (
	nvlsEfficiencyHopper    = 0.85
	nvlsEfficiencyBlackwell = 0.74
)

// nvlsMultiNodeEfficiency scales the NVLS stage when NVLS is combined with
// the network (NVLS-tree, or NVLS with SHARP). Calibrated: 2-node HGX H100
// NVLS-tree runs reach busbw 469 GB/s (Dell XE9680, NVIDIA/nccl-tests#309,
// confirmed good by the maintainers) and 487 GB/s (AWS p5,
// aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests),
// algbw 250-260 GB/s against 275 GB/s on one node. The 4-node SHARP figure
// in docs/model.md is an independent check.
const nvlsMultiNodeEfficiency = 0.92

// nvlsDomainEfficiency scales NVLS in an NVLink domain of more than
// nvlsBaseboardGPUs GPUs (a rack-scale domain such as GB200 NVL72, where
// the NVSwitches sit in switch trays joined to the GPUs' trays by the
// rack's spine rather than on one baseboard). Calibrated: one GB200 NVL72
// rack, 72 GPUs, reaches busbw 834.57 GB/s at 8 GiB (coreweave/nccl-tests
// README, NCCL 2.26.2) where the one-baseboard NVLS formula gives 1037.4;
// the two-rack run of the same README (810.41 GB/s, 144 GPUs) is held out.
const nvlsDomainEfficiency = 0.805

// nvlsBaseboardGPUs is the largest NVLink domain the one-node NVLS figures
// (HGX H100/H200/B200, 8 GPUs) were measured on: beyond it the domain is
// rack-scale and nvlsDomainEfficiency applies.
const nvlsBaseboardGPUs = 8

// Tree and protocol refinements of tuning.cc (ncclTopoTuneModel).
const (
	treeAllReduceEfficiency = 0.92      // "busBw * .92" for Tree AllReduce
	ringLLFactor            = 0.5       // Ring LL: half the bandwidth (8-byte lines carry 4 bytes of data)
	ringLL128Factor         = 0.92      // Ring LL128: "busBw * 0.92 /*120.0/128.0*/"
	treeLLFactor            = 1.0 / 3.8 // Tree LL
	treeLL128FactorOneNode  = 7.0 / 9.0 // Tree LL128, one node
	treeLL128FactorNodes    = 120.0 / 128.0
	collNetArityLatencyUS   = 0.4 // CollNet Direct: "0.4 us arity serialization latency"
	netOverheadIntelUS      = 1.0 // getNetOverhead(): x86 Intel 1 us, AMD 2 us; tripled for Simple
	netOverheadSimpleFactor = 3.0
)

// llMaxBW is tuning.cc's llMaxBws cap on LL bandwidth (busBw GB/s): by GPU
// generation on one node, by CPU (Intel assumed) on several.
func llMaxBW(cc, nodes int) float64 {
	if nodes > 1 {
		// Row 0 ("Volta-N1/Intel-N2/Intel-N4"): the CPU decides off-node.
		if nodes == 2 {
			return 39.0
		}
		return 20.4
	}
	switch {
	case cc >= 100:
		return 2 * 141.0
	case cc >= 90:
		return 141.0
	case cc >= 80:
		return 87.7
	}
	return 39.0
}

// proto is an NCCL protocol.
type proto int

const (
	protoLL proto = iota
	protoLL128
	protoSimple
)

func (p proto) String() string { return [...]string{"LL", "LL128", "Simple"}[p] }

// ncclAlgo indexes NCCL's latency tables.
type ncclAlgo int

const (
	algoTree ncclAlgo = iota
	algoRing
	algoCollNetDirect
	algoCollNetChain
	algoNVLS
	algoNVLSTree
)

// baseLatUS is tuning.cc's baseLatencies (µs), [algorithm][LL, LL128, Simple].
var baseLatUS = [...][3]float64{
	algoTree:          {6.8, 14.0, 8.4},
	algoRing:          {6.6, 14.0, 8.4},
	algoCollNetDirect: {0, 0, 0},
	algoCollNetChain:  {0, 0, 0},
	algoNVLS:          {0, 0, 0},
	algoNVLSTree:      {0, 0, 0},
}

// hop is the kind of hop a latency is paid on.
type hop int

const (
	hwNVLink hop = iota
	hwPCI
	hwNet
)

// hwLatUS is tuning.cc's hwLatencies (µs), [hop][algorithm][LL, LL128, Simple].
var hwLatUS = [...][6][3]float64{
	hwNVLink: {
		algoTree: {0.6, 1.25, 4.0}, algoRing: {0.6, 1.9, 3.4},
		algoCollNetDirect: {0, 0, 3.7}, algoCollNetChain: {0, 0, 2.8},
		algoNVLS: {0, 0, 25}, algoNVLSTree: {0, 0, 25},
	},
	hwPCI: {
		algoTree: {1.0, 1.9, 4.0}, algoRing: {1.0, 2.5, 5.7},
		algoCollNetDirect: {0, 0, 3.7}, algoCollNetChain: {0, 0, 2.8},
		algoNVLS: {0, 0, 0}, algoNVLSTree: {0, 0, 0},
	},
	hwNet: {
		algoTree: {5.0, 8.5, 14}, algoRing: {2.7, 4.0, 14.0},
		algoCollNetDirect: {0, 0, 31}, algoCollNetChain: {0, 0, 30},
		algoNVLS: {0, 0, 18}, algoNVLSTree: {0, 0, 20.9},
	},
}

// Network efficiency. NCCL models a 100 Gbit/s NIC as 12.0 GB/s (topo.h
// NET_BW), 0.96 of the 12.5 GB/s line rate; the model applies the same
// ratio to every NIC NCCL drives. perftest measures closer to the line:
// 98.38 Gb/s of 100 on host memory over InfiniBand (corpus
// perftest/k8s-cx6-ib-write-bw-host-all-sizes-98g, 0.984) and 381.5 Gb/s
// of 400 over RoCE (corpus perftest/gke-a3ultra-h200-ib-write-bw-host-
// failed-status10, 0.954).
const (
	ncclNetEfficiency          = 12.0 / 12.5
	perftestIBEfficiency       = 98.38 / 100
	perftestEthernetEfficiency = 381.5 / 400
)

// PCIe. Per-lane rates are the PCIe Base Specification's (2.5, 5, 8, 16,
// 32, 64 GT/s); Gen1/2 use 8b/10b, Gen3-5 128b/130b, Gen6 FLIT mode (236
// bytes of TLP in each 256-byte flit).
//
// pcieDMAEfficiency is what a DMA engine moves of the encoded rate. TLP
// arithmetic: a 256-byte max payload carries about 24 bytes of framing,
// sequence number, header and LCRC (0.914), less the ACK and flow-control
// DLLPs sharing the link; measured pinned copies agree: 54.8 GB/s host to
// device on Gen5 x16 (0.87; bandwidthTest on H100, github.com/ZiyanIshani/
// vpbenchmarking results/stream_nvbench) and ~26 GB/s on Gen4 x16 (0.83;
// NVIDIA/nvbandwidth README, host_to_device_memcpy_ce).
const pcieDMAEfficiency = 0.86

// pcieViaCPUFactor scales PCIe peer-to-peer traffic that turns around in
// the CPU's root complex (PHB, NODE) instead of a PCIe switch. Measured:
// RTX A6000 pairs on one switch copy at 26.3 GB/s, across host bridges at
// 21.8-22.7 GB/s (NVIDIA/nvbandwidth#50), 0.83-0.86.
const pcieViaCPUFactor = 0.84

// Inter-socket bandwidth NCCL assumes for GPU traffic crossing the CPU
// interconnect (topo.h): Skylake QPI 10, Sapphire Rapids 22, Emerald
// Rapids 40, AMD 16 GB/s. The default is Sapphire Rapids'; --inter-socket-bw
// sets another.
const (
	interSocketSKL     = 10.0
	interSocketSPR     = 22.0
	interSocketDefault = interSocketSPR
)

// Copy-engine efficiency over NVLink (p2p copies, nvbandwidth CE tests):
// NVLink3: ~276 GB/s per pair of 12x25 GB/s on an A100 NVSwitch system
// (NVIDIA/nvbandwidth README, device_to_device_memcpy_write_ce), 0.92.
// NVLink4: 371-377 GB/s of 18x25 GB/s on HGX H100
// (p2pBandwidthLatencyTest, NVIDIA/nccl#1264), 0.835; bidirectional
// "~783 GB/s out of 900" (same issue), 0.87 per direction. Other
// generations: no measurement at hand; 0.88, between the two, is an
// estimate.
const (
	ceEfficiencyNVLink3      = 276.0 / 300
	ceEfficiencyNVLink4      = 376.0 / 450
	ceBidirEfficiencyNVLink4 = 783.0 / 900
	ceEfficiencyOther        = 0.88
)

// hbmCopyEfficiency is a device-to-device copy's share of peak memory
// bandwidth, counting the read and the write, for an SM copy kernel or a
// large cudaMemcpy. Estimate: sustained copies on HBM GPUs are commonly
// 85-90% of peak; we found no public measurement we could check (the
// Voltage Park H100 bandwidthTest shmoo peaks at 2.9 TB/s only inside the
// 50 MB L2 and falls to 2.35 TB/s, 0.70, at 68 MB: a copy-engine memcpy of
// mid-size buffers). The device machine's H200 measurement is the first
// real check (docs/model.md).
const hbmCopyEfficiency = 0.87

// pcieBidirFactor is the per-direction share of a pinned copy when host-to-
// device and device-to-host run at once. Measured: ~18.4-19.6 GB/s each way
// against ~26 GB/s one way on Gen4 x16 (NVIDIA/nvbandwidth README,
// host_to_device_bidirectional_memcpy_ce), about 0.73.
const pcieBidirFactor = 19.0 / 26.0

// pageableStagingGBps bounds copies from pageable host memory: the driver
// stages them through a pinned buffer with one CPU thread. Estimate: single-
// core copy rates of current x86 servers are ~10-30 GB/s and published
// pageable figures vary as much; judged with the loose margin only, and to
// be replaced by the device machine's measurement (docs/model.md).
const pageableStagingGBps = 20.0

// oneRankLatencyUS is the fixed cost of a one-rank collective (NCCL
// enqueues a device copy). Estimate: a CUDA copy launch is a few µs; the
// device machine's measurement replaces it (docs/model.md).
const oneRankLatencyUS = 5.0

// Regime boundaries: the share of the predicted time spent moving bytes.
// At or above bandwidthRegimeShare a prediction is "bandwidth" and judged
// strictly; below latencyRegimeShare it is "latency".
const (
	bandwidthRegimeShare = 0.95
	latencyRegimeShare   = 0.5
)

// Constant is one of the model's numbers with its provenance, for the docs
// and the provenance test.
type Constant struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit,omitempty"`
	Source string  `json:"source"`
}

// constants lists the model's constants with their provenance (the GPU
// table aside: see Specs); a test holds every one to a source.
func constants() []Constant {
	cs := []Constant{
		{"nccl_nvlink_bw_sm70", ncclNVLinkBWSM70, "GB/s per link per direction", srcNCCLTopo + " SM70_NVLINK_BW"},
		{"nccl_nvlink_bw_sm80", ncclNVLinkBWSM80, "GB/s per link per direction", srcNCCLTopo + " SM80_NVLINK_BW"},
		{"nccl_nvlink_bw_sm86", ncclNVLinkBWSM86, "GB/s per link per direction", srcNCCLTopo + " SM86_NVLINK_BW"},
		{"nccl_nvlink_bw_sm90", ncclNVLinkBWSM90, "GB/s per link per direction", srcNCCLTopo + " SM90_NVLINK_BW"},
		{"nccl_nvlink_bw_sm100", ncclNVLinkBWSM100, "GB/s per link per direction", srcNCCLTopo + " SM100_NVLINK_BW"},
		{"nvls_efficiency_hopper", nvlsEfficiencyHopper, "", srcNCCLTuning + " nvlsEfficiency"},
		{"nvls_efficiency_blackwell", nvlsEfficiencyBlackwell, "", srcNCCLTuning + " nvlsEfficiency"},
		{"nvls_multinode_efficiency", nvlsMultiNodeEfficiency, "", "calibrated: 2-node H100 NVLS-tree 469 GB/s (NVIDIA/nccl-tests#309) and 487 GB/s (AWS p5, awsome-distributed-training)"},
		{"nvls_domain_efficiency", nvlsDomainEfficiency, "", "calibrated: GB200 NVL72 one rack, 72 GPUs, busbw 834.57 GB/s at 8G (coreweave/nccl-tests README, NCCL 2.26.2); the two-rack run is held out"},
		{"nvls_baseboard_gpus", nvlsBaseboardGPUs, "GPUs", "model choice: the largest NVLink domain of the one-node NVLS runs (HGX, 8 GPUs); larger domains are rack-scale"},
		{"tree_allreduce_efficiency", treeAllReduceEfficiency, "", srcNCCLTuning + " Tree AllReduce busBw*.92"},
		{"ring_ll_factor", ringLLFactor, "", srcNCCLTuning + " Ring LL busBw*.5"},
		{"ring_ll128_factor", ringLL128Factor, "", srcNCCLTuning + " Ring LL128 busBw*0.92"},
		{"tree_ll_factor", treeLLFactor, "", srcNCCLTuning + " Tree LL busBw/3.8"},
		{"net_overhead_us", netOverheadIntelUS, "µs", srcNCCLTuning + " getNetOverhead (x86 Intel; x3 for Simple)"},
		{"nccl_net_efficiency", ncclNetEfficiency, "", srcNCCLTopo + " NET_BW 12.0 GB/s for 100 Gbit/s"},
		{"perftest_ib_efficiency", perftestIBEfficiency, "", "measured: 98.38 Gb/s of 100, corpus perftest/k8s-cx6-ib-write-bw-host-all-sizes-98g"},
		{"perftest_ethernet_efficiency", perftestEthernetEfficiency, "", "measured: 381.5 Gb/s of 400, corpus perftest/gke-a3ultra-h200-ib-write-bw-host-failed-status10"},
		{"pcie_dma_efficiency", pcieDMAEfficiency, "", "TLP arithmetic (256 B payload, ~24 B overhead, DLLPs); agrees with 54.8 GB/s Gen5 x16 (bandwidthTest H100, ZiyanIshani/vpbenchmarking) and 26 GB/s Gen4 x16 (nvbandwidth README)"},
		{"pcie_via_cpu_factor", pcieViaCPUFactor, "", "measured: 21.8-22.7 vs 26.3 GB/s, NVIDIA/nvbandwidth#50"},
		{"pcie_bidir_factor", pcieBidirFactor, "", "measured: ~19 vs ~26 GB/s, nvbandwidth README host_to_device_bidirectional_memcpy_ce"},
		{"inter_socket_bw_default", interSocketDefault, "GB/s", srcNCCLTopo + " SRP_QPI_BW (Sapphire Rapids); SKL 10, ERP 40, AMD 16"},
		{"ce_efficiency_nvlink3", ceEfficiencyNVLink3, "", "measured: ~276 GB/s per pair, nvbandwidth README device_to_device_memcpy_write_ce (A100)"},
		{"ce_efficiency_nvlink4", ceEfficiencyNVLink4, "", "measured: 371-377 GB/s, p2pBandwidthLatencyTest on HGX H100, NVIDIA/nccl#1264"},
		{"ce_bidir_efficiency_nvlink4", ceBidirEfficiencyNVLink4, "", "measured: ~783 of 900 GB/s, NVIDIA/nccl#1264"},
		{"ce_efficiency_other", ceEfficiencyOther, "", "estimate between NVLink3 and NVLink4 (no measurement at hand)"},
		{"hbm_copy_efficiency", hbmCopyEfficiency, "", "estimate (sustained copies 85-90% of HBM peak); to be checked on the device machine"},
		{"pageable_staging_gbps", pageableStagingGBps, "GB/s", "estimate (one CPU thread staging through pinned memory); judged loosely"},
		{"one_rank_latency_us", oneRankLatencyUS, "µs", "estimate (one device copy launch); judged loosely"},
		{"bandwidth_regime_share", bandwidthRegimeShare, "", "model choice: strict judging only where moving bytes is ≥95% of the time"},
		{"interval_floor", intervalFloor, "", "model choice: the narrowest interval of a class whose runs agree (one system's run-to-run spread is a few percent: 8×H100 365-370 GB/s, NVIDIA/nccl#1455)"},
		{"interval_few_runs", intervalFewRuns, "", "model choice: the narrowest interval of a class with fewer than 3 runs (interval.go); at the default margin it leaves judging as it was"},
		{"interval_none", intervalNone, "", "model choice: the interval of a class with no public run (\"no public calibration\")"},
		{"interval_max", intervalMax, "", "model choice: the widest interval, so a judging margin stays a margin"},
		{"net_calibrated_from_gbps", netCalibratedFromGbps, "Gb/s", "measured: 400G runs sit below NCCL's NET_BW ratio, 200G and 100G runs agree with it (calibration.go)"},
	}
	for _, f := range calibrations() {
		key := strings.NewReplacer("/", "_").Replace(f.name)
		cs = append(cs,
			Constant{"calibration_nvlink_" + key, f.nvlink, "", f.nvlinkSrc},
			Constant{"calibration_net_" + key, f.net, "", f.netSrc})
	}
	return cs
}
