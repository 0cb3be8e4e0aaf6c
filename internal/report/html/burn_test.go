package html

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// burnReport is a dossier with a three-window burn-in: GPU0's clock drops
// in window 3 and its root port counts a fatal AER error in window 2.
func burnReport() *dossier.Report {
	r := &dossier.Report{Schema: dossier.Schema}
	r.Inventory.GPUs = []dossier.GPU{{Index: 0, BusID: "0000:18:00.0"}, {Index: 1, BusID: "0000:19:00.0"}}
	b := &dossier.Burn{Duration: "15m0s", Window: "5m0s", Complete: true, Path: "raw/burn/burn.json"}
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		clock := 1980.0
		if i == 2 {
			clock = 1400
		}
		b.Windows = append(b.Windows, dossier.BurnWindow{Index: i, Name: "window", Start: t0.Add(time.Duration(i) * 5 * time.Minute), End: t0.Add(time.Duration(i+1) * 5 * time.Minute), Passes: 10, Moved: 1 << 40,
			Copies: []dossier.BurnRate{{Name: "bidir_pinned", GPU: "GPU0", GBps: 100}, {Name: "d2d", GPU: "GPU0", GBps: 3000}},
			NCCL:   []dossier.BurnRate{{Name: "all_reduce", GBps: 350}},
			GPUs: []burn.GPUSensors{{Address: "0000:18:00.0", Samples: 150, SMClockMHz: clock, PowerW: 650, MaxTempC: 70},
				{Address: "0000:19:00.0", Samples: 150, SMClockMHz: 1980, PowerW: 640, MaxTempC: 66}}})
	}
	port := burn.Device{Kind: burn.PCIDevice, Name: "0000:00:02.0", Label: "0000:00:02.0 (root port of GPU0)"}
	clean := burn.Cell{State: burn.CellClean, Bits: 8e12}
	b.Timeline = []burn.TimelineRow{{Device: port, Cells: []burn.Cell{clean, {State: burn.CellFatal, Bits: 8e12, Fatal: 1, Counters: []string{"TOTAL_ERR_FATAL +1"}}, clean}}}
	r.Burn = b
	r.Results = []result.Result{{ID: "burn.fatal", Source: burn.Source, Status: result.Fail, Subject: "0000:00:02.0", Message: "window 2: an uncorrectable error"}}
	return r
}

func TestBurnSection(t *testing.T) {
	r := burnReport()
	plots := burnPlots(r)
	var titles []string
	for _, p := range plots {
		titles = append(titles, p.Title)
	}
	want := []string{"Burn-in: copies per window", "Burn-in: NCCL bus bandwidth per window", "Burn-in: SM clock under load", "Burn-in: power under load", "Burn-in: temperature under load"}
	if strings.Join(titles, "|") != strings.Join(want, "|") {
		t.Errorf("plots %q", titles)
	}
	// The clock's drop is a point of GPU0's series, named by its GPU.
	if svg := string(plots[2].SVG); !strings.Contains(svg, "GPU0, window 3: 1400") || !strings.Contains(svg, "GPU1, window 1: 1980") {
		t.Errorf("clock plot:\n%s", svg)
	}
	tl := string(burnTimeline(r))
	for _, s := range []string{`class="tl tl-fatal"`, "window 2: fatal event, 8e+12 bits: TOTAL_ERR_FATAL +1", "root port of GPU0", ">W3<"} {
		if !strings.Contains(tl, s) {
			t.Errorf("timeline lacks %q:\n%s", s, tl)
		}
	}
	var buf bytes.Buffer
	if err := Render(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, s := range []string{`<section id="burn">`, "15m0s in windows of 5m0s: 3 window(s) sampled, complete", "raw/burn/burn.json", "Burn-in verdicts", "window 2: an uncorrectable error"} {
		if !strings.Contains(page, s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
	// A dossier without a burn-in has no such section.
	r.Burn = nil
	buf.Reset()
	if err := Render(&buf, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `id="burn"`) {
		t.Error("a burn section without a burn-in")
	}
}

// A GPU's NVLinks are one row of the timeline: the worst link's state in
// each window, the events summed, the counters named with their link.
func TestGroupNVLinks(t *testing.T) {
	link := func(n string, cells ...burn.Cell) burn.TimelineRow {
		return burn.TimelineRow{Device: burn.Device{Kind: burn.NVLinkDevice, Name: "0000:18:00.0#" + n, Label: "0000:18:00.0 (GPU0) NVLink " + n}, Cells: cells}
	}
	clean := burn.Cell{State: burn.CellClean, Bits: 1e12}
	port := burn.TimelineRow{Device: burn.Device{Kind: burn.PortDevice, Name: "mlx5_0/1", Label: "mlx5_0 port 1"}, Cells: []burn.Cell{clean, clean}}
	rows := groupNVLinks([]burn.TimelineRow{
		port,
		link("0", clean, burn.Cell{State: burn.CellCorrectable, Bits: 1e12, Correctable: 12, Counters: []string{"crc_flit +12"}}),
		link("1", clean, burn.Cell{State: burn.CellFatal, Bits: 1e12, Fatal: 1, Counters: []string{"replay +1"}}),
		link("2", burn.Cell{State: burn.CellUnread}, clean),
	})
	if len(rows) != 2 || rows[0].Device.Name != "mlx5_0/1" {
		t.Fatalf("rows %+v", rows)
	}
	g := rows[1]
	if g.Device.Label != "0000:18:00.0 (GPU0) NVLinks (3)" {
		t.Errorf("label %q", g.Device.Label)
	}
	if g.Cells[0].State != burn.CellUnread || g.Cells[0].Bits != 2e12 {
		t.Errorf("window 1: %+v", g.Cells[0])
	}
	if w := g.Cells[1]; w.State != burn.CellFatal || w.Fatal != 1 || w.Correctable != 12 || strings.Join(w.Counters, ", ") != "link 0 crc_flit +12, link 1 replay +1" {
		t.Errorf("window 2: %+v", w)
	}
}
