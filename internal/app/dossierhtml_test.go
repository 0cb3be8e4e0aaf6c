package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/report/html"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// The dossier's report.html is the page of its report.json: written by the
// run through DossierFiles, listed in SHA256SUMS, and the same as
// rendering report.json afresh.
func TestDossierWritesReportHTML(t *testing.T) {
	root := fakehost.Archive(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	_, dir, err := runDossier(t, t.Context(), root, DossierOptions{})
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, html.ReportHTML))
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.Open(filepath.Join(dir, dossier.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	defer js.Close()
	rep, err := dossier.Decode(js)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := html.Render(&want, rep); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page, want.Bytes()) {
		t.Error("report.html is not the rendering of report.json")
	}
	sums, err := os.ReadFile(filepath.Join(dir, dossier.Sums))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sums), "  "+html.ReportHTML+"\n") {
		t.Errorf("SHA256SUMS does not list report.html:\n%s", sums)
	}
}
