package nccltests

import "strings"

// By-hand forms of the regexps run on every test header and device line
// (scan_test.go holds the regexps and checks that both agree): tables of
// one row each made them the reader's main cost.

// isSpace is RE2's \s.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// blanks cuts the run of blanks at the start of s; ok is false when
// there is none.
func blanks(s string) (rest string, ok bool) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return s[i:], i > 0
}

// digits cuts the run of decimal digits at the start of s.
func digits(s string) (d, rest string, ok bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:], i > 0
}

// word cuts w and the blanks after it from the start of s (blanks
// required).
func word(s, w string) (string, bool) {
	rest, ok := strings.CutPrefix(s, w)
	if !ok {
		return s, false
	}
	return blanks(rest)
}

// nThreadLine reads "nThread N nGpus M" at the start of c (nThreadExpr):
// the submatches {match, N, M}.
func nThreadLine(c string, m *[]string) bool {
	rest, ok := word(c, "nThread")
	if !ok {
		return false
	}
	n, rest, ok := digits(rest)
	if !ok {
		return false
	}
	if rest, ok = blanks(rest); !ok {
		return false
	}
	if rest, ok = word(rest, "nGpus"); !ok {
		return false
	}
	g, rest, ok := digits(rest)
	if !ok {
		return false
	}
	*m = []string{c[:len(c)-len(rest)], n, g}
	return true
}

// deviceLine reads "Rank R [Group G] Pid P on HOST device D [BUSID] NAME"
// (deviceExpr): the submatches {line, R, G, P, HOST, D, BUSID, NAME}.
func deviceLine(c string, m *[]string) bool {
	rest, ok := word(c, "Rank")
	if !ok {
		return false
	}
	rank, rest, ok := digits(rest)
	if !ok {
		return false
	}
	if rest, ok = blanks(rest); !ok {
		return false
	}
	group := ""
	if r, ok := word(rest, "Group"); ok {
		if g, r2, ok := digits(r); ok {
			if r3, ok := blanks(r2); ok {
				group, rest = g, r3
			}
		}
	}
	if rest, ok = word(rest, "Pid"); !ok {
		return false
	}
	pid, rest, ok := digits(rest)
	if !ok {
		return false
	}
	if rest, ok = blanks(rest); !ok {
		return false
	}
	if rest, ok = word(rest, "on"); !ok {
		return false
	}
	// The host is the last run of non-blanks followed by blanks, "device",
	// blanks, digits, blanks and "[...]": the regexp backtracks to the
	// rightmost such place, as hostTail finds.
	host, dev, bus, name, ok := hostTail(rest)
	if !ok {
		return false
	}
	*m = []string{c, rank, group, pid, host, dev, bus, name}
	return true
}

// hostTail reads "HOST device D [BUSID] NAME". HOST is one run of
// non-blanks; NAME is the rest of the text after the blanks.
func hostTail(s string) (host, dev, bus, name string, ok bool) {
	i := 0
	for i < len(s) && !isSpace(s[i]) {
		i++
	}
	if i == 0 {
		return
	}
	host = s[:i]
	rest, ok := blanks(s[i:])
	if !ok {
		return
	}
	if rest, ok = word(rest, "device"); !ok {
		return
	}
	if dev, rest, ok = digits(rest); !ok {
		return
	}
	if rest, ok = blanks(rest); !ok || !strings.HasPrefix(rest, "[") {
		return "", "", "", "", false
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return "", "", "", "", false
	}
	bus = rest[1:end]
	name, _ = blanks(rest[end+1:])
	if strings.IndexByte(name, '\n') >= 0 { // '.' stops at a newline
		return "", "", "", "", false
	}
	return host, dev, bus, name, true
}
