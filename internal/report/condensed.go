package report

import (
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// CondensedOptions shape WriteCondensed's table.
type CondensedOptions struct {
	// Width is the terminal's width: a line longer is cut with "…" (0:
	// not cut, as for a file or a pipe).
	Width int
}

// word is a name in a subject or message: GPU0, mlx5_3, 0000:18:00.0.
var word = regexp.MustCompile(`[A-Za-z0-9_.:]+`)

// unsubject is s with the subject's names that hold a number (GPU0,
// mlx5_3 of "GPU0-mlx5_3") replaced by "#".
func unsubject(s, subject string) string {
	names := map[string]bool{}
	for _, n := range word.FindAllString(subject, -1) {
		if strings.ContainsAny(n, "0123456789") {
			names[n] = true
		}
	}
	if len(names) == 0 {
		return s
	}
	return word.ReplaceAllStringFunc(s, func(w string) string {
		if names[strings.TrimRight(w, ".:")] {
			return "#"
		}
		return w
	})
}

// WriteCondensed is the table for a person at a terminal: the results that
// are not a pass, the same finding on several subjects (the kernel log
// unreadable for GPU0 to GPU7) on one line naming them all, then one line
// counting the passes by check; the counts and the time taken last.
// WriteTable lists every result.
func WriteCondensed(w io.Writer, rs []result.Result, took time.Duration, o CondensedOptions) error {
	type group struct {
		r        result.Result
		subjects []string
	}
	var groups []*group
	byKey := map[string]*group{}
	passes := map[string]int{}
	for _, x := range rs {
		if x.Status == result.Pass {
			passes[x.ID]++
			continue
		}
		// One finding: the same check, status, reason, remedy and message
		// but for the names of its subject in them (GPU0 / GPU7, mlx5_0 /
		// mlx5_3); any other number that differs is another finding.
		k := strings.Join([]string{string(x.Status), x.ID, x.Reason, unsubject(x.Message, x.Subject), unsubject(x.Remedy, x.Subject)}, "\x00")
		if g := byKey[k]; g != nil && x.Subject != "" {
			g.subjects = append(g.subjects, x.Subject)
			continue
		}
		g := &group{r: x, subjects: []string{x.Subject}}
		byKey[k] = g
		groups = append(groups, g)
	}
	var b strings.Builder
	if len(groups) > 0 {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "STATUS\tCHECK\tSUBJECT\tREASON\tMESSAGE")
		for _, g := range groups {
			x := g.r
			subject := x.Subject
			if len(g.subjects) > 1 {
				subject = fmt.Sprintf("%s (+%d)", g.subjects[0], len(g.subjects)-1)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", strings.ToUpper(string(x.Status)), printable.Line(x.ID), printable.Line(subject), printable.Line(x.Reason), printable.Line(x.Message))
			if len(g.subjects) > 1 {
				fmt.Fprintf(tw, "\t\t\t\t  the same on %s\n", printable.Line(strings.Join(g.subjects, ", ")))
			}
			if x.Remedy != "" {
				fmt.Fprintf(tw, "\t\t\t\t  → %s\n", printable.Line(x.Remedy))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	out := b.String()
	if o.Width > 0 {
		out = cutLines(out, o.Width)
	}
	b.Reset()
	b.WriteString(out)
	if n := len(rs) - countNonPass(rs); n > 0 {
		ids := slices.Sorted(maps.Keys(passes))
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = fmt.Sprintf("%s %d", id, passes[id])
		}
		line := fmt.Sprintf("%d passed (%s); --all lists them", n, strings.Join(parts, ", "))
		if len(groups) > 0 {
			b.WriteString("\n")
		}
		b.WriteString(wrap(line, o.Width) + "\n")
	}
	fmt.Fprintf(&b, "\n%s in %.0f ms\n", CountsLine(result.Count(rs)), ms(took))
	_, err := io.WriteString(w, b.String())
	return err
}

func countNonPass(rs []result.Result) int {
	n := 0
	for _, x := range rs {
		if x.Status != result.Pass {
			n++
		}
	}
	return n
}

// cutLines cuts every line of s longer than width runes, ending it with "…".
func cutLines(s string, width int) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if utf8.RuneCountInString(l) > width {
			r := []rune(l)
			lines[i] = string(r[:width-1]) + "…"
		}
	}
	return strings.Join(lines, "\n")
}

// wrap breaks s at spaces into lines of at most width runes (0: one line).
func wrap(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
			lines = append(lines, line)
			line = "  " + word
			continue
		}
		if line == "" {
			line = word
		} else {
			line += " " + word
		}
	}
	return strings.Join(append(lines, line), "\n")
}
