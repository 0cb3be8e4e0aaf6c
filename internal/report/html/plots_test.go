package html

import (
	"encoding/xml"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
)

// elem is one SVG element with its attributes and text.
type elem struct {
	name  string
	attr  map[string]string
	text  string
	title string
}

// parseSVG lists the elements of one drawing, in order.
func parseSVG(t *testing.T, s string) []elem {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	var out []elem
	var stack []int
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch x := tok.(type) {
		case xml.StartElement:
			e := elem{name: x.Name.Local, attr: map[string]string{}}
			for _, a := range x.Attr {
				e.attr[a.Name.Local] = a.Value
			}
			out = append(out, e)
			stack = append(stack, len(out)-1)
		case xml.CharData:
			if len(stack) > 0 {
				i := stack[len(stack)-1]
				if out[i].name == "title" && len(stack) > 1 {
					out[stack[len(stack)-2]].title += string(x)
				}
				out[i].text += string(x)
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	return out
}

func f(t *testing.T, e elem, k string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attr[k], 64)
	if err != nil {
		t.Fatalf("%s %s=%q: %v", e.name, k, e.attr[k], err)
	}
	return v
}

// A point drawn at a tick's value sits on that tick's grid line, on both
// axes; the axes are labelled with units; the legend names every series.
func TestLinePlotGeometry(t *testing.T) {
	pts := [][2]float64{{8, 0}, {1 << 10, 25}, {1 << 20, 100}, {1 << 30, 200}}
	svg := string(linePlot("t", "message size (bytes, log₂ scale)", "bus bandwidth (GB/s)", []series{
		{name: "measured", class: "s-meas", pts: pts, dots: true},
		{name: "expected", class: "s-model", pts: [][2]float64{{8, 0.1}, {1 << 30, 220}}},
	}))
	es := parseSVG(t, svg)
	xTick := map[string]float64{} // label -> x of its tick mark
	yTick := map[string]float64{}
	var texts []string
	for i, e := range es {
		if e.name == "text" {
			texts = append(texts, e.text)
			if e.attr["class"] == "ticklbl" && i > 1 && es[i-1].name == "line" && es[i-2].name == "line" {
				grid := es[i-1]
				if grid.attr["x1"] == grid.attr["x2"] { // vertical grid: an x tick
					xTick[e.text] = f(t, grid, "x1")
				} else {
					yTick[e.text] = f(t, grid, "y1")
				}
			}
		}
	}
	for _, want := range []string{"message size (bytes, log₂ scale)", "bus bandwidth (GB/s)", "measured", "expected", "1 KiB", "1 MiB", "1 GiB", "0", "250"} {
		found := false
		for _, s := range texts {
			found = found || s == want
		}
		if !found {
			t.Errorf("no text %q in the plot (texts: %q)", want, texts)
		}
	}
	var dots []elem
	for _, e := range es {
		if e.name == "circle" {
			dots = append(dots, e)
		}
	}
	if len(dots) != len(pts) {
		t.Fatalf("%d dots, want %d", len(dots), len(pts))
	}
	for i, d := range dots {
		label := BytesLabel(pts[i][0])
		if x, ok := xTick[label]; ok && math.Abs(f(t, d, "cx")-x) > 0.01 {
			t.Errorf("point at %s: x %v, its tick at %v", label, f(t, d, "cx"), x)
		}
		if y, ok := yTick[Number(pts[i][1])]; ok && math.Abs(f(t, d, "cy")-y) > 0.01 {
			t.Errorf("point of %v GB/s: y %v, its tick at %v", pts[i][1], f(t, d, "cy"), y)
		}
		if i > 0 && f(t, d, "cx") <= f(t, dots[i-1], "cx") {
			t.Errorf("point %d is not right of point %d", i, i-1)
		}
	}
	if _, ok := yTick["0"]; !ok {
		t.Error("the y axis does not start at a 0 tick")
	}
	if y0, y100 := yTick["0"], yTick["100"]; !(y100 < y0) {
		t.Errorf("100 GB/s drawn at y %v, not above 0 at %v", y100, y0)
	}
}

// A bar's length is its value on the axis; the expectation and limit
// marks stand at theirs.
func TestBarChartGeometry(t *testing.T) {
	svg := string(barChart("t", "bandwidth (GB/s)", []bar{{label: "GPU0", value: 40, expected: 50, limit: 60, class: "st-warn"}}))
	es := parseSVG(t, svg)
	tick := map[string]float64{}
	var barRect, exp, lim *elem
	for i := range es {
		e := &es[i]
		switch {
		case e.name == "text" && e.attr["class"] == "ticklbl" && i >= 2 && es[i-2].name == "line":
			tick[e.text] = f(t, es[i-2], "x1")
		case e.name == "rect" && strings.Contains(e.attr["class"], "st-warn"):
			barRect = e
		case e.name == "line" && e.attr["class"] == "mark-exp" && exp == nil:
			exp = e
		case e.name == "line" && e.attr["class"] == "mark-lim" && lim == nil:
			lim = e
		}
	}
	if barRect == nil || exp == nil || lim == nil {
		t.Fatal("bar or marks missing")
	}
	x0, x40, x50, x60 := tick["0"], tick["40"], tick["50"], tick["60"]
	if x40 == 0 || x60 == 0 {
		t.Fatalf("ticks 40 and 60 missing: %v", tick)
	}
	if got := f(t, *barRect, "x") + f(t, *barRect, "width"); math.Abs(got-x40) > 0.01 || math.Abs(f(t, *barRect, "x")-x0) > 0.01 {
		t.Errorf("bar spans %v..%v, want %v..%v", f(t, *barRect, "x"), got, x0, x40)
	}
	if x50 == 0 {
		x50 = (x40 + x60) / 2
	}
	if math.Abs(f(t, *exp, "x1")-x50) > 0.01 || math.Abs(f(t, *lim, "x1")-x60) > 0.01 {
		t.Errorf("marks at %v and %v, want %v and %v", f(t, *exp, "x1"), f(t, *lim, "x1"), x50, x60)
	}
}

// The heat map colours a cell by its value over the scale's top, and its
// legend's top tick is that top.
func TestHeatMap(t *testing.T) {
	svg := string(heatMap("t", 2, map[[2]int]float64{{0, 1}: 300, {1, 0}: 150}))
	es := parseSVG(t, svg)
	fills := map[string]string{}
	var labels []string
	for _, e := range es {
		if e.name == "rect" && e.attr["fill"] != "" && e.title != "" {
			fills[e.title] = e.attr["fill"]
		}
		if e.name == "text" && e.attr["class"] == "ticklbl" {
			labels = append(labels, e.text)
		}
	}
	if got, want := fills["GPU0 → GPU1: 300.0 GB/s"], ramp(1).String(); got != want {
		t.Errorf("300 of 300: fill %s, want %s (%v)", got, want, fills)
	}
	if got, want := fills["GPU1 → GPU0: 150.0 GB/s"], ramp(0.5).String(); got != want {
		t.Errorf("150 of 300: fill %s, want %s", got, want)
	}
	if !strings.Contains(strings.Join(labels, " "), "300") {
		t.Errorf("legend ticks %q lack the top, 300", labels)
	}
	if ramp(-1) != ramp(0) || ramp(2) != ramp(1) {
		t.Error("ramp does not clamp")
	}
}

// TestOneRankPlotsAlgorithmBandwidth: with one rank the bus bandwidth is
// 0 by definition and NCCL does nothing in place (an in-place "busbw" of
// 150 TB/s on the H200 machine squashed the plot), so the plot draws the
// algorithm bandwidth, out of place only; with two ranks, bus bandwidth
// and both runs.
func TestOneRankPlotsAlgorithmBandwidth(t *testing.T) {
	for _, c := range []struct {
		ranks     int
		title, no string
	}{{1, "algorithm bandwidth", "measured, in place"}, {2, "bus bandwidth", "algorithm bandwidth"}} {
		r := &dossier.Report{}
		for _, b := range []uint64{1 << 20, 64 << 20} {
			r.Measurements.Collectives = append(r.Measurements.Collectives, dossier.CollectiveMeasurement{
				Collective: "all_reduce", Ranks: c.ranks, Bytes: b, AlgBW: 2000, BusBW: 1000, InPlaceBusBW: 150000})
		}
		plots := busBWPlots(r)
		if len(plots) != 1 {
			t.Fatalf("%d ranks: %d plots, want 1", c.ranks, len(plots))
		}
		svg := string(plots[0].SVG)
		if !strings.Contains(plots[0].Title, c.title) || strings.Contains(svg, c.no) {
			t.Errorf("%d ranks: title %q (want %q), %q drawn: %v", c.ranks, plots[0].Title, c.title, c.no, strings.Contains(svg, c.no))
		}
		if c.ranks == 1 && strings.Contains(svg, ">150000<") {
			t.Errorf("one rank: the in-place value set the y axis")
		}
	}
}
