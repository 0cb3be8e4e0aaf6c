package textio

import (
	"regexp"
	"testing"
)

// A Pattern gives the regexp's answers: the literal test only skips text
// that cannot match.
func TestPattern(t *testing.T) {
	exprs := []string{`^nvbandwidth Version:\s*(\S+)`, `^Rank\s+(\d+)`, `^(Waived|Error|Not Found)\s*:?\s*(.*)$`,
		`NCCL INFO (AllReduce|Send): opCount`, `(?i)^\s*warning\b`, `^\s*#bytes\s+#iterations`, `(?m)^foo`,
		`^(nccl-tests) version`, `\bTest (?:NCCL |CUDA )?failure\b`, `(?i)rocm`, `a|b`, `^$`}
	texts := []string{"", "nvbandwidth Version: v0.8", "x nvbandwidth Version: v0.8", "Rank  3 Pid", "rank 3", "Waived: x",
		"Not Found", "1 NCCL INFO Send: opCount 3", " WARNING: x", "  #bytes #iterations", "a\nfoo", "nccl-tests version 2",
		"Test CUDA failure", "Using ROCm", "b", "foo"}
	for _, e := range exprs {
		p, re := MustCompile(e), regexp.MustCompile(e)
		for _, s := range texts {
			if p.MatchString(s) != re.MatchString(s) || len(p.FindStringSubmatch(s)) != len(re.FindStringSubmatch(s)) {
				t.Errorf("%q on %q: pattern %v, regexp %v", e, s, p.MatchString(s), re.MatchString(s))
			}
		}
	}
	if p := MustCompile(`^Rank\s+(\d+)`); p.prefix != "Rank" {
		t.Errorf("prefix %q, want Rank", p.prefix)
	}
	if p := MustCompile(`^\s*#bytes\s+`); p.needs != "#bytes" || p.prefix != "" {
		t.Errorf("needs %q prefix %q", p.needs, p.prefix)
	}
}
