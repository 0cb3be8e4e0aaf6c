package nvbandwidth

import "strings"

// By-hand forms of the regexps run on every device and matrix title line
// (scan_test.go holds the regexps and checks that both agree): with their
// lazy groups, as regexps they were half the reader's cost.

// isSpace is RE2's \s.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func trimLeft(s string) string {
	for s != "" && isSpace(s[0]) {
		s = s[1:]
	}
	return s
}

func trimRight(s string) string {
	for s != "" && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// oneOf cuts the first of words that s starts with.
func oneOf(s string, words ...string) (w, rest string, ok bool) {
	for _, w := range words {
		if r, ok := strings.CutPrefix(s, w); ok {
			return w, r, true
		}
	}
	return "", s, false
}

// tailParen splits "TEXT (UNIT)" as `\s*(.*?)\s*(?:\(([^)]+)\))?\s*$`
// does: UNIT in the earliest parentheses that close at the end and hold
// no ')'; text without them. s holds no newline.
func tailParen(s string) (text, unit string) {
	s = trimRight(trimLeft(s))
	n := len(s)
	if n >= 3 && s[n-1] == ')' {
		from := strings.LastIndexByte(s[:n-1], ')') + 1
		if p := strings.IndexByte(s[from:n-1], '('); p >= 0 && from+p+1 < n-1 {
			p += from
			return trimRight(s[:p]), s[p+1 : n-1]
		}
	}
	return s, ""
}

// descLine reads a matrix title, "memcpy CE GPU(row) -> GPU(column)
// bandwidth (GB/s)" (descExpr): the submatches {line, "memcpy" or
// "memory X", engine, row kind, direction, column kind, text, unit}.
func descLine(t string, m *[]string) bool {
	if strings.IndexByte(t, '\n') >= 0 {
		return false // not a line
	}
	rest, pre := t, ""
	if r, ok := strings.CutPrefix(rest, "memcpy"); ok && r != "" && isSpace(r[0]) {
		pre, rest = "memcpy", trimLeft(r)
	} else if r, ok := strings.CutPrefix(rest, "memory "); ok {
		i := 0
		for i < len(r) && isWord(r[i]) {
			i++
		}
		if i == 0 || i == len(r) || !isSpace(r[i]) {
			return false
		}
		pre, rest = "memory "+r[:i], trimLeft(r[i:])
	}
	engine, rest, _ := oneOf(rest, "CE", "SM")
	rest = trimLeft(rest)
	rowKind, rest, ok := oneOf(rest, "CPU", "GPU")
	if !ok {
		return false
	}
	if rest, ok = strings.CutPrefix(rest, "(row)"); !ok {
		return false
	}
	dir, rest, ok := oneOf(trimLeft(rest), "<->", "->", "<-")
	if !ok {
		return false
	}
	colKind, rest, ok := oneOf(trimLeft(rest), "CPU", "GPU")
	if !ok {
		return false
	}
	if rest, ok = strings.CutPrefix(rest, "(column)"); !ok {
		return false
	}
	text, unit := tailParen(rest)
	*m = []string{t, pre, engine, rowKind, dir, colKind, text, unit}
	return true
}

// deviceLine reads "Device N: NAME (BUSID)" (deviceExpr): the submatches
// {line, N, NAME, BUSID}; BUSID is three or four hexadecimal parts.
func deviceLine(t string, m *[]string) bool {
	rest, ok := strings.CutPrefix(t, "Device ")
	if !ok || strings.IndexByte(t, '\n') >= 0 {
		return false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 {
		return false
	}
	idx := rest[:i]
	if rest, ok = strings.CutPrefix(rest[i:], ": "); !ok {
		return false
	}
	name, bus := trimRight(rest), ""
	if n := len(name); n > 0 && name[n-1] == ')' {
		if p := strings.LastIndexByte(name, '('); p >= 0 && isBusID(name[p+1:n-1]) {
			name, bus = trimRight(name[:p]), name[p+1:n-1]
		}
	}
	*m = []string{t, idx, name, bus}
	return true
}

// isBusID: hex:hex:hex, with an optional .h (one hexadecimal digit).
func isBusID(s string) bool {
	if k := len(s); k >= 2 && s[k-2] == '.' && isHex(s[k-1]) {
		s = s[:k-2]
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" {
			return false
		}
		for i := range len(p) {
			if !isHex(p[i]) {
				return false
			}
		}
	}
	return true
}

// isColumnHeader reports whether t is a matrix's column numbers, "0 1 2 3"
// (columnsExpr): decimal numbers between blanks.
func isColumnHeader(t string) bool {
	digits := false
	for i := range len(t) {
		switch c := t[i]; {
		case c >= '0' && c <= '9':
			digits = true
		case !isSpace(c):
			return false
		}
	}
	return digits
}

// valueAfter reads "PREFIX VALUE" at the start of t, the blanks after the
// prefix optional, as the regexp `^PREFIX\s*(\S+)` would: the submatches
// {through VALUE, VALUE}.
func valueAfter(t, prefix string, m *[]string) bool {
	rest, ok := strings.CutPrefix(t, prefix)
	if !ok {
		return false
	}
	rest = trimLeft(rest)
	i := 0
	for i < len(rest) && !isSpace(rest[i]) {
		i++
	}
	if i == 0 {
		return false
	}
	*m = []string{t[:len(t)-len(rest)+i], rest[:i]}
	return true
}
