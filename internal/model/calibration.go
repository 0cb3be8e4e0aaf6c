package model

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/internal/collective"
)

// Per-family calibration. NCCL's tuning model gives one NVLink figure and
// one NIC figure for every collective; published nccl-tests runs show each
// collective family reaching its own share of them (alltoall and sendrecv
// use point-to-point transfers, the others ring and tree pipelines), and
// the ring family reaching less of a 400 Gb/s NIC than NCCL's NET_BW ratio.
// Each family's two factors are measured figures with their runs named; the
// validation table in docs/model.md (written by TestPublicRuns) states the
// residual for every run, including those a factor was fitted to.

// netCalibratedFromGbps: the family network factors apply to NICs this
// fast and faster. Every net-bound public run we found at 400 Gb/s sits
// below NCCL's 0.96 of the line; the only slower ones agree with it (Azure
// NDm v4, 8×HDR 200G: ring 189.2 GB/s of 192, corpus
// nccl-tests/azure-ndmv4-aks-2node-allreduce-ib-189; AWS p4de, 4×100G EFA:
// 78.3 of 82.6), so below this rate NCCL's own figure stands. 800 Gb/s
// NICs take the 400 Gb/s factors: no public run to check them against.
const netCalibratedFromGbps = 400.0

// familyCalibration is one collective family's share of the model's bounds.
type familyCalibration struct {
	name        string
	collectives []collective.Collective
	// nvlink scales the NCCL-effective NVLink bound (links × NCCL's
	// per-link figure) on the paths the family's ring, tree or
	// point-to-point transfers use. NVLS keeps NCCL's own nvlsEfficiency,
	// which its published figures already confirm.
	nvlink    float64
	nvlinkSrc string
	// net scales the NIC-bound network term (rails × rate/8 × 0.96) for
	// NICs of netCalibratedFromGbps and faster.
	net    float64
	netSrc string
}

// calibrations are the families' factors and their sources. The NVLink
// factors are busbw over the model's NCCL bound (370.8 GB/s for 18
// NVLink4 links, 240 for 12 NVLink3); the network factors are busbw over
// the model's uncalibrated bound on 8×400G rails (384 GB/s per node), each
// the mean of its runs.
func calibrations() []familyCalibration {
	return []familyCalibration{
		{name: "all_reduce", collectives: []collective.Collective{collective.AllReduce},
			nvlink:    0.98,
			nvlinkSrc: "ring busbw: 8×A100 SXM4 235.26 of 240 (corpus nccl-tests/a100x8-allreduce-superbench); 8×H100 365-370 of 370.8 (NVIDIA/nccl#1455) and ~360 (NVIDIA/nccl-tests#326)",
			net:       0.845,
			netSrc:    "8×H100 on 8×400G IB: 4 nodes 330.93 (ZiyanIshani/vpbenchmarking results/nccl/nccl_multinode), 8 nodes 320.7 (corpus nccl-tests/h100-8node-64gpu-allreduce-scaleout-drop), 10 nodes 320.5 (corpus nccl-tests/h100-10node-80gpu-5collectives), of 384"},
		{name: "all_gather/reduce_scatter", collectives: []collective.Collective{collective.AllGather, collective.ReduceScatter},
			nvlink:    0.95,
			nvlinkSrc: "ring busbw: 8×A100 SXM4 all_gather 223.39 of 240 (corpus nccl-tests/a100x8-allgather-superbench); 8×H100 all_gather 350, reduce_scatter 360 (NVIDIA/nccl#1281), all_gather ~360 (NVIDIA/nccl-tests#326), of 370.8",
			net:       0.845,
			netSrc:    "all_gather on 8×400G: 2×8 H200 RoCE 328.85 (corpus nccl-tests/gcp-a3ultra-rdma-allgather-2node), 4×8 H100 IB 323.53 (vpbenchmarking), 10×8 H100 324.3, reduce_scatter 323.4 (corpus nccl-tests/h100-10node-80gpu-5collectives), of 384"},
		{name: "broadcast/reduce", collectives: []collective.Collective{collective.Broadcast, collective.Reduce},
			nvlink:    0.97,
			nvlinkSrc: "8×A100 SXM4 broadcast 232.81 of 240 (corpus nccl-tests/a100x8-broadcast-superbench)",
			net:       0.845,
			netSrc:    "no public multi-node run found: the all_gather figure, broadcast and reduce running the same ring pipeline"},
		{name: "alltoall", collectives: []collective.Collective{collective.AllToAll},
			nvlink:    0.935,
			nvlinkSrc: "8×A100 SXM4 224.31 of 240 (corpus nccl-tests/a100x8-alltoall-superbench); no public single-node H100 figure found",
			net:       0.955,
			netSrc:    "10×8 H100 on 8×400G 50.38 of 52.7 (corpus nccl-tests/h100-10node-80gpu-5collectives); each GPU's traffic goes out on its own NIC, which reaches 48-49 GB/s at NDR (NVIDIA/nccl-tests#267)"},
		{name: "sendrecv", collectives: []collective.Collective{collective.SendRecv},
			nvlink:    0.81,
			nvlinkSrc: "8×A100 SXM4 NVSwitch pair 195.1 of 240 (github.com/li-plus/playground cuda/nccl.md, sendrecv_perf 1 GiB)",
			net:       0.317,
			netSrc:    "10×8 H100 on 8×400G 15.22 of one 48 GB/s rail (corpus nccl-tests/h100-10node-80gpu-5collectives; one run, judged loosely): NCCL drives one peer pair across nodes on few channels"},
	}
}

// calibrationOf is c's family calibration; a collective in no family
// (none today: a test holds every collective to one) is not scaled.
func calibrationOf(c collective.Collective) familyCalibration {
	for _, f := range calibrations() {
		for _, x := range f.collectives {
			if x == c {
				return f
			}
		}
	}
	return familyCalibration{name: string(c), nvlink: 1, net: 1}
}

// nvlinkTerm scales an NVLink-bound term by the family's factor; other
// bounds (PCIe, the CPU link) are not what the factor was measured on.
func (f familyCalibration) nvlinkTerm(t term) term {
	if t.by != ByNVLink || f.nvlink == 1 {
		return t
	}
	return term{t.by, t.gbps * f.nvlink, fmt.Sprintf("%.3g (%s calibration) × (%s) =", f.nvlink, f.name, t)}
}

// netTerm scales a NIC-bound network term by the family's factor where
// the NICs are fast enough for it to apply.
func (f familyCalibration) netTerm(t term, rateGbps float64) term {
	if t.by != ByNIC || rateGbps < netCalibratedFromGbps || f.net == 1 {
		return t
	}
	return term{t.by, t.gbps * f.net, fmt.Sprintf("%.3g (%s network calibration) × (%s) =", f.net, f.name, t)}
}
