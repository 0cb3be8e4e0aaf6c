package nccltests

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

var update = flag.Bool("update", false, "rewrite golden files")

var reader = readertest.Reader[*Report]{Detect: Detect, Analyze: Analyze}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestGolden(t *testing.T) { reader.GoldenSamples(t, *update, nil) }

func one(t *testing.T, r *Report) *Test {
	t.Helper()
	if len(r.Tests) != 1 {
		t.Fatalf("%d tests, want 1", len(r.Tests))
	}
	return r.Tests[0]
}

// avg checks the one test of a report: its average bus bandwidth and where
// it comes from, its row count and its peak bus bandwidth; then each of
// more.
func avg(avg float64, from string, rows int, peak float64, more ...func(t *testing.T, r *Report, x *Test)) func(*testing.T, *Report, []result.Result) {
	return func(t *testing.T, r *Report, _ []result.Result) {
		x := one(t, r)
		if !near(x.AvgBusBW, avg) || x.AvgFrom != from {
			t.Errorf("avg busbw %v (%s), want %v (%s)", x.AvgBusBW, x.AvgFrom, avg, from)
		}
		if len(x.Rows) != rows {
			t.Errorf("%d rows, want %d", len(x.Rows), rows)
		}
		if !near(x.PeakBusBW, peak) {
			t.Errorf("peak busbw %v, want %v", x.PeakBusBW, peak)
		}
		for _, f := range more {
			f(t, r, x)
		}
	}
}

var samples = []readertest.Case[*Report]{
	// Issue 26 class 6: gdrcheck's own dossier file read back. Seven
	// collectives named by "# Collective X", the rank line inherited by
	// each, the summaries printed together after the last table given in
	// order; one rank: in place is a no-op, not an unstable measurement.
	{File: "gdrcheck-dossier-h200x1-raw-nccl-tests-seven-collectives.txt", Verdicts: []string{
		"pass nccltests.run Completed run",
		"unknown nccltests.busbw NoBandwidth all_reduce", "unknown nccltests.busbw NoBandwidth all_gather", "unknown nccltests.busbw NoBandwidth reduce_scatter",
		"skip nccltests.busbw NotJudged broadcast", "skip nccltests.busbw NotJudged reduce", "unknown nccltests.busbw NoBandwidth alltoall", "skip nccltests.busbw NotJudged sendrecv",
		"pass nccltests.wrong NoWrongResults all_reduce", "pass nccltests.wrong NoWrongResults all_gather", "pass nccltests.wrong NoWrongResults reduce_scatter",
		"pass nccltests.wrong NoWrongResults broadcast", "pass nccltests.wrong NoWrongResults reduce", "pass nccltests.wrong NoWrongResults alltoall", "pass nccltests.wrong NoWrongResults sendrecv"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			want := []string{"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"}
			avg := []float64{0, 0, 0, 9233.560920971933, 8543.981893170228, 0, 1946.1600333997906}
			if len(r.Tests) != len(want) {
				t.Fatalf("%d tests, want %d", len(r.Tests), len(want))
			}
			for i, x := range r.Tests {
				if x.Collective != want[i] || x.AvgFrom != "printed" || x.AvgBusBW != avg[i] || len(x.Devices) != 1 || len(x.Rows) != 8 {
					t.Errorf("test %d: %s avg %v (%s) devices %d rows %d; want %s avg %v", i, x.Collective, x.AvgBusBW, x.AvgFrom, len(x.Devices), len(x.Rows), want[i], avg[i])
				}
			}
			if bc := r.Tests[3]; bc.PeakBusBW != 1889.4 || bc.PeakPlace != "out-of-place" {
				t.Errorf("broadcast peak %v (%s), want the out-of-place 1889.4", bc.PeakBusBW, bc.PeakPlace)
			}
		}},
	// Issue 26 class 6: header lines that lost their "#" (a Markdown
	// heading) are read as the header; one row is enough to recognise
	// the table; its error 1e+00 is a wrong result in both halves.
	{File: "nccltests37-hashless-header-one-row-wrong-then-topo-m.txt", Verdicts: []string{
		"fail nccltests.wrong WrongResults all_gather", "skip nccltests.busbw NotJudged all_gather", "pass nccltests.run Completed run"},
		Check: avg(128.942, "printed", 1, 129.05, func(t *testing.T, r *Report, x *Test) {
			if x.Collective != "all_gather" || len(x.Columns) != 11 || x.OutOfBounds == nil || *x.OutOfBounds != 2 || x.OutOfBoundsOK == nil || *x.OutOfBoundsOK {
				t.Errorf("collective %q columns %v out of bounds %v ok %v", x.Collective, x.Columns, x.OutOfBounds, x.OutOfBoundsOK)
			}
			if !Detect(readertest.Body(t, "nccltests37-hashless-header-one-row-wrong-then-topo-m.txt")) {
				t.Error("not detected")
			}
		})},
	// Pastes (issue 13 item 6).
	{File: "gcp-a3mega-2node-allreduce-markdown-quoted-command.txt", Verdicts: []string{
		"skip nccltests.busbw NotJudged all_reduce", "pass nccltests.wrong NoWrongResults all_reduce", "pass nccltests.run Completed run"},
		// The quoted command names the binary; the quote is not a prefix
		// of the output.
		Check: avg(70.742, "printed", 31, 338.82, func(t *testing.T, r *Report, x *Test) {
			if x.CollectiveFrom != "command" || len(x.Devices) != 16 || len(x.Hosts) != 2 || x.PeakSize != 8589934592 || r.Paste != nil {
				t.Errorf("from %q devices %d hosts %v peak size %d paste %+v", x.CollectiveFrom, len(x.Devices), x.Hosts, x.PeakSize, r.Paste)
			}
		})},
	{File: "nccltests82-conda-prompt-broadcast-root-validation-off-excerpt.txt", Verdicts: []string{
		"unknown nccltests.wrong ValidationDisabled broadcast", "unknown nccltests.busbw NoBandwidth broadcast", "unknown nccltests.run NoSummary run"},
		Check: avg(0, "computed", 1, 0, func(t *testing.T, r *Report, x *Test) {
			if x.CollectiveFrom != "command" || len(x.Hosts) != 2 || x.NCCLVersion != "2.9.6+cuda11.2" || x.Rows[0].Root == nil || *x.Rows[0].Root != 0 {
				t.Errorf("from %q hosts %v nccl %q row %+v", x.CollectiveFrom, x.Hosts, x.NCCLVersion, x.Rows[0])
			}
			if len(r.Paste.Prompts) != 1 || !strings.HasPrefix(r.Paste.Prompts[0].Text, "mpirun --bind-to none") {
				t.Errorf("prompts %+v", r.Paste.Prompts)
			}
		})},
	{File: "nccl392-header-lines-without-hash-error-column-excerpt.txt", Verdicts: []string{
		"pass nccltests.wrong NoWrongResults all_reduce", "skip nccltests.busbw NotJudged all_reduce", "unknown nccltests.run NoSummary run"},
		// The header lines lost their "#": the column line is still read
		// as the header (issue 26 class 6), and the rows by their shape
		// (no root column).
		Check: avg(0.02, "computed", 9, 0.09, func(t *testing.T, r *Report, x *Test) {
			last := x.Rows[len(x.Rows)-1]
			if x.CollectiveFrom != "inferred" || last.Bytes != 2048 || last.OutOfPlace == nil || !near(last.OutOfPlace.TimeUS, 44.04) || last.InPlace == nil || !near(last.InPlace.BusBW, 0.09) {
				t.Errorf("collective from %q, last row %+v", x.CollectiveFrom, last)
			}
		})},
	{File: "nccltests107-user-prompt-mpirun-two-independent-runs-excerpt.txt", Verdicts: []string{
		"skip nccltests.wrong NoRows all_reduce#1", "unknown nccltests.busbw NoRows all_reduce#1",
		"skip nccltests.wrong NoRows all_reduce#2", "unknown nccltests.busbw NoRows all_reduce#2",
		"skip nccltests.wrong NoRows all_reduce#3", "unknown nccltests.busbw NoRows all_reduce#3",
		"warn nccltests.run IndependentRuns run"},
		Check: func(t *testing.T, r *Report, _ []result.Result) {
			if r.Paste == nil || len(r.Paste.Prompts) != 1 || !strings.HasPrefix(r.Paste.Prompts[0].Text, "mpirun -host") || r.Paste.Fences != 1 {
				t.Errorf("paste note %+v", r.Paste)
			}
			if x := r.Tests[1]; len(x.Devices) != 2 || x.Devices[0].Host == x.Devices[1].Host || x.Binary != "all_reduce_perf" {
				t.Errorf("devices %+v binary %q", x.Devices, x.Binary)
			}
		}},
	{File: "nccl340-headerless-rows-old-layout-then-next-command-excerpt.txt", Verdicts: []string{
		"pass nccltests.wrong NoWrongResults unknown", "skip nccltests.busbw NotJudged unknown", "pass nccltests.run Completed run"},
		// The ./broadcast_perf line after the summary starts the next
		// run: it does not name this table.
		Check: avg(6.6972, "printed", 12, 21.86, func(t *testing.T, r *Report, x *Test) {
			if x.Collective != "unknown" || x.Binary != "" || x.Rows[0].Bytes != 65536 {
				t.Errorf("collective %q binary %q first size %d", x.Collective, x.Binary, x.Rows[0].Bytes)
			}
		})},
	{File: "nccltests128-fragment-no-nthread-zero-byte-rows-excerpt.txt", Verdicts: []string{
		"pass nccltests.wrong NoWrongResults unknown", "skip nccltests.busbw NotJudged unknown", "unknown nccltests.run NoSummary run"},
		Check: avg(0.0014, "computed", 7, 0.01, func(t *testing.T, r *Report, x *Test) {
			if x.Collective != "unknown" || len(x.Columns) != 13 || r.Paste.Fences != 1 {
				t.Errorf("collective %q columns %v paste %+v", x.Collective, x.Columns, r.Paste)
			}
		})},
	{File: "mooncake3484-headerless-allreduce-rows-excerpt.txt", Verdicts: []string{
		"pass nccltests.wrong NoWrongResults all_reduce", "skip nccltests.busbw NotJudged all_reduce", "unknown nccltests.run NoSummary run"},
		Check: avg(100.9523, "computed", 11, 300.52, func(t *testing.T, r *Report, x *Test) {
			if x.CollectiveFrom != "inferred" || r.Paste != nil {
				t.Errorf("collective from %q, paste %+v (right-aligned rows are not an indentation)", x.CollectiveFrom, r.Paste)
			}
		})},
	{File: "nccltests131-dollar-prompt-p2p-disabled-log-mixed-excerpt.txt", Verdicts: []string{
		"skip nccltests.wrong NoRows all_reduce", "unknown nccltests.busbw NoRows all_reduce", "unknown nccltests.run NoSummary run"},
		Check: func(t *testing.T, r *Report, _ []result.Result) {
			x := one(t, r)
			if x.CollectiveFrom != "command" || len(x.Devices) != 2 || x.NCCLVersion != "2.16.5+cuda11.8" || r.NCCLLogLines != 8 {
				t.Errorf("from %q devices %d nccl %q log lines %d", x.CollectiveFrom, len(x.Devices), x.NCCLVersion, r.NCCLLogLines)
			}
			if len(r.Paste.Prompts) != 1 || r.Paste.Prompts[0].Line != 2 {
				t.Errorf("prompts %+v", r.Paste.Prompts)
			}
		}},
	{File: "nccl1530-command-then-tree-allreduce-8x4090-excerpt.txt", Verdicts: []string{
		"skip nccltests.wrong NoRows all_reduce", "unknown nccltests.busbw NoRows all_reduce", "unknown nccltests.run NoSummary run"},
		Check: func(t *testing.T, r *Report, _ []result.Result) {
			// The excerpt stops in the middle of the first row.
			x := one(t, r)
			if len(x.Devices) != 8 || len(r.PartialRows) != 1 || r.PartialRows[0].Line != 18 || x.CollectiveFrom != "command" {
				t.Errorf("devices %d partial %+v from %q", len(x.Devices), r.PartialRows, x.CollectiveFrom)
			}
		}},
	{File: "nccl1189-h20-alltoall-mpirun-2node-nccl-log-excerpt.txt", Verdicts: []string{
		"skip nccltests.wrong NoRows alltoall", "unknown nccltests.busbw NoRows alltoall", "unknown nccltests.run NoSummary run"},
		Check: func(t *testing.T, r *Report, _ []result.Result) {
			x := one(t, r)
			if x.CollectiveFrom != "command" || len(x.Devices) != 4 || len(x.Hosts) != 2 || x.Devices[2].BusID != "0000:18:00" {
				t.Errorf("from %q devices %+v hosts %v", x.CollectiveFrom, x.Devices, x.Hosts)
			}
		}},
	{File: "aws-p5-2node-efa-ofi-gdrdma-full.txt", Verdicts: []string{
		"skip nccltests.busbw NotJudged all_reduce", "pass nccltests.wrong NoWrongResults all_reduce", "pass nccltests.run Completed run"},
		Check: avg(124.584, "printed", 32, 488.14, func(t *testing.T, r *Report, x *Test) {
			if x.PeakSize != 17179869184 || x.Stream != "1,0" || len(x.Devices) != 16 || len(x.Hosts) != 2 || x.NCCLVersion != "2.22.3+cuda12.2" || x.Collective != "all_reduce" {
				t.Errorf("peak size %d stream %q devices %d hosts %v nccl %q collective %q", x.PeakSize, x.Stream, len(x.Devices), x.Hosts, x.NCCLVersion, x.Collective)
			}
			if r.NCCLLogLines < 2800 {
				t.Errorf("NCCL log lines %d", r.NCCLLogLines)
			}
			if m := x.Rows[0].OutOfPlace; m == nil || !near(m.TimeUS, 85.70) || *m.Wrong != 0 {
				t.Errorf("first row split by mpirun tags read as %+v", x.Rows[0])
			}
		})},
	{File: "aws-p5-eks-allreduce-mpirun-tagged.txt", Verdicts: []string{"skip nccltests.busbw NotJudged all_reduce", "pass nccltests.run Completed run"},
		Check: avg(52.9753, "printed", 7, 437.89, func(t *testing.T, r *Report, _ *Test) {
			if !r.Elided {
				t.Error("the '...' line was not noticed")
			}
		})},
	{File: "a100pcie-2gpu-allreduce-interleaved-nccl-info.txt", Verdicts: []string{
		"unknown nccltests.run NoSummary run", "skip nccltests.busbw NotJudged all_reduce", "pass nccltests.wrong NoWrongResults all_reduce"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			x := one(t, r)
			if len(x.Rows) != 2 || x.Collective != "all_reduce" || x.CollectiveFrom != "nccl-log" {
				t.Fatalf("rows %d collective %s from %s", len(x.Rows), x.Collective, x.CollectiveFrom)
			}
			r0, r1 := x.Rows[0], x.Rows[1]
			if r0.Bytes != 8388608 || !near(r0.OutOfPlace.BusBW, 26.66) || !near(r0.InPlace.BusBW, 26.99) || !near(r0.InPlace.TimeUS, 310.8) {
				t.Errorf("row 0 reassembled as %+v %+v %+v", r0, r0.OutOfPlace, r0.InPlace)
			}
			if r1.Bytes != 16777216 || !near(r1.OutOfPlace.BusBW, 27.67) || !near(r1.InPlace.BusBW, 27.85) {
				t.Errorf("row 1 reassembled as %+v", r1)
			}
			if len(r.PartialRows) != 1 || !strings.HasPrefix(r.PartialRows[0].Text, "33554432 8388608 float sum -1") {
				t.Errorf("partial rows %+v", r.PartialRows)
			}
			if r.NCCLLogLines < 390 {
				t.Errorf("NCCL lines %d", r.NCCLLogLines)
			}
		}},
	{File: "a100x8-allgather-superbench.txt", Verdicts: []string{"unknown nccltests.wrong ValidationDisabled all_gather", "pass nccltests.busbw AtExpected all_gather"},
		Check: avg(58.2651, "printed", 34, 230.07, func(t *testing.T, r *Report, x *Test) {
			if x.CollectiveFrom != "file-name" || x.Params.Validation == nil || *x.Params.Validation != 0 {
				t.Errorf("collective from %s validation %v", x.CollectiveFrom, x.Params.Validation)
			}
		})},
	{File: "a100x8-allreduce-superbench.txt", Verdicts: []string{"unknown nccltests.wrong ValidationDisabled all_reduce", "pass nccltests.busbw AtExpected all_reduce"},
		Check: avg(68.4048, "printed", 34, 235.26, func(t *testing.T, r *Report, x *Test) {
			if x.CollectiveFrom != "inferred" || x.Rows[0].Root != nil || x.Rows[0].RedOp != "sum" {
				t.Errorf("collective from %s, row %+v", x.CollectiveFrom, x.Rows[0])
			}
		})},
	{File: "a100x8-alltoall-superbench.txt", Verdicts: []string{"pass nccltests.busbw AtExpected alltoall"},
		Check: avg(58.6481, "printed", 34, 226.16, func(t *testing.T, r *Report, x *Test) {
			if x.Rows[5].RedOp != "" || !near(x.Rows[5].OutOfPlace.TimeUS, 89.00) {
				t.Errorf("blank redop row read as %+v", x.Rows[5])
			}
		})},
	{File: "a100x8-broadcast-superbench.txt", Verdicts: []string{"pass nccltests.busbw AtExpected broadcast"},
		Check: avg(64.8653, "printed", 34, 234.70, func(t *testing.T, r *Report, x *Test) {
			if x.Rows[0].Root == nil || *x.Rows[0].Root != 0 || x.Rows[0].RedOp != "" {
				t.Errorf("root column read as %+v", x.Rows[0])
			}
		})},
	{File: "aws-p4de-2node-allreduce-srun.txt", Verdicts: []string{"unknown nccltests.run NoSummary run", "skip nccltests.busbw NotJudged all_reduce"},
		Check: avg(18.5359, "computed", 29, 78.33, func(t *testing.T, r *Report, x *Test) {
			if x.Stream != "0" {
				t.Errorf("srun label stream %q", x.Stream)
			}
		})},
	{File: "aws-p5-2node-allreduce-srun.txt", Verdicts: []string{"unknown nccltests.run NoSummary run", "skip nccltests.busbw NotJudged all_reduce"},
		Check: avg(124.5356, "computed", 32, 487.26)},
	{File: "azure-nc96v4-a100pcie-4gpu-allreduce-topo-graph-files.txt", Verdicts: []string{"skip nccltests.busbw NotJudged all_reduce", "pass nccltests.wrong NoWrongResults all_reduce"},
		Check: avg(13.7946, "printed", 31, 30.88)},
	{File: "azure-ndmv4-aks-2node-allreduce-ib-189.txt", Verdicts: []string{"skip nccltests.busbw NotJudged all_reduce", "pass nccltests.run Completed run"},
		Check: avg(57.347, "printed", 31, 189.28)},
	{File: "dell-xe9680-h100-2node-allreduce-mpi-warnings.txt", Verdicts: []string{"skip nccltests.busbw NotJudged all_reduce", "pass nccltests.wrong NoWrongResults all_reduce"},
		Check: avg(139.56, "printed", 32, 469.21, func(t *testing.T, r *Report, x *Test) {
			if x.Binary != "all_reduce_perf_mpi" || x.NCCLVersion != "2.26.2+cuda12.8" || len(x.Devices) != 16 || len(x.Hosts) != 2 {
				t.Errorf("binary %q nccl %q devices %d hosts %v", x.Binary, x.NCCLVersion, len(x.Devices), x.Hosts)
			}
		})},
	{File: "dgxc-h100-1node-allreduce-nvls-480.txt", Verdicts: []string{"pass nccltests.busbw AtExpected all_reduce"},
		Check: avg(159.151, "printed", 32, 480.16, func(t *testing.T, r *Report, x *Test) {
			if x.Params.Extra["direction"] != "H2D" || x.Params.Iters != 20 || x.Params.WarmupIters != 5 || x.Params.AggIters != 1 {
				t.Errorf("params %+v", x.Params)
			}
		})},
	{File: "gcp-a3high-tcpx-allgather-2node.txt", Verdicts: []string{"unknown nccltests.wrong ValidationDisabled all_gather", "skip nccltests.busbw NotJudged all_gather"},
		Check: avg(30.9622, "printed", 10, 71.35)},
	{File: "gcp-a3ultra-rdma-allgather-2node.txt", Verdicts: []string{"skip nccltests.busbw NotJudged all_gather", "pass nccltests.wrong NoWrongResults all_gather"},
		Check: avg(120.248, "printed", 24, 335.67)},
	{File: "h100-10node-80gpu-5collectives.txt", Verdicts: []string{
		"skip nccltests.busbw NotJudged all_reduce", "skip nccltests.busbw NotJudged all_gather", "skip nccltests.busbw NotJudged reduce_scatter",
		"skip nccltests.busbw NotJudged alltoall", "skip nccltests.busbw NotJudged sendrecv", "pass nccltests.run Completed run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			want := map[string]float64{"all_reduce": 265.631, "all_gather": 218.677, "reduce_scatter": 216.683, "alltoall": 47.1472, "sendrecv": 15.1671}
			if len(r.Tests) != 5 {
				t.Fatalf("%d tests", len(r.Tests))
			}
			for _, x := range r.Tests {
				if !near(x.AvgBusBW, want[x.Collective]) || len(x.Rows) != 10 || x.TestsVersion != "2.17.8" || len(x.Devices) != 80 {
					t.Errorf("%s: avg %v rows %d version %q devices %d", x.Collective, x.AvgBusBW, len(x.Rows), x.TestsVersion, len(x.Devices))
				}
			}
		}},
	{File: "h100-8node-64gpu-allreduce-scaleout-drop.txt", Verdicts: []string{"warn nccltests.busbw BusbwUnstable all_reduce", "pass nccltests.wrong NoWrongResults all_reduce"},
		Check: avg(183.055, "printed", 14, 321.03)},
	{File: "h200-kvm-vm-2node-allreduce-27-no-topo-file.txt", Verdicts: []string{"warn nccltests.busbw BusbwUnstable all_reduce", "pass nccltests.run Completed run"},
		Check: avg(27.5091, "printed", 6, 57.78, func(t *testing.T, r *Report, x *Test) {
			if x.Params.Step != "3(factor)" {
				t.Errorf("step %q", x.Params.Step)
			}
		})},
	{File: "a100pcie-2node-gdr-level-sys-mixed-roce-ib-gather-dropoff.txt", Verdicts: []string{
		"warn nccltests.busbw BusbwCollapse gather", "unknown nccltests.run NoSummary run", "pass nccltests.wrong NoWrongResults gather"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			x := one(t, r)
			if len(x.Rows) != 85 || x.Binary != "gather_perf" || !near(x.PeakBusBW, 23.61) {
				t.Errorf("rows %d binary %q peak %v", len(x.Rows), x.Binary, x.PeakBusBW)
			}
			v := vs[1]
			if v.ID != IDBusBW || !strings.Contains(v.Message, "from 6 GiB on") {
				t.Errorf("collapse verdict %+v", v)
			}
		}},
	{File: "a100pcie-nvbridge-degraded-topo-2ch.txt", Verdicts: []string{"unknown nccltests.busbw NoRows all_reduce", "skip nccltests.wrong NoRows all_reduce", "unknown nccltests.run NoSummary run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			x := one(t, r)
			if len(x.Columns) == 0 || len(x.Devices) != 2 || x.Devices[1].BusID != "0000:65:00" || x.Devices[1].Name != "NVIDIA A100 80GB PCIe" {
				t.Errorf("columns %v devices %+v", x.Columns, x.Devices)
			}
		}},
	{File: "synthetic-allreduce-wrong-oob-failed.txt", Verdicts: []string{"fail nccltests.wrong WrongResults all_reduce", "pass nccltests.run Completed run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			x := one(t, r)
			if *x.Rows[1].OutOfPlace.Wrong != 1024 || *x.Rows[2].InPlace.Wrong != 2000000 || *x.OutOfBounds != 2 || *x.OutOfBoundsOK || x.AvgCheck != "FAILED" {
				t.Errorf("wrong counts %d %d oob %d ok %v check %q", *x.Rows[1].OutOfPlace.Wrong, *x.Rows[2].InPlace.Wrong, *x.OutOfBounds, *x.OutOfBoundsOK, x.AvgCheck)
			}
			if vs[0].Remedy == "" || len(vs[0].Evidence) != 2 {
				t.Errorf("wrong verdict %+v", vs[0])
			}
		}},
	{File: "synthetic-json-allreduce-J.txt", Verdicts: []string{"pass nccltests.wrong NoWrongResults all_reduce", "skip nccltests.busbw NotJudged all_reduce", "pass nccltests.run Completed run"},
		Check: avg(29.02, "printed", 3, 40.52, func(t *testing.T, r *Report, x *Test) {
			if r.Format != "json" || x.NCCLVersion != "2.26.2" || x.Rows[0].InPlace.Wrong != nil || *x.Rows[0].Root != -1 || len(x.Hosts) != 2 || x.Params.Step != "2(factor)" {
				t.Errorf("format %s nccl %s row %+v hosts %v step %q", r.Format, x.NCCLVersion, x.Rows[0], x.Hosts, x.Params.Step)
			}
		})},
	{File: "synthetic-mpirun-independent-runs-interleaved.txt", Verdicts: []string{"warn nccltests.run IndependentRuns run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if len(r.Tests) != 2 || r.Streams != 2 {
				t.Fatalf("%d tests, %d streams", len(r.Tests), r.Streams)
			}
			for _, x := range r.Tests {
				if len(x.Rows) != 2 {
					t.Errorf("stream %s: %d rows", x.Stream, len(x.Rows))
				}
			}
			if x := r.Tests[1]; x.Stream != "1,1" || !near(x.Rows[0].OutOfPlace.TimeUS, 12.40) {
				t.Errorf("rank 1's split row read as %+v (stream %s)", x.Rows[0].OutOfPlace, x.Stream)
			}
		}},
	{File: "synthetic-test-nccl-failure.txt", Verdicts: []string{"fail nccltests.run TestFailure run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			x := one(t, r)
			if len(x.Rows) != 2 || !near(x.Rows[1].OutOfPlace.TimeUS, 36.03) {
				t.Errorf("rows %+v", x.Rows)
			}
			if len(r.PartialRows) != 1 || len(r.Failures) != 2 {
				t.Errorf("partial %+v failures %+v", r.PartialRows, r.Failures)
			}
		}},
	{File: "synthetic-h100-1node-allreduce-quarter-bandwidth.txt", Verdicts: []string{"warn nccltests.busbw BelowExpected all_reduce"},
		Check: avg(39.7878, "printed", 32, 120.04)},
}

func TestSamples(t *testing.T) { reader.Samples(t, samples, launcherWrites...) }

// launcherWrites are samples made from a plain one by a launcher that
// tags every write (issue 26 class 6): mpiexec -prepend-rank's "[0] "
// and mpirun --tag-output's "[1,0]<stdout>:" inside rows, one of them
// inside a number. Their verdicts and rows must be the plain sample's.
var launcherWrites = []string{
	"nccltests256-vm-run-mpiexec-prepend-rank-every-write-TRANSFORMED.txt",
	"nccltests309-openmpi-tag-output-every-write-cut-number-TRANSFORMED.txt",
}

func TestLauncherWrites(t *testing.T) {
	plain := map[string]string{
		launcherWrites[0]: "h200-kvm-vm-2node-allreduce-27-no-topo-file.txt",
		launcherWrites[1]: "dell-xe9680-h100-2node-allreduce-mpi-warnings.txt",
	}
	for _, f := range launcherWrites {
		t.Run(f, func(t *testing.T) {
			{
				if !Detect(readertest.Body(t, f)) {
					t.Fatal("not detected")
				}
				// Analyze is what --kind nccl-tests runs.
				got, gvs := reader.Sample(t, f)
				want, wvs := reader.Sample(t, plain[f])
				if g, w := keys(gvs), keys(wvs); !slices.Equal(g, w) {
					t.Errorf("verdicts\n%v\nwant the plain sample's\n%v", g, w)
				}
				if len(got.Tests) != 1 || len(want.Tests) != 1 {
					t.Fatalf("%d tests, want 1", len(got.Tests))
				}
				g, w := got.Tests[0], want.Tests[0]
				if len(g.Rows) != len(w.Rows) || len(got.PartialRows) != 0 || len(g.Devices) != len(w.Devices) || g.AvgBusBW != w.AvgBusBW {
					t.Fatalf("%d rows, %d partial, %d devices, avg %v; want %d rows, %d devices, avg %v",
						len(g.Rows), len(got.PartialRows), len(g.Devices), g.AvgBusBW, len(w.Rows), len(w.Devices), w.AvgBusBW)
				}
				for i := range g.Rows {
					gr, wr := g.Rows[i], w.Rows[i]
					if gm, wm := measures(gr), measures(wr); gr.Bytes != wr.Bytes || gm != wm {
						t.Errorf("row %d: %s, want %s", i, gm, wm)
					}
				}
			}
		})
	}
}

// measures prints a row's two halves, #wrong by value.
func measures(r collective.Row) string {
	var b strings.Builder
	for _, m := range []*collective.Measure{r.OutOfPlace, r.InPlace} {
		if m == nil {
			b.WriteString("nil ")
			continue
		}
		fmt.Fprintf(&b, "%v/%v/%v", m.TimeUS, m.AlgBW, m.BusBW)
		if m.Wrong != nil {
			fmt.Fprintf(&b, "/%d", *m.Wrong)
		}
		b.WriteString(" ")
	}
	return b.String()
}

// keys are what verdicts say, without their evidence (line numbers).
func keys(vs []result.Result) []string {
	var ks []string
	for _, v := range vs {
		ks = append(ks, string(v.Status)+" "+v.ID+" "+v.Reason+" "+v.Subject)
	}
	slices.Sort(ks)
	return ks
}

func TestRowParsing(t *testing.T) {
	cols := strings.Fields("size count type redop root time algbw busbw #wrong time algbw busbw #wrong")
	for _, c := range []struct {
		line string
		ok   bool
		root *int
	}{
		{"8 2 float sum -1 69.12 0.00 0.00 0 72.43 0.00 0.00 0", true, ptr(-1)},
		{"0 0 float 1.63 0.00 0.00 N/A 1.38 0.00 0.00 N/A", true, nil},
		{"8 2 float sum -1 69.12 0.00 0.00 0", false, nil},                  // in-place half missing
		{"8 2 float sum x 69.12 0.00 0.00 0 72.43 0.00 0.00 0", false, nil}, // second word
		{"8 2 float sum -1 N/A 0.00 0.00 0 72.43 0.00 0.00 0", false, nil},  // half N/A
		{"8 2 float sum -1 69.12 0.00 0.00 -3 72.43 0.00 0.00 0", false, nil},
		{"8 2 float sum -1 69.12 0.00 0.00 0 72.43 0.00 0.00 0 2025-01-02 12:34:56", true, ptr(-1)},
	} {
		r, err := parseRow(strings.Fields(c.line), cols)
		if (err == nil) != c.ok {
			t.Errorf("%q: err %v, want ok=%v", c.line, err, c.ok)
			continue
		}
		if c.ok && (c.root == nil) != (r.Root == nil) {
			t.Errorf("%q: root %v", c.line, r.Root)
		}
	}
}

func ptr(v int) *int { return &v }

func TestUnreadable(t *testing.T) {
	reader.WantErrors(t, map[string]string{
		"hello\nworld\n":                "x.txt:2:",
		"":                              "x.txt:1:",
		"# nThread 1 nGpus 1\n\x00\x01": "x.txt:2:",
		"{\"nccl_version\": 22602, \"results\": [": "x.txt:1:",
		"{\"foo\": 1}": "x.txt:1:",
	})
}

func TestDetect(t *testing.T) {
	for _, f := range []string{"../perftest/testdata/k8s-cx6-ib-write-bw-host-all-sizes-98g.txt", "../dcgmi/testdata/dcgmi-diag-r2-aws-p4de-a100-dcgm333.txt"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if Detect(b) {
			t.Errorf("%s detected as nccl-tests", f)
		}
	}
}

func FuzzAnalyze(f *testing.F) {
	reader.FuzzAnalyze(f, "# nThread 1 nGpus 1\n#  size count type\n   8 2 float sum -1 1.0 0.0 0.0 0 1.0 0.0 0.0 0\n")
}

// TestHostileLines: long glued tokens and repeated markers must stay linear.
func TestHostileLines(t *testing.T) {
	var b strings.Builder
	b.WriteString("# nThread 1 nGpus 1\n")
	b.WriteString("   8 2 float sum -1" + strings.Repeat("7", 900_000) + "h:1:2 [0] NCCL INFO x\n")
	b.WriteString(strings.Repeat("1] NCCL INFO ", 70_000) + "\n")
	b.WriteString(strings.Repeat("[1,2]<stdou", 90_000) + "\n")
	b.WriteString(strings.Repeat("a", 2<<20) + "\n")
	start := time.Now()
	rep, _, err := Analyze("hostile.txt", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if rep.TruncatedLines != 1 {
		t.Errorf("truncated lines %d, want 1", rep.TruncatedLines)
	}
}

// TestTypeNames: the datatypes a row may name (typeAlt) are those whose
// element size typeSize knows.
func TestTypeNames(t *testing.T) {
	names := strings.Split(typeAlt, "|")
	if len(names) != len(typeSize) {
		t.Errorf("%d type names, %d sizes", len(names), len(typeSize))
	}
	for _, n := range names {
		if typeSize[n] == 0 {
			t.Errorf("type %s has no size", n)
		}
	}
}

// TestTestsCapped is review D3: 200 MB of one-row tables cost 3.8 GB,
// because the tests were not capped (only the rows of each).
func TestTestsCapped(t *testing.T) {
	table := "# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"           8             2     float     sum      -1    35.06    0.00    0.00      0    34.83    0.00    0.00      0\n"
	rep, vs, err := Analyze("t.txt", strings.NewReader(strings.Repeat(table, maxTests+5)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tests) != maxTests || rep.DroppedTests != 5 {
		t.Errorf("%d tests kept, %d dropped; want %d and 5", len(rep.Tests), rep.DroppedTests, maxTests)
	}
	if !slices.ContainsFunc(vs, func(v result.Result) bool { return v.ID == IDRun }) {
		t.Error("no run verdict")
	}
	for _, v := range vs {
		if v.ID == IDRun && (!strings.Contains(v.Message, "and 1008 more") || !strings.Contains(v.Message, "5 further test(s)") || len(v.Message) > 1000) {
			t.Errorf("the run verdict must list 16 tests, then say how many more and that tests were dropped: %.300s", v.Message)
		}
	}
	var big strings.Builder
	big.WriteString(strings.SplitAfterN(table, "\n", 3)[0] + strings.SplitAfterN(table, "\n", 3)[1])
	for range maxTotalRows + 10 {
		big.WriteString(strings.SplitAfterN(table, "\n", 3)[2])
	}
	rep, _, err = Analyze("t.txt", strings.NewReader(strings.Repeat(big.String(), 2)))
	if err != nil {
		t.Fatal(err)
	}
	rows, dropped := 0, 0
	for _, tt := range rep.Tests {
		rows += len(tt.Rows)
		dropped += tt.DroppedRows
	}
	if rows != maxTotalRows || dropped != maxTotalRows+20 {
		t.Errorf("%d rows kept, %d dropped over %d tests; want %d kept", rows, dropped, len(rep.Tests), maxTotalRows)
	}
}

// TestWrongPastTheCaps: a row with wrong elements fails the run even when
// it lies past the caps (tests beyond maxTests are read, not kept), and
// rows past the caps are counted; with every row right, nothing fails.
func TestWrongPastTheCaps(t *testing.T) {
	table := func(wrong int) string {
		return "# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
			"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
			"           8             2     float     sum      -1    35.06    0.00    0.00      " + strconv.Itoa(wrong) + "    34.83    0.00    0.00      0\n"
	}
	for _, c := range []struct {
		name  string
		wrong int
		fail  bool
	}{{"all right", 0, false}, {"wrong past the cap", 3, true}} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			for range maxTests + 10 {
				b.WriteString(table(0))
			}
			b.WriteString(table(c.wrong))
			rep, vs, err := Analyze("tiny.txt", strings.NewReader(b.String()))
			if err != nil {
				t.Fatal(err)
			}
			if rep.DroppedTests != 11 {
				t.Errorf("dropped tests %d, want 11", rep.DroppedTests)
			}
			failed := slices.ContainsFunc(vs, func(v result.Result) bool {
				return v.ID == IDWrong && v.Status == result.Fail && v.Subject == "rows not kept"
			})
			if failed != c.fail {
				t.Errorf("rows-not-kept failure %v, want %v (%d wrong rows not kept)", failed, c.fail, rep.DroppedWrongRows)
			}
			if c.fail && rep.FirstDroppedWrongLine != 3*(maxTests+10)+3 {
				t.Errorf("first wrong row at line %d, want %d", rep.FirstDroppedWrongLine, 3*(maxTests+10)+3)
			}
		})
	}
}
