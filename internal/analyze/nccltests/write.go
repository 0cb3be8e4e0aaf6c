package nccltests

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gdrcheck/gdrcheck/internal/analyze/verdict"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// WriteText prints the verdicts, then each test's summary and table.
func (r *Report) WriteText(w io.Writer, vs []result.Result) error {
	var b strings.Builder
	if !r.Paste.Empty() {
		fmt.Fprintf(&b, "\n%s\n", r.Paste)
	}
	subj := subjects(r.Tests)
	for i, t := range r.Tests {
		fmt.Fprintf(&b, "\nTest %s", subj[i])
		if t.Binary != "" {
			fmt.Fprintf(&b, " (%s)", t.Binary)
		}
		if t.Stream != "" {
			fmt.Fprintf(&b, " [stream %s]", t.Stream)
		}
		b.WriteString("\n")
		var facts []string
		if n := len(t.Devices); n > 0 {
			facts = append(facts, fmt.Sprintf("%s on %s (%s)", plural(n, "rank"), plural(len(t.Hosts), "host"), t.Devices[0].Name))
		}
		if t.TestsVersion != "" {
			facts = append(facts, "nccl-tests "+t.TestsVersion)
		}
		if t.NCCLVersion != "" {
			facts = append(facts, "NCCL "+t.NCCLVersion)
		}
		if t.Params.Validation != nil {
			facts = append(facts, fmt.Sprintf("validation %d", *t.Params.Validation))
		}
		if len(facts) > 0 {
			fmt.Fprintf(&b, "  %s\n", strings.Join(facts, ", "))
		}
		if len(t.Rows) > 0 {
			fmt.Fprintf(&b, "  %s\n", summaryLine(t))
		}
		if t.OutOfBounds != nil {
			fmt.Fprintf(&b, "  out-of-bounds values: %d\n", *t.OutOfBounds)
		}
		for _, n := range t.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
		if len(t.Rows) == 0 {
			b.WriteString("  no result rows\n")
			continue
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  size\tcount\ttype\toop time(us)\toop busbw\toop #wrong\tip time(us)\tip busbw\tip #wrong\t")
		for _, row := range t.Rows {
			fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.Bytes, row.Count, row.Type,
				mTime(row.OutOfPlace), mBW(row.OutOfPlace), mWrong(row.OutOfPlace),
				mTime(row.InPlace), mBW(row.InPlace), mWrong(row.InPlace))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.PartialRows) > 0 {
		fmt.Fprintf(&b, "\n%d row(s) could not be reassembled, first at line %d: %s\n", len(r.PartialRows), r.PartialRows[0].Line, r.PartialRows[0].Text)
	}
	if r.NCCLLogLines > 0 {
		fmt.Fprintf(&b, "\n%d NCCL_DEBUG lines were mixed into the output (read them with --kind nccl-log)\n", r.NCCLLogLines)
	}
	return (verdict.Text{}).Page(w, "", vs, b.String())
}

func mTime(m *collective.Measure) string {
	if m == nil {
		return "-"
	}
	return fmtF(m.TimeUS)
}

func mBW(m *collective.Measure) string {
	if m == nil {
		return "-"
	}
	return fmtF(m.BusBW)
}

func mWrong(m *collective.Measure) string {
	switch {
	case m == nil:
		return "-"
	case m.Wrong == nil:
		return "N/A"
	}
	return fmt.Sprint(*m.Wrong)
}
