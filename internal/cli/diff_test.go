package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/ansitest"
)

const h200Dossier = repo + "/docs/examples/h200x1-quick"

// plantedReport writes the H200 machine's report with change applied, in
// a dossier folder of its own, and returns the folder.
func plantedReport(t *testing.T, change func(*dossier.Report)) string {
	t.Helper()
	f, err := os.Open(filepath.Join(h200Dossier, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := dossier.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	change(r)
	dir := t.TempDir()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runWant runs the command, which must exit with code and print each of
// out; it returns what it printed on stdout and stderr.
func runWant(t *testing.T, args []string, code int, out []string) (string, string) {
	t.Helper()
	o, errOut, c := run(t, args...)
	if c != code {
		t.Fatalf("exit %d, want %d\n%s%s", c, code, o, errOut)
	}
	for _, w := range out {
		if !strings.Contains(o, w) {
			t.Errorf("output lacks %q:\n%s", w, o)
		}
	}
	return o, errOut
}

func TestDiffCommand(t *testing.T) {
	slower := plantedReport(t, func(r *dossier.Report) {
		r.Inventory.Driver = "580.200.01"
		for i := range r.Measurements.Collectives {
			if m := &r.Measurements.Collectives[i]; m.Collective == "all_reduce" && m.Bytes >= 64<<20 {
				m.AlgBW *= 0.8
			}
		}
	})
	bumped := plantedReport(t, func(r *dossier.Report) { r.Inventory.Driver = "580.200.01" })
	cases := []struct {
		name string
		args []string
		code int
		out  []string
	}{
		{"same dossier", []string{"diff", h200Dossier, h200Dossier + "/report.json"}, 0, []string{"no changes", "61 measurements compared, 0 moved"}},
		{"driver bumped", []string{"diff", h200Dossier, bumped}, 0, []string{"CHANGED", "driver: 580.159.04 → 580.200.01"}},
		{"slower all_reduce", []string{"diff", h200Dossier, slower}, 1, []string{"WORSE", "all_reduce 64M (1 rank) GB/s algbw: ", "(-20.0%)", "driver"}},
		{"markdown", []string{"diff", "--format", "md", h200Dossier, slower}, 1, []string{"| worse | measurements | all\\_reduce 64M (1 rank) GB/s algbw |"}},
		{"looser floor", []string{"diff", "--floor", "0.3", h200Dossier, slower}, 0, []string{"nothing got worse"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runWant(t, tc.args, tc.code, tc.out)
		})
	}
}

func TestDiffJSON(t *testing.T) {
	out, errOut, code := run(t, "diff", "--format", "json", h200Dossier, h200Dossier)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Schema  string          `json:"schema"`
		Results []result.Result `json:"results"`
		Changes []any           `json:"changes"`
		Old     struct{ Host string }
		Noise   struct{ Floor float64 }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "gdrcheck.diff/v1" || doc.Results == nil || doc.Changes == nil || doc.Old.Host != "vm" || doc.Noise.Floor != 0.05 {
		t.Errorf("envelope %+v", doc)
	}
}

func TestDiffUnreadable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badType := write("type.json", "{\n\"schema\": \"gdrcheck.report/v1\",\n\"inventory\": {\"gpus\": \"none\"}\n}\n")
	badSyntax := write("syntax.json", "{\n\"schema\": \"gdrcheck.report/v1\",\n}\n")
	otherSchema := write("run.json", `{"schema": "gdrcheck.run/v1"}`)
	badStatus := write("status.json", `{"schema": "gdrcheck.report/v1", "results": [{"id": "x", "status": "fine"}]}`)
	empty := t.TempDir()
	cases := []struct {
		name string
		args []string
		msg  []string
	}{
		{"missing", []string{"diff", h200Dossier, filepath.Join(dir, "nope")}, []string{"nope", "no such file"}},
		{"folder without report", []string{"diff", empty, h200Dossier}, []string{empty, "not a dossier"}},
		{"wrong type", []string{"diff", badType, h200Dossier}, []string{"type.json:3: ", `field "inventory.gpus"`}},
		{"syntax", []string{"diff", h200Dossier, badSyntax}, []string{"syntax.json:3: "}},
		{"other schema", []string{"diff", otherSchema, h200Dossier}, []string{"run.json", `schema "gdrcheck.run/v1"`}},
		{"bad status", []string{"diff", badStatus, h200Dossier}, []string{"status.json", `status "fine"`}},
		{"bad floor", []string{"diff", "--floor", "-1", h200Dossier, h200Dossier}, []string{"floor -1"}},
		{"bad format", []string{"diff", "--format", "junit", h200Dossier, h200Dossier}, []string{"--format"}},
		{"one argument", []string{"diff", h200Dossier}, []string{"2 arg"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := run(t, tc.args...)
			if code != ExitToolErr {
				t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
			}
			for _, m := range tc.msg {
				if !strings.Contains(errOut, m) {
					t.Errorf("stderr lacks %q: %s", m, errOut)
				}
			}
		})
	}
}

// TestDiffPrintsEscaped: values from the reports (a host name, a NIC's
// firmware) reach the terminal escaped.
func TestDiffPrintsEscaped(t *testing.T) {
	hostile := plantedReport(t, func(r *dossier.Report) {
		r.Inventory.Host = ansitest.Payload
		r.Inventory.Kernel = ansitest.Payload
		r.Results[0].Status = result.Fail
		r.Results[0].Message = ansitest.Payload
	})
	for _, format := range []string{"text", "md"} {
		out, _, code := run(t, "diff", "--format", format, h200Dossier, hostile)
		if code != 1 {
			t.Fatalf("%s: exit %d", format, code)
		}
		ansitest.Clean(t, "diff --format "+format, out)
	}
}
