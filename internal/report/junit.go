package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

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

// WriteJUnit writes JUnit XML for CI dashboards: one testsuite per result
// ID, one testcase per subject. fail is a failure, error an error; skip and
// unknown are skipped (never passed); warn passes with its message in
// system-out. Values are escaped with printable.Line: encoding/xml would
// turn most C0 controls into U+FFFD (XML 1.0 forbids them) but passes C1
// controls through, which some terminals act on when the file is shown.
func WriteJUnit(w io.Writer, suiteName string, rs []result.Result, took time.Duration) error {
	bySuite := map[string]*junitSuite{}
	top := junitSuites{Name: suiteName, junitTotals: junitTotals{Time: fmt.Sprintf("%.3f", took.Seconds())}}
	for _, x := range rs {
		x.ID, x.Subject, x.Reason, x.Message, x.Remedy = printable.Line(x.ID), printable.Line(x.Subject), printable.Line(x.Reason), printable.Line(x.Message), printable.Line(x.Remedy)
		s := bySuite[x.ID]
		if s == nil {
			s = &junitSuite{Name: x.ID, junitTotals: junitTotals{Time: fmt.Sprintf("%.3f", x.DurationMS/1000)}}
			bySuite[x.ID] = s
		}
		c := junitCase{Name: x.Subject, Classname: x.ID, Time: "0"}
		body := x.Message
		for _, e := range x.Evidence {
			body += "\n" + printable.Line(e.Source) + ": " + printable.Line(e.Value)
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
	for _, id := range slices.Sorted(maps.Keys(bySuite)) {
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
