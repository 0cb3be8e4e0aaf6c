package dossier

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// CheckSum: the manifest's line for the file, its digest, or none.
func TestCheckSum(t *testing.T) {
	content := []byte(`{"schema":"gdrcheck.report/v1"}`)
	sums := SumLine("report.md", []byte("x")) + SumLine(ReportJSON, content)
	if err := CheckSum([]byte(sums), ReportJSON, content); err != nil {
		t.Errorf("matching: %v", err)
	}
	if err := CheckSum([]byte(strings.ReplaceAll(sums, "\n", "\r\n")), ReportJSON, content); err != nil {
		t.Errorf("CRLF: %v", err)
	}
	if err := CheckSum([]byte(sums), ReportJSON, append(content, ' ')); err == nil || !strings.Contains(err.Error(), "edited after the run") {
		t.Errorf("edited: %v", err)
	}
	if err := CheckSum([]byte(SumLine("report.md", []byte("x"))), ReportJSON, content); !errors.Is(err, ErrNotListed) {
		t.Errorf("not listed: %v", err)
	}
}

// Lock: one holder at a time; released on Close.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	a, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir); err == nil || !strings.Contains(err.Error(), "another gdrcheck run is writing this dossier") {
		t.Errorf("second: %v", err)
	}
	a.Close()
	b, err := Lock(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	b.Close()
}

// report.md's heading escapes the host name like a cell (the review's
// S5: raw HTML and a javascript: link in the first line).
func TestMarkdownHeadingEscaped(t *testing.T) {
	r := &Report{}
	r.Inventory.Host = "x<img src=x onerror=alert(1)>[click](javascript:alert(2))\x1b]0;t\x07"
	var b strings.Builder
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(b.String(), "\n")
	// Markup not escaped: a < or ]( without a backslash before it.
	if regexp.MustCompile(`(^|[^\\])(<|\]\()`).MatchString(head) || strings.ContainsAny(head, "\x1b\x07") {
		t.Errorf("heading not escaped: %q", head)
	}
}

// Where a dossier may go, judged before a run's work.
func TestCheckOut(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, files ...string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(p, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	file := filepath.Join(mk("f", "afile"), "afile")
	for _, c := range []struct {
		dir     string
		replace bool
		want    string // "" ok
	}{
		{filepath.Join(dir, "new", "deeper"), false, ""},
		{mk("empty"), false, ""},
		{mk("locked", LockFile), false, ""},
		{mk("dossier", ReportJSON, LockFile, Sums), false, "holds a dossier already (report.json): --force replaces it"},
		{filepath.Join(dir, "dossier"), true, ""},
		{mk("other", "notes.txt"), false, "holds 1 files that are not a gdrcheck dossier (notes.txt)"},
		{filepath.Join(dir, "other"), true, ""},
		{file, false, "exists and is not a folder (a file)"},
		{filepath.Join(file, "report"), false, file + " is not a folder"},
	} {
		err := CheckOut(c.dir, c.replace)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s (replace %v): %v", c.dir, c.replace, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s (replace %v): %v, want %q", c.dir, c.replace, err, c.want)
		}
	}
}
