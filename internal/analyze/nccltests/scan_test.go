package nccltests

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/analyze/textio"
)

// The regular expressions nThreadLine and deviceLine implement.
var (
	nThreadExpr = regexp.MustCompile(`^nThread\s+(\d+)\s+nGpus\s+(\d+)`)
	deviceExpr  = regexp.MustCompile(`^Rank\s+(\d+)(?:\s+Group\s+(\d+))?\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$`)
)

func checkScan(t *testing.T, s string) {
	t.Helper()
	var got []string
	if !nThreadLine(s, &got) {
		got = nil
	}
	if want := nThreadExpr.FindStringSubmatch(s); !slices.Equal(got, want) {
		t.Fatalf("nThreadLine(%q) = %q; regexp %q", s, got, want)
	}
	if f := textio.AppendFields([]string{"x"}, s); !slices.Equal(f[1:], strings.Fields(s)) || f[0] != "x" {
		t.Fatalf("textio.AppendFields(%q) = %q; strings.Fields %q", s, f[1:], strings.Fields(s))
	}
	got = nil
	if !deviceLine(s, &got) {
		got = nil
	}
	if want := deviceExpr.FindStringSubmatch(s); !slices.Equal(got, want) {
		t.Fatalf("deviceLine(%q) = %q; regexp %q", s, got, want)
	}
}

// TestScanMatchesRegexp: the hand scanners give the regexps' answers on
// nccl-tests' lines and on many generated ones.
func TestScanMatchesRegexp(t *testing.T) {
	for _, s := range []string{"nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5",
		"Rank  0 Group  0 Pid     25 on test-nccl-worker-0 device  0 [0x53] NVIDIA H100 80GB HBM3",
		"Rank  1 Pid  26 on host device  1 [0000:64:00] NVIDIA A100", "Rank 2 Group x Pid 3 on h device 0 [] ",
		"nThread1 nGpus 2", "Rank 0 Pid 1 on a b device 0 [x] y", "a\u00a0b\u2003 c", "\v x\f", ""} {
		checkScan(t, s)
	}
	parts := []string{"", " ", "  ", "\t", "nThread", "nGpus", "Rank", "Group", "Pid", "on", "device", "0", "12", "x",
		"host-1", "[", "]", "[0x53]", "NVIDIA H100", "é", "\n"}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 300000 {
		var b strings.Builder
		for k := rng.IntN(14); k >= 0; k-- {
			b.WriteString(parts[rng.IntN(len(parts))])
			if rng.IntN(3) > 0 {
				b.WriteByte(' ')
			}
		}
		checkScan(t, b.String())
	}
	// Device lines with one thing changed: a token dropped, doubled or
	// replaced, blanks varied.
	tmpl := []string{"Rank", "3", "Group", "0", "Pid", "25", "on", "host-1", "device", "2", "[0x53]", "NVIDIA", "H100"}
	seps := []string{" ", "  ", "\t", "", "\n"}
	for range 100000 {
		toks := slices.Clone(tmpl)
		switch k := rng.IntN(len(toks)); rng.IntN(4) {
		case 0:
			toks = slices.Delete(toks, k, k+1)
		case 1:
			toks = slices.Insert(toks, k, toks[k])
		case 2:
			toks[k] = parts[rng.IntN(len(parts))]
		}
		var b strings.Builder
		for i, tok := range toks {
			if i > 0 {
				b.WriteString(seps[min(rng.IntN(12), len(seps)-1)])
			}
			b.WriteString(tok)
		}
		checkScan(t, b.String())
	}
}

// FuzzScan: no line makes the scanners disagree with the regexps.
func FuzzScan(f *testing.F) {
	f.Add("Rank  0 Group  0 Pid     25 on test-nccl-worker-0 device  0 [0x53] NVIDIA H100 80GB HBM3")
	f.Add("nThread 1 nGpus 8 minBytes 8")
	f.Fuzz(checkScan)
}
