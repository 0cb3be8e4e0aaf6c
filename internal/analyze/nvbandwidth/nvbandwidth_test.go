package nvbandwidth

import (
	"bytes"
	"flag"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

var update = flag.Bool("update", false, "rewrite golden files")

var reader = readertest.Reader[*Report]{Detect: Detect, Analyze: Analyze}

// notNVBandwidth are corpus samples in this package's folder that are not
// nvbandwidth output and must not be read as such.
var notNVBandwidth = map[string]bool{"vastai-4xa100-custom-p2p-bandwidth-nvlink-vs-pcie.txt": true}

func TestGolden(t *testing.T) { reader.GoldenSamples(t, *update, notNVBandwidth) }

func notNVBandwidthFiles() []string { return slices.Collect(maps.Keys(notNVBandwidth)) }

func TestNotNVBandwidth(t *testing.T) {
	for f := range notNVBandwidth {
		body := readertest.Body(t, f)
		if Detect(body) {
			t.Errorf("%s: detected as nvbandwidth", f)
		}
		if _, _, err := Analyze(f, bytes.NewReader(body)); err == nil || !strings.HasPrefix(err.Error(), f+":") {
			t.Errorf("%s: error %v, want one naming the file", f, err)
		}
	}
}

func cell(t *testing.T, tc *Testcase, i, j int) float64 {
	t.Helper()
	c := tc.Matrix[i][j]
	if c == nil {
		t.Fatalf("%s[%d][%d] is N/A", tc.Name, i, j)
	}
	return *c
}

var samples = []readertest.Case[*Report]{
	// Item 7: the tool's own data check failed: a failure with the quoted
	// line, not "no matrix".
	{File: "nvbandwidth-issue34-v07-a100x8-d2d-read-pattern-assert.txt", Verdicts: []string{
		"fail nvbandwidth.testcase ValidationFailed device_to_device_memcpy_read_ce", "fail nvbandwidth.run ValidationFailed run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if len(r.Failures) != 2 || r.Failures[0].Line != 18 || !strings.HasPrefix(r.Failures[1].Text, "ASSERT in expression") || vs[0].Remedy == "" {
				t.Errorf("failures %+v, verdict %+v", r.Failures, vs[0])
			}
		}},
	// v0.2, every testcase: the all_to_one / one_to_all matrices ("All Gpus
	// -> GPU(column)") are read, the uneven bidirectional host copies warn.
	{File: "llm-action-h800x8-v02-all-testcases-gt-prompt.txt", Verdicts: []string{
		"pass nvbandwidth.testcase Measured all_to_one_write_ce", "pass nvbandwidth.testcase Measured one_to_all_read_sm",
		"warn nvbandwidth.testcase OutlierCells all_to_host_bidirectional_memcpy_sm", "pass nvbandwidth.run Completed run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			var one *Testcase
			for _, tc := range r.Testcases {
				if tc.Name == "one_to_all_write_ce" {
					one = tc
				}
			}
			if len(r.Testcases) != 30 || r.GitVersion != "42e94d2" || one == nil || one.RowKind != "All" || one.Direction != "<-" || len(one.Matrix[0]) != 8 || *one.Sum != 1407.95 {
				t.Errorf("testcases %d git %s one_to_all_write_ce %+v", len(r.Testcases), r.GitVersion, one)
			}
		}},
	// v0.2 wording: "Waiving NAME." is a skip of that testcase.
	{File: "nvbandwidth-issue13-v02-2080ti-waived-prompt-fence.txt", Verdicts: []string{
		"skip nvbandwidth.testcase Waived device_to_device_memcpy_write_ce"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if r.Version != "v0.2" || r.GitVersion != "6cefdda" || len(r.Devices) != 2 || len(r.Testcases) != 1 {
				t.Errorf("report %+v", r)
			}
		}},
	{File: "nvbandwidth-issue15-v02-4090x8-prompt-h2d-d2h-excerpt.txt", Verdicts: []string{
		"pass nvbandwidth.testcase Measured host_to_device_memcpy_ce", "pass nvbandwidth.testcase Measured device_to_host_memcpy_ce"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if len(r.Devices) != 8 || *r.Testcases[0].Sum != 205.04 || r.Testcases[1].Min != 26.25 {
				t.Errorf("devices %d testcases %+v", len(r.Devices), r.Testcases)
			}
		}},
	// Quoted "> Running" lines and header lines without their indent.
	{File: "nvbandwidth-issue24-h100-sm-h2d-d2h-quoted-running-lines.txt", Verdicts: []string{
		"pass nvbandwidth.testcase Measured host_to_device_memcpy_sm", "pass nvbandwidth.testcase Measured device_to_host_memcpy_sm"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if len(r.Testcases) != 2 || len(r.Testcases[0].Matrix[0]) != 8 || r.Testcases[1].Max != 52.78 || r.Testcases[0].Engine != "SM" {
				t.Errorf("testcases %+v", r.Testcases)
			}
		}},
	{File: "nvbandwidth-d2d-read-ce-6x-rtx-a6000-pcie-two-islands.txt", Verdicts: []string{
		"pass nvbandwidth.testcase Measured device_to_device_memcpy_read_ce", "pass nvbandwidth.run Completed run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			tc := r.Testcases[0]
			if r.Version != "v0.8" || r.DriverVersion != "580.95.05" || len(tc.Matrix) != 6 || tc.Matrix[0][0] != nil || *tc.Sum != 715.53 {
				t.Errorf("version %s driver %s rows %d diag %v sum %v", r.Version, r.DriverVersion, len(tc.Matrix), tc.Matrix[0][0], tc.Sum)
			}
			if cell(t, tc, 0, 5) != 21.80 || tc.Median != 22.64 || tc.Engine != "CE" || tc.Direction != "->" {
				t.Errorf("cell %v median %v engine %s dir %s", cell(t, tc, 0, 5), tc.Median, tc.Engine, tc.Direction)
			}
			if r.Hostname != "" {
				t.Errorf("the '...' line was taken for a host name: %q", r.Hostname)
			}
		}},
	{File: "nvbandwidth-readme-d2d-write-ce-8gpu-a100.txt", Verdicts: []string{"pass nvbandwidth.testcase Measured device_to_device_memcpy_write_ce"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			tc := r.Testcases[0]
			if tc.Matrix[3][3] != nil || tc.Sum != nil || cell(t, tc, 6, 0) != 274.89 || tc.Direction != "<-" || tc.Min != 274.89 {
				t.Errorf("old 0.00 diagonal %v sum %v cell %v dir %s min %v", tc.Matrix[3][3], tc.Sum, cell(t, tc, 6, 0), tc.Direction, tc.Min)
			}
		}},
	{File: "nvbandwidth-readme-h2d-and-bidir-8gpu-pcie4.txt", Verdicts: []string{
		"pass nvbandwidth.testcase Measured host_to_device_memcpy_ce", "pass nvbandwidth.testcase Measured host_to_device_bidirectional_memcpy_ce"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if len(r.Testcases) != 2 || r.Testcases[1].Direction != "<->" || r.Testcases[0].RowKind != "CPU" || len(r.Testcases[0].Matrix[0]) != 8 || cell(t, r.Testcases[1], 0, 3) != 19.59 {
				t.Errorf("testcases %+v", r.Testcases)
			}
		}},
	{File: "nvbandwidth-v08-4x-t4-pcie-gen3-d2d-ce-sm.txt", Verdicts: []string{
		"pass nvbandwidth.testcase Measured device_to_device_memcpy_read_ce", "pass nvbandwidth.testcase Measured device_to_device_memcpy_read_sm"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if r.Hostname != "4329ebc474e0" || len(r.Devices) != 4 || r.Devices[2].BusID != "00000000:af:00" || r.Devices[0].Name != "Tesla T4" {
				t.Errorf("host %q devices %+v", r.Hostname, r.Devices)
			}
			if tc := r.Testcases[1]; tc.Engine != "SM" || *tc.Sum != 121.14 || tc.SumComputed != 121.14 {
				t.Errorf("sm testcase %+v", tc)
			}
		}},
	{File: "synthetic-nvbandwidth-json-t4.txt", Verdicts: []string{
		"pass nvbandwidth.testcase Measured device_to_device_memcpy_read_ce", "skip nvbandwidth.testcase Waived device_to_device_bidirectional_memcpy_read_ce"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			tc := r.Testcases[0]
			if r.Format != "json" || r.Hostname != "4329ebc474e0" || len(r.Devices) != 4 || cell(t, tc, 3, 0) != 9.97 || tc.Matrix[1][1] != nil || *tc.Sum != 121.93 || r.CUDARuntime != "12020" {
				t.Errorf("json report %+v testcase %+v", r, tc)
			}
		}},
	{File: "synthetic-d2d-write-ce-one-slow-link.txt", Verdicts: []string{
		"warn nvbandwidth.testcase OutlierCells device_to_device_memcpy_write_ce", "skip nvbandwidth.testcase Waived (waived)",
		"error nvbandwidth.testcase TestcaseError device_to_device_memcpy_read_sm"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			v := vs[0]
			if !strings.Contains(v.Message, "GPU2 <- GPU3 130.11 GB/s") || !strings.Contains(v.Message, "vs the reverse") {
				t.Errorf("outlier verdict %q", v.Message)
			}
		}},
}

func TestSamples(t *testing.T) { reader.Samples(t, samples, notNVBandwidthFiles()...) }

func TestUnreadable(t *testing.T) {
	reader.WantErrors(t, map[string]string{
		"hello\n":                         "x.txt:1:",
		`{"nvbandwidth": {"testcases": [`: "x.txt:1:",
		"{\n\n \"other\": 1}\n":           "x.txt:1:",
		"{\n \"nvbandwidth\": {\"testcases\": [{\"bandwidth_matrix\": [[true]]}]}}\n": "x.txt:1:",
	})
}

func TestWriteFuzzSeeds(t *testing.T) { readertest.FuzzSeeds(t, 0, "FuzzAnalyze") }

func FuzzAnalyze(f *testing.F) {
	reader.FuzzAnalyze(f, "Running x_ce.\nmemcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n 0 1\n0 N/A 1.0\n1 2.0 N/A\n\nSUM x_ce 3.0\n")
}

// TestTestcaseCap is review D1: past 4096 "Running X." lines the reader
// dereferenced a nil testcase and panicked.
func TestTestcaseCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("nvbandwidth Version: v0.8\n")
	for range maxCases + 1 {
		b.WriteString("Running host_to_device_memcpy_ce.\n")
	}
	for _, in := range []string{b.String(), strings.TrimPrefix(b.String(), "nvbandwidth Version: v0.8\n")} {
		rep, vs, err := Analyze("nv.txt", strings.NewReader(in))
		readertest.CheckOutcome(t, "nv.txt", rep, vs, err)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Testcases) != maxCases || rep.Dropped != 1 {
			t.Errorf("%d testcases kept, %d dropped; want %d and 1", len(rep.Testcases), rep.Dropped, maxCases)
		}
	}
}

// runningLine and sumLine are reRunning and reSum without the regexp.
func TestHandParsers(t *testing.T) {
	for _, s := range []string{"Running a.", "Running a", "Running a..", "Running .", "Running ..", "Running a b.", "Running ", "Running\ta.",
		"Running a.\t", "Running x\vy.", "SUM a 1", "SUM a 1 2", "SUM  a\t1", "SUMa 1", "SUM a", "SUM", "SUM a 1\f", "SUM a\v1 2"} {
		var m []string
		got, want := runningLine(s, &m), reRunning.FindStringSubmatch(s)
		if got != (want != nil) || got && m[1] != want[1] {
			t.Errorf("runningLine(%q) = %v %q, regexp %q", s, got, m, want)
		}
		m = nil
		got, want = sumLine(s, &m), reSum.FindStringSubmatch(s)
		if got != (want != nil) || got && (m[1] != want[1] || m[2] != want[2]) {
			t.Errorf("sumLine(%q) = %v %q, regexp %q", s, got, m, want)
		}
	}
}

// The regexps the hand parsers replace.
var (
	reRunning = regexp.MustCompile(`^Running (\S+?)\.?\s*$`)
	reSum     = regexp.MustCompile(`^SUM\s+(\S+)\s+(\S+)\s*$`)
)
