// Package readertest helps the readers' tests: corpus samples, golden files
// and the properties every reader's fuzz target checks.
package readertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/goldenfile"
	"github.com/gdrcheck/gdrcheck/internal/textio"
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

// CorpusBody strips the source header of a corpus copy: a first line
// "source: ..." and the lines up to and including "---" (the readers'
// samples also give "hardware:" and "notes:"). ok is false when there is no
// such header.
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
	goldenfile.Check(t, path, got, update)
}

// JSON marshals v the way golden files hold it: indented by two spaces,
// with <, > and & escaped.
func JSON(t testing.TB, v any) []byte {
	t.Helper()
	return indented(t, v, "", false)
}

func indented(t testing.TB, v any, prefix string, raw bool) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(!raw)
	enc.SetIndent(prefix, "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// GoldenJSON is the JSON of a report with its verdicts added as a last
// member, "verdicts": what the golden files hold. (analyze --format json
// writes the two side by side, as "report" and "verdicts".)
func GoldenJSON(t testing.TB, rep any, verdicts []result.Result, raw bool) []byte {
	t.Helper()
	r := indented(t, rep, "", raw)
	if !bytes.HasSuffix(r, []byte("\n}\n")) {
		t.Fatalf("report is not a non-empty JSON object: %.40q", r)
	}
	v := indented(t, verdicts, "  ", raw)
	out := append(r[:len(r)-3:len(r)-3], ",\n  \"verdicts\": "...)
	out = append(out, v[:len(v)-1]...) // the encoder's newline
	return append(out, "\n}\n"...)
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

// Report is what every reader's report can do (analyze.Report).
type Report interface {
	WriteText(w io.Writer, verdicts []result.Result) error
}

// CheckOutcome is the fuzz property of every reader: an error names the
// file and a line; a report has verdicts of the vocabulary, marshals to
// JSON and prints.
func CheckOutcome(t testing.TB, name string, rep Report, verdicts []result.Result, err error) {
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
		if !v.Status.Valid() || v.ID == "" || v.Source == "" || v.Reason == "" || v.Subject == "" {
			t.Fatalf("malformed verdict %+v", v)
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatalf("report does not marshal: %v", err)
	}
	if err := rep.WriteText(io.Discard, verdicts); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
}

// WantParseError fails t unless err is a *textio.ParseError naming the
// file name and line, with msg in its message and the text "name:line: ...".
func WantParseError(t testing.TB, err error, name string, line int, msg string) {
	t.Helper()
	var pe *textio.ParseError
	if !errors.As(err, &pe) {
		t.Errorf("%s: err = %v, want a ParseError", name, err)
		return
	}
	if pe.Name != name || pe.Line != line || !strings.Contains(pe.Msg, msg) || !strings.HasPrefix(err.Error(), name+":") {
		t.Errorf("%s: %v, want line %d and %q", name, err, line, msg)
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

// Want is one verdict a sample must get: ID for Subject, with Status and
// Reason.
type Want struct {
	ID      string
	Status  result.Status
	Reason  string
	Subject string
}

// Wants reads verdicts written "status id reason" for subject, or
// "status id reason subject" for another one. It panics on a malformed one.
func Wants(subject string, verdicts ...string) []Want {
	var out []Want
	for _, v := range verdicts {
		f := strings.Fields(v)
		if len(f) == 3 {
			f = append(f, subject)
		}
		if len(f) != 4 || !result.Status(f[0]).Valid() {
			panic(fmt.Sprintf("readertest: malformed verdict %q", v))
		}
		out = append(out, Want{ID: f[1], Status: result.Status(f[0]), Reason: f[2], Subject: f[3]})
	}
	return out
}

// ExactVerdicts fails t unless got holds exactly one verdict per (ID,
// Subject) of want, with the wanted status and reason, and nothing else.
// Each has a title and a message, and a fail or warn has evidence unless
// bare says it may go without.
func ExactVerdicts(t testing.TB, got []result.Result, want []Want, bare func(result.Result) bool) {
	t.Helper()
	type key struct{ id, subject string }
	have := map[key]result.Result{}
	for _, x := range got {
		k := key{x.ID, x.Subject}
		if _, dup := have[k]; dup {
			t.Errorf("two verdicts %s for %s", x.ID, x.Subject)
		}
		have[k] = x
	}
	for _, w := range want {
		k := key{w.ID, w.Subject}
		x, ok := have[k]
		if !ok {
			t.Errorf("%s for %s: missing", w.ID, w.Subject)
			continue
		}
		delete(have, k)
		if x.Status != w.Status || x.Reason != w.Reason {
			t.Errorf("%s for %s = %s %s, want %s %s (%s)", w.ID, w.Subject, x.Status, x.Reason, w.Status, w.Reason, x.Message)
		}
		if x.Message == "" || x.Title == "" {
			t.Errorf("%s: empty message or title", w.ID)
		}
		if (x.Status == result.Fail || x.Status == result.Warn) && len(x.Evidence) == 0 && (bare == nil || !bare(x)) {
			t.Errorf("%s %s has no evidence", w.ID, x.Status)
		}
	}
	for k, x := range have {
		t.Errorf("unexpected verdict %s for %s: %s %s", k.id, k.subject, x.Status, x.Reason)
	}
}

// ExactSamples runs ExactVerdicts on every sample testdata/*.txt with the
// verdicts want gives it (a sample want does not name fails), then check,
// when not nil, on its verdicts.
func (rd Reader[R]) ExactSamples(t *testing.T, want map[string][]Want, bare func(result.Result) bool, check func(t *testing.T, file string, vs []result.Result)) {
	for _, file := range Samples(t) {
		t.Run(file, func(t *testing.T) {
			w, ok := want[file]
			if !ok {
				t.Fatalf("no expected verdicts for %s: add them to the table", file)
			}
			_, vs := rd.Sample(t, file)
			ExactVerdicts(t, vs, w, bare)
			if check != nil {
				check(t, file, vs)
			}
		})
	}
}

// EvidenceLines checks every evidence item of every sample's verdicts: its
// source names a line of the sample ("file:N") and holds(line, value) says
// that line holds the value the item quotes.
func (rd Reader[R]) EvidenceLines(t *testing.T, holds func(line, value string) bool) {
	for _, name := range Samples(t) {
		lines := strings.Split(string(Body(t, name)), "\n")
		_, vs := rd.Sample(t, name)
		for _, x := range vs {
			for _, e := range x.Evidence {
				var n int
				if _, err := fmt.Sscan(strings.TrimPrefix(e.Source, name+":"), &n); err != nil || n < 1 || n > len(lines) {
					t.Errorf("%s %s: bad source %q", name, x.ID, e.Source)
					continue
				}
				if !holds(lines[n-1], e.Value) {
					t.Errorf("%s %s: line %d %q does not hold the evidence %q", name, x.ID, n, lines[n-1], e.Value)
				}
			}
		}
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

// Reader is a reader package under test: its Detect and Analyze.
type Reader[R Report] struct {
	Detect  func(head []byte) bool
	Analyze func(name string, r io.Reader) (R, []result.Result, error)
	// RawJSON keeps <, > and & unescaped in the JSON goldens.
	RawJSON bool
	// Undetected names the samples that Detect must not claim (another
	// kind's output that holds a few lines of this one) but that Analyze
	// still reads.
	Undetected map[string]bool
}

// Body is the corpus sample testdata/file without its source header.
func Body(t testing.TB, file string) []byte {
	t.Helper()
	return Sample(t, filepath.Join("testdata", file))
}

// Sample analyzes the corpus sample testdata/file, which Detect must
// recognise from its head (unless the sample is Undetected).
func (rd Reader[R]) Sample(t testing.TB, file string) (R, []result.Result) {
	t.Helper()
	body := Body(t, file)
	// Detect is given the head as analyze gives it: cleaned of paste
	// prefixes (textio.CleanHead).
	if got := rd.Detect(textio.CleanHead(body[:min(len(body), textio.HeadSize)])); got == rd.Undetected[file] {
		t.Errorf("%s: Detect is %v", file, got)
	}
	rep, vs, err := rd.Analyze(file, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return rep, vs
}

// Report is the report of the corpus sample testdata/file (see Sample).
func (rd Reader[R]) Report(t testing.TB, file string) R {
	t.Helper()
	r, _ := rd.Sample(t, file)
	return r
}

// Samples lists the corpus samples testdata/*.txt by file name, sorted.
func Samples(t testing.TB) []string {
	t.Helper()
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no samples")
	}
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	return files
}

// GoldenSamples compares the report of every sample testdata/*.txt but
// those in except, as JSON (GoldenJSON) and as text, with
// testdata/golden/<stem>.json and <stem>.txt (rewritten when update is set).
func (rd Reader[R]) GoldenSamples(t *testing.T, update bool, except map[string]bool) {
	for _, base := range Samples(t) {
		if except[base] {
			continue
		}
		t.Run(base, func(t *testing.T) {
			rep, vs := rd.Sample(t, base)
			stem := strings.TrimSuffix(base, ".txt")
			Golden(t, filepath.Join("testdata", "golden", stem+".json"), GoldenJSON(t, rep, vs, rd.RawJSON), update)
			var buf bytes.Buffer
			if err := rep.WriteText(&buf, vs); err != nil {
				t.Fatal(err)
			}
			Golden(t, filepath.Join("testdata", "golden", stem+".txt"), buf.Bytes(), update)
		})
	}
}

// Case is what a person concludes from one corpus sample: the verdicts
// ("status id reason subject") it must get, and further checks.
type Case[R Report] struct {
	File     string
	Verdicts []string
	Check    func(t *testing.T, r R, vs []result.Result)
}

// Samples runs every case, then fails for each sample testdata/*.txt that
// no case (nor also) names.
func (rd Reader[R]) Samples(t *testing.T, cases []Case[R], also ...string) {
	covered := map[string]bool{}
	for _, f := range also {
		covered[f] = true
	}
	for _, c := range cases {
		covered[c.File] = true
	}
	rd.Cases(t, cases)
	Covered(t, covered)
}

// Cases runs every case, a subtest named by its file.
func (rd Reader[R]) Cases(t *testing.T, cases []Case[R]) {
	for _, c := range cases {
		t.Run(c.File, func(t *testing.T) {
			r, vs := rd.Sample(t, c.File)
			WantVerdicts(t, vs, c.Verdicts)
			if c.Check != nil {
				c.Check(t, r, vs)
			}
		})
	}
}

// WantErrors wants Analyze to refuse each input of refusals (read as
// "x.txt") with an error that starts with the prefix it maps to ("x.txt:3:").
func (rd Reader[R]) WantErrors(t testing.TB, refusals map[string]string) {
	t.Helper()
	for in, prefix := range refusals {
		_, _, err := rd.Analyze("x.txt", strings.NewReader(in))
		if err == nil || !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("%q: error %v, want one starting %q", in, err, prefix)
		}
	}
}

// Fuzz is a reader's fuzz target (f.Fuzz(reader.Fuzz)): Detect and
// Analyze take any input, and the outcome passes CheckOutcome.
func (rd Reader[R]) Fuzz(t *testing.T, data []byte) {
	rd.Detect(data)
	rep, vs, err := rd.Analyze("fuzz.txt", bytes.NewReader(data))
	if err != nil {
		CheckOutcome(t, "fuzz.txt", nil, nil, err)
		return
	}
	CheckOutcome(t, "fuzz.txt", rep, vs, nil)
}

// FuzzAnalyze is the body of a reader's FuzzAnalyze: it adds seeds to the
// corpus and fuzzes with Fuzz.
func (rd Reader[R]) FuzzAnalyze(f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(rd.Fuzz)
}

// writeSeeds is the test flag -write-seeds of every reader package.
var writeSeeds = flag.Bool("write-seeds", false, "rewrite the fuzz seeds in testdata/fuzz from the samples")

// WantSeed keeps data in the corpus of a fuzz target as
// testdata/fuzz/<target>/<name>: an input that once crashed a reader stays
// a seed, so that go test and every fuzz run replay it. With -write-seeds
// it writes the seed; otherwise it fails for a missing or stale one.
func WantSeed(t *testing.T, target, name string, data []byte) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	writeSeed(t, dir, filepath.Join(dir, name), data)
}

func writeSeed(t *testing.T, dir, path string, data []byte) {
	t.Helper()
	content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
	if *writeSeeds {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != content {
		t.Errorf("%s: missing or stale fuzz seed (rewrite with -write-seeds)", path)
	}
}

// FuzzSeeds keeps one seed per sample in the corpus of each fuzz target,
// testdata/fuzz/<target>/seed-<stem>: the sample's body, cut at a line end
// to at most max bytes when max > 0. With -write-seeds it rewrites them;
// otherwise it fails for a missing or stale seed.
func FuzzSeeds(t *testing.T, max int, targets ...string) {
	for _, fz := range targets {
		dir := filepath.Join("testdata", "fuzz", fz)
		for _, name := range Samples(t) {
			seed := Body(t, name)
			if max > 0 && len(seed) > max {
				cut := bytes.LastIndexByte(seed[:max], '\n')
				if cut < 0 {
					cut = max - 1
				}
				seed = seed[:cut+1]
			}
			writeSeed(t, dir, filepath.Join(dir, "seed-"+strings.TrimSuffix(name, ".txt")), seed)
		}
	}
}
