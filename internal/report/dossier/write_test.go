package dossier

import (
	"errors"
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
