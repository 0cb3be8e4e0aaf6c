// Package readertest helps the readers' tests: corpus samples, golden files
// and the properties every reader's fuzz target checks.
package readertest

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

	"github.com/gdrcheck/gdrcheck/internal/analyze/textio"
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
	body, ok := CorpusBody(b)
	if !ok {
		t.Fatalf("%s: no source header (source:/hardware:/notes: then ---)", path)
	}
	return body
}

// CorpusBody strips the three-line source header and its "---" line from a
// corpus sample. ok is false when the sample has no such header.
func CorpusBody(b []byte) (body []byte, ok bool) {
	i := bytes.Index(b, []byte("\n---\n"))
	if i < 0 || !bytes.HasPrefix(b, []byte("source:")) {
		return b, false
	}
	return b[i+5:], true
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

// Missing reports the wanted verdict strings missing from got.
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
		var pe *textio.ParseError
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

// WantVerdicts fails t for each wanted verdict ("status id reason
// subject") missing from got.
func WantVerdicts(t testing.TB, got []result.Result, want []string) {
	t.Helper()
	if miss := Missing(got, want); len(miss) > 0 {
		t.Errorf("missing verdicts %v; got %v", miss, Verdicts(got))
	}
}

// Covered fails t for each sample testdata/*.txt that covered does not name.
func Covered(t testing.TB, covered map[string]bool) {
	t.Helper()
	files, _ := filepath.Glob("testdata/*.txt")
	for _, f := range files {
		if !covered[filepath.Base(f)] {
			t.Errorf("%s has no assertions in TestSamples", f)
		}
	}
}

// Reader is a reader package under test: its Detect and Analyze, and
// the verdicts of its report.
type Reader[R TextReport] struct {
	Detect   func(head []byte) bool
	Analyze  func(name string, r io.Reader) (R, error)
	Verdicts func(R) []result.Result
}

// Sample analyzes the corpus sample testdata/file, which Detect must
// recognise from its head.
func (rd Reader[R]) Sample(t testing.TB, file string) R {
	t.Helper()
	body := Sample(t, filepath.Join("testdata", file))
	if !rd.Detect(body[:min(len(body), textio.HeadSize)]) {
		t.Errorf("%s: Detect is false", file)
	}
	rep, err := rd.Analyze(file, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// GoldenSamples compares the report of every sample testdata/*.txt but
// those in except, as JSON and as text, with testdata/golden/<stem>.json
// and <stem>.txt (rewritten when update is set).
func (rd Reader[R]) GoldenSamples(t *testing.T, update bool, except map[string]bool) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no samples")
	}
	for _, f := range files {
		base := filepath.Base(f)
		if except[base] {
			continue
		}
		t.Run(base, func(t *testing.T) {
			rep := rd.Sample(t, base)
			stem := strings.TrimSuffix(base, ".txt")
			Golden(t, filepath.Join("testdata", "golden", stem+".json"), JSON(t, rep), update)
			var buf bytes.Buffer
			if err := rep.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			Golden(t, filepath.Join("testdata", "golden", stem+".txt"), buf.Bytes(), update)
		})
	}
}

// WantError wants Analyze to refuse in (read as "x.txt") with an error
// that starts with prefix ("x.txt:3:").
func (rd Reader[R]) WantError(t testing.TB, in, prefix string) {
	t.Helper()
	_, err := rd.Analyze("x.txt", strings.NewReader(in))
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("%q: error %v, want one starting %q", in, err, prefix)
	}
}

// Fuzz is a reader's fuzz target (f.Fuzz(reader.Fuzz)): Detect and
// Analyze take any input, and the outcome passes CheckOutcome.
func (rd Reader[R]) Fuzz(t *testing.T, data []byte) {
	rd.Detect(data)
	rep, err := rd.Analyze("fuzz.txt", bytes.NewReader(data))
	if err != nil {
		CheckOutcome(t, "fuzz.txt", nil, nil, err)
		return
	}
	CheckOutcome(t, "fuzz.txt", rep, rd.Verdicts(rep), nil)
}
