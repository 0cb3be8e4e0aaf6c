package textio

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// Pattern is a regexp that is run only on lines that can match it: lines
// that start with the literal text following its "^", or that contain a
// literal text every match holds. Readers try a dozen patterns on every
// line, and a regexp that fails still costs its set-up (hundreds of
// nanoseconds, more on long lines); the literal test costs a few.
type Pattern struct {
	*regexp.Regexp
	prefix string // every match starts at the start of the text with prefix
	needs  string // every match contains needs
}

// MustCompile is regexp.MustCompile giving a Pattern.
func MustCompile(expr string) *Pattern {
	p := &Pattern{Regexp: regexp.MustCompile(expr)}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return p
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat {
		return p
	}
	anchored := len(re.Sub) > 0 && re.Sub[0].Op == syntax.OpBeginText
	for i, sub := range re.Sub {
		for sub.Op == syntax.OpCapture && len(sub.Sub) == 1 {
			sub = sub.Sub[0]
		}
		if sub.Op != syntax.OpLiteral || sub.Flags&syntax.FoldCase != 0 {
			continue
		}
		lit := string(sub.Rune)
		if anchored && i == 1 {
			p.prefix = lit
		}
		if len(lit) > len(p.needs) {
			p.needs = lit
		}
	}
	return p
}

// may reports whether s can match: false when it lacks the literal text
// every match holds.
func (p *Pattern) may(s string) bool {
	if p.prefix != "" {
		return strings.HasPrefix(s, p.prefix)
	}
	return strings.Contains(s, p.needs)
}

// MatchString is regexp's, skipped on text that cannot match.
func (p *Pattern) MatchString(s string) bool { return p.may(s) && p.Regexp.MatchString(s) }

// FindStringSubmatch is regexp's, skipped on text that cannot match.
func (p *Pattern) FindStringSubmatch(s string) []string {
	if !p.may(s) {
		return nil
	}
	return p.Regexp.FindStringSubmatch(s)
}

// FindAllStringSubmatch is regexp's, skipped on text that cannot match.
func (p *Pattern) FindAllStringSubmatch(s string, n int) [][]string {
	if !p.may(s) {
		return nil
	}
	return p.Regexp.FindAllStringSubmatch(s, n)
}

// FindStringSubmatchIndex is regexp's, skipped on text that cannot match.
func (p *Pattern) FindStringSubmatchIndex(s string) []int {
	if !p.may(s) {
		return nil
	}
	return p.Regexp.FindStringSubmatchIndex(s)
}

// FindString is regexp's, skipped on text that cannot match.
func (p *Pattern) FindString(s string) string {
	if !p.may(s) {
		return ""
	}
	return p.Regexp.FindString(s)
}

// Submatch sets *m to the submatches of s and reports whether s matched:
// one regexp run where MatchString then FindStringSubmatch would take two
// (case re.Submatch(line, &m): in a switch).
func (p *Pattern) Submatch(s string, m *[]string) bool {
	*m = p.FindStringSubmatch(s)
	return *m != nil
}
