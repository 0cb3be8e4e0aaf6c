package fleet

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gdrcheck/gdrcheck/internal/printable"
)

// WriteText writes the cluster report for a terminal: the drain list
// first, then the findings, then a line per node.
func (f *Fleet) WriteText(w io.Writer) error {
	return f.write(w, printable.Line, false)
}

// WriteMarkdown writes the cluster report as Markdown.
func (f *Fleet) WriteMarkdown(w io.Writer) error {
	return f.write(w, printable.Cell, true)
}

func (f *Fleet) write(w io.Writer, esc func(string) string, md bool) error {
	bw := bufio.NewWriter(w)
	var b io.Writer = bw
	var tw *tabwriter.Writer
	if !md { // a line without a tab ends a column block, so each table aligns on its own
		tw = tabwriter.NewWriter(bw, 0, 8, 2, ' ', 0)
		b = tw
	}
	head := func(s string) {
		if md {
			fmt.Fprintf(b, "\n## %s\n\n", s)
		} else {
			fmt.Fprintf(b, "\n%s\n", strings.ToUpper(s))
		}
	}
	row := func(cells ...string) {
		if md {
			fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
		} else {
			fmt.Fprintf(b, "  %s\n", strings.Join(cells, "\t"))
		}
	}
	table := func(cols ...string) {
		row(cols...)
		if md {
			fmt.Fprintf(b, "|%s\n", strings.Repeat("---|", len(cols)))
		}
	}
	if md {
		fmt.Fprintf(b, "# Fleet\n\n")
	}
	fmt.Fprintf(b, "%d nodes in %d hardware classes, %d skipped; %d to drain.\n", len(f.Nodes), len(f.Classes), len(f.Skipped), len(f.Drain))

	head("Nodes to drain")
	if len(f.Drain) == 0 {
		fmt.Fprintf(b, "none\n")
	} else {
		table("rank", "host", "reasons")
		for _, d := range f.Drain {
			rs := make([]string, len(d.Reasons))
			for i, r := range d.Reasons {
				rs[i] = esc(r)
			}
			row(fmt.Sprint(d.Rank), esc(d.Host), strings.Join(rs, "; "))
		}
	}
	if len(f.Skipped) > 0 {
		head("Skipped inputs")
		table("input", "why")
		for _, s := range f.Skipped {
			row(esc(s.Source), esc(s.Error))
		}
	}
	head("Hardware classes")
	table("class", "nodes")
	for _, c := range f.Classes {
		row(esc(c.Class), fmt.Sprint(c.Nodes))
	}
	head("Versions and settings")
	table("class", "field", "reference", "basis", "nodes", "differing")
	for _, c := range f.Consistency {
		ds := make([]string, len(c.Deviants))
		for i, d := range c.Deviants {
			ds[i] = esc(d.Host) + " (" + esc(d.Value) + ")"
		}
		row(esc(c.Group), c.Field, esc(c.Reference), c.Basis, fmt.Sprint(c.Nodes), strings.Join(ds, ", "))
	}
	if len(f.Missing) > 0 {
		head("Missing hardware")
		table("host", "what", "have", "want", "basis")
		for _, m := range f.Missing {
			row(esc(m.Host), m.What, fmt.Sprint(m.Have), fmt.Sprint(m.Want), esc(m.Basis))
		}
	}
	if len(f.Ports) > 0 {
		head("Ports")
		table("host", "port", "issue", "have", "want", "basis")
		for _, p := range f.Ports {
			row(esc(p.Host), esc(p.Port), p.Issue, fmt.Sprint(p.Have), fmt.Sprint(p.Want), p.Basis)
		}
	}
	if len(f.Unmeasured) > 0 {
		head("Not measured")
		table("host", "class", "lacks", "e.g.", "peers that have it")
		for _, u := range f.Unmeasured {
			row(esc(u.Host), esc(u.Class), fmt.Sprintf("%d measurement(s)", u.Keys), esc(u.Example), fmt.Sprint(u.Peers))
		}
	}
	if len(f.Outliers) > 0 {
		head("Outliers")
		table("host", "class", "measurement", "unit", "value", "median", "off", "z", "noise", "peers")
		for _, o := range f.Outliers {
			row(esc(o.Host), esc(o.Class), esc(o.Key), esc(o.Unit), fmt.Sprintf("%.4g", o.Value), fmt.Sprintf("%.4g", o.Median), fmt.Sprintf("%+.1f%%", o.OffPct), fmt.Sprintf("%.1f", o.Z), fmt.Sprintf("×%.3g", 1+o.Noise), fmt.Sprint(o.Peers))
		}
	}
	head("Nodes")
	table("host", "verdict", "failing", "class", "drain")
	for _, n := range f.Nodes {
		dr := "-"
		if n.Drain > 0 {
			dr = fmt.Sprint("#", n.Drain)
		}
		fs := make([]string, len(n.Failing))
		for i, x := range n.Failing {
			fs[i] = esc(x)
		}
		row(esc(n.Host), esc(n.Verdict), strings.Join(fs, ","), esc(n.Class), dr)
	}
	if tw != nil {
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return bw.Flush()
}
