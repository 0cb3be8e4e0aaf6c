// Package html renders the commissioning dossier (report.json,
// internal/report/dossier) as one self-contained HTML file, report.html:
// the node's verdict, the inventory, the topology drawn as inline SVG
// (laid out from the PCI tree), every GPU's data path hop by hop with the
// verdict and evidence of each hop, the check table with evidence and
// remedies, and the measurements' plots, drawn here as inline SVG (no
// chart library).
//
// The file references nothing outside itself: no script, style sheet,
// font or image is loaded and no JavaScript runs, so it opens the same
// offline, air-gapped and from a ticket attachment. Every string from the
// input (a host name, a check's message, a log line) is made printable
// (report/printable) and then escaped for its context: by html/template
// on the page, by esc in the drawings.
package html

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// ReportHTML is the page's file name in the dossier.
const ReportHTML = "report.html"

//go:embed page.html.tmpl
var pageText string

// sharedText holds what report.html and fleet.html share: the one
// stylesheet ("style") and a plot with its title and caption ("plot").
//
//go:embed shared.html.tmpl
var sharedText string

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	// reportHTML is a fleet node's report.html link ("" none): RenderFleet
	// gives the caller's.
	"reportHTML": func(string) string { return "" },
	"p":          printable.Line,
	// firstLine and restLines split a multi-line reason (a library's
	// "searched:" list) into its sentence and its lines, each shown as
	// text, never as a literal "\n".
	"firstLine": func(s string) string { f, _, _ := strings.Cut(strings.TrimSpace(s), "\n"); return f },
	"restLines": func(s string) []string {
		_, rest, _ := strings.Cut(strings.TrimSpace(s), "\n")
		var out []string
		for _, l := range strings.Split(rest, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return out
	},
	"st":     statusClass,
	"stword": statusWord,
	"time":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"num":    Number,
	"lower":  strings.ToLower,
	"bytes":  func(b int64) string { return BytesLabel(float64(b)) },
	"ubytes": func(b uint64) string { return BytesLabel(float64(b)) },
	"pct":    func(f float64) float64 { return 100 * f },
	"pcie": func(l topology.Link) string {
		if l.CurWidth == 0 && l.CurSpeed == 0 {
			return "unknown"
		}
		return fmt.Sprintf("%s x%d / %s x%d", speedText(float64(l.CurSpeed)), l.CurWidth, speedText(float64(l.MaxSpeed)), l.MaxWidth)
	},
	"verdict": verdictClass,
}

// parse is one page's template with the shared templates; html/template
// escapes every value for its context after p (printable.Line) made it
// printable.
func parse(name, text string) *template.Template {
	return template.Must(template.Must(template.New(name).Funcs(funcs).Parse(text)).Parse(sharedText))
}

// page is report.html's template.
var page = parse("page", pageText)

// verdictClass is the CSS class of a node verdict.
func verdictClass(v string) string {
	if c, ok := map[string]string{checks.Ready: "st-pass", checks.Degraded: "st-warn", checks.NotReady: "st-fail"}[v]; ok {
		return c
	}
	return "st-unknown"
}

// view is what the template reads.
type view struct {
	R         *dossier.Report
	Host      string
	Banner    string // CSS class of the verdict
	Topology  template.HTML
	Paths     []DataPath
	Problems  []result.Result // fail, error, warn, unknown: shown open
	Quiet     []result.Result // pass and skip: folded
	CheckRuns []checks.CheckRun
	Counts    []count
	BusBW     []Plot
	Copy      []Plot
	Heat      []Plot
	// CopyLatency are the latency copies ("GPU0 8.20 µs"): a time, not
	// drawn on a bandwidth axis.
	CopyLatency []string
	IntraNCCL   []string
	// PCIeNotes say, per GPU index, why a link below its maximum is not a
	// fault (pcie.link's idle downclock), as the check said.
	PCIeNotes map[int]string
	// Burn are the burn-in's plots over its windows, BurnTimeline its
	// devices' counters per window, BurnResults its verdicts.
	Burn         []Plot
	BurnTimeline template.HTML
	BurnResults  []result.Result
}

type count struct {
	Status result.Status
	N      int
}

// Render writes report.html for the dossier r.
func Render(w io.Writer, r *dossier.Report) error {
	if r == nil {
		return fmt.Errorf("report.html: no report")
	}
	j := newJudged(r.Results)
	v := view{R: r, Host: hostName(r), Topology: drawTopology(r, j), Paths: dataPaths(r, newRefIndex(r, j)),
		BusBW: busBWPlots(r), Copy: copyPlots(r), Heat: heatMaps(r), CopyLatency: copyLatencies(r), IntraNCCL: intraNCCL(r), PCIeNotes: pcieNotes(r)}
	v.Banner = verdictClass(r.Verdict.Status)
	if r.Burn != nil {
		v.Burn, v.BurnTimeline = burnPlots(r), burnTimeline(r)
		for _, x := range r.Results {
			if x.Source == burn.Source {
				v.BurnResults = append(v.BurnResults, x)
			}
		}
		result.Sort(v.BurnResults)
	}
	rs := append([]result.Result(nil), r.Results...)
	result.Sort(rs)
	for _, x := range rs {
		if x.Status == result.Pass || x.Status == result.Skip {
			v.Quiet = append(v.Quiet, x)
		} else {
			v.Problems = append(v.Problems, x)
		}
	}
	c := result.Count(r.Results)
	for _, st := range []result.Status{result.Fail, result.Error, result.Warn, result.Unknown, result.Skip, result.Pass} {
		if c[st] > 0 {
			v.Counts = append(v.Counts, count{st, c[st]})
		}
	}
	v.CheckRuns = append(v.CheckRuns, r.Checks.Checks...)
	sort.SliceStable(v.CheckRuns, func(a, b int) bool {
		return v.CheckRuns[a].Status.Severity() < v.CheckRuns[b].Status.Severity()
	})
	return page.Execute(w, v)
}

// hostName is the judged host's name, or a stand-in.
func hostName(r *dossier.Report) string {
	switch {
	case r.Verdict.Host != "":
		return r.Verdict.Host
	case r.Inventory.Host != "":
		return r.Inventory.Host
	}
	return "(host unnamed)"
}

// statusWord is a status as the page prints it; "not judged" for none.
func statusWord(st result.Status) string {
	switch st {
	case "":
		return "not judged"
	case result.Unknown:
		// Not "degraded": nobody could look (no root, not captured).
		return "could not look"
	}
	return string(st)
}

// pcieNotes are pcie.link's words for a GPU whose link runs below its
// maximum at idle: the GPU table shows them beside the speed.
func pcieNotes(r *dossier.Report) map[int]string {
	notes := map[int]string{}
	for _, x := range r.Results {
		var gpu int
		if x.ID != "pcie.link" || !strings.HasPrefix(x.Reason, "IdleDownclock") {
			continue
		}
		if _, err := fmt.Sscanf(x.Subject, "GPU%d", &gpu); err != nil {
			continue
		}
		switch x.Reason {
		case "IdleDownclock":
			notes[gpu] = "idle: the GPU lowers its link speed when idle; the driver says the full speed is reachable"
		default:
			notes[gpu] = "below its maximum: idle or downtrained, the check could not tell (no driver view)"
		}
	}
	return notes
}
