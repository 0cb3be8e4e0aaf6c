package html

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
)

// seriesClasses are the colours of the burn-in plots' series, in turn.
const seriesClasses = 8

// burnPlots draws the burn-in over its windows: the copies' rates and
// NCCL's bus bandwidth (a node that slows as it heats), and each GPU's SM
// clock, power and temperature under the load.
func burnPlots(r *dossier.Report) []Plot {
	b := r.Burn
	if b == nil || len(b.Windows) == 0 {
		return nil
	}
	gpuName := gpuNames(r)
	type key struct{ name, gpu string }
	collect := func(rates func(w dossier.BurnWindow) []dossier.BurnRate) []series {
		var order []key
		pts := map[key][][2]float64{}
		for _, w := range b.Windows {
			for _, x := range rates(w) {
				if x.Error != "" || x.GBps <= 0 {
					continue
				}
				k := key{x.Name, x.GPU}
				if _, ok := pts[k]; !ok {
					order = append(order, k)
				}
				pts[k] = append(pts[k], [2]float64{float64(w.Index + 1), x.GBps})
			}
		}
		var out []series
		for i, k := range order {
			name := k.name
			if k.gpu != "" {
				name = k.gpu + " " + k.name
			}
			out = append(out, series{name: name, class: fmt.Sprintf("s-c%d", i%seriesClasses), pts: pts[k], dots: true})
		}
		return out
	}
	sensor := func(v func(s burn.GPUSensors) float64) []series {
		var order []string
		pts := map[string][][2]float64{}
		for _, w := range b.Windows {
			for _, g := range w.GPUs {
				if g.Samples == 0 {
					continue
				}
				if _, ok := pts[g.Address]; !ok {
					order = append(order, g.Address)
				}
				pts[g.Address] = append(pts[g.Address], [2]float64{float64(w.Index + 1), v(g)})
			}
		}
		var out []series
		for i, a := range order {
			out = append(out, series{name: cmp.Or(gpuName[strings.ToLower(a)], a), class: fmt.Sprintf("s-c%d", i%seriesClasses), pts: pts[a], dots: true})
		}
		return out
	}
	n := len(b.Windows)
	var out []Plot
	add := func(title, yTitle, caption string, all []series) {
		if len(all) == 0 {
			return
		}
		out = append(out, Plot{Title: title, Caption: caption, SVG: windowPlot(title, yTitle, n, all)})
	}
	add("Burn-in: copies per window", "GB/s", "the last pass of each window; bidir_pinned counts both directions",
		collect(func(w dossier.BurnWindow) []dossier.BurnRate { return w.Copies }))
	add("Burn-in: NCCL bus bandwidth per window", "bus bandwidth (GB/s)", "each window's checked pass of every collective",
		collect(func(w dossier.BurnWindow) []dossier.BurnRate { return w.NCCL }))
	add("Burn-in: NCCL across the job's nodes per window", "bus bandwidth (GB/s)", "each window's pass of every collective across the nodes, on this node's next GPU",
		collect(func(w dossier.BurnWindow) []dossier.BurnRate {
			// One series per collective: the GPU changes from window to window.
			out := make([]dossier.BurnRate, 0, len(w.Job))
			for _, x := range w.Job {
				x.GPU = ""
				out = append(out, x)
			}
			return out
		}))
	add("Burn-in: GPU-memory loopback per window", "GB/s", "ib_write_bw through each GPU–NIC pair beside the copies (not data-checked); each window's last round",
		collect(func(w dossier.BurnWindow) []dossier.BurnRate { return lastRDMA(w.RDMA) }))
	add("Burn-in: SM clock under load", "mean SM clock (MHz)", "mean of the readings every 2 s while the window's workload ran",
		sensor(func(s burn.GPUSensors) float64 { return s.SMClockMHz }))
	add("Burn-in: power under load", "mean power (W)", "mean of the readings while the window's workload ran",
		sensor(func(s burn.GPUSensors) float64 { return s.PowerW }))
	add("Burn-in: temperature under load", "highest temperature (°C)", "highest reading in the window",
		sensor(func(s burn.GPUSensors) float64 { return float64(s.MaxTempC) }))
	return out
}

// gpuNames maps a GPU's PCI address (lower case) to "GPU3".
func gpuNames(r *dossier.Report) map[string]string {
	m := map[string]string{}
	for _, g := range r.Inventory.GPUs {
		m[strings.ToLower(g.BusID)] = fmt.Sprintf("GPU%d", g.Index)
	}
	return m
}

// windowPlot draws series of (window number, value) points on a linear x
// axis of windows 1..n and a linear y axis from 0, with a legend.
func windowPlot(label, yTitle string, n int, all []series) template.HTML {
	var ys []float64
	for _, s := range all {
		for _, p := range s.pts {
			ys = append(ys, p[1])
		}
	}
	legendH := 16.0*float64(len(all)) + 10
	s := newSVG(plotW, plotH+legendH, label)
	x0, x1, y0, y1 := mLeft, plotW-mRight, plotH-mBo, mTop
	if len(ys) == 0 {
		s.text(plotW/2, plotH/2, "middle", "sub", "no measurement")
		return s.done()
	}
	yt := LinearTicks(maxOf(ys), 5)
	ys2 := Linear{Min: 0, Max: yt[len(yt)-1], From: y0, To: y1}
	xs2 := Linear{Min: 0.5, Max: float64(n) + 0.5, From: x0, To: x1}
	axes(s, x0, x1, y0, y1, "window", yTitle)
	step := max(1, int(math.Ceil(float64(n)/12)))
	for i := 1; i <= n; i++ {
		x := xs2.At(float64(i))
		s.line(x, y0, x, y0+4, "tick")
		if (i-1)%step == 0 {
			s.text(x, y0+16, "middle", "ticklbl", fmt.Sprint(i))
		}
	}
	yGrid(s, x0, x1, ys2, yt)
	for _, se := range all {
		var pts [][2]float64
		for _, p := range se.pts {
			pts = append(pts, [2]float64{xs2.At(p[0]), ys2.At(p[1])})
		}
		s.polyline(pts, "series "+se.class)
		for i, p := range pts {
			s.circle(p[0], p[1], 3, "dot "+se.class, fmt.Sprintf("%s, window %.0f: %s", se.name, se.pts[i][0], Number(se.pts[i][1])))
		}
	}
	legend(s, x0, all)
	return s.done()
}

// burnTimeline draws the burn-in's timeline: a row per device whose
// counters were sampled, a cell per window, coloured by what its judged
// counters did (fatal, correctable, reset, unread, clean, idle, not
// sampled) with the event count in it and the counters in its tooltip.
func burnTimeline(r *dossier.Report) template.HTML {
	b := r.Burn
	if b == nil || len(b.Timeline) == 0 {
		return ""
	}
	rows := groupNVLinks(b.Timeline)
	n := 0
	for _, row := range rows {
		n = max(n, len(row.Cells))
	}
	cell := 40.0
	if n > 16 {
		cell = max(14, 640/float64(n))
	}
	const rowH, labelW, top = 24.0, 250.0, 30.0
	// At least the legend's width: two rows of at most four entries.
	w := max(labelW+cell*float64(n)+20, 620)
	h := top + rowH*float64(len(rows)) + 62
	s := newSVG(w, h, "Burn-in timeline: every sampled device's judged error counters per window")
	step := max(1, int(math.Ceil(float64(n)/24)))
	for k := 0; k < n; k++ {
		if k%step == 0 {
			s.text(labelW+cell*float64(k)+cell/2, top-10, "middle", "ticklbl", fmt.Sprintf("W%d", k+1))
		}
	}
	for i, row := range rows {
		y := top + rowH*float64(i)
		s.text(labelW-8, y+rowH/2+4, "end", "ticklbl", cmp.Or(row.Device.Label, row.Device.Name))
		for k, c := range row.Cells {
			x := labelW + cell*float64(k)
			tip := fmt.Sprintf("%s, window %d: %s", cmp.Or(row.Device.Label, row.Device.Name), k+1, cellWords(c))
			s.rect(x, y, cell-2, rowH-2, "tl tl-"+string(c.State), tip)
			if ev := c.Fatal + c.Correctable; ev > 0 && cell >= 28 {
				s.text(x+(cell-2)/2, y+rowH/2+3, "middle", "cellv light", compactCount(ev))
			}
		}
	}
	// The legend.
	ly := top + rowH*float64(len(rows)) + 18
	for i, st := range []burn.CellState{burn.CellFatal, burn.CellCorrectable, burn.CellReset, burn.CellUnread, burn.CellClean, burn.CellIdle, burn.CellUnsampled} {
		lx, y := 10+150*float64(i%4), ly+20*float64(i/4)
		s.rect(lx, y, 12, 12, "tl tl-"+string(st), "")
		s.text(lx+16, y+10, "start", "legend", cellStateWords[st])
	}
	return s.done()
}

// cellStateWords are the timeline legend's words.
var cellStateWords = map[burn.CellState]string{
	burn.CellFatal:       "fatal event",
	burn.CellCorrectable: "correctable errors",
	burn.CellReset:       "counter reset",
	burn.CellUnread:      "not read",
	burn.CellClean:       "clean, traffic",
	burn.CellIdle:        "clean, no traffic",
	burn.CellUnsampled:   "not sampled",
}

// cellWords is a cell's tooltip.
func cellWords(c burn.Cell) string {
	var b strings.Builder
	b.WriteString(cellStateWords[c.State])
	if c.Bits > 0 {
		fmt.Fprintf(&b, ", %.3g bits", c.Bits)
	}
	if len(c.Counters) > 0 {
		b.WriteString(": " + strings.Join(c.Counters, ", "))
	}
	return b.String()
}

// compactCount writes an event count in at most four characters.
func compactCount(v uint64) string {
	switch {
	case v < 1000:
		return fmt.Sprint(v)
	case v < 1e6:
		return fmt.Sprintf("%.0fk", float64(v)/1e3)
	case v < 1e9:
		return fmt.Sprintf("%.0fM", float64(v)/1e6)
	}
	return ">1G"
}

// lastRDMA keeps the last loopback of each pair and memory in a window
// (a window holds several rounds).
func lastRDMA(rs []dossier.BurnRate) []dossier.BurnRate {
	last := map[string]int{}
	var order []string
	for i, r := range rs {
		k := r.Name + " " + r.GPU
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = i
	}
	out := make([]dossier.BurnRate, 0, len(order))
	for _, k := range order {
		out = append(out, rs[last[k]])
	}
	return out
}

// cellSeverity orders the cell states, the worst first.
var cellSeverity = []burn.CellState{burn.CellFatal, burn.CellCorrectable, burn.CellReset, burn.CellUnread, burn.CellClean, burn.CellIdle, burn.CellUnsampled}

// groupNVLinks draws a GPU's NVLinks as one row (an HGX node has 18 a
// GPU): each window's cell the worst of its links', their events summed,
// and the counters that moved named with their link. Other rows stay as
// they are, in order; the group takes its first link's place.
func groupNVLinks(rows []burn.TimelineRow) []burn.TimelineRow {
	rank := map[burn.CellState]int{}
	for i, st := range cellSeverity {
		rank[st] = i
	}
	var out []burn.TimelineRow
	group := map[string]int{} // GPU address → index in out
	links := map[string]int{}
	for _, row := range rows {
		if row.Device.Kind != burn.NVLinkDevice {
			out = append(out, row)
			continue
		}
		gpu, link, _ := strings.Cut(row.Device.Name, "#")
		i, ok := group[gpu]
		if !ok {
			label := row.Device.Label
			if k := strings.LastIndex(label, " NVLink "); k > 0 {
				label = label[:k]
			}
			d := row.Device
			d.Name, d.Label = gpu+"#*", label
			cells := make([]burn.Cell, len(row.Cells))
			for k := range cells {
				cells[k].State = burn.CellUnsampled
			}
			out = append(out, burn.TimelineRow{Device: d, Cells: cells})
			i = len(out) - 1
			group[gpu] = i
		}
		links[gpu]++
		g := &out[i]
		for k, c := range row.Cells {
			if k >= len(g.Cells) {
				g.Cells = append(g.Cells, burn.Cell{State: burn.CellUnsampled})
			}
			m := &g.Cells[k]
			if links[gpu] == 1 || rank[c.State] < rank[m.State] {
				m.State = c.State
			}
			m.Bits += c.Bits
			m.Fatal += c.Fatal
			m.Correctable += c.Correctable
			for _, x := range c.Counters {
				m.Counters = append(m.Counters, "link "+link+" "+x)
			}
		}
	}
	for gpu, i := range group {
		out[i].Device.Label += fmt.Sprintf(" NVLinks (%d)", links[gpu])
	}
	return out
}
