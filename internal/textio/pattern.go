package textio

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
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
	// first, when set, holds the bytes a matched text can start with (the
	// pattern is anchored at the start of the text and cannot match "").
	first *[256]bool
}

// MustCompile is regexp.MustCompile giving a Pattern.
func MustCompile(expr string) *Pattern {
	p := &Pattern{Regexp: regexp.MustCompile(expr)}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return p
	}
	re = re.Simplify()
	if re.Op == syntax.OpLiteral && re.Flags&syntax.FoldCase == 0 {
		p.needs = string(re.Rune) // a fixed text: strings.Contains decides
		return p
	}
	if re.Op != syntax.OpConcat {
		return p
	}
	anchored := len(re.Sub) > 0 && re.Sub[0].Op == syntax.OpBeginText
	if anchored {
		var set [256]bool
		if !firstBytes(&syntax.Regexp{Op: syntax.OpConcat, Sub: re.Sub[1:]}, &set) {
			p.first = &set
		}
	}
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
	if p.first != nil && (s == "" || !p.first[s[0]]) {
		return false
	}
	if p.prefix != "" && !strings.HasPrefix(s, p.prefix) {
		return false
	}
	return len(p.needs) <= len(p.prefix) || strings.Contains(s, p.needs)
}

// firstBytes adds to set every byte a text matched by re can start with,
// and reports whether re can match the empty text (then what follows re
// may start the text as well). A class beyond ASCII admits every byte of
// 0x80 and above (the lead bytes of UTF-8).
func firstBytes(re *syntax.Regexp, set *[256]bool) (nullable bool) {
	addRune := func(r rune) {
		if r >= 0x80 {
			for b := 0x80; b < 256; b++ {
				set[b] = true
			}
			return
		}
		set[r] = true
	}
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return true
		}
		r := re.Rune[0]
		addRune(r)
		if re.Flags&syntax.FoldCase != 0 {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				addRune(f)
			}
		}
		return false
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			for r := lo; r <= hi && r < 0x80; r++ {
				set[r] = true
			}
			if hi >= 0x80 {
				addRune(0x80)
			}
		}
		return false
	case syntax.OpCapture:
		return firstBytes(re.Sub[0], set)
	case syntax.OpStar, syntax.OpQuest:
		firstBytes(re.Sub[0], set)
		return true
	case syntax.OpPlus:
		return firstBytes(re.Sub[0], set)
	case syntax.OpRepeat:
		n := firstBytes(re.Sub[0], set)
		return n || re.Min == 0
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !firstBytes(sub, set) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		nullable = false
		for _, sub := range re.Sub {
			if firstBytes(sub, set) {
				nullable = true
			}
		}
		return nullable
	}
	// OpAnyChar, OpAnyCharNotNL and anything unforeseen: any byte, and
	// possibly empty, so that the set never filters wrongly.
	for b := range set {
		set[b] = true
	}
	return true
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
