package checks

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// WriteTable prints one line per check and subject, failures first, with
// the remedy under each line that is not a pass.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tCHECK\tSUBJECT\tREASON\tMESSAGE")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", strings.ToUpper(string(x.Status)), x.ID, x.Subject, x.Reason, x.Message)
		if x.Remedy != "" && x.Status != result.Pass {
			fmt.Fprintf(tw, "\t\t\t\t  → %s\n", x.Remedy)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\n%s in %.0f ms\n", r.CountsLine(), r.DurationMS)
	_, err := io.WriteString(w, b.String())
	return err
}

// CountsLine summarises the counts: "2 fail, 1 warn, 30 pass, 3 skip, 1 unknown".
func (r *Report) CountsLine() string {
	var parts []string
	for _, s := range []result.Status{result.Fail, result.Error, result.Warn, result.Pass, result.Skip, result.Unknown} {
		if n := r.Counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return "no results"
	}
	return strings.Join(parts, ", ")
}

// WriteJSON writes the report as data.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteMarkdown writes a table a person pastes into a ticket.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| status | check | subject | reason | message | remedy |\n|---|---|---|---|---|---|\n")
	esc := func(s string) string { return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s) }
	for _, x := range r.Results {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s |\n", x.Status, x.ID, esc(x.Subject), x.Reason, esc(x.Message), esc(x.Remedy))
	}
	fmt.Fprintf(&b, "\n%s\n", r.CountsLine())
	_, err := io.WriteString(w, b.String())
	return err
}

// junit types: one testsuite per check, one testcase per subject.
type junitSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	Name    string   `xml:"name,attr"`
	junitTotals
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name string `xml:"name,attr"`
	junitTotals
	Cases []junitCase `xml:"testcase"`
}

// junitTotals are the attributes testsuites and testsuite share.
type junitTotals struct {
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
}

// add counts one testcase: skip and unknown are skipped, never passed.
func (t *junitTotals) add(st result.Status) {
	t.Tests++
	switch st {
	case result.Fail:
		t.Failures++
	case result.Error:
		t.Errors++
	case result.Skip, result.Unknown:
		t.Skipped++
	}
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes JUnit XML for CI dashboards. fail is a failure, error an
// error; skip and unknown are skipped (never passed); warn passes with its
// message in system-out.
func (r *Report) WriteJUnit(w io.Writer, suiteName string) error {
	bySuite := map[string]*junitSuite{}
	var order []string
	top := junitSuites{Name: suiteName, junitTotals: junitTotals{Time: fmt.Sprintf("%.3f", r.DurationMS/1000)}}
	for _, x := range r.Results {
		s := bySuite[x.ID]
		if s == nil {
			s = &junitSuite{Name: x.ID, junitTotals: junitTotals{Time: fmt.Sprintf("%.3f", x.DurationMS/1000)}}
			bySuite[x.ID] = s
			order = append(order, x.ID)
		}
		c := junitCase{Name: x.Subject, Classname: x.ID, Time: "0"}
		body := x.Message
		for _, e := range x.Evidence {
			body += "\n" + e.Source + ": " + e.Value
		}
		if x.Remedy != "" {
			body += "\nremedy: " + x.Remedy
		}
		m := &junitMessage{Message: x.Reason + ": " + x.Message, Type: x.Reason, Body: body}
		switch x.Status {
		case result.Fail:
			c.Failure = m
		case result.Error:
			c.Error = m
		case result.Skip, result.Unknown:
			m.Message = string(x.Status) + ": " + m.Message
			c.Skipped = m
		case result.Warn:
			c.SystemOut = "WARN " + body
		}
		s.add(x.Status)
		top.add(x.Status)
		s.Cases = append(s.Cases, c)
	}
	sort.Strings(order)
	for _, id := range order {
		top.Suites = append(top.Suites, *bySuite[id])
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(top); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
