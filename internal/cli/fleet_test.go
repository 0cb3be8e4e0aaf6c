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
		{"slow node", []string{"fleet", slow}, 1, []string{"node-3  1 measurement(s) below the class median; worst all_reduce 64M (", "(-30.0% of median"}},
		{"markdown", []string{"fleet", "--format", "md", slow}, 1, []string{"| 1 | node-3 |"}},
		{"a dossier and a file", []string{"fleet", filepath.Join(healthy, "node-0"), filepath.Join(healthy, "node-1", "report.json")}, 0, []string{"2 nodes"}},
		{"truncated report", []string{"fleet", healthy, bad}, 2, []string{"6 nodes", "1 skipped", bad}},
		{"missing input", []string{"fleet", filepath.Join(healthy, "nope")}, 2, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut := runWant(t, tc.args, tc.code, tc.out)
			if tc.code == 2 && !strings.Contains(errOut, tc.args[len(tc.args)-1]) {
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
	for _, f := range []string{"fleet.json", "fleet.md", "fleet.html"} {
		if st, err := os.Stat(filepath.Join(outDir, f)); err != nil || st.Size() == 0 {
			t.Errorf("--out: %s: %v", f, err)
		}
	}
	// Written again, the files are replaced whole and nothing else is
	// left in the folder (renameio's temporary files are gone).
	if _, errOut, code := run(t, "fleet", "--out", outDir, dir); code != 1 {
		t.Fatalf("second --out: exit %d: %s", code, errOut)
	}
	ents, err := os.ReadDir(outDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "fleet.html fleet.json fleet.md" {
		t.Errorf("--out holds %v", names)
	}
	page, err := os.ReadFile(filepath.Join(outDir, "fleet.html"))
	if err != nil || !strings.Contains(string(page), "1 TO DRAIN") || !strings.HasSuffix(strings.TrimSpace(string(page)), "</html>") {
		t.Errorf("fleet.html: %v\n%.300s", err, page)
	}
	// --out that cannot be made is the tool's error (exit 2), naming it;
	// the report still reaches stdout.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run(t, "fleet", "--out", filepath.Join(blocker, "sub"), dir)
	if code != 2 || !strings.Contains(errOut, blocker) || !strings.Contains(out, "NODES TO DRAIN") {
		t.Errorf("--out under a file: exit %d, stderr %q", code, errOut)
	}
}

func TestFleetHTML(t *testing.T) {
	dir := fleetDir(t, 5, map[int]func(*dossier.Report){2: func(r *dossier.Report) { r.Inventory.Driver = "570.86.15" }})
	out, errOut, code := run(t, "fleet", "--format", "html", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errOut)
	}
	for _, w := range []string{"<!DOCTYPE html>", "1 TO DRAIN", "driver 570.86.15, class majority is", "node-2"} {
		if !strings.Contains(out, w) {
			t.Errorf("--format html lacks %q", w)
		}
	}
	if _, _, code := run(t, "fleet", "--format", "svg", dir); code != 2 {
		t.Errorf("--format svg: exit %d, want 2", code)
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
	dir2 := fleetDir(t, 5, map[int]func(*dossier.Report){3: func(r *dossier.Report) {
		r.Inventory.Host = "<script>alert(1)</script>" + ansitest.Payload
		r.Inventory.Driver = "<img src=x>"
	}})
	for _, format := range []string{"text", "md", "html"} {
		for _, d := range []string{dir, dir2} {
			out, errOut, code := run(t, "fleet", "--format", format, d)
			if code != 1 {
				t.Fatalf("%s: exit %d: %s", format, code, errOut)
			}
			ansitest.Clean(t, "fleet --format "+format, out)
			if format == "html" && (strings.Contains(out, "<script") || strings.Contains(out, "<img")) {
				t.Errorf("fleet --format html holds the planted markup raw")
			}
		}
	}
}
