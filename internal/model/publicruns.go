package model

import "github.com/gdrcheck/gdrcheck/internal/collective"

// Public runs: the published nccl-tests figures the model is held to
// (TestPublicRuns) and its intervals are made from (interval.go). One
// table, so the residuals the docs state, the tolerance the test holds
// and the intervals the model prints come from the same runs.

// publicRunTolerance is how far the model may be from a published run:
// |measured/predicted − 1| at most this.
const publicRunTolerance = 0.10

const (
	gib = 1 << 30
	mib = 1 << 20
)

func offp() *bool { f := false; return &f }

// publicRun is one published nccl-tests figure: the out-of-place busbw of
// a healthy run at one size, with where it was published. calib names the
// family factor fitted to it (then the row is not independent evidence).
type publicRun struct {
	name     string
	source   string
	p        Params
	c        collective.Collective
	size     float64
	measured float64
	calib    string
}

// calibration: a factor was fitted to the run (the calibration half);
// the others are the held-out half, which no factor was set from.
func (r publicRun) calibration() bool { return r.calib != "" }

// Corpus paths are under shared/corpus/nccl-tests/ (each file names its
// public source and hardware).
var publicRuns = []publicRun{
	// One node.
	{"8×H100, ring (NVLS off)", "[nccl#1455](https://github.com/NVIDIA/nccl/issues/1455) (365–370)", Params{GPU: "h100", NVLS: offp()}, collective.AllReduce, 8 * gib, 365, "all_reduce NVLink"},
	{"8×H100, NVLS", "corpus `dgxc-h100-1node-allreduce-nvls-480`", Params{GPU: "h100"}, collective.AllReduce, 8 * gib, 480.16, ""},
	{"8×H200, NVLS", "[nccl-tests#272](https://github.com/NVIDIA/nccl-tests/issues/272)", Params{GPU: "h200"}, collective.AllReduce, 4 * gib, 475, ""},
	{"8×H800, NVLS", "[nccl#1374](https://github.com/NVIDIA/nccl/issues/1374)", Params{GPU: "h800"}, collective.AllReduce, 8 * gib, 215, ""},
	{"8×A100 SXM4", "corpus `a100x8-allreduce-superbench`", Params{GPU: "a100-40gb"}, collective.AllReduce, 8 * gib, 235.26, "all_reduce NVLink"},
	{"4×A100 PCIe, bridged pairs across NUMA (AMD)", "corpus `azure-nc96v4-a100pcie-4gpu-allreduce-topo-graph-files`", Params{GPU: "a100-pcie", GPUsPerNode: 4, GPUPath: "SYS", InterSocket: 16}, collective.AllReduce, 1 * gib, 30.80, ""},
	{"8×H100", "[nccl#1281](https://github.com/NVIDIA/nccl/issues/1281)", Params{GPU: "h100"}, collective.AllGather, 8 * gib, 350, "all_gather/reduce_scatter NVLink"},
	{"8×H100", "[nccl-tests#326](https://github.com/NVIDIA/nccl-tests/issues/326) (~360)", Params{GPU: "h100"}, collective.AllGather, 16 * gib, 360, "all_gather/reduce_scatter NVLink"},
	{"8×H100", "[nccl#1281](https://github.com/NVIDIA/nccl/issues/1281)", Params{GPU: "h100"}, collective.ReduceScatter, 8 * gib, 360, "all_gather/reduce_scatter NVLink"},
	{"8×A100 SXM4", "corpus `a100x8-allgather-superbench`", Params{GPU: "a100-40gb"}, collective.AllGather, 8 * gib, 223.39, "all_gather/reduce_scatter NVLink"},
	{"8×A100 SXM4", "corpus `a100x8-broadcast-superbench`", Params{GPU: "a100-40gb"}, collective.Broadcast, 8 * gib, 232.81, "broadcast/reduce NVLink"},
	{"8×A100 SXM4", "corpus `a100x8-alltoall-superbench`", Params{GPU: "a100-40gb"}, collective.AllToAll, 8 * gib, 224.31, "alltoall NVLink"},
	{"8×A100 SXM4 (NVSwitch pair)", "[li-plus/playground](https://github.com/li-plus/playground) `cuda/nccl.md`", Params{GPU: "a100"}, collective.SendRecv, 1 * gib, 195.10, "sendrecv NVLink"},
	// Several nodes.
	{"2×8 H100, 8×400G IB", "corpus `dell-xe9680-h100-2node-allreduce-mpi-warnings` ([nccl-tests#309](https://github.com/NVIDIA/nccl-tests/issues/309))", Params{GPU: "h100", Nodes: 2, NICsPerNode: 8, NICRateGbps: 400}, collective.AllReduce, 16 * gib, 469.21, "nvls_multinode_efficiency"},
	{"2×8 H100 AWS p5, 32×100G EFA", "corpus `aws-p5-2node-allreduce-srun`", Params{GPU: "h100", Nodes: 2, NICsPerNode: 32, NICRateGbps: 100}, collective.AllReduce, 16 * gib, 487.09, "nvls_multinode_efficiency"},
	{"2×8 A100 80GB Azure NDm v4, 8×200G IB", "corpus `azure-ndmv4-aks-2node-allreduce-ib-189`", Params{GPU: "a100", Nodes: 2, NICsPerNode: 8, NICRateGbps: 200}, collective.AllReduce, 8 * gib, 189.20, ""},
	{"2×8 A100 80GB AWS p4de, 4×100G EFA", "corpus `aws-p4de-2node-allreduce-srun`", Params{GPU: "a100", Nodes: 2, NICsPerNode: 4, NICRateGbps: 100}, collective.AllReduce, 2 * gib, 78.33, ""},
	{"4×8 H100, 8×400G IB", "[vpbenchmarking](https://github.com/ZiyanIshani/vpbenchmarking) `results/nccl/nccl_multinode`", Params{GPU: "h100", Nodes: 4, NICsPerNode: 8, NICRateGbps: 400}, collective.AllReduce, 8 * gib, 330.93, "all_reduce network"},
	{"8×8 H100, 8×400G IB", "corpus `h100-8node-64gpu-allreduce-scaleout-drop` ([nccl-tests#309](https://github.com/NVIDIA/nccl-tests/issues/309))", Params{GPU: "h100", Nodes: 8, NICsPerNode: 8, NICRateGbps: 400}, collective.AllReduce, 8 * gib, 320.70, "all_reduce network"},
	{"10×8 H100, 8×400G", "corpus `h100-10node-80gpu-5collectives`", Params{GPU: "h100", Nodes: 10, NICsPerNode: 8, NICRateGbps: 400}, collective.AllReduce, 16 * gib, 320.54, "all_reduce network"},
	{"2×8 H200 GCP A3 Ultra, 8×400G RoCE", "corpus `gcp-a3ultra-rdma-allgather-2node`", Params{GPU: "h200", Nodes: 2, NICsPerNode: 8, NICRateGbps: 400, NICLayer: "ethernet"}, collective.AllGather, 8 * gib, 328.85, "all_gather/reduce_scatter network"},
	{"4×8 H100, 8×400G IB", "[vpbenchmarking](https://github.com/ZiyanIshani/vpbenchmarking) `results/nccl/nccl_multinode`", Params{GPU: "h100", Nodes: 4, NICsPerNode: 8, NICRateGbps: 400}, collective.AllGather, 8 * gib, 323.53, "all_gather/reduce_scatter network"},
	{"10×8 H100, 8×400G", "corpus `h100-10node-80gpu-5collectives`", Params{GPU: "h100", Nodes: 10, NICsPerNode: 8, NICRateGbps: 400}, collective.AllGather, 16 * gib, 324.29, "all_gather/reduce_scatter network"},
	{"10×8 H100, 8×400G", "corpus `h100-10node-80gpu-5collectives`", Params{GPU: "h100", Nodes: 10, NICsPerNode: 8, NICRateGbps: 400}, collective.ReduceScatter, 16 * gib, 323.40, "all_gather/reduce_scatter network"},
	{"10×8 H100, 8×400G", "corpus `h100-10node-80gpu-5collectives`", Params{GPU: "h100", Nodes: 10, NICsPerNode: 8, NICRateGbps: 400}, collective.AllToAll, 16 * gib, 50.38, "alltoall network"},
	{"10×8 H100, 8×400G (loose)", "corpus `h100-10node-80gpu-5collectives`", Params{GPU: "h100", Nodes: 10, NICsPerNode: 8, NICRateGbps: 400}, collective.SendRecv, 16 * gib, 15.22, "sendrecv network"},
	// Issue 30: the newest systems (docs/model.md, "The newest systems").
	{"8×B200, NVLS", "[nccl#1807](https://github.com/NVIDIA/nccl/issues/1807) (830+)", Params{GPU: "b200"}, collective.AllReduce, 8 * gib, 830, ""},
	{"GB200 NVL72, 8 GPUs of 2 trays (MNNVL)", "[lixueduan.com](https://www.lixueduan.com/posts/ai/13-gb200-mnnvl-nccl-test) (peak, size not stated)", Params{GPU: "gb200", GPUsPerNode: 8}, collective.AllReduce, 8 * gib, 811, ""},
	{"GB200 NVL72, one rack", "[coreweave/nccl-tests](https://github.com/coreweave/nccl-tests) README, Single Rack", Params{GPU: "gb200", GPUsPerNode: 72}, collective.AllReduce, 8 * gib, 834.57, "nvls_domain_efficiency"},
	{"GB200 NVL72, two racks, 4×400G IB per tray", "[coreweave/nccl-tests](https://github.com/coreweave/nccl-tests) README, 2 Racks", Params{GPU: "gb200", GPUsPerNode: 72, Nodes: 2, NICsPerNode: 72, NICRateGbps: 400}, collective.AllReduce, 16 * gib, 810.41, ""},
	{"2×8 B200, 8×400G IB", "[coreweave/nccl-tests#92](https://github.com/coreweave/nccl-tests/pull/92)", Params{GPU: "b200", Nodes: 2, NICsPerNode: 8, NICRateGbps: 400}, collective.AllReduce, 8 * gib, 690.07, ""},
	{"2×8 H100, 8×400G IB", "[coreweave/nccl-tests#92](https://github.com/coreweave/nccl-tests/pull/92)", Params{GPU: "h100", Nodes: 2, NICsPerNode: 8, NICRateGbps: 400}, collective.AllReduce, 8 * gib, 440.58, ""},
	{"8×8 H100, 8×400G IB, SHARP, CollNet chain forced", "coreweave/nccl-tests README at [fb4787c](https://github.com/coreweave/nccl-tests/commit/fb4787ccc6a9bb7d0cadc133bac7f6f7e8d35408)", Params{GPU: "h100", Nodes: 8, NICsPerNode: 8, NICRateGbps: 400, SHARP: true, NVLS: offp()}, collective.AllReduce, 8 * gib, 386.56, ""},
}

// deviceRunTolerance is how far the model may be from a run on the
// project's device machine: one rank in a VM, where NCCL's self
// send/recv is a copy through its own path (docs/model.md, "Measured on
// the project's device machine").
const deviceRunTolerance = 0.12

// deviceRuns are the project's own measurements (docs/model.md, "Measured
// on the project's device machine": 1× H200 SXM in a Firecracker VM, NCCL
// 2.28.3, best of three). With one rank busbw is 0, so measured is the
// out-of-place algbw. They are the only evidence for one-rank predictions.
var deviceRuns = []publicRun{
	{"1×H200 (VM)", "docs/model.md, device machine", Params{GPU: "h200", GPUsPerNode: 1}, collective.AllReduce, 512 * mib, 2086, ""},
	{"1×H200 (VM)", "docs/model.md, device machine", Params{GPU: "h200", GPUsPerNode: 1}, collective.AllReduce, 128 * mib, 2011, ""},
	{"1×H200 (VM)", "docs/model.md, device machine", Params{GPU: "h200", GPUsPerNode: 1}, collective.SendRecv, 512 * mib, 1825, ""},
}

// allRuns are the public runs and the device runs.
func allRuns() []publicRun { return append(append([]publicRun(nil), publicRuns...), deviceRuns...) }

// observed is the figure a run is compared on: busbw, or algbw for one
// rank (nccl-tests' busbw factor is 0 there).
func observed(p Prediction) float64 {
	if p.Ranks == 1 {
		return p.AlgBW
	}
	return p.BusBW
}
