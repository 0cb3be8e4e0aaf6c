package verdict

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Text prints verdicts for people. It depends on nothing but result and
// printable, so that it can move to whichever package renders reports.
// Everything it prints that came from the input is escaped (printable):
// a log line holding terminal escapes or a carriage return prints them
// visibly, never acts on the terminal.
type Text struct {
	// Notes prints each evidence note after its value, in parentheses.
	Notes bool
}

// Evidence values longer than maxValue bytes are clipped; at most
// maxEvidence evidence lines are printed per verdict.
const (
	maxValue    = 160
	maxEvidence = 3
)

var statusWord = map[result.Status]string{
	result.Pass: "PASS", result.Warn: "WARN", result.Fail: "FAIL",
	result.Skip: "SKIP", result.Unknown: "UNKNOWN", result.Error: "ERROR",
}

// Write prints vs failures first under a "Verdicts:" heading: status, id,
// reason, subject and message, then the remedy and up to three evidence
// lines of each.
func (p Text) Write(w io.Writer, vs []result.Result) error {
	sorted := append([]result.Result(nil), vs...)
	result.Sort(sorted)
	var b strings.Builder
	if len(sorted) == 0 {
		b.WriteString("Verdicts: none\n")
	} else {
		b.WriteString("Verdicts:\n")
	}
	for _, v := range sorted {
		fmt.Fprintf(&b, "  %-7s %s [%s] %s: %s\n", statusWord[v.Status], printable.Line(v.ID), printable.Line(v.Reason), printable.Line(v.Subject), printable.Line(v.Message))
		if v.Remedy != "" {
			fmt.Fprintf(&b, "          remedy: %s\n", printable.Line(v.Remedy))
		}
		for i, e := range v.Evidence {
			if i == maxEvidence {
				fmt.Fprintf(&b, "          ... %d more evidence lines\n", len(v.Evidence)-maxEvidence)
				break
			}
			fmt.Fprintf(&b, "          %s: %s", printable.Line(e.Source), clip(printable.Line(e.Value)))
			if p.Notes && e.Note != "" {
				fmt.Fprintf(&b, " (%s)", printable.Line(e.Note))
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Page writes a reader's text summary: head and a blank line (when head
// is not empty), the verdicts (Write), then body. head and body are the
// reader's own layout over values from the input: their tabs and line
// breaks are kept, every other control character is escaped
// (printable.Text).
func (p Text) Page(w io.Writer, head string, vs []result.Result, body string) error {
	var b strings.Builder
	if head != "" {
		b.WriteString(printable.Text(head))
		b.WriteString("\n\n")
	}
	if err := p.Write(&b, vs); err != nil {
		return err
	}
	b.WriteString(printable.Text(body))
	_, err := io.WriteString(w, b.String())
	return err
}

// clip cuts a value longer than maxValue bytes to maxValue-3 bytes (no
// partial rune) and marks the cut.
func clip(s string) string {
	if len(s) <= maxValue {
		return s
	}
	cut := maxValue - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
