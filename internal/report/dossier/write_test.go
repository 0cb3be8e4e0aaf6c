package dossier

import (
	"errors"
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
