// Package verdict builds the readers' verdicts (result.Result values with
// evidence pointing at lines of the input) and prints them as text.
package verdict

import (
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// New builds a verdict.
func New(id string, st result.Status, subject, reason, msg string, ev ...result.Evidence) result.Result {
	return result.Result{ID: id, Status: st, Subject: subject, Reason: reason, Message: msg, Evidence: ev}
}

// Titles maps verdict ids to their titles.
type Titles map[string]string

// New builds a verdict that carries the title of its id.
func (ts Titles) New(id string, st result.Status, subject, reason, msg string, ev []result.Evidence) result.Result {
	v := New(id, st, subject, reason, msg, ev...)
	v.Title = ts[id]
	return v
}

// Source formats an evidence source: "name:line".
// A line of 0 or less means the whole file (JSON input has no line per item).
func Source(name string, line int) string {
	if line <= 0 {
		return name
	}
	return fmt.Sprintf("%s:%d", name, line)
}

// Ev is one evidence item pointing at a line of the input.
func Ev(name string, line int, value, note string) result.Evidence {
	return result.Evidence{Source: Source(name, line), Value: strings.TrimSpace(value), Note: note}
}

// Quotes is the evidence of quoted input lines.
func Quotes(name string, qs []textio.Quote) []result.Evidence {
	var ev []result.Evidence
	for _, q := range qs {
		ev = append(ev, Ev(name, q.Line, q.Text, ""))
	}
	return ev
}
