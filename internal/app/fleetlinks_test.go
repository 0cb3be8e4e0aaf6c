package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/fleet"
)

// fleet.html links each node to the report.html beside its report.json,
// relative to where the page is written; a report without one is named,
// not linked.
func TestFleetPageLinksReports(t *testing.T) {
	src, err := os.ReadFile("../../docs/examples/h200x1-quick/report.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths []string
	for i, host := range []string{"node1", "node2"} {
		d := filepath.Join(dir, "dossiers", host)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		b := strings.ReplaceAll(string(src), `"host-65cf06c2"`, `"`+host+`"`)
		if err := os.WriteFile(filepath.Join(d, "report.json"), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := os.WriteFile(filepath.Join(d, "report.html"), []byte("<html></html>"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		paths = append(paths, filepath.Join(d, "report.json"))
	}
	fl := fleet.Read(len(paths), 1, func(i int, buf []byte) ([]byte, string, error) {
		b, err := os.ReadFile(paths[i])
		return b, paths[i], err
	}, fleet.DefaultOptions())
	out := filepath.Join(dir, "fleet")
	if err := WriteFleet(out, &report.Envelope{Schema: "gdrcheck.fleet/v1", Data: fl}, fl); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, "fleet.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `<a href="../dossiers/node1/report.html">`) || strings.Contains(string(page), `node2/report.html`) {
		t.Errorf("links: %s", grepLines(string(page), "report.json"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
