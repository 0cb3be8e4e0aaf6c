package dcgmi

import (
	"flag"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

var update = flag.Bool("update", false, "rewrite golden files")

var reader = readertest.Reader[*Report]{Detect: Detect, Analyze: Analyze}

func TestGolden(t *testing.T) { reader.GoldenSamples(t, *update, nil) }

func test(t *testing.T, r *Report, name string) *Test {
	t.Helper()
	for _, x := range r.Tests {
		if x.Name == name {
			return x
		}
	}
	t.Fatalf("no test %q", name)
	return nil
}

var samples = []readertest.Case[*Report]{
	// DCGM 2.x fragment without header: 'Fail - All' fails, the cut table
	// is not a completed run, and its start is not there either.
	{File: "dcgm-issue49-dcgm246-fragment-pcie-fail-all-nvlink-warnings.txt", Verdicts: []string{
		"fail dcgmi.diag TestFailed PCIe", "unknown dcgmi.run Fragment run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			p := test(t, r, "PCIe")
			if !p.AllGPUs || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0].Text, "NvLink link 4 is currently down") || p.Category != "Integration" {
				t.Errorf("PCIe %+v", p)
			}
		}},
	{File: "go-dcgm-issue52-dcgm331-mid-table-fragment-gpu0-memory-fail-excerpt.txt", Verdicts: []string{
		"fail dcgmi.diag TestFailed GPU Memory", "unknown dcgmi.run Fragment run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			m := test(t, r, "GPU Memory")
			if len(r.Tests) != 1 || len(m.GPUs) != 2 || m.Result != "Fail" || len(r.Orphans) != 9 || !strings.Contains(vs[1].Message, "lines 1-9") {
				t.Errorf("tests %d memory %+v orphans %v run %q", len(r.Tests), m, r.Orphans, vs[1].Message)
			}
		}},
	{File: "dcgm-issue55-dcgm304-prompt-no-metadata-excerpt.txt", Verdicts: []string{
		"pass dcgmi.diag Pass Inforom", "unknown dcgmi.run Truncated run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if len(r.Tests) != 9 || r.DCGMVersion != "" {
				t.Errorf("tests %d version %q", len(r.Tests), r.DCGMVersion)
			}
		}},
	{File: "nccl-tests-issue264-dcgm338-root-prompt-info-wrapped-excerpt.txt", Verdicts: []string{
		"pass dcgmi.diag Pass Persistence Mode", "unknown dcgmi.run Truncated run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			pm := test(t, r, "Persistence Mode")
			if r.DCGMVersion != "3.3.8" || len(r.DeviceIDs) != 8 || len(pm.Info) != 1 || pm.Info[0].Text != "Persistence mode for GPU 0 is disabled. Enable persistence mode" {
				t.Errorf("version %s ids %d info %+v", r.DCGMVersion, len(r.DeviceIDs), pm.Info)
			}
		}},
	{File: "autopilot-issue68-dcgm335-kubectl-defaulted-container-excerpt.txt", Verdicts: []string{
		"pass dcgmi.diag Pass Permissions and OS Blocks", "unknown dcgmi.run Truncated run"}},
	{File: "dcgmi-diag-dcgm423-l40s-x4-pcie-internal-error-k8s.txt", Verdicts: []string{
		"error dcgmi.diag InternalError pcie", "pass dcgmi.diag Pass software", "pass dcgmi.diag Pass memory", "unknown dcgmi.run Truncated run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			p := test(t, r, "pcie")
			if p.Result != "Fail" || len(p.GPUs) != 4 || len(p.Warnings) != 4 || r.Complete || r.DCGMVersion != "4.2.3" || len(r.DeviceIDs) != 4 {
				t.Errorf("pcie %+v complete %v version %s ids %v", p, r.Complete, r.DCGMVersion, r.DeviceIDs)
			}
			// DCGM wraps at 45 characters, mid-word: the pieces join back.
			want := "There was an internal error during the test: 'A child process (152) exited with non-zero status 1' Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics."
			if p.Warnings[0].Text != want {
				t.Errorf("warning reassembled as %q", p.Warnings[0].Text)
			}
			if p.Category != "Integration" || test(t, r, "memory").Category != "Hardware" {
				t.Errorf("categories %q %q", p.Category, test(t, r, "memory").Category)
			}
		}},
	{File: "dcgmi-diag-r2-aws-p4de-a100-dcgm333.txt", Verdicts: []string{
		"pass dcgmi.diag Pass PCIe", "pass dcgmi.diag Pass GPU Memory", "pass dcgmi.diag Pass Denylist", "pass dcgmi.run Completed run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if len(r.Tests) != 11 || !r.Complete || r.DCGMVersion != "3.3.3" || len(r.DeviceIDs) != 8 || r.DriverVersion != "535.104.12" {
				t.Errorf("tests %d complete %v version %s ids %d", len(r.Tests), r.Complete, r.DCGMVersion, len(r.DeviceIDs))
			}
			if p := test(t, r, "PCIe"); !p.AllGPUs || p.Canonical != "pcie" || test(t, r, "GPU Memory").Canonical != "memory" {
				t.Errorf("PCIe %+v", p)
			}
		}},
	{File: "dcgmi-diag-r2-dcgm442-single-gpu-a10g-newformat.txt", Verdicts: []string{
		"pass dcgmi.diag Pass software", "pass dcgmi.diag Pass memory", "pass dcgmi.diag Pass pcie", "pass dcgmi.run Completed run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if len(r.Tests) != 3 || r.DCGMVersion != "4.4.2" || len(test(t, r, "pcie").GPUs) != 1 {
				t.Errorf("tests %+v", r.Tests)
			}
		}},
	{File: "synthetic-dcgmi-diag-json-dcgm4-internal-error.txt", Verdicts: []string{"error dcgmi.diag InternalError pcie", "pass dcgmi.diag Pass software", "pass dcgmi.run Completed run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			p := test(t, r, "pcie")
			if r.Format != "json" || r.DCGMVersion != "4.2.3" || len(p.GPUs) != 2 || len(p.Warnings) != 1 || *p.Warnings[0].ErrorID != 44 || len(r.DeviceIDs) != 2 {
				t.Errorf("json report %+v pcie %+v", r, p)
			}
		}},
	{File: "synthetic-dcgmi-diag-r3-dcgm3-memory-fail-gpu2.txt", Verdicts: []string{
		"fail dcgmi.diag TestFailed GPU Memory", "pass dcgmi.diag Pass Targeted Stress", "pass dcgmi.diag Pass PCIe", "pass dcgmi.run Completed run"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			m := test(t, r, "GPU Memory")
			if m.Result != "Fail" || len(m.GPUs) != 8 || len(m.Warnings) != 1 || m.Warnings[0].GPU == nil || *m.Warnings[0].GPU != 2 {
				t.Fatalf("GPU Memory %+v", m)
			}
			if want := "GPU 2 Uncorrectable ECC errors found (1 DBE) in GPU memory; the GPU needs a reset and an RMA if it repeats"; m.Warnings[0].Text != want {
				t.Errorf("warning %q", m.Warnings[0].Text)
			}
			for _, v := range vs {
				if v.Subject == "GPU Memory" && (!strings.Contains(v.Message, "on GPU2:") || !strings.Contains(v.Remedy, "ECC")) {
					t.Errorf("verdict %+v", v)
				}
			}
		}},
}

func TestSamples(t *testing.T) { reader.Samples(t, samples) }

// TestFailureKinds is the judgement that matters: a Fail with only
// internal-error messages is the tool's error; a GPU row that fails, or a
// plain warning, is a finding.
func TestFailureKinds(t *testing.T) {
	i44, c16, c10 := 44, 16, 10
	for _, c := range []struct {
		name string
		t    Test
		want string
	}{
		{"internal text, GPUs pass", Test{Name: "pcie", Result: "Fail", GPUs: []GPUResult{{0, "Pass"}}, Warnings: []Message{{Text: "There was an internal error during the test: 'x'"}}}, "error"},
		{"internal by code", Test{Name: "pcie", Result: "Fail", Warnings: []Message{{Text: "something", ErrorID: &i44}}}, "error"},
		{"internal by category", Test{Name: "pcie", Result: "Fail", Warnings: []Message{{Text: "something", Category: &c16}}}, "error"},
		{"hardware category", Test{Name: "memory", Result: "Fail", Warnings: []Message{{Text: "ECC", Category: &c10}}}, "fail"},
		{"a GPU fails", Test{Name: "pcie", Result: "Fail", GPUs: []GPUResult{{0, "Fail"}}, Warnings: []Message{{Text: "There was an internal error during the test: 'x'"}}}, "fail"},
		{"no message", Test{Name: "pcie", Result: "Fail"}, "fail"},
		{"mixed messages", Test{Name: "pcie", Result: "Fail", Warnings: []Message{{Text: "There was an internal error"}, {Text: "PCIe replay rate exceeded"}}}, "fail"},
		{"warn", Test{Name: "pcie", Result: "Warn"}, "warn"},
		{"odd", Test{Name: "pcie", Result: "Maybe"}, "unknown"},
	} {
		v := testVerdict("x", &c.t)
		if string(v.Status) != c.want {
			t.Errorf("%s: %s (%s), want %s", c.name, v.Status, v.Reason, c.want)
		}
	}
}

// TestErrorRows is item 7 of issue 13: an "Error" row or result is a
// failure whatever the test's own result says; Skip stays a skip.
func TestErrorRows(t *testing.T) {
	const head = "| Diagnostic | Result |\n|-----  Hardware  ----+----|\n"
	for _, c := range []struct{ name, table, want string }{
		{"error row under a Pass", "| memory | Pass |\n| Error | GPU 0 had a DBE |\n", "fail dcgmi.diag ErrorReported memory"},
		{"error row under a Skip", "| memory | Skip |\n| Error | GPU 0 could not be tested |\n", "fail dcgmi.diag ErrorReported memory"},
		{"error result", "| memory | Error |\n", "fail dcgmi.diag TestFailed memory"},
		{"error per GPU", "| memory | Pass |\n|  | GPU0: Pass |\n|  | GPU1: Error |\n", "fail dcgmi.diag TestFailed memory"},
		{"error row before any test", "| Error | the plugin did not load |\n| memory | Pass |\n", "fail dcgmi.diag ErrorReported (global)"},
		{"skip", "| memory | Skip |\n", "skip dcgmi.diag Skipped memory"},
		{"warning row under a Pass", "| memory | Pass |\n| Warning | slow |\n", "pass dcgmi.diag Pass memory"},
		{"internal error row", "| memory | Pass |\n| Error | There was an internal error during the test |\n", "pass dcgmi.diag Pass memory"},
	} {
		_, vs, err := Analyze("x.txt", strings.NewReader(head+c.table+"+----+----+\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if m := readertest.Missing(vs, []string{c.want}); len(m) > 0 {
			t.Errorf("%s: want %s, got %v", c.name, c.want, readertest.Verdicts(vs))
		}
	}
}

// TestHeadless is issue 26 class 7: a table pasted from a section border
// onward is not a complete run even when its bottom border closes it, and
// rows pasted alone are read (with --kind dcgmi), so that a "Fail - GPU: 0"
// row still fails. The stored public pastes that start at a border are cut
// at their end as well (dcgm-issue49, go-dcgm-issue52), so the closed case
// is the real r2-aws-p4de sample cut at its Integration border, and the
// rows are go-dcgm-issue52's GPU Memory rows without the table around them.
func TestHeadless(t *testing.T) {
	full := readertest.Sample(t, "testdata/dcgmi-diag-r2-aws-p4de-a100-dcgm333.txt")
	fromBorder := full[strings.Index(string(full), "+-----  Integration"):]
	issue52 := string(readertest.Sample(t, "testdata/go-dcgm-issue52-dcgm331-mid-table-fragment-gpu0-memory-fail-excerpt.txt"))
	var rows []string
	for _, l := range strings.Split(issue52, "\n") {
		if strings.HasPrefix(l, "| GPU Memory") || strings.Contains(l, "- GPU: ") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("go-dcgm-issue52's GPU Memory rows: %q", rows)
	}
	for _, c := range []struct {
		name string
		in   string
		want []string
	}{
		{"from a section border, closed", string(fromBorder), []string{"pass dcgmi.diag Pass PCIe", "pass dcgmi.diag Pass GPU Memory", "unknown dcgmi.run Fragment run"}},
		{"rows alone", strings.Join(rows, "\n") + "\n", []string{"fail dcgmi.diag TestFailed GPU Memory", "unknown dcgmi.run Fragment run"}},
		{"the whole table", string(full), []string{"pass dcgmi.run Completed run"}},
	} {
		r, vs, err := Analyze("x.txt", strings.NewReader(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if m := readertest.Missing(vs, c.want); len(m) > 0 {
			t.Errorf("%s: missing %v, got %v", c.name, m, readertest.Verdicts(vs))
		}
		if r.Headless == (c.name == "the whole table") {
			t.Errorf("%s: headless %v", c.name, r.Headless)
		}
	}
}

func TestUnreadable(t *testing.T) {
	reader.WantErrors(t, map[string]string{
		"hello\n": "x.txt:1:",
		"{\"DCGM Diagnostic\": {\"test_categories\": [": "x.txt:1:",
		"{\n\"other\": {}\n}\n":                         "x.txt:1:",
		"| Diagnostic | Result |\n\x00":                 "x.txt:2:",
	})
}

func TestWriteFuzzSeeds(t *testing.T) { readertest.FuzzSeeds(t, 0, "FuzzAnalyze") }

func FuzzAnalyze(f *testing.F) {
	reader.FuzzAnalyze(f, "| Diagnostic | Result |\n|-----  Hardware  ----+----|\n| memory | Fail |\n| Warning | GPU 0 bad |\n|  | GPU0: Fail |\n+----+----+\n")
}
