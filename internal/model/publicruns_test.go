package model

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collective"
)

// publicRunTolerance is how far the model may be from a published run:
// |measured/predicted − 1| at most this.
const publicRunTolerance = 0.10

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

// Corpus paths are under shared/corpus/nccl-tests/ (each file names its
// public source and hardware).
var publicRuns = []publicRun{
	// One node.
	{"8×H100, ring (NVLS off)", "[nccl#1455](https://github.com/NVIDIA/nccl/issues/1455) (365–370)", Params{GPU: "h100", NVLS: off()}, collective.AllReduce, 8 * gib, 365, "all_reduce NVLink"},
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
}

// TestPublicRuns holds the model to every published run above: the best
// prediction's busbw must be within publicRunTolerance of the figure. The
// table it writes (testdata/golden/public-runs.md) is the one in
// docs/model.md, so the residuals the docs state are the model's.
func TestPublicRuns(t *testing.T) {
	var md bytes.Buffer
	fmt.Fprintln(&md, "| run | collective, size | source | measured busbw | predicted (algorithm) | measured / predicted | fitted |")
	fmt.Fprintln(&md, "|---|---|---|---|---|---|---|")
	for _, r := range publicRuns {
		s := mustSystem(t, r.p)
		e, err := Expect(s, r.c, r.size)
		if err != nil {
			t.Fatalf("%s %s: %v", r.name, r.c, err)
		}
		ratio := r.measured / e.BusBW
		if math.Abs(ratio-1) > publicRunTolerance {
			t.Errorf("%s %s %s (%s): measured %.2f, predicted %.2f by %s: ratio %.3f outside ±%.0f%%",
				r.name, r.c, sizeText(r.size), r.source, r.measured, e.BusBW, e.Algorithm, ratio, 100*publicRunTolerance)
		}
		fitted := r.calib
		if fitted == "" {
			fitted = "—"
		}
		fmt.Fprintf(&md, "| %s | %s %s | %s | %.2f | %.1f (%s) | %.3f | %s |\n",
			r.name, r.c, sizeText(r.size), r.source, r.measured, e.BusBW, e.Algorithm, ratio, fitted)
	}
	golden(t, "public-runs.md", md.Bytes())
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "model.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, md.Bytes()) {
		t.Error("docs/model.md does not carry the table of testdata/golden/public-runs.md: copy it into the section \"Calibration against published runs\"")
	}
}

// Every collective belongs to one calibration family, every factor is a
// share (0, 1] with a source, and the families cover what they say.
func TestCalibrationFamilies(t *testing.T) {
	seen := map[collective.Collective]string{}
	for _, f := range calibrations() {
		for _, c := range f.collectives {
			if prev, ok := seen[c]; ok {
				t.Errorf("%s in families %s and %s", c, prev, f.name)
			}
			seen[c] = f.name
		}
		for _, v := range []float64{f.nvlink, f.net} {
			if v <= 0 || v > 1 {
				t.Errorf("%s: factor %g, want (0, 1]", f.name, v)
			}
		}
		if strings.TrimSpace(f.nvlinkSrc) == "" || strings.TrimSpace(f.netSrc) == "" {
			t.Errorf("%s: a factor without a source", f.name)
		}
	}
	for _, c := range collective.All() {
		if _, ok := seen[c]; !ok {
			t.Errorf("%s in no calibration family", c)
		}
	}
}

func sizeText(b float64) string {
	switch {
	case b >= gib && math.Mod(b, gib) == 0:
		return fmt.Sprintf("%gG", b/gib)
	case b >= mib && math.Mod(b, mib) == 0:
		return fmt.Sprintf("%gM", b/mib)
	}
	return fmt.Sprintf("%g", b)
}
