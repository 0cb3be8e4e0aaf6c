package diff

import (
	"fmt"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/printable"
)

// Summary is the one line that answers: worse or not, and how much moved.
func (d *Diff) Summary() string {
	verdict := "nothing got worse"
	if d.Worse() {
		verdict = "WORSE"
	}
	return fmt.Sprintf("%s: %d worse, %d better, %d changed; %d measurements compared, %d moved beyond their noise, %d only in OLD, %d only in NEW",
		verdict, d.Count(Worse), d.Count(Better), d.Count(Changed), d.Compared, d.Moved, len(d.OnlyOld), len(d.OnlyNew))
}

func (s Side) line() string {
	return fmt.Sprintf("%s: host %s, %s, verdict %s, gdrcheck %s", s.Source, value(s.Host), value(s.StartedAt), value(s.Verdict), s.Tool)
}

func (c Change) what() string {
	if c.Field == "" {
		return c.Subject
	}
	return c.Subject + " " + c.Field
}

// WriteText prints the changes grouped by effect (worse first) and
// section, each as old → new with its delta and why it counts. Every value
// from the reports is escaped to one line.
func (d *Diff) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "OLD %s\nNEW %s\n\n", printable.Line(d.Old.line()), printable.Line(d.New.line()))
	if h := d.Hardware; h != nil {
		fmt.Fprintf(&b, "DIFFERENT HARDWARE: OLD is %s, NEW is %s.\nThese are two kinds of node: their GPUs, NICs, data paths and measurements are not compared; versions, settings and checks are.\n\n", printable.Line(h.Old), printable.Line(h.New))
	}
	for _, effect := range []string{Worse, Better, Changed} {
		first := true
		for _, sec := range sectionOrder {
			var cs []Change
			for _, c := range d.Changes {
				if c.Effect == effect && c.Section == sec {
					cs = append(cs, c)
				}
			}
			if len(cs) == 0 {
				continue
			}
			if first {
				fmt.Fprintf(&b, "%s\n", strings.ToUpper(effect))
				first = false
			}
			fmt.Fprintf(&b, "  %s\n", sec)
			for _, c := range cs {
				delta := ""
				if c.Delta != "" {
					delta = " (" + c.Delta + ")"
				}
				fmt.Fprintf(&b, "    %s: %s → %s%s\n      %s\n", printable.Line(c.what()), printable.Line(c.Old), printable.Line(c.New), delta, printable.Line(c.Reason))
			}
		}
		if !first {
			b.WriteString("\n")
		}
	}
	if len(d.Changes) == 0 {
		b.WriteString("no changes\n\n")
	}
	writeOnly(&b, "measured in OLD only", d.OnlyOld, printable.Line)
	writeOnly(&b, "measured in NEW only", d.OnlyNew, printable.Line)
	fmt.Fprintf(&b, "noise: ×%s either way for bandwidth-bound measurements, ×%s for pinned host copies, ×%s for pageable or bidirectional copies, ×%s for latency-bound collectives (or under %s µs), %s µs of a collective's time (when more), or the in-place/out-of-place spread when larger\n",
		num(1+d.Noise.Floor), num(1+d.Noise.HostFloor), num(1+d.Noise.NoisyFloor), num(1+d.Noise.LatencyFloor), num(d.Noise.LatencyUS), num(d.Noise.JitterUS))
	fmt.Fprintln(&b, d.Summary())
	_, err := io.WriteString(w, b.String())
	return err
}

func writeOnly(b *strings.Builder, title string, ks []string, esc func(string) string) {
	if len(ks) == 0 {
		return
	}
	const show = 8
	names := make([]string, 0, show)
	for i, k := range ks {
		if i == show {
			names = append(names, fmt.Sprintf("and %d more", len(ks)-show))
			break
		}
		names = append(names, esc(k))
	}
	fmt.Fprintf(b, "%s (%d, not compared): %s\n", title, len(ks), strings.Join(names, ", "))
}

// WriteMarkdown writes the changes as a table for a ticket, worse first.
func (d *Diff) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "**OLD** %s  \n**NEW** %s\n\n", printable.Cell(d.Old.line()), printable.Cell(d.New.line()))
	if h := d.Hardware; h != nil {
		fmt.Fprintf(&b, "**Different hardware**: OLD is %s, NEW is %s. These are two kinds of node: their GPUs, NICs, data paths and measurements are not compared; versions, settings and checks are.\n\n", printable.Cell(h.Old), printable.Cell(h.New))
	}
	if len(d.Changes) > 0 {
		b.WriteString("| effect | section | what | old | new | delta | why |\n|---|---|---|---|---|---|---|\n")
		for _, c := range d.Changes {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", c.Effect, c.Section, printable.Cell(c.what()), printable.Cell(c.Old), printable.Cell(c.New), c.Delta, printable.Cell(c.Reason))
		}
		b.WriteString("\n")
	} else {
		b.WriteString("No changes.\n\n")
	}
	writeOnly(&b, "Measured in OLD only", d.OnlyOld, printable.Cell)
	writeOnly(&b, "Measured in NEW only", d.OnlyNew, printable.Cell)
	if len(d.OnlyOld)+len(d.OnlyNew) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s\n", d.Summary())
	_, err := io.WriteString(w, b.String())
	return err
}
