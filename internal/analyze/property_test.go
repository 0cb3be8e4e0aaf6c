package analyze_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/analyze"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/long"
)

// The exit status rule of analyze (docs/analyzers.md): 2 only when an
// input cannot be read (or the options are wrong); any input that can be
// read gives 0 or 1, and says something about itself: an output with its
// verdicts, or an analyze.input finding (not recognised).

// samplePaths are the readers' real samples, the material the generator
// cuts, shuffles and garbles.
func samplePaths(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, k := range []string{"dcgmi", "ncclog", "nccltests", "nccltopo", "nvbandwidth", "perftest", "smitopo"} {
		ps, err := filepath.Glob(filepath.Join(k, "testdata", "*.*"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ps...)
	}
	if len(out) < 50 {
		t.Fatalf("%d samples", len(out))
	}
	return out
}

// garble makes one readable input from the samples: cut, shuffled,
// interleaved, prefixed, with random bytes, CRLF or NULs.
func garble(r *rand.Rand, samples [][]byte) []byte {
	pick := func() []byte { return samples[r.IntN(len(samples))] }
	lines := func(b []byte) [][]byte { return bytes.SplitAfter(b, []byte("\n")) }
	switch r.IntN(9) {
	case 0: // random bytes
		b := make([]byte, r.IntN(4096))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	case 1: // random printable lines
		var b bytes.Buffer
		for range r.IntN(200) {
			for range r.IntN(120) {
				b.WriteByte(byte(' ' + r.IntN(95)))
			}
			b.WriteByte('\n')
		}
		return b.Bytes()
	case 2: // a sample cut anywhere
		s := pick()
		return s[:r.IntN(len(s)+1)]
	case 3: // a sample's lines shuffled
		ls := lines(pick())
		r.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
		return bytes.Join(ls, nil)
	case 4: // two samples' lines interleaved
		a, b := lines(pick()), lines(pick())
		var out bytes.Buffer
		for len(a)+len(b) > 0 {
			if len(b) == 0 || len(a) > 0 && r.IntN(2) == 0 {
				out.Write(a[0])
				a = a[1:]
			} else {
				out.Write(b[0])
				b = b[1:]
			}
		}
		return out.Bytes()
	case 5: // every line with a random prefix
		var out bytes.Buffer
		pfx := []string{"[1,0]<stdout>:", "3: ", "> ", "2024-07-19T10:00:01Z ", "pod-7f9c: ", "$ ", "\t"}
		for _, l := range lines(pick()) {
			out.WriteString(pfx[r.IntN(len(pfx))])
			out.Write(l)
		}
		return out.Bytes()
	case 6: // CRLF
		return bytes.ReplaceAll(pick(), []byte("\n"), []byte("\r\n"))
	case 7: // bytes of a sample flipped, a NUL among them
		s := bytes.Clone(pick())
		for range 1 + r.IntN(20) {
			if len(s) > 0 {
				s[r.IntN(len(s))] = byte(r.IntN(256))
			}
		}
		return s
	default: // lines of several samples, cut
		var out bytes.Buffer
		for range 1 + r.IntN(4) {
			ls := lines(pick())
			i := r.IntN(len(ls))
			j := i + r.IntN(len(ls)-i+1)
			out.Write(bytes.Join(ls[i:j], nil))
		}
		return out.Bytes()
	}
}

// checkReadable runs analyze on one readable input (with args) and checks
// the rule: exit 0 or 1 when the input is judged, 3 when it is said not
// recognised (nothing judged is no success), never 2.
func checkReadable(t *testing.T, path string, args ...string) {
	t.Helper()
	code, out, errOut := run(append(append([]string{"analyze", "--format", "json"}, args...), path)...)
	if code != 0 && code != 1 && code != 3 {
		t.Fatalf("exit %d on a readable input (args %v): %s", code, args, errOut)
	}
	var doc struct {
		Results []result.Result `json:"results"`
		Data    []struct {
			File string `json:"file"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	judged := len(doc.Data) > 0
	said := false
	for _, r := range doc.Results {
		if r.ID == "analyze.input" {
			if judged || r.Status != result.Unknown || r.Reason != "NotRecognised" || r.Subject != path {
				t.Fatalf("input finding %+v beside %d outputs", r, len(doc.Data))
			}
			said = true
		}
	}
	if !judged && !said {
		t.Fatalf("no output and no finding (args %v): %s", args, out)
	}
	if said != (code == 3) {
		t.Fatalf("exit %d, not recognised: %v (args %v)", code, said, args)
	}
	if code == 1 != result.Count(doc.Results).Failed() {
		t.Fatalf("exit %d with results %v", code, result.Count(doc.Results))
	}
}

// TestExitProperty: a fixed-seed generator of garbled inputs; none makes
// analyze exit 2, each gives a finding. Inputs that cannot be read do
// give 2, whatever the others.
func TestExitProperty(t *testing.T) {
	var samples [][]byte
	for _, p := range samplePaths(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, b)
	}
	r := rand.New(rand.NewPCG(13, 8))
	dir := t.TempDir()
	// 100 garbled inputs by default (the first 100 of the long form's
	// sequence), 300 with GDRCHECK_LONG=1: more mixtures of the same
	// samples, not another kind of input.
	n := 100
	if long.Enabled() {
		n = 300
	}
	if testing.Short() {
		n = 60
	}
	kinds := append([]string{""}, analyze.Kinds()...)
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("in%03d.txt", i))
		if err := os.WriteFile(p, garble(r, samples), 0o644); err != nil {
			t.Fatal(err)
		}
		var args []string
		if k := kinds[r.IntN(len(kinds))]; k != "" && r.IntN(3) == 0 {
			args = []string{"--kind", k}
		}
		t.Run(filepath.Base(p), func(t *testing.T) { checkReadable(t, p, args...) })
	}
	for _, bad := range []string{"/nonexistent/x.log", dir} {
		if code, _, errOut := run("analyze", filepath.Join(dir, "in000.txt"), bad); code != 2 || !strings.Contains(errOut, bad) {
			t.Errorf("%s: exit %d, %q; want 2 naming it", bad, code, errOut)
		}
	}
}

// FuzzExitProperty is the same rule under go test -fuzz, seeded with every
// sample.
func FuzzExitProperty(f *testing.F) {
	for _, p := range samplePaths(f) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "in.txt")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		checkReadable(t, p)
	})
}
