package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Format is an output format.
type Format string

// Formats. Text is a command's own human view (a topology matrix, a model's
// tables, nccl-tests' layout); the others are shared and render any
// envelope.
const (
	Text     Format = "text"
	Table    Format = "table"
	JSON     Format = "json"
	Markdown Format = "md"
	JUnit    Format = "junit"
	// Prometheus is the node_exporter textfile collector's format
	// (WritePrometheus): the dossier's metrics.prom.
	Prometheus Format = "prometheus"
	// HTML is a command's own page (gdrcheck fleet's fleet.html): Write
	// refuses it as it does Text.
	HTML Format = "html"
)

// order is the one order in which every command lists its formats.
var order = []Format{Text, Table, JSON, Markdown, JUnit, HTML, Prometheus}

// Choices lists the formats offered in the one order ("text, json or md"),
// each followed by its note where notes has one ("md (report.md)").
func Choices(notes map[Format]string, offered ...Format) string {
	var names []string
	for _, f := range order {
		if !slices.Contains(offered, f) {
			continue
		}
		n := string(f)
		if note := notes[f]; note != "" {
			n += " (" + note + ")"
		}
		names = append(names, n)
	}
	want := strings.Join(names, ", ")
	if i := strings.LastIndex(want, ", "); i >= 0 {
		want = want[:i] + " or " + want[i+2:]
	}
	return want
}

// Lookup is the format of the offered ones named s.
func Lookup(s string, offered ...Format) (Format, bool) {
	for _, f := range offered {
		if string(f) == s {
			return f, true
		}
	}
	return "", false
}

// ParseFormat checks a --format value against the formats a command offers.
func ParseFormat(s string, offered ...Format) (Format, error) {
	if f, ok := Lookup(s, offered...); ok {
		return f, nil
	}
	return "", fmt.Errorf("--format %q: want %s", s, Choices(nil, offered...))
}

// Write renders e in format f. Text is not shared: a command writes its own
// text view, and Write refuses it.
func Write(w io.Writer, f Format, e *Envelope) error {
	switch f {
	case JSON:
		return WriteJSON(w, e)
	case Table:
		return WriteTable(w, e.Results, e.Duration())
	case Markdown:
		return WriteMarkdown(w, e.Results)
	case JUnit:
		return WriteJUnit(w, "gdrcheck", e.Results, e.Duration())
	case Prometheus:
		return WritePrometheus(w, e)
	}
	return fmt.Errorf("report: format %q is a command's own view", f)
}

// WriteJSON writes v as indented JSON (an Envelope in its layout).
// encoding/json escapes C0 controls and replaces invalid UTF-8, but writes
// C1 controls (U+0080–U+009F) raw, and some terminals act on them when the
// document is shown: they are written as \u00XX escapes, which decode to
// the same strings.
func WriteJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeUnsafe(b.Bytes()))
	return err
}

// escapeUnsafe rewrites, in encoded JSON, the runes a terminal would act
// on that the encoder leaves raw — the C1 controls and the bidirectional
// overrides and isolates (printable.UnsafeRune) — as \uXXXX. The
// encoder's output is valid UTF-8 and such runes occur only inside
// strings, where an escape means the same.
func escapeUnsafe(js []byte) []byte {
	if !bytes.ContainsFunc(js, printable.UnsafeRune) {
		return js
	}
	out := make([]byte, 0, len(js)+16)
	for len(js) > 0 {
		r, n := utf8.DecodeRune(js)
		if printable.UnsafeRune(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, js[:n]...)
		}
		js = js[n:]
	}
	return out
}

// CountsLine summarises counts, worst first: "2 fail, 1 warn, 30 pass,
// 3 skip, 1 unknown"; "no results" when there are none.
func CountsLine(c result.Counts) string {
	var parts []string
	for _, s := range []result.Status{result.Fail, result.Error, result.Warn, result.Pass, result.Skip, result.Unknown} {
		if n := c[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return "no results"
	}
	return strings.Join(parts, ", ")
}

// WriteTable prints one line per result in the given order, with the remedy
// under each line that is not a pass, then the counts and the time taken.
// Every value is escaped to one line (printable.Line), whatever it holds.
func WriteTable(w io.Writer, rs []result.Result, took time.Duration) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tCHECK\tSUBJECT\tREASON\tMESSAGE")
	for _, x := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", strings.ToUpper(string(x.Status)), printable.Line(x.ID), printable.Line(x.Subject), printable.Line(x.Reason), printable.Line(x.Message))
		if x.Remedy != "" && x.Status != result.Pass {
			fmt.Fprintf(tw, "\t\t\t\t  → %s\n", printable.Line(x.Remedy))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\n%s in %.0f ms\n", CountsLine(result.Count(rs)), ms(took))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes a table a person pastes into a ticket. Every value
// is escaped for a cell (printable.Cell): a subject or message taken from
// the input can neither break the table nor carry markup.
func WriteMarkdown(w io.Writer, rs []result.Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| status | check | subject | reason | message | remedy |\n|---|---|---|---|---|---|\n")
	for _, x := range rs {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s |\n", x.Status, printable.Code(x.ID), printable.Cell(x.Subject), printable.Cell(x.Reason), printable.Cell(x.Message), printable.Cell(x.Remedy))
	}
	fmt.Fprintf(&b, "\n%s\n", CountsLine(result.Count(rs)))
	_, err := io.WriteString(w, b.String())
	return err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
