package html

import (
	"fmt"
	"html/template"
	"math"
	"sort"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Plot is one drawing with its caption.
type Plot struct {
	Title   string
	Caption string
	SVG     template.HTML
}

// The plots' frame: margins around the plotting area.
const (
	plotW, plotH             = 520.0, 300.0
	mLeft, mRight, mTop, mBo = 64.0, 16.0, 34.0, 48.0
)

// busBWPlots draws, per collective (and rank count), the measured bus
// bandwidth against the message size (log2 x axis), out of place and in
// place, with the model's expected curve for the node as it should be.
func busBWPlots(r *dossier.Report) []Plot {
	type key struct {
		coll  string
		ranks int
	}
	var order []key
	groups := map[key][]dossier.CollectiveMeasurement{}
	for _, c := range r.Measurements.Collectives {
		k := key{c.Collective, c.Ranks}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c)
	}
	var out []Plot
	for _, k := range order {
		ms := groups[k]
		sort.SliceStable(ms, func(a, b int) bool { return ms[a].Bytes < ms[b].Bytes })
		// With one rank the bus bandwidth of most collectives is 0 by
		// definition (nccl-tests' factor (n-1)/n), and NCCL does no work
		// in place: the algorithm bandwidth is drawn, out of place only.
		_, single := dossier.ComparedBandwidth(k.ranks, 0, 0)
		oop := series{name: "measured, out of place", class: "s-meas", dots: true}
		inp := series{name: "measured, in place", class: "s-inpl"}
		for _, m := range ms {
			if m.Bytes == 0 {
				continue
			}
			v, _ := dossier.ComparedBandwidth(m.Ranks, m.BusBW, m.AlgBW)
			oop.pts = append(oop.pts, [2]float64{float64(m.Bytes), v})
			oop.status = append(oop.status, m.Status)
			if m.InPlaceBusBW > 0 && !single {
				inp.pts = append(inp.pts, [2]float64{float64(m.Bytes), m.InPlaceBusBW})
			}
		}
		all := []series{oop, inp}
		caption := "no model of this node: measured only"
		for _, c := range r.Measurements.Curves {
			if c.Collective != k.coll || c.Ranks != k.ranks {
				continue
			}
			exp := series{name: "expected (model)", class: "s-model"}
			for _, p := range c.Points {
				if p.Bytes > 0 {
					v, _ := dossier.ComparedBandwidth(c.Ranks, p.BusBW, p.AlgBW)
					exp.pts = append(exp.pts, [2]float64{float64(p.Bytes), v})
				}
			}
			all = append(all, exp)
			caption = "dots: each size's verdict (red: fail, amber: warn); model: " + r.Measurements.Basis
			if r.Measurements.Pass > 0 {
				caption += fmt.Sprintf("; a size passes at %.0f%% of expected", 100*r.Measurements.Pass)
			}
			// The interval at the largest size measured: where a healthy
			// node lies, from the public runs of the prediction's class.
			for i := len(ms) - 1; i >= 0; i-- {
				if iv := ms[i].Interval; iv != nil {
					caption += fmt.Sprintf("; healthy range at %s: %.1f–%.1f GB/s (%s: %s)", BytesLabel(float64(ms[i].Bytes)), iv.LowBusBW, iv.HighBusBW, iv.Class, iv.Basis)
					break
				}
			}
		}
		title := fmt.Sprintf("%s, %d ranks: bus bandwidth by message size", k.coll, k.ranks)
		yTitle := "bus bandwidth (GB/s)"
		if single {
			title = fmt.Sprintf("%s, 1 rank: algorithm bandwidth by message size", k.coll)
			yTitle = "algorithm bandwidth (GB/s)"
			caption += "; one rank: algorithm bandwidth is drawn (bus bandwidth is 0 by definition for most collectives) and the in-place run is left out (NCCL copies nothing in place with one rank)"
		}
		out = append(out, Plot{Title: title, Caption: caption, SVG: linePlot(title, "message size (bytes, log₂ scale)", yTitle, all)})
	}
	return out
}

type series struct {
	name   string
	class  string
	pts    [][2]float64 // (bytes, GB/s)
	dots   bool
	status []result.Status // per point, for the dots' colour
}

// linePlot draws series of (x > 0, y >= 0) points on a log2 x axis and a
// linear y axis from 0, with a legend of the series that have points.
func linePlot(label, xTitle, yTitle string, all []series) template.HTML {
	var xs, ys []float64
	var shown []series
	for _, s := range all {
		if len(s.pts) == 0 {
			continue
		}
		shown = append(shown, s)
		for _, p := range s.pts {
			xs = append(xs, p[0])
			ys = append(ys, p[1])
		}
	}
	legendH := 16.0*float64(len(shown)) + 10
	h := plotH + legendH
	s := newSVG(plotW, h, label)
	x0, x1, y0, y1 := mLeft, plotW-mRight, plotH-mBo, mTop
	if len(xs) == 0 {
		s.text(plotW/2, plotH/2, "middle", "sub", "no measurement")
		return s.done()
	}
	xt := Log2Ticks(minOf(xs), maxOf(xs), 10)
	yt := LinearTicks(maxOf(ys), 5)
	xs2 := Log2{Min: xt[0], Max: xt[len(xt)-1], From: x0, To: x1}
	ys2 := Linear{Min: 0, Max: yt[len(yt)-1], From: y0, To: y1}
	axes(s, x0, x1, y0, y1, xTitle, yTitle)
	for _, v := range xt {
		x := xs2.At(v)
		s.line(x, y0, x, y0+4, "tick")
		s.line(x, y0, x, y1, "grid")
		s.text(x, y0+16, "middle", "ticklbl", BytesLabel(v))
	}
	yGrid(s, x0, x1, ys2, yt)
	for _, se := range shown {
		var pts [][2]float64
		for _, p := range se.pts {
			pts = append(pts, [2]float64{xs2.At(p[0]), ys2.At(p[1])})
		}
		s.polyline(pts, "series "+se.class)
		if se.dots {
			for i, p := range pts {
				cls, word := "dot "+se.class, ""
				if i < len(se.status) {
					cls += " " + statusClass(se.status[i])
					word = " (" + statusWord(se.status[i]) + ")"
				}
				s.circle(p[0], p[1], 3, cls, fmt.Sprintf("%s: %s, %s GB/s%s", se.name, BytesLabel(se.pts[i][0]), Number(se.pts[i][1]), word))
			}
		}
	}
	legend(s, x0, shown)
	return s.done()
}

// yGrid draws a linear y axis's ticks, grid lines and labels.
func yGrid(s *svg, x0, x1 float64, sc Linear, ticks []float64) {
	for _, v := range ticks {
		y := sc.At(v)
		s.line(x0-4, y, x0, y, "tick")
		s.line(x0, y, x1, y, "grid")
		s.text(x0-7, y+4, "end", "ticklbl", Number(v))
	}
}

// legend names the series below the plotting area, one a line.
func legend(s *svg, x0 float64, all []series) {
	for i, se := range all {
		y := plotH + 8 + 16*float64(i)
		s.line(x0, y-4, x0+24, y-4, "series "+se.class)
		s.text(x0+30, y, "start", "legend", se.name)
	}
}

// axes draws the two axis lines and their titles.
func axes(s *svg, x0, x1, y0, y1 float64, xTitle, yTitle string) {
	s.line(x0, y0, x1, y0, "axis")
	s.line(x0, y0, x0, y1, "axis")
	s.text((x0+x1)/2, y0+36, "middle", "axtitle", xTitle)
	s.textRot(16, (y0+y1)/2, "axtitle", yTitle)
}

func minOf(v []float64) float64 {
	m := math.Inf(1)
	for _, x := range v {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

// bar is one row of a bar chart.
type bar struct {
	label    string
	value    float64
	expected float64 // 0: none
	limit    float64 // 0: none
	class    string
	title    string
}

// barChart draws horizontal bars with, per bar, a tick at its
// expectation and one at its hardware limit.
func barChart(label, xTitle string, bars []bar) template.HTML {
	const rowH, labelW = 18.0, 70.0
	w := 520.0
	h := mTop + rowH*float64(len(bars)) + 56 + 18
	s := newSVG(w, h, label)
	x0, x1 := labelW, w-mRight
	y0 := mTop + rowH*float64(len(bars))
	top := 0.0
	for _, b := range bars {
		top = math.Max(top, math.Max(b.value, math.Max(b.expected, b.limit)))
	}
	xt := LinearTicks(top, 6)
	sc := Linear{Min: 0, Max: xt[len(xt)-1], From: x0, To: x1}
	for _, v := range xt {
		x := sc.At(v)
		s.line(x, mTop, x, y0, "grid")
		s.line(x, y0, x, y0+4, "tick")
		s.text(x, y0+16, "middle", "ticklbl", Number(v))
	}
	s.line(x0, y0, x1, y0, "axis")
	s.line(x0, mTop, x0, y0, "axis")
	s.text((x0+x1)/2, y0+34, "middle", "axtitle", xTitle)
	for i, b := range bars {
		y := mTop + rowH*float64(i)
		s.text(x0-6, y+rowH-5, "end", "ticklbl", b.label)
		s.rect(x0, y+3, math.Max(0, sc.At(b.value)-x0), rowH-6, "bar "+b.class, b.title)
		if b.expected > 0 {
			x := sc.At(b.expected)
			s.line(x, y+1, x, y+rowH-1, "mark-exp")
		}
		if b.limit > 0 {
			x := sc.At(b.limit)
			s.line(x, y+1, x, y+rowH-1, "mark-lim")
		}
	}
	ly := y0 + 52
	s.rect(x0, ly-9, 14, 10, "bar st-pass", "")
	s.text(x0+18, ly, "start", "legend", "measured")
	s.line(x0+170, ly-10, x0+170, ly+2, "mark-exp")
	s.text(x0+176, ly, "start", "legend", "expected")
	s.line(x0+250, ly-10, x0+250, ly+2, "mark-lim")
	s.text(x0+256, ly, "start", "legend", "hardware limit")
	return s.done()
}

// copyPlots are the copies against their expectations and limits: one
// chart per test (each at its own scale), a bar per GPU; peer-to-peer
// copies are in the heat maps.
func copyPlots(r *dossier.Report) []Plot {
	var tests []string
	byTest := map[string][]bar{}
	for _, c := range r.Measurements.Copies {
		if c.Peer >= 0 || c.Test == CopyLatencyTest {
			continue // GPU pairs are the heat maps'; a latency is not a bandwidth
		}
		b := bar{label: fmt.Sprintf("GPU%d", c.Device), value: c.GBps, limit: c.LimitGBps, class: statusClass(c.Status), title: copyLine(c)}
		if c.ExpectedGBps != nil {
			b.expected = *c.ExpectedGBps
		}
		if c.Error != "" || !c.Valid {
			b.class = statusClass(result.Fail)
		}
		if !contains(tests, c.Test) {
			tests = append(tests, c.Test)
		}
		byTest[c.Test] = append(byTest[c.Test], b)
	}
	var out []Plot
	for _, t := range tests {
		title := "Copy " + t + ": bandwidth per GPU (GB/s)"
		out = append(out, Plot{Title: title, Caption: "bar colour: the measurement's verdict; marks: the model's expectation and the hardware limit",
			SVG: barChart(title, "bandwidth (GB/s)", byTest[t])})
	}
	return out
}

// CopyLatencyTest is the copy test whose number is a time.
const CopyLatencyTest = "latency"

// copyLatencies are the latency copies as "GPU0 8.20 µs" (or why not).
func copyLatencies(r *dossier.Report) []string {
	var out []string
	for _, c := range r.Measurements.Copies {
		if c.Test != CopyLatencyTest {
			continue
		}
		gpus := fmt.Sprintf("GPU%d", c.Device)
		if c.Peer >= 0 {
			gpus += fmt.Sprintf("→GPU%d", c.Peer)
		}
		switch {
		case c.Error != "":
			out = append(out, gpus+" failed: "+c.Error)
		case c.TimeUS > 0:
			out = append(out, fmt.Sprintf("%s %.2f µs", gpus, c.TimeUS))
		default:
			out = append(out, gpus+" (time not recorded)")
		}
	}
	return out
}

// heatMaps are the GPU↔GPU copy bandwidths as matrices, one per p2p test.
func heatMaps(r *dossier.Report) []Plot {
	var tests []string
	for _, c := range r.Measurements.Copies {
		if c.Peer >= 0 && !contains(tests, c.Test) {
			tests = append(tests, c.Test)
		}
	}
	var out []Plot
	for _, test := range tests {
		cells := map[[2]int]float64{}
		n := 0
		for _, c := range r.Measurements.Copies {
			if c.Test != test || c.Peer < 0 || c.Error != "" {
				continue
			}
			cells[[2]int{c.Device, c.Peer}] = c.GBps
			n = max(n, c.Device+1, c.Peer+1)
		}
		if len(cells) == 0 {
			continue
		}
		title := fmt.Sprintf("GPU to GPU copy bandwidth: %s (GB/s)", test)
		out = append(out, Plot{Title: title, Caption: "row: source GPU, column: destination; blank: not measured", SVG: heatMap(title, n, cells)})
	}
	return out
}

// heatMap draws an n×n matrix of values with a colour scale from 0 to
// the largest value (nice-rounded) and its legend.
func heatMap(label string, n int, cells map[[2]int]float64) template.HTML {
	cell := 44.0
	if n > 10 {
		cell = 30
	}
	x0, y0 := 70.0, 50.0
	w := x0 + cell*float64(n) + 110
	h := y0 + cell*float64(n) + 40
	s := newSVG(w, h, label)
	var vals []float64
	for _, v := range cells {
		vals = append(vals, v)
	}
	ticks := LinearTicks(maxOf(vals), 4)
	top := ticks[len(ticks)-1]
	for i := 0; i < n; i++ {
		s.text(x0-6, y0+cell*float64(i)+cell/2+4, "end", "ticklbl", fmt.Sprintf("GPU%d", i))
		s.text(x0+cell*float64(i)+cell/2, y0-8, "middle", "ticklbl", fmt.Sprintf("GPU%d", i))
	}
	s.text(x0+cell*float64(n)/2, 18, "middle", "axtitle", "destination")
	s.textRot(16, y0+cell*float64(n)/2, "axtitle", "source")
	for i := 0; i < n; i++ {
		for k := 0; k < n; k++ {
			x, y := x0+cell*float64(k), y0+cell*float64(i)
			v, ok := cells[[2]int{i, k}]
			if !ok {
				s.rect(x, y, cell, cell, "cell empty", "")
				continue
			}
			t := v / top
			s.fillRect(x, y, cell, cell, ramp(t), fmt.Sprintf("GPU%d → GPU%d: %.1f GB/s", i, k, v))
			cls := "cellv"
			if t > 0.55 {
				cls = "cellv light"
			}
			if cell >= 40 {
				s.text(x+cell/2, y+cell/2+4, "middle", cls, fmt.Sprintf("%.0f", v))
			}
		}
	}
	// legend: a vertical ramp with the ticks
	lx, ly, lh := x0+cell*float64(n)+24, y0, cell*float64(n)
	const steps = 20
	for i := 0; i < steps; i++ {
		t := 1 - (float64(i)+0.5)/steps
		s.fillRect(lx, ly+lh*float64(i)/steps, 14, lh/steps+0.5, ramp(t), "")
	}
	sc := Linear{Min: 0, Max: top, From: ly + lh, To: ly}
	for _, v := range ticks {
		y := sc.At(v)
		s.line(lx+14, y, lx+18, y, "tick")
		s.text(lx+21, y+4, "start", "ticklbl", Number(v))
	}
	s.text(lx, ly+lh+20, "start", "legend", "GB/s")
	return s.done()
}
