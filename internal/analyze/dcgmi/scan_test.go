package dcgmi

import (
	"regexp"
	"slices"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/linegen"
)

// The regular expressions sectionName and result3Match implement.
var (
	sectionExpr = regexp.MustCompile(`^[|+]-+\s+(\w[\w ]*?)\s+-+\+-*[|+]\s*$`)
	borderExpr  = regexp.MustCompile(`^\+[-=+]+\+\s*$`)
	result3Expr = regexp.MustCompile(`^(Pass|Fail|Error|Warn|Skip|Not Run)(?:\s*-\s*(All|GPUs?:\s*([\d,\s]+)))?\s*$`)
)

func checkScan(t *testing.T, s string) {
	t.Helper()
	name, ok := sectionName(s)
	if m := sectionExpr.FindStringSubmatch(s); (m != nil) != ok || ok && m[1] != name {
		t.Fatalf("sectionName(%q) = %q, %v; regexp %q", s, name, ok, m)
	}
	if got, want := isBorder(s), borderExpr.MatchString(s); got != want {
		t.Fatalf("isBorder(%q) = %v; regexp %v", s, got, want)
	}
	if got, want := result3Match(s), result3Expr.FindStringSubmatch(s); !slices.Equal(got, want) {
		t.Fatalf("result3Match(%q) = %q; regexp %q", s, got, want)
	}
}

// TestScanMatchesRegexp: the hand scanners give the regexps' answers on
// the table's shapes and on many generated lines.
func TestScanMatchesRegexp(t *testing.T) {
	for _, s := range []string{"|----- Metadata ----------+------------------------------------------------|",
		"+---------------------------+------------------------------------------------+", "|-----  Deployment  --------+------------------------------------------------|",
		"Pass", "Pass - All", "Fail - GPU: 0", "Fail - GPUs: 0, 1", "Not Run", "Skip ", "Warn -  GPUs: 1,2 ", "Fail - GPU:  ", "Passed", "+===+", "+-+ ", "++", "+-=+x"} {
		checkScan(t, s)
	}
	parts := []string{"", " ", "  ", "\t", "|", "+", "-", "---", "Name", "Memory Bandwidth", "x_1", ".", "Pass", "Fail", "Not Run",
		"Warn", "Skip", "All", "GPU", "GPUs", ":", "0", "1,", " 2", ",", "s", "é"}
	g := linegen.New(3)
	for range 200000 {
		checkScan(t, g.Glue(parts, 8, 0))
	}
}

// FuzzScan: no line makes the scanners disagree with the regexps.
func FuzzScan(f *testing.F) {
	f.Add("|----- Hardware ----------+---|")
	f.Add("Fail - GPUs: 0, 1")
	f.Fuzz(checkScan)
}
