package html

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/report/fleet"
)

// FleetHTML is the cluster report's page, written beside fleet.json.
const FleetHTML = "fleet.html"

//go:embed fleet.html.tmpl
var fleetText string

var fleetPage = parse("fleet", fleetText)

// What the page lists in full before it folds or cuts (fleet.json has
// everything): a page for 100,000 nodes must still open.
const (
	maxNodeRows     = 5000 // nodes with nothing to report
	maxDeviants     = 40   // per consistency row
	maxOutlierRows  = 1000
	maxFleetPlots   = 30
	maxPlotLabels   = 12 // outliers named on one plot
	maxProblemNodes = 5000
)

type fleetView struct {
	F                           *fleet.Fleet
	Run                         report.Run
	Banner                      string
	Ready, Degraded, NotReady   int
	Other                       int
	Problem, Quiet              []fleet.NodeLine
	QuietLeft, ProblemLeft      int
	Consistency                 []consRow
	Drifting                    int // rows with a node off the reference
	Outliers                    []fleet.Outlier
	OutliersLeft                int
	Plots                       []Plot
	PlotsLeft                   int
	DrainMissing, DrainOutliers int
}

type consRow struct {
	fleet.Consistency
	Shown []fleet.Deviant
	Left  int
}

// RenderFleet writes fleet.html: the cluster report f as one
// self-contained page (no script, nothing loaded), run saying who made it
// and when. Every string from the reports is escaped for its context.
//
// link gives a node's report.html as a link from the page (its report's
// source path in, "" when there is none to link); nil links nothing.
func RenderFleet(w io.Writer, f *fleet.Fleet, run report.Run, link func(source string) string) error {
	if f == nil {
		return fmt.Errorf("fleet.html: no fleet")
	}
	v := fleetView{F: f, Run: run, Banner: "st-pass"}
	switch {
	case len(f.Drain) > 0:
		v.Banner = "st-fail"
	case len(f.Skipped) > 0:
		v.Banner = "st-warn"
	case len(f.Nodes) == 0:
		v.Banner = "st-unknown"
	}
	for _, n := range f.Nodes {
		switch n.Verdict {
		case checks.Ready:
			v.Ready++
		case checks.Degraded:
			v.Degraded++
		case checks.NotReady:
			v.NotReady++
		default:
			v.Other++
		}
		switch {
		case n.Drain > 0 || n.Verdict != checks.Ready:
			if len(v.Problem) < maxProblemNodes {
				v.Problem = append(v.Problem, n)
			} else {
				v.ProblemLeft++
			}
		case len(v.Quiet) < maxNodeRows:
			v.Quiet = append(v.Quiet, n)
		default:
			v.QuietLeft++
		}
	}
	for _, c := range f.Consistency {
		r := consRow{Consistency: c, Shown: c.Deviants}
		if len(r.Shown) > maxDeviants {
			r.Shown, r.Left = r.Shown[:maxDeviants], len(r.Shown)-maxDeviants
		}
		if len(c.Deviants) > 0 {
			v.Drifting++
		}
		v.Consistency = append(v.Consistency, r)
	}
	v.Outliers = f.Outliers
	if len(v.Outliers) > maxOutlierRows {
		v.Outliers, v.OutliersLeft = v.Outliers[:maxOutlierRows], len(v.Outliers)-maxOutlierRows
	}
	byKey := map[[2]string][]fleet.Outlier{}
	for _, o := range f.Outliers {
		k := [2]string{o.Class, o.Key}
		byKey[k] = append(byKey[k], o)
	}
	for i, sp := range f.Spreads {
		if i == maxFleetPlots {
			v.PlotsLeft = len(f.Spreads) - i
			break
		}
		v.Plots = append(v.Plots, spreadPlot(sp, byKey[[2]string{sp.Class, sp.Key}]))
	}
	page := fleetPage
	if link != nil {
		c, err := fleetPage.Clone()
		if err != nil {
			return err
		}
		page = c.Funcs(template.FuncMap{"reportHTML": link})
	}
	return page.Execute(w, v)
}

// keyTitle is a measurement in words: its key (the dossier row's Key)
// and what its unit measures, "all_reduce 64M (8 ranks): bus bandwidth,
// GB/s".
func keyTitle(key, unit string) string {
	what := map[string]string{dossier.UnitBusBW: "bus bandwidth, GB/s", dossier.UnitAlgBW: "algorithm bandwidth, GB/s", dossier.UnitCopy: "GB/s"}[unit]
	if what == "" {
		what = unit
	}
	if what == "" {
		return key
	}
	return key + ": " + what
}

// spreadPlot draws one class's values of one measurement on a line: the
// band of robust |z| within the cut-off around the median, every node as
// a dot (a histogram of them in a class larger than fleet.MaxPoints), and
// the outliers in red, the lowest named.
func spreadPlot(sp fleet.Spread, outs []fleet.Outlier) Plot {
	title := keyTitle(sp.Key, sp.Unit) + " · " + sp.Class
	const w = plotW
	const x0, x1, top = 24.0, w - 24, 34.0
	const stripH = 90.0
	nLabels := min(len(outs), maxPlotLabels)
	axisY := top + stripH + 8
	h := axisY + 40 + 14*float64(nLabels) + 30
	s := newSVG(w, h, title)
	lo, hi := math.Min(sp.Min, sp.Median-sp.Band), math.Max(sp.Max, sp.Median+sp.Band)
	pad := (hi - lo) * 0.04
	if pad == 0 {
		pad = math.Max(math.Abs(hi)*0.01, 1)
	}
	lo, hi = lo-pad, hi+pad
	sc := Linear{Min: lo, Max: hi, From: x0, To: x1}
	// band and median
	bx0, bx1 := sc.At(sp.Median-sp.Band), sc.At(sp.Median+sp.Band)
	s.rect(bx0, top, bx1-bx0, stripH, "band", fmt.Sprintf("robust |z| ≤ %s: %s to %s GB/s", Number(sp.Z), Sig(sp.Median-sp.Band), Sig(sp.Median+sp.Band)))
	s.line(sc.At(sp.Median), top-4, sc.At(sp.Median), top+stripH, "median")
	s.text(sc.At(sp.Median), top-8, "middle", "legend", "median "+Sig(sp.Median))
	// the nodes
	if sp.Points != nil {
		for i, p := range sp.Points {
			if p.Value < sp.Median-sp.Band {
				continue // drawn below, in red
			}
			// a deterministic jitter spreads equal values over the strip
			y := top + 6 + math.Mod(float64(i)*0.6180339887, 1)*(stripH-12)
			s.circle(sc.At(p.Value), y, 2.6, "dot-node", p.Host+": "+Sig(p.Value)+" GB/s")
		}
	} else if len(sp.Bins) > 0 {
		most := 0
		for _, c := range sp.Bins {
			most = max(most, c)
		}
		bw := (sc.At(sp.Max) - sc.At(sp.BinsMin)) / float64(len(sp.Bins))
		for i, c := range sp.Bins {
			if c == 0 {
				continue
			}
			bh := math.Max(1.5, (stripH-6)*float64(c)/float64(most))
			from := sp.BinsMin + (sp.Max-sp.BinsMin)*float64(i)/float64(len(sp.Bins))
			to := sp.BinsMin + (sp.Max-sp.BinsMin)*float64(i+1)/float64(len(sp.Bins))
			s.rect(sc.At(sp.BinsMin)+bw*float64(i), top+stripH-bh, math.Max(bw-0.5, 0.5), bh, "hist",
				fmt.Sprintf("%d node(s) from %s to %s GB/s", c, Sig(from), Sig(to)))
		}
	}
	// the outliers, always drawn one by one; the lowest are named
	for i, o := range outs {
		x := sc.At(o.Value)
		y := top + stripH/2
		tip := fmt.Sprintf("%s: %s GB/s, %+.1f%% of the median, z %.1f", o.Host, Sig(o.Value), o.OffPct, o.Z)
		s.circle(x, y, 4.5, "dot-out", tip)
		if i < nLabels {
			// the lowest (leftmost) on the lowest row: a leader line then
			// passes only the rows of the outliers to its right, whose
			// labels start right of it
			ly := axisY + 40 + 14*float64(nLabels-1-i)
			s.line(x, y+5, x, ly-10, "leader")
			anchor := "start"
			if x > w/2 {
				anchor = "end"
			}
			s.text(x, ly, anchor, "outlbl", fmt.Sprintf("%s %s (%+.1f%%)", o.Host, Sig(o.Value), o.OffPct))
		}
	}
	// axis
	s.line(x0, axisY, x1, axisY, "axis")
	ticks := RangeTicks(lo, hi, 6)
	step := NiceStep(hi-lo, 6)
	for _, t := range ticks {
		x := sc.At(t)
		s.line(x, axisY, x, axisY+4, "tick")
		s.text(x, axisY+16, "middle", "ticklbl", strconv.FormatFloat(t, 'f', max(0, int(-math.Floor(math.Log10(step)))), 64))
	}
	s.text((x0+x1)/2, axisY+30, "middle", "axtitle", "GB/s")
	if len(outs) > nLabels {
		s.text(x0, h-8, "start", "legend", fmt.Sprintf("%d more outlier(s) drawn but not named: see the table", len(outs)-nLabels))
	}
	drawn := "every node a dot"
	if sp.Points == nil {
		drawn = fmt.Sprintf("the nodes within the band and above it as a histogram (%d bins)", len(sp.Bins))
	}
	caption := fmt.Sprintf("%d nodes, %s; shaded: robust |z| ≤ %s or within the run-to-run noise, whichever is wider: median ± %s GB/s (MAD %s, floored at --mad-floor of the median); red: the %d outlier(s) below it", sp.Nodes, drawn, Number(sp.Z), Sig(sp.Band), Sig(sp.MAD), sp.Outliers)
	return Plot{Title: title, Caption: caption, SVG: s.done()}
}

// Sig prints a measured value to four significant digits, without an
// exponent: 1884, 20.92, 0.004123.
func Sig(v float64) string {
	if math.Abs(v) >= 1000 || v == 0 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', max(0, 3-int(math.Floor(math.Log10(math.Abs(v))))), 64)
}
