package perftest

import (
	"flag"
	"math"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

var update = flag.Bool("update", false, "rewrite golden files")

var reader = readertest.Reader[*Report]{Detect: Detect, Analyze: Analyze}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-3 }

func TestGolden(t *testing.T) { reader.GoldenSamples(t, *update, nil) }

var samples = []readertest.Case[*Report]{
	// Issue 26 class 5: GPU-memory runs whose registration failed before
	// the test banner. The CUDA set-up alone is no proof of GPU Direct
	// RDMA: gpu-memory fails; a client that dies with rdma_cm errors and
	// a segfault, its command on the first line, is still perftest.
	{File: "perftest-issue31-server-cuda-k80-couldnt-allocate-mr-prompt.txt", Verdicts: []string{
		"fail perftest.run RegistrationFailed run", "unknown perftest.bw NoResults run", "fail perftest.gpu-memory RegistrationFailed run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if r.Memory.Kind != "cuda" || r.Memory.GPU != "Tesla K80" || !r.Server {
				t.Errorf("memory %+v server %v", r.Memory, r.Server)
			}
		}},
	{File: "perftest-issue126-client-cuda-a30-mr-failed-rdmacm-segfault.txt", Verdicts: []string{
		"fail perftest.run RegistrationFailed run", "fail perftest.gpu-memory RegistrationFailed run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if r.Memory.Kind != "cuda" || r.Tool != "ib_write_bw" {
				t.Errorf("memory %+v tool %q", r.Memory, r.Tool)
			}
		}},
	// Two table fragments without banner or borders, the average in
	// Markdown bold: both rows read.
	{File: "perftest-issue65-send-bw-two-fragments-markdown-bold.txt", Verdicts: []string{"pass perftest.run Completed run", "pass perftest.bw SmallMessages run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if len(r.Rows) != 2 || r.Rows[0].BWAverage != 5544.28 || r.Rows[1].BWAverage != 920.13 || r.Unit != "MB/sec" {
				t.Errorf("rows %+v unit %s", r.Rows, r.Unit)
			}
		}},
	// Starts at the title (no top border); a message-rate run.
	{File: "perftest-issue273-postlist-8b-60s-gbits-no-top-border.txt", Verdicts: []string{"pass perftest.run Completed ib0", "pass perftest.bw SmallMessages ib0"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if len(r.Rows) != 1 || r.Rows[0].Iterations != 224958464 || r.Rows[0].MsgRate != 7.498617 || r.Unit != "Gb/sec" {
				t.Errorf("rows %+v unit %s", r.Rows, r.Unit)
			}
		}},
	// Cut before (or inside) the result row: unknown, never a pass.
	{File: "perftest-issue234-server-waiting-banner-mbsec-excerpt.txt", Verdicts: []string{"unknown perftest.run NoResults mlx5_0", "unknown perftest.bw NoResults mlx5_0"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if !r.Server || len(r.Rows) != 0 {
				t.Errorf("server %v rows %+v", r.Server, r.Rows)
			}
		}},
	{File: "perftest-pr214-min-bw-indented-code-block-excerpt.txt", Verdicts: []string{"unknown perftest.run NoResults ibp5", "pass perftest.mtu MTU ibp5"}},
	{File: "gke-a3ultra-h200-ib-write-bw-cuda-dmabuf-140g.txt", Verdicts: []string{
		"warn perftest.bw BelowLinkRate mlx5_3", "pass perftest.gpu-memory DMABUF mlx5_3", "pass perftest.run Completed mlx5_3", "pass perftest.mtu MTU mlx5_3"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if !near(r.PeakAvgGbps, 140.95) || r.PeakAvgBytes != 131072 || len(r.Rows) != 23 || r.Memory.GPU != "NVIDIA H200" || r.Memory.GPUBusID != "8F:00" || !r.Memory.DMABufRequested {
				t.Errorf("peak %v at %d rows %d memory %+v", r.PeakAvgGbps, r.PeakAvgBytes, len(r.Rows), r.Memory)
			}
			if !near(r.Rows[0].BWPeak, 0.057240) || r.LinkType != "Ethernet" || r.MTU != 4096 || r.Params["CQE Poll Batch"] != "16" {
				t.Errorf("first row %+v link %s mtu %d params %v", r.Rows[0], r.LinkType, r.MTU, r.Params)
			}
		}},
	{File: "gke-a3ultra-h200-ib-write-bw-host-failed-status10.txt", Verdicts: []string{
		"fail perftest.run TransferFailed mlx5_3", "pass perftest.bw Measured mlx5_3", "skip perftest.gpu-memory HostMemory mlx5_3"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if !near(r.PeakAvgGbps, 381.41) || !near(r.PeakGbps, 381.5) || len(r.Rows) != 16 || len(r.Errors) != 3 {
				t.Errorf("peak avg %v peak %v rows %d errors %v", r.PeakAvgGbps, r.PeakGbps, len(r.Rows), r.Errors)
			}
			if v := vs[0]; !strings.Contains(v.Message, "IBV_WC_REM_ACCESS_ERR") || !strings.Contains(v.Remedy, "remote access") {
				t.Errorf("run verdict %+v", v)
			}
			if r.Command != "ib_write_bw 10.0.4.7 -a --report_gbits" || r.Tool != "ib_write_bw" {
				t.Errorf("command %q tool %q", r.Command, r.Tool)
			}
		}},
	{File: "ib-write-bw-loopback-8M-superbench.txt", Verdicts: []string{"pass perftest.bw Measured ib0", "pass perftest.run Completed ib0"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			// 24056.72 MiB/s = 24056.72 * 2^20 * 8 / 1e9 Gb/s.
			if len(r.Rows) != 1 || r.Sides != 2 || !r.Server || r.Unit != "MB/sec" || !near(r.PeakAvgGbps, 201.802) {
				t.Errorf("rows %d sides %d server %v unit %q peak %v", len(r.Rows), r.Sides, r.Server, r.Unit, r.PeakAvgGbps)
			}
		}},
	{File: "ib-write-bw-loopback-allsizes-superbench.txt", Verdicts: []string{"pass perftest.bw Measured ib0"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if len(r.Rows) != 23 || r.Sides != 2 || !near(r.PeakAvgGbps, 195.269) || r.PeakAvgBytes != 4194304 || !near(r.Rows[12].BWAverage, 12782.56) {
				t.Errorf("rows %d sides %d peak %v at %d row12 %+v", len(r.Rows), r.Sides, r.PeakAvgGbps, r.PeakAvgBytes, r.Rows[12])
			}
		}},
	{File: "ib-write-bw-postlist-8byte-msgrate-roce.txt", Verdicts: []string{"pass perftest.bw SmallMessages ib0", "pass perftest.run Completed ib0"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if len(r.Rows) != 1 || r.Rows[0].Iterations != 224958464 || !near(r.Rows[0].MsgRate, 7.498617) || r.Params["Post List"] != "128" || r.Params["PCIe relax order"] != "Unsupported" {
				t.Errorf("row %+v params %v", r.Rows, r.Params)
			}
		}},
	{File: "k8s-cx6-ib-write-bw-host-all-sizes-98g.txt", Verdicts: []string{"pass perftest.bw Measured mlx5_0", "skip perftest.gpu-memory HostMemory mlx5_0"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if !near(r.PeakAvgGbps, 98.38) || len(r.Rows) != 23 || r.LinkType != "IB" {
				t.Errorf("peak %v rows %d link %s", r.PeakAvgGbps, len(r.Rows), r.LinkType)
			}
		}},
	{File: "openshift-a40-roce-ib-write-bw-cuda-dmabuf-16qp-rdmacm-mtu1024.txt", Verdicts: []string{
		"warn perftest.gpu-memory DMABUFNotUsed mlx5_1", "warn perftest.mtu MTULowered mlx5_1", "pass perftest.bw Measured mlx5_1"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if !near(r.PeakAvgGbps, 181.46) || !r.DurationMode || r.MTU != 1024 || !r.MTULowered || r.QPs != 16 || !r.RDMACM || r.Memory.Registration != "peermem" {
				t.Errorf("peak %v duration %v mtu %d lowered %v qps %d rdmacm %v memory %+v", r.PeakAvgGbps, r.DurationMode, r.MTU, r.MTULowered, r.QPs, r.RDMACM, r.Memory)
			}
		}},
	{File: "synthetic-ib-write-bw-out-json.txt", Verdicts: []string{"pass perftest.bw Measured mlx5_3", "pass perftest.run Completed mlx5_3"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if r.Format != "json" || r.Unit != "Gb/sec (inferred)" || !near(r.PeakAvgGbps, 381.41) || r.LinkType != "Ethernet" || r.MTU != 4096 {
				t.Errorf("format %s unit %q peak %v link %s mtu %d", r.Format, r.Unit, r.PeakAvgGbps, r.LinkType, r.MTU)
			}
		}},
	{File: "synthetic-ib-write-lat.txt", Verdicts: []string{"pass perftest.lat Measured mlx5_0", "pass perftest.run Completed mlx5_0"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if r.Type != "lat" || len(r.LatRows) != 3 || *r.LatRows[0].Typical != 1.05 || *r.LatRows[0].P999 != 4.31 || *r.LatRows[2].Stdev != 0.04 {
				t.Errorf("type %s rows %+v", r.Type, r.LatRows)
			}
		}},
	{File: "synthetic-ib-read-bw-cannot-connect.txt", Verdicts: []string{"error perftest.run ToolError run", "unknown perftest.bw NoResults run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if r.Tool != "ib_read_bw" || len(r.Errors) != 2 {
				t.Errorf("tool %q errors %v", r.Tool, r.Errors)
			}
		}},
}

func TestSamples(t *testing.T) { reader.Samples(t, samples) }

func TestUnitInference(t *testing.T) {
	// 8 MiB messages at 0.002905 Mpps are 24371 MB/s = 195.3 Gb/s: a
	// BW_average of 23240 must be MiB/s, one of 195 Gb/s.
	for _, c := range []struct {
		avg  float64
		unit string
	}{{23240.68, "MiB/sec (inferred)"}, {195.0, "Gb/sec (inferred)"}} {
		r := &Report{Rows: []Row{{Bytes: 8388608, BWAverage: c.avg, MsgRate: 0.002905}}}
		finish(r)
		if r.Unit != c.unit {
			t.Errorf("avg %v: unit %q, want %q", c.avg, r.Unit, c.unit)
		}
	}
}

func TestUnreadable(t *testing.T) {
	reader.WantErrors(t, map[string]string{
		"nothing here\n": "x.txt:1:",
		"{\n\"test_info\": {\n\"Device\": \"mlx5_0\",\n": "x.txt:3:",
		"{\n\"results\": {\ngarbage line\n}\n}\n":        "x.txt:3:",
		" #bytes     #iterations    BW peak[Gb/sec]\x00": "x.txt:1:",
	})
}

func TestWriteFuzzSeeds(t *testing.T) { readertest.FuzzSeeds(t, 0, "FuzzAnalyze") }

func FuzzAnalyze(f *testing.F) {
	reader.FuzzAnalyze(f, " #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n 65536 5000 381.5 381.41 0.727\n")
}
