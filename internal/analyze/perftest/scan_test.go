package perftest

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/linegen"
	"github.com/gdrcheck/gdrcheck/internal/testutil/long"
)

// The regular expressions keyValues and isDashes implement.
var (
	kvExpr     = regexp.MustCompile(`([A-Za-z][\w*. /-]*?)\s*:\s*([^\s:]+)`)
	dashesExpr = regexp.MustCompile(`^\s*-{20,}\s*$`)
)

func checkScan(t *testing.T, s string) {
	t.Helper()
	var got [][]string
	keyValues(s, 8, func(k, v string) { got = append(got, []string{k, v}) })
	var want [][]string
	for _, m := range kvExpr.FindAllStringSubmatch(s, 8) {
		want = append(want, m[1:])
	}
	if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Fatalf("keyValues(%q) = %q; regexp %q", s, got, want)
	}
	lower := strings.ToLower(s)
	var tags uint8
	if slices.ContainsFunc(memoryList, func(w string) bool { return strings.Contains(lower, w) }) {
		tags |= memoryTag
	}
	if slices.ContainsFunc(failList, func(w string) bool { return strings.Contains(lower, w) }) {
		tags |= failTag
	}
	if got := lineWords.tags(s); got != tags && isASCII(s) {
		t.Fatalf("lineWords.tags(%q) = %b; strings.ToLower and Contains %b", s, got, tags)
	}
	if got, want := isDashes(s), dashesExpr.MatchString(s); got != want {
		t.Fatalf("isDashes(%q) = %v; regexp %v", s, got, want)
	}
}

// TestScanMatchesRegexp: the hand scanners give the regexps' answers on
// perftest's header lines and on many generated lines.
func TestScanMatchesRegexp(t *testing.T) {
	for _, s := range []string{" Dual-port       : OFF\t\tDevice         : mlx5_0", " Number of qps   : 1\t\tTransport type : IB",
		" Mtu             : 4096[B]", " Data ex. method : Ethernet", " local address: LID 0000 QPN 0x0108 PSN 0x1f8d66 RKey 0x1fffbd VAddr 0x007f",
		" GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:0:0:1", "---------------------------------------------------------------------------------------",
		" -------------------- ", "a: b: c", "x :: y", "1a: b", "a\tb : c"} {
		checkScan(t, s)
	}
	parts := []string{"", " ", "  ", "\t", ":", "::", "a", "Ab", "x_1", "9", "*", ".", "/", "-", "--------", "[B]", "0x1f", "é", "ON", "\r", "error", "cuda", "dma-", "buf", "not found", "scnt=", "device", " name", "ERROR", "Cuda", "Not Found", "DMA-BUF"}
	g := linegen.New(5)
	// A quarter of the generated lines by default, all of them with
	// GDRCHECK_LONG=1: more draws of the same generator.
	n := 200000
	if !long.Enabled() {
		n /= 4
	}
	for range n {
		checkScan(t, g.Glue(parts, 10, 0))
	}
}

// FuzzScan: no line makes the scanners disagree with the regexps.
func FuzzScan(f *testing.F) {
	f.Add(" Number of qps   : 1\t\tTransport type : IB")
	f.Add(" GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:0:0:1")
	f.Fuzz(checkScan)
}

// isASCII: the word search folds ASCII case only (strings.ToLower also
// folds, e.g., the Kelvin sign into k).
func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
