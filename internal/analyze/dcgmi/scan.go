package dcgmi

import "strings"

// The two shapes below are matched on most lines of a table; by hand they
// cost a few nanoseconds where a regexp with submatches cost a
// microsecond. scan_test.go holds the regular expressions they implement
// and checks that both agree.

// isSpace is RE2's \s.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// isWord is RE2's \w.
func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// sectionName reads a section line "|----- Name -----+---|" (the section's
// name between runs of dashes; the first and last characters are '|' or
// '+'), the regexp sectionExpr.
func sectionName(t string) (string, bool) {
	n := len(t)
	for n > 0 && isSpace(t[n-1]) {
		n--
	}
	t = t[:n]
	if n < 2 || (t[0] != '|' && t[0] != '+') || (t[n-1] != '|' && t[n-1] != '+') {
		return "", false
	}
	// From the end: [|+], '-'*, '+', '-'+, \s+.
	j := n - 1
	for j > 0 && t[j-1] == '-' {
		j--
	}
	if j == 0 || t[j-1] != '+' {
		return "", false
	}
	j--
	k := j
	for k > 0 && t[k-1] == '-' {
		k--
	}
	if k == j {
		return "", false
	}
	w := k
	for w > 0 && isSpace(t[w-1]) {
		w--
	}
	if w == k {
		return "", false
	}
	// From the start: [|+], '-'+, \s+.
	i := 1
	for i < w && t[i] == '-' {
		i++
	}
	if i == 1 {
		return "", false
	}
	s := i
	for s < w && isSpace(t[s]) {
		s++
	}
	if s == i || s >= w {
		return "", false
	}
	name := t[s:w]
	if !isWord(name[0]) {
		return "", false
	}
	for c := range len(name) {
		if !isWord(name[c]) && name[c] != ' ' {
			return "", false
		}
	}
	return name, true
}

// resultWords are the results a DCGM 3 cell starts with.
var resultWords = []string{"Pass", "Fail", "Error", "Warn", "Skip", "Not Run"}

// result3Match reads "Pass", "Pass - All", "Fail - GPU: 0" or
// "Fail - GPUs: 0, 1" as the regexp result3Expr's submatches: {text,
// result, "All" or "GPU: ..." or "", the GPU list or ""}.
func result3Match(v string) []string {
	for _, w := range resultWords {
		rest, ok := strings.CutPrefix(v, w)
		if !ok {
			continue
		}
		r := trimLeftSpace(rest)
		if r == "" {
			return []string{v, w, "", ""}
		}
		if r, ok = strings.CutPrefix(r, "-"); !ok {
			return nil
		}
		r = trimLeftSpace(r)
		if g, ok := strings.CutPrefix(r, "All"); ok && trimLeftSpace(g) == "" {
			return []string{v, w, "All", ""}
		}
		g, ok := strings.CutPrefix(r, "GPU")
		if !ok {
			return nil
		}
		if g, ok = strings.CutPrefix(strings.TrimPrefix(g, "s"), ":"); !ok || g == "" {
			return nil
		}
		for c := range len(g) {
			if !(g[c] >= '0' && g[c] <= '9' || g[c] == ',' || isSpace(g[c])) {
				return nil
			}
		}
		list := trimLeftSpace(g)
		if list == "" { // ":\s*" leaves the last blank to the list
			list = g[len(g)-1:]
		}
		return []string{v, w, r, list}
	}
	return nil
}

func trimLeftSpace(s string) string {
	for s != "" && isSpace(s[0]) {
		s = s[1:]
	}
	return s
}

// sectionLine is sectionName in the shape of a regexp's submatches.
func sectionLine(t string, m *[]string) bool {
	name, ok := sectionName(t)
	if ok {
		*m = []string{t, name}
	}
	return ok
}

// isBorder reports whether t is a table border, "+----+====+" (borderExpr).
func isBorder(t string) bool {
	n := len(t)
	for n > 0 && isSpace(t[n-1]) {
		n--
	}
	if n < 3 || t[0] != '+' || t[n-1] != '+' {
		return false
	}
	for i := 1; i < n-1; i++ {
		if c := t[i]; c != '-' && c != '=' && c != '+' {
			return false
		}
	}
	return true
}
