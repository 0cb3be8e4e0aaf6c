package nccltests

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/linegen"
	"github.com/gdrcheck/gdrcheck/internal/testutil/long"

	"github.com/gdrcheck/gdrcheck/internal/textio"
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
	g := linegen.New(7)
	// A quarter of the generated lines by default, all of them with
	// GDRCHECK_LONG=1: more draws of the same generators.
	n := 400000
	if !long.Enabled() {
		n /= 4
	}
	for range n * 3 / 4 {
		checkScan(t, g.Glue(parts, 14, 2.0/3))
	}
	// Device lines with one thing changed: a token dropped, doubled or
	// replaced, blanks varied.
	tmpl := []string{"Rank", "3", "Group", "0", "Pid", "25", "on", "host-1", "device", "2", "[0x53]", "NVIDIA", "H100"}
	seps := []string{" ", "  ", "\t", "", "\n"}
	for range n / 4 {
		checkScan(t, g.Mutant(tmpl, parts, seps, 1))
	}
}

// FuzzScan: no line makes the scanners disagree with the regexps.
func FuzzScan(f *testing.F) {
	f.Add("Rank  0 Group  0 Pid     25 on test-nccl-worker-0 device  0 [0x53] NVIDIA H100 80GB HBM3")
	f.Add("nThread 1 nGpus 8 minBytes 8")
	f.Fuzz(checkScan)
}
