package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/printable"
)

// floatCell prints a number in at most width characters as nccl-tests
// does: two decimals, then fewer, then an exponent.
func floatCell(v float64, width int) string {
	for _, f := range []string{"%*.2f", "%*.1f", "%*.0f"} {
		if s := fmt.Sprintf(f, width, v); len(s) <= width {
			return s
		}
	}
	if width >= 7 {
		return fmt.Sprintf("%*.1e", width, v)
	}
	return fmt.Sprintf("%*.0e", width, v)
}

// TableHeader is nccl-tests' column header.
func TableHeader() string {
	var b strings.Builder
	b.WriteString("#\n")
	fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "", "", "")
	fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size", "count", "type", "redop", "root",
		"time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", 0, "")
	fmt.Fprintf(&b, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)", "(elements)", "", "", "",
		"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", 0, "")
	return b.String()
}

// RowLine prints a row as nccl-tests does; a half that was not measured is
// left blank.
func RowLine(r collective.Row) string {
	var b strings.Builder
	root := -1
	if r.Root != nil {
		root = *r.Root
	}
	fmt.Fprintf(&b, "%12d  %12d  %8s  %6s  %6d", r.Bytes, r.Count, r.Type, r.RedOp, root)
	for _, m := range []*collective.Measure{r.OutOfPlace, r.InPlace} {
		switch {
		case m == nil:
			b.WriteString("                                ")
		case m.Wrong != nil:
			fmt.Fprintf(&b, "  %7s  %6s  %6s  %6s", floatCell(m.TimeUS, 7), floatCell(m.AlgBW, 6), floatCell(m.BusBW, 6), strconv.FormatFloat(float64(*m.Wrong), 'g', 6, 64))
		default:
			fmt.Fprintf(&b, "  %7s  %6s  %6s    N/A", floatCell(m.TimeUS, 7), floatCell(m.AlgBW, 6), floatCell(m.BusBW, 6))
		}
	}
	return b.String()
}

// Footer is nccl-tests' summary of a collective.
func (r NCCLResult) Footer() string {
	var b strings.Builder
	status := "OK"
	if r.Wrong > 0 {
		status = "FAILED"
	}
	fmt.Fprintf(&b, "# %-20s : %d %s\n", "Out of bounds values", r.Wrong, status)
	fmt.Fprintf(&b, "# %-20s : %g \n", "Avg bus bandwidth", r.AvgBusBW)
	b.WriteString("#\n")
	return b.String()
}

// WriteTable prints a finished result in nccl-tests' layout.
func (r NCCLResult) WriteTable(w io.Writer) error {
	var b strings.Builder
	b.WriteString(TableHeader())
	for _, row := range r.Rows {
		b.WriteString(RowLine(row) + "\n")
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "# ERROR: %s\n", printable.Line(r.Error))
	}
	b.WriteString(r.Footer())
	_, err := io.WriteString(w, b.String())
	return err
}
