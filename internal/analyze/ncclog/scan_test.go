package ncclog

import (
	"bytes"
	"regexp"
	"slices"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/linegen"
	"github.com/gdrcheck/gdrcheck/internal/testutil/long"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// numbersExpr is the regexp maskNumbers implements.
var numbersExpr = regexp.MustCompile(`0x[0-9a-fA-F]+|[0-9]+`)

func checkScan(t *testing.T, s string) {
	t.Helper()
	if got, want := maskNumbers([]byte(s)), numbersExpr.ReplaceAllString(s, "#"); got != want {
		t.Fatalf("maskNumbers(%q) = %q; regexp %q", s, got, want)
	}
	got := textio.AppendFields([][]byte{[]byte("x")}, []byte(s))
	want := bytes.Fields([]byte(s))
	if !slices.EqualFunc(got[1:], want, bytes.Equal) || string(got[0]) != "x" {
		t.Fatalf("textio.AppendFields(%q) = %q; bytes.Fields %q", s, got[1:], want)
	}
}

// TestScanMatchesReference: the hand scanners give the regexp's and
// bytes.Fields' answers on NCCL lines and on many generated ones.
func TestScanMatchesReference(t *testing.T) {
	for _, s := range []string{"NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ; OOB ib0:10.0.0.1<0>", "0x", "0xg", "10x5", "0x1fz", "a0x0x1",
		"comm 0x55d0 rank 3 nRanks 16 nNodes 2 localRanks 8 localRank 3 MNNVL 0", "\u00a0x y", ""} {
		checkScan(t, s)
	}
	parts := []string{"", " ", "\t", "0", "x", "0x", "1f", "ff", "g", "12", "a", "é", "\u2003", "\v", "rank", "0x1F"}
	g := linegen.New(13)
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

// FuzzScan: no line makes the hand scanners disagree with the references.
func FuzzScan(f *testing.F) {
	f.Add("NET/Plugin: Loaded net plugin 0x7f (v8)")
	f.Fuzz(checkScan)
}
