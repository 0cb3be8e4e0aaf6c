package perftest

// By-hand forms of two regexps run on most header lines (scan_test.go
// holds the regexps and checks that both agree): as regexps they made
// the header, not the table, the reader's main cost.

// isSpace is RE2's \s.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// isKeyChar is the class [\w*. /-] of a parameter's name.
func isKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' ||
		c == '*' || c == '.' || c == ' ' || c == '/' || c == '-'
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// keyValues yields up to max "name : value" pairs of a header line, as
// kvExpr's FindAllStringSubmatch would: the name is the longest run of
// [\w*. /-] that starts with a letter and ends before the blanks and the
// colon; the value is the run of non-blank characters after the colon and
// its blanks, up to the next colon or blank.
func keyValues(t string, max int, yield func(k, v string)) {
	pos, found := 0, 0
	for pos < len(t) && found < max {
		c := pos
		for c < len(t) && t[c] != ':' {
			c++
		}
		if c == len(t) {
			return
		}
		// The name: back over blanks, then over name characters.
		e := c
		for e > pos && isSpace(t[e-1]) {
			e--
		}
		b := e
		for b > pos && isKeyChar(t[b-1]) {
			b--
		}
		for b < e && !isLetter(t[b]) {
			b++
		}
		// The value after the colon and its blanks.
		v := c + 1
		for v < len(t) && isSpace(t[v]) {
			v++
		}
		ve := v
		for ve < len(t) && !isSpace(t[ve]) && t[ve] != ':' {
			ve++
		}
		if b == e || ve == v {
			pos = c + 1
			continue
		}
		// The lazy name stops at the first blank run before the colon
		// that only blanks follow: trailing blanks were already left out.
		yield(t[b:e], t[v:ve])
		found++
		pos = ve
	}
}

// isDashes reports whether t is at least 20 dashes between blanks
// (dashesExpr).
func isDashes(t string) bool {
	i, j := 0, len(t)
	for i < j && isSpace(t[i]) {
		i++
	}
	for j > i && isSpace(t[j-1]) {
		j--
	}
	if j-i < 20 {
		return false
	}
	for k := i; k < j; k++ {
		if t[k] != '-' {
			return false
		}
	}
	return true
}

// wordSet finds a few words in a line in one pass, ignoring ASCII case:
// at each byte that starts one of the words, the words that start with it
// are tried. Each word carries a tag; tags gives the tags of the words
// found. (strings.ToLower, then strings.Contains word after word, scanned
// a line once per word: with two dozen words, that was a fifth of the
// reader's time.)
type wordSet struct {
	byFirst [256][]taggedWord
}

type taggedWord struct {
	w   string // lower case
	tag uint8
}

// addWords adds lower-case words with a tag.
func (ws *wordSet) addWords(tag uint8, words ...string) *wordSet {
	for _, w := range words {
		ws.byFirst[w[0]] = append(ws.byFirst[w[0]], taggedWord{w, tag})
	}
	return ws
}

// tags reports the tags of the words s holds, in any ASCII case.
func (ws *wordSet) tags(s string) (found uint8) {
	for i := range len(s) {
		for _, x := range ws.byFirst[lowerASCII(s[i])] {
			if found&x.tag == 0 && hasPrefixFold(s[i:], x.w) {
				found |= x.tag
			}
		}
	}
	return found
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// hasPrefixFold: s starts with the lower-case word w, in any ASCII case.
func hasPrefixFold(s, w string) bool {
	if len(s) < len(w) {
		return false
	}
	for i := range len(w) {
		if lowerASCII(s[i]) != w[i] {
			return false
		}
	}
	return true
}
