package nvbandwidth

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/linegen"
	"github.com/gdrcheck/gdrcheck/internal/testutil/long"
)

// The regular expressions descLine and deviceLine implement.
var (
	descExpr    = regexp.MustCompile(`^(?:(memcpy|memory \w+)\s+)?(CE|SM)?\s*(CPU|GPU)\(row\)\s*(->|<-|<->)\s*(CPU|GPU)\(column\)\s*(.*?)\s*(?:\(([^)]+)\))?\s*$`)
	valueExpr   = regexp.MustCompile(`^Driver Version:\s*(\S+)`)
	columnsExpr = regexp.MustCompile(`^\s*\d+(\s+\d+)*\s*$`)
	deviceExpr  = regexp.MustCompile(`^Device (\d+): (.*?)\s*(?:\(([0-9a-fA-F]+:[0-9a-fA-F]+:[0-9a-fA-F]+(?:\.[0-9a-fA-F])?)\))?\s*$`)
)

func checkScan(t *testing.T, s string) {
	t.Helper()
	if strings.IndexByte(s, '\n') >= 0 {
		return // lines hold no newline
	}
	var got []string
	if !valueAfter(s, "Driver Version:", &got) {
		got = nil
	}
	if want := valueExpr.FindStringSubmatch(s); !slices.Equal(got, want) {
		t.Fatalf("valueAfter(%q) = %q; regexp %q", s, got, want)
	}
	if got, want := isColumnHeader(s), columnsExpr.MatchString(s); got != want {
		t.Fatalf("isColumnHeader(%q) = %v; regexp %v", s, got, want)
	}
	for _, c := range []struct {
		name string
		fn   func(string, *[]string) bool
		re   *regexp.Regexp
	}{{"descLine", descLine, descExpr}, {"deviceLine", deviceLine, deviceExpr}} {
		var got []string
		if !c.fn(s, &got) {
			got = nil
		}
		if want := c.re.FindStringSubmatch(s); !slices.Equal(got, want) {
			t.Fatalf("%s(%q) = %q; regexp %q", c.name, s, got, want)
		}
	}
}

// TestScanMatchesRegexp: the hand scanners give the regexps' answers on
// nvbandwidth's lines and on many generated ones.
func TestScanMatchesRegexp(t *testing.T) {
	for _, s := range []string{"memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)", "memory latency SM CPU(row) <-> GPU(column) (ns)",
		"memcpy SM CPU(row) <- GPU(column) bandwidth (GB/s)", "Device 0: Tesla T4 (00000000:3b:00)", "Device 1: NVIDIA H200 (00000000:19:00.0)",
		"Device 2: x (zz:1:2)", "memory CE GPU(row) -> GPU(column) x", "GPU(row)->CPU(column)((a)(b)", "memcpy CE GPU(row) -> GPU(column) bandwidth ((GB/s)", "Device 3: ()", "Driver Version: 535.247.01", "Driver Version:", "Driver Version:  x y", "Driver Version:\t\t1", "           0         1         2         3", " 0 1x", " ", "12"} {
		checkScan(t, s)
	}
	parts := []string{"", " ", "  ", "\t", "memcpy", "memory", "memory x", "CE", "SM", "CPU", "GPU", "(row)", "(column)", "->", "<-",
		"<->", "bandwidth", "(", ")", "(GB/s)", "()", "x", "Device", "Device 0:", ": ", "3", "(0000:3b:00)", "(0:1:2.f)", ".", "a:b", "é", "Driver Version:", "535.1"}
	g := linegen.New(9)
	// A quarter of the generated lines by default, all of them with
	// GDRCHECK_LONG=1: more draws of the same generators.
	n := 500000
	if !long.Enabled() {
		n /= 4
	}
	for range n * 3 / 5 {
		checkScan(t, g.Glue(parts, 10, 1.0/3))
	}
	// Titles and device lines with one or two things changed: a token
	// dropped, doubled or replaced, blanks varied.
	tmpls := [][]string{
		{"memcpy", "CE", "GPU", "(row)", "->", "GPU", "(column)", "bandwidth", "(GB/s)"},
		{"memory", "latency", "SM", "CPU", "(row)", "<->", "GPU", "(column)", "x", "(ns)"},
		{"Device", "0:", "NVIDIA", "H200", "(00000000:19:00.0)"},
	}
	seps := []string{" ", "", "  ", "\t"}
	for i := range n * 2 / 5 {
		checkScan(t, g.Mutant(tmpls[i%len(tmpls)], parts, seps, 2))
	}
}

// FuzzScan: no line makes the scanners disagree with the regexps.
func FuzzScan(f *testing.F) {
	f.Add("memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)")
	f.Add("Device 0: Tesla T4 (00000000:3b:00)")
	f.Fuzz(checkScan)
}
