package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Gauge is one gauge family of a Prometheus textfile: its name, its help
// line and its samples.
type Gauge struct {
	Name, Help string
	samples    []gaugeSample
}

type gaugeSample struct {
	labels [][2]string
	value  float64
}

// NewGauge starts an empty gauge family.
func NewGauge(name, help string) *Gauge { return &Gauge{Name: name, Help: help} }

// Add is one sample of value v, labelled by the name, value pairs in
// labels.
func (g *Gauge) Add(v float64, labels ...string) {
	var ls [][2]string
	for i := 0; i+1 < len(labels); i += 2 {
		ls = append(ls, [2]string{labels[i], labels[i+1]})
	}
	g.samples = append(g.samples, gaugeSample{ls, v})
}

// Bool is 1 for true, 0 for false: a gauge's value for a yes or no.
func Bool(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// StatusCode is a status as a gauge carries it, worst highest: 0 pass,
// 1 skip, 2 warn, 3 unknown, 4 error, 5 fail.
func StatusCode(s result.Status) int {
	switch s {
	case result.Pass:
		return 0
	case result.Skip:
		return 1
	case result.Warn:
		return 2
	case result.Unknown:
		return 3
	case result.Error:
		return 4
	}
	return 5
}

// PrometheusData is an envelope's Data with metrics of its own (the
// dossier's verdict, inventory, phases, measurements and data paths).
type PrometheusData interface {
	// PrometheusInfo are label name, value pairs gdrcheck_info carries
	// after the tool's version and commit.
	PrometheusInfo() []string
	// PrometheusGauges are the data's own gauge families, written after
	// the envelope's.
	PrometheusGauges() []*Gauge
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func (g *Gauge) write(b *strings.Builder) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s gauge\n", g.Name, g.Help, g.Name)
	for _, s := range g.samples {
		b.WriteString(g.Name)
		if len(s.labels) > 0 {
			b.WriteByte('{')
			for i, l := range s.labels {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(b, `%s="%s"`, l[0], labelEscaper.Replace(l[1]))
			}
			b.WriteByte('}')
		}
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(s.value, 'g', -1, 64))
		b.WriteByte('\n')
	}
}

// WritePrometheus writes e in the node_exporter textfile collector's
// format: one gauge family per metric, with HELP and TYPE, names and
// labels documented in docs/dossier.md and kept stable. The envelope's
// metrics are when the run ended and how long it took, gdrcheck_info (the
// tool's version and commit, and the data's labels), the results by
// status and each result's status code; a result judged twice for one
// id, subject and source (a check with two findings on one subject) is
// one sample with the worse status. The data's own gauges follow where
// e.Data is PrometheusData. A family without samples is left out.
func WritePrometheus(w io.Writer, e *Envelope) error {
	data, _ := e.Data.(PrometheusData)
	ended := NewGauge("gdrcheck_report_timestamp_seconds", "When the run ended, in seconds since the epoch.")
	ended.Add(float64(e.Run.EndedAt.Unix()))
	duration := NewGauge("gdrcheck_run_duration_seconds", "How long the run took.")
	duration.Add(e.Duration().Seconds())
	info := NewGauge("gdrcheck_info", "Always 1: the tool and the node's software versions as labels.")
	labels := []string{"version", e.Run.Version, "commit", e.Run.Commit}
	if data != nil {
		labels = append(labels, data.PrometheusInfo()...)
	}
	info.Add(1, labels...)
	counts := NewGauge("gdrcheck_results", "Results of the run by status.")
	cnt := result.Count(e.Results)
	for _, s := range []result.Status{result.Pass, result.Warn, result.Fail, result.Skip, result.Unknown, result.Error} {
		counts.Add(float64(cnt[s]), "status", string(s))
	}
	status := NewGauge("gdrcheck_check_status", "Status of each check (and judgement) on each subject: 0 pass, 1 skip, 2 warn, 3 unknown, 4 error, 5 fail.")
	type key struct{ id, subject, source string }
	worst := map[key]int{}
	var order []key
	for _, x := range e.Results {
		k := key{x.ID, x.Subject, x.Source}
		c, seen := worst[k]
		if !seen {
			order = append(order, k)
		}
		worst[k] = max(c, StatusCode(x.Status))
	}
	for _, k := range order {
		status.Add(float64(worst[k]), "id", k.id, "subject", k.subject, "source", k.source)
	}
	gauges := []*Gauge{ended, duration, info, counts, status}
	if data != nil {
		gauges = append(gauges, data.PrometheusGauges()...)
	}
	var b strings.Builder
	for _, g := range gauges {
		if len(g.samples) > 0 {
			g.write(&b)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
