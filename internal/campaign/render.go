package campaign

import (
	"fmt"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report/sched"
)

// WriteText writes the findings for a terminal.
func (f *Findings) WriteText(w io.Writer) error { return f.write(w, false) }

// WriteMarkdown writes the findings as Markdown.
func (f *Findings) WriteMarkdown(w io.Writer) error { return f.write(w, true) }

func (f *Findings) write(w io.Writer, md bool) error {
	var b strings.Builder
	esc := printable.Line
	if md {
		esc = printable.Cell
	}
	head := func(s string) {
		if md {
			fmt.Fprintf(&b, "\n## %s\n\n", s)
		} else {
			fmt.Fprintf(&b, "\n%s\n", s)
		}
	}
	item := func(s string) {
		if md {
			b.WriteString("- " + s + "\n")
		} else {
			b.WriteString("  " + s + "\n")
		}
	}
	sub := func(e Evidence) {
		s := fmt.Sprintf("round %d step %s (%s", e.Round, esc(e.Step), esc(nodesLine(e.Nodes)))
		if e.Rail != "" {
			s += ", rail " + esc(e.Rail)
		}
		s += fmt.Sprintf("): %s, %s", e.Status, esc(e.Why))
		if md {
			b.WriteString("  - " + s + "\n")
		} else {
			b.WriteString("      " + s + "\n")
		}
	}
	title := fmt.Sprintf("Campaign: %s after %d round(s), %d step(s)", f.Verdict, f.Rounds, f.Steps)
	if md {
		fmt.Fprintf(&b, "# %s\n", title)
	} else {
		b.WriteString(title + "\n")
	}
	if len(f.Accused) > 0 {
		head("Accused")
		for _, a := range f.Accused {
			what := "node " + esc(a.Node)
			if a.What == "link" {
				what = fmt.Sprintf("link %s rail %s", esc(a.Node), esc(a.Rail))
			}
			item(fmt.Sprintf("%s: %s", what, esc(a.Why)))
			for _, e := range a.Evidence {
				sub(e)
			}
		}
	}
	// section lists findings (a node, or one rail of it) with their steps.
	section := func(title string, fs []Finding) {
		if len(fs) == 0 {
			return
		}
		head(title)
		for _, x := range fs {
			what := "node " + esc(x.Node)
			switch {
			case x.Node == "":
				what = "rail " + esc(x.Rail) + " of every node"
			case x.Rail != "":
				what += " rail " + esc(x.Rail)
			}
			item(fmt.Sprintf("%s: %s", what, esc(x.Why)))
			for _, e := range x.Evidence {
				sub(e)
			}
		}
	}
	section("Unresolved", f.Unresolved)
	section("Cleared suspects", f.Cleared)
	if len(f.Notes) > 0 {
		head("Notes")
		for _, n := range f.Notes {
			item(esc(n))
		}
	}
	if f.Verdict == VerdictNoFault {
		b.WriteString("\nno fault found\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// RoundSummary says what a round holds, for the command's output.
type RoundSummary struct {
	Round  int    `json:"round"`
	Dir    string `json:"dir"`
	Steps  int    `json:"steps"`
	Chains int    `json:"chains"`
	Nodes  int    `json:"nodes"`
	// Suspects are the nodes re-tested in this round.
	Suspects []string `json:"suspects,omitempty"`
}

// Summary of round r.
func (c *Campaign) Summary(r *Round) RoundSummary {
	s := RoundSummary{Round: r.N, Dir: RoundDir(r.N), Steps: len(r.Steps)}
	seen := map[string]bool{}
	for _, ch := range chainsOf(r) {
		s.Chains++
		s.Nodes += len(ch[0].Nodes)
		for _, x := range ch[0].Suspects {
			if !seen[x] {
				seen[x] = true
				s.Suspects = append(s.Suspects, x)
			}
		}
	}
	return s
}

// WriteText writes the summary of a round just planned.
func (s RoundSummary) WriteText(w io.Writer, dir string, md bool) error {
	esc := printable.Line
	if md {
		esc = printable.Cell
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Round %d planned: %d step(s) in %d chain(s) on %d node(s)", s.Round, s.Steps, s.Chains, s.Nodes)
	if len(s.Suspects) > 0 {
		shown := s.Suspects
		if len(shown) > 10 {
			shown = shown[:10]
		}
		fmt.Fprintf(&b, "; suspects re-tested: %s", esc(strings.Join(shown, ", ")))
		if len(s.Suspects) > 10 {
			fmt.Fprintf(&b, " and %d more", len(s.Suspects)-10)
		}
	}
	// Shell-quoted: the lines are pasted into a shell as they are.
	steps := sched.ShellLine([]string{dir + "/" + s.Dir + "/steps.sh"})
	next := sched.ShellLine([]string{"gdrcheck", "fleet", "plan", "--next", dir})
	fmt.Fprintf(&b, ".\nRun %s inside a Slurm allocation of these nodes (or mpirun.sh), then: %s\n", esc(steps), esc(next))
	_, err := io.WriteString(w, b.String())
	return err
}

// nodesLine is a step's nodes in a line: "a + b", or "group of 512: a … z".
func nodesLine(nodes []string) string {
	if len(nodes) <= 3 {
		return strings.Join(nodes, " + ")
	}
	return fmt.Sprintf("group of %d: %s … %s", len(nodes), nodes[0], nodes[len(nodes)-1])
}
