// Package kittest helps the readers' tests: corpus samples, golden files
// and the properties every reader's fuzz target checks.
package kittest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/readkit"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Sample reads a corpus copy under testdata: it must keep its source
// header, which is stripped from the body returned.
func Sample(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	body, ok := readkit.CorpusBody(b)
	if !ok {
		t.Fatalf("%s: no source header (source:/hardware:/notes: then ---)", path)
	}
	return body
}

// Golden compares got with the golden file, or rewrites it when update is set.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the output (run go test -update to accept):\n%s", path, firstDiff(string(want), string(got)))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  golden: %q\n  got:    %q", i+1, x, y)
		}
	}
	return "(length differs)"
}

// JSON marshals v the way golden files hold it.
func JSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// Verdict formats a verdict as "status id reason subject".
func Verdict(r result.Result) string {
	return fmt.Sprintf("%s %s %s %s", r.Status, r.ID, r.Reason, r.Subject)
}

// Verdicts formats every verdict.
func Verdicts(rs []result.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, Verdict(r))
	}
	return out
}

// HasAll reports the wanted verdict strings missing from got.
func Missing(got []result.Result, want []string) []string {
	have := map[string]bool{}
	for _, s := range Verdicts(got) {
		have[s] = true
	}
	var miss []string
	for _, w := range want {
		if !have[w] {
			miss = append(miss, w)
		}
	}
	return miss
}

// TextReport is what every reader's report can do.
type TextReport interface{ WriteText(io.Writer) error }

// CheckOutcome is the fuzz property of every reader: an error names the
// file and a line; a report has verdicts of the vocabulary, marshals to
// JSON and prints.
func CheckOutcome(t testing.TB, name string, rep TextReport, verdicts []result.Result, err error) {
	t.Helper()
	if err != nil {
		var pe *readkit.ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("error is not a ParseError: %T %v", err, err)
		}
		if pe.Name != name || pe.Line < 1 {
			t.Fatalf("error does not name the file and a line: %v", err)
		}
		if !strings.HasPrefix(err.Error(), name+":") {
			t.Fatalf("error text does not start with the file name: %v", err)
		}
		return
	}
	for _, v := range verdicts {
		if !v.Status.Valid() || v.ID == "" || v.Reason == "" || v.Subject == "" {
			t.Fatalf("malformed verdict %+v", v)
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatalf("report does not marshal: %v", err)
	}
	if err := rep.WriteText(io.Discard); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
}
