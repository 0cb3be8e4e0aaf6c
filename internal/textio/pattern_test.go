package textio

import (
	"math/rand/v2"
	"regexp"
	"strings"
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

// patternExprs are shapes the readers use: anchored alternations, classes,
// optional groups, case folding, and patterns that can match "".
var patternExprs = []string{
	`^(Waived|Error|Not Found)\s*:?\s*(.*)$`, `^(Warning|Info|Error)(?::\s*GPU\s*(\d+))?$`,
	`^(Pass|Fail|Warn|Skip|Not Run)(?:\s*-\s*(All|GPUs?:\s*([\d,\s]+)))?\s*$`, `^\s*\d+(\s+\d+)*\s*$`,
	`^(?:(memcpy|memory \w+)\s+)?(CE|SM)?\s*(CPU|GPU)\(row\)\s*(->|<-|<->)\s*(CPU|GPU)\(column\)\s*(.*?)\s*(?:\(([^)]+)\))?\s*$`,
	`^[|+]-+\s+(\w[\w ]*?)\s+-+\+-*[|+]\s*$`, `^\+[-=+]+\+\s*$`, `^\|\s*Diagnostic\s*\|\s*Result\s*\|\s*$`,
	`(?i)^\s*warning\b`, `^(?i)gpu\d`, `^x*`, `^(a|)b`, `^[^a]`, `^é+`, `^.`, `^\d{2,}`, `^(?:ab)?c?$`, `^\bword`,
	`^[[:upper:]]+`, `(?i)^k`, `Requested mtu`, `(?i)mtu`, `a\(b`, `^\s*#bytes\s+(#sl\s+)?#iterations\s+BW peak\[([^\]]+)\]`,
}

// TestPatternFilterIsExact: on many texts a Pattern and its regexp agree,
// so the filters (first byte, prefix, needed literal) never drop a match.
func TestPatternFilterIsExact(t *testing.T) {
	alphabet := []string{"", " ", "\t", "a", "b", "c", "x", "é", "K", "\u212a", "k", "1", "23", "Pass", "Fail - GPU: 1",
		"Waived", "Error", ":", "Warning: GPU 3", "Info", "CE ", "memcpy ", "GPU(row) ", "-> ", "CPU(column)", " (GB/s)",
		"|", "+", "-----", "=", "Diagnostic", "Result", "warning", "WARNING", "gpu", "#bytes", "#iterations", "BW peak[Gb/sec]", "word", "ab", "Requested mtu", "MTU", "a(b"}
	rng := rand.New(rand.NewPCG(1, 2))
	var texts []string
	for range 20000 {
		var b strings.Builder
		for k := rng.IntN(6); k >= 0; k-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, e := range patternExprs {
		p, re := MustCompile(e), regexp.MustCompile(e)
		matched := 0
		for _, s := range texts {
			got, want := p.MatchString(s), re.MatchString(s)
			if got != want {
				t.Fatalf("%q on %q: pattern %v, regexp %v", e, s, got, want)
			}
			if want {
				matched++
			}
		}
		if matched == 0 {
			t.Logf("%q matched none of the texts", e)
		}
	}
	if p := MustCompile(`^(Waived|Error|Not Found)`); p.first == nil || !p.first['W'] || p.first['x'] {
		t.Errorf("first bytes of an anchored alternation not computed")
	}
	if p := MustCompile(`^x*`); p.first != nil {
		t.Errorf("a pattern that matches the empty text must not filter on the first byte")
	}
}

// FuzzPattern: no text makes a Pattern disagree with its regexp.
func FuzzPattern(f *testing.F) {
	f.Add("Waived: x")
	f.Add("Fail - GPU: 1, 2")
	f.Add("memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)")
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range patternExprs {
			p, re := MustCompile(e), regexp.MustCompile(e)
			if p.MatchString(s) != re.MatchString(s) {
				t.Fatalf("%q on %q: pattern %v, regexp %v", e, s, p.MatchString(s), re.MatchString(s))
			}
		}
	})
}
