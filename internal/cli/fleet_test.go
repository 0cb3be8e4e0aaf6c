package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/testutil/ansitest"
)

// fleetDir writes n copies of the H200 machine's report as dossiers
// node-0 ... under one folder, change applied to node i by changes[i].
func fleetDir(t *testing.T, n int, changes map[int]func(*dossier.Report)) string {
	t.Helper()
	root := t.TempDir()
	for i := range n {
		dir := plantedReport(t, func(r *dossier.Report) {
			host := fmt.Sprintf("node-%d", i)
			r.Inventory.Host, r.Verdict.Host = host, host
			if c := changes[i]; c != nil {
				c(r)
			}
		})
		b, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		sub := filepath.Join(root, fmt.Sprintf("node-%d", i))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "report.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestFleetCommand(t *testing.T) {
	healthy := fleetDir(t, 6, nil)
	slow := fleetDir(t, 6, map[int]func(*dossier.Report){3: func(r *dossier.Report) {
		for i := range r.Measurements.Collectives {
			if c := &r.Measurements.Collectives[i]; c.Collective == "all_reduce" {
				c.AlgBW *= 0.7
			}
		}
	}})
	bad := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(bad, []byte(`{"schema": "gdrcheck.report/v1", "inventory": {`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		out  []string
	}{
		{"healthy", []string{"fleet", healthy}, 0, []string{"6 nodes in 1 hardware classes, 0 skipped; 0 to drain."}},
		{"slow node", []string{"fleet", slow}, 1, []string{"node-3  8 measurement(s) below the class median; worst all_reduce/", "(-30.0% of median"}},
		{"markdown", []string{"fleet", "--format", "md", slow}, 1, []string{"| 1 | node-3 |"}},
		{"a dossier and a file", []string{"fleet", filepath.Join(healthy, "node-0"), filepath.Join(healthy, "node-1", "report.json")}, 0, []string{"2 nodes"}},
		{"truncated report", []string{"fleet", healthy, bad}, 2, []string{"6 nodes", "1 skipped", bad}},
		{"missing input", []string{"fleet", filepath.Join(healthy, "nope")}, 2, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := run(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			for _, w := range tc.out {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if code == 2 && !strings.Contains(errOut, tc.args[len(tc.args)-1]) {
				t.Errorf("error does not name the input: %s", errOut)
			}
		})
	}
}

func TestFleetJSONAndOut(t *testing.T) {
	dir := fleetDir(t, 5, map[int]func(*dossier.Report){2: func(r *dossier.Report) { r.Inventory.Driver = "570.86.15" }})
	outDir := filepath.Join(t.TempDir(), "fleet")
	out, errOut, code := run(t, "fleet", "--format", "json", "--out", outDir, dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errOut)
	}
	var doc struct {
		Schema string `json:"schema"`
		Drain  []struct {
			Host    string
			Reasons []string
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "gdrcheck.fleet/v1" || len(doc.Drain) != 1 || doc.Drain[0].Host != "node-2" || !strings.Contains(doc.Drain[0].Reasons[0], "driver 570.86.15") {
		t.Errorf("document %+v", doc)
	}
	for _, f := range []string{"fleet.json", "fleet.md"} {
		if st, err := os.Stat(filepath.Join(outDir, f)); err != nil || st.Size() == 0 {
			t.Errorf("--out: %s: %v", f, err)
		}
	}
}

// TestFleetPrintsEscaped: values from the reports (a host name, a kernel,
// a GPU's name, a failing check's ID) reach the terminal escaped.
func TestFleetPrintsEscaped(t *testing.T) {
	dir := fleetDir(t, 5, map[int]func(*dossier.Report){1: func(r *dossier.Report) {
		r.Inventory.Host = ansitest.Payload
		r.Inventory.Kernel = ansitest.Payload
		r.Inventory.GPUs[0].Name = ansitest.Payload
		r.Verdict.Failing = []string{ansitest.Payload}
	}})
	for _, format := range []string{"text", "md"} {
		out, errOut, code := run(t, "fleet", "--format", format, dir)
		if code != 1 {
			t.Fatalf("%s: exit %d: %s", format, code, errOut)
		}
		ansitest.Clean(t, "fleet --format "+format, out)
	}
}
