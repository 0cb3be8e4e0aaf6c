package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/ansitest"
)

func TestJUnitNeverPassesSkipOrUnknown(t *testing.T) {
	rs := []result.Result{
		{ID: "x.a", Status: result.Pass, Subject: "s1", Reason: "Ok", Message: "fine"},
		{ID: "x.a", Status: result.Skip, Subject: "s2", Reason: "NoNIC", Message: "n/a"},
		{ID: "x.b", Status: result.Unknown, Subject: "s3", Reason: "NeedsRoot", Message: "?"},
		{ID: "x.b", Status: result.Fail, Subject: "s4", Reason: "Bad", Message: "broken", Remedy: "fix"},
		{ID: "x.c", Status: result.Error, Subject: "s5", Reason: "Timeout", Message: "slow"},
	}
	var b bytes.Buffer
	if err := Write(&b, JUnit, &Envelope{Results: rs}); err != nil {
		t.Fatal(err)
	}
	var s junitSuites
	if err := xml.Unmarshal(b.Bytes(), &s); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if s.Tests != 5 || s.Failures != 1 || s.Errors != 1 || s.Skipped != 2 {
		t.Errorf("tests %d failures %d errors %d skipped %d", s.Tests, s.Failures, s.Errors, s.Skipped)
	}
	if !strings.Contains(b.String(), "remedy: fix") || !strings.Contains(b.String(), "unknown: NeedsRoot") {
		t.Errorf("junit lacks remedy or unknown marker:\n%s", b.String())
	}
}

var run = Run{Tool: Tool{Version: "1.0", Commit: "abc"}, Host: "node1",
	StartedAt: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), EndedAt: time.Date(2026, 12, 3, 10, 0, 2, 0, time.UTC),
	Command: []string{"gdrcheck", "check"}}

// The envelope's members come first, the data's own members follow in
// their order, and a data list of results equal to the envelope's is
// written once.
func TestEnvelopeLayout(t *testing.T) {
	rs := []result.Result{{ID: "a.b", Status: result.Pass, Subject: "node", Reason: "Ok", Message: "fine"}}
	data := struct {
		Results []result.Result `json:"results"`
		Zeta    int             `json:"zeta"`
		Alpha   string          `json:"alpha"`
	}{rs, 1, "x"}
	b, err := json.Marshal(Envelope{Schema: Schema("check"), Run: run, Results: rs, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schema":"gdrcheck.check/v1","run":{"version":"1.0","commit":"abc","host":"node1","started_at":"2026-12-03T10:00:00Z","ended_at":"2026-12-03T10:00:02Z","command":["gdrcheck","check"]},` +
		`"results":[{"id":"a.b","status":"pass","subject":"node","reason":"Ok","message":"fine","duration_ms":0}],"zeta":1,"alpha":"x"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	b, err = json.Marshal(Envelope{Schema: Schema("analyze"), Run: run, Data: []int{1, 2}})
	if err != nil || !strings.HasSuffix(string(b), `"results":[],"data":[1,2]}`) {
		t.Errorf("list data: %v %s", err, b)
	}
	for _, bad := range []any{map[string]int{"run": 1}, map[string]any{"results": rs}} {
		if _, err := json.Marshal(Envelope{Run: run, Data: bad}); err == nil {
			t.Errorf("data %v: no collision error", bad)
		}
	}
}

func TestFormats(t *testing.T) {
	rs := []result.Result{{ID: "a.b", Status: result.Fail, Subject: "GPU0", Reason: "Bad", Message: "a|b", Remedy: "fix it"}}
	e := &Envelope{Run: run, Results: rs}
	var b bytes.Buffer
	if err := Write(&b, Table, e); err != nil || !strings.Contains(b.String(), "FAIL    a.b    GPU0     Bad     a|b") ||
		!strings.Contains(b.String(), "→ fix it") || !strings.HasSuffix(b.String(), "1 fail in 2000 ms\n") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
	b.Reset()
	if err := Write(&b, Markdown, e); err != nil || !strings.Contains(b.String(), "| fail | `a.b` | GPU0 | Bad | a\\|b | fix it |") {
		t.Errorf("markdown: %v\n%s", err, b.String())
	}
	if err := Write(&b, Text, e); err == nil {
		t.Error("text is a command's own view, but Write rendered it")
	}
	if _, err := ParseFormat("yaml", Text, JSON, Markdown); err == nil || err.Error() != `--format "yaml": want text, json or md` {
		t.Errorf("ParseFormat: %v", err)
	}
}

// Values from the input (a subject, a message, evidence) reach no output
// with a control character: they are shown escaped, and neither a line
// break nor a | breaks a table.
func TestHostileValuesEscaped(t *testing.T) {
	rs := []result.Result{
		{ID: "a.b", Status: result.Fail, Subject: "mlx5_0" + ansitest.Payload, Reason: "Bad", Message: "state " + ansitest.Payload + "\nPASS a.b fake | row",
			Remedy: "fix " + ansitest.Payload, Evidence: []result.Evidence{{Source: "f" + ansitest.Payload, Value: ansitest.Payload}}},
		{ID: "a.c", Status: result.Warn, Subject: ansitest.Payload, Reason: "Meh", Message: ansitest.Payload},
		{ID: "a.d", Status: result.Skip, Subject: "\u009b2J", Reason: "Meh", Message: ansitest.Payload},
		// A bidirectional override reorders the rest of the line.
		{ID: "a.e", Status: result.Skip, Subject: "gpu-\u202edaer-ton", Reason: "Meh"},
	}
	e := &Envelope{Run: run, Results: rs}
	for _, f := range []Format{Table, Markdown, JUnit, JSON} {
		var b bytes.Buffer
		if err := Write(&b, f, e); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		ansitest.Clean(t, string(f), out)
		if f == JSON {
			var doc struct {
				Results []result.Result `json:"results"`
			}
			if err := json.Unmarshal(b.Bytes(), &doc); err != nil || len(doc.Results) != 4 || doc.Results[3].Subject != "gpu-\u202edaer-ton" || doc.Results[2].Subject != "\u009b2J" || doc.Results[1].Message != strings.ToValidUTF8(ansitest.Payload, "\ufffd") {
				t.Errorf("json does not decode to the same values: %v %+v", err, doc.Results)
			}
			continue
		}
		if f == Markdown {
			// As rendered: a backslash before punctuation is dropped.
			ansitest.Shows(t, string(f), regexp.MustCompile(`\\([[:punct:]])`).ReplaceAllString(out, "$1"))
		} else {
			ansitest.Shows(t, string(f), out)
		}
		if strings.Contains(out, "\nPASS") || !strings.Contains(out, `\u009b2J`) {
			t.Errorf("%s: a planted line break or a C1 control made it through:\n%s", f, out)
		}
		if f == JUnit {
			var s junitSuites
			if err := xml.Unmarshal(b.Bytes(), &s); err != nil || s.Tests != 4 {
				t.Errorf("junit: %v %+v", err, s)
			}
		}
		if f == Markdown {
			for _, l := range strings.Split(strings.TrimSpace(out), "\n")[2:5] {
				if n := strings.Count(l, "|") - strings.Count(l, `\|`); n != 7 {
					t.Errorf("markdown row has %d cell borders, want 7: %s", n, l)
				}
			}
		}
	}
}

// promData is data with metrics of its own.
type promData struct{}

func (promData) PrometheusInfo() []string { return []string{"profile", "quick"} }
func (promData) PrometheusGauges() []*Gauge {
	g := NewGauge("gdrcheck_own", "The data's own.")
	g.Add(2.5, "k", "v")
	return []*Gauge{g, NewGauge("gdrcheck_empty", "No samples: left out.")}
}

// The Prometheus textfile of an envelope: the run's gauges, the results'
// (label values escaped, one sample per id, subject and source, the
// worst), then the data's own where it has any.
func TestPrometheus(t *testing.T) {
	rs := []result.Result{
		{ID: "x", Subject: "a\"b\\c\nd", Status: result.Pass, Source: "check"},
		{ID: "x", Subject: "a\"b\\c\nd", Status: result.Fail, Source: "check"},
		{ID: "y", Subject: "node", Status: result.Unknown},
	}
	head := `# HELP gdrcheck_report_timestamp_seconds When the run ended, in seconds since the epoch.
# TYPE gdrcheck_report_timestamp_seconds gauge
gdrcheck_report_timestamp_seconds 1.7e+09
# HELP gdrcheck_run_duration_seconds How long the run took.
# TYPE gdrcheck_run_duration_seconds gauge
gdrcheck_run_duration_seconds 1.5
# HELP gdrcheck_info Always 1: the tool and the node's software versions as labels.
# TYPE gdrcheck_info gauge
`
	results := `# HELP gdrcheck_results Results of the run by status.
# TYPE gdrcheck_results gauge
gdrcheck_results{status="pass"} 1
gdrcheck_results{status="warn"} 0
gdrcheck_results{status="fail"} 1
gdrcheck_results{status="skip"} 0
gdrcheck_results{status="unknown"} 1
gdrcheck_results{status="error"} 0
# HELP gdrcheck_check_status Status of each check (and judgement) on each subject: 0 pass, 1 skip, 2 warn, 3 unknown, 4 error, 5 fail.
# TYPE gdrcheck_check_status gauge
gdrcheck_check_status{id="x",subject="a\"b\\c\nd",source="check"} 5
gdrcheck_check_status{id="y",subject="node",source=""} 3
`
	ended := time.Unix(1_700_000_000, 0)
	r := Run{Tool: Tool{Version: "1.0", Commit: "abc"}, StartedAt: ended.Add(-1500 * time.Millisecond), EndedAt: ended}
	cases := []struct {
		name string
		data any
		want string
	}{
		{"results only", map[string]int{"n": 1}, head + `gdrcheck_info{version="1.0",commit="abc"} 1` + "\n" + results},
		{"data's own", promData{}, head + `gdrcheck_info{version="1.0",commit="abc",profile="quick"} 1` + "\n" + results +
			"# HELP gdrcheck_own The data's own.\n# TYPE gdrcheck_own gauge\ngdrcheck_own{k=\"v\"} 2.5\n"},
	}
	for _, c := range cases {
		var b bytes.Buffer
		if err := Write(&b, Prometheus, &Envelope{Run: r, Results: rs, Data: c.data}); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, b.String(), c.want)
		}
	}
}
