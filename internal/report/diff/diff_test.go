package diff

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/goldenfile"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Committed reports: three fixture hosts' dossiers and the H200 machine's
// quick run (the one with measurements).
const (
	h200      = "../../../docs/examples/h200x1-quick/report.json"
	hgx       = "../../app/testdata/dossier/hgx-h200-8gpu-10nic/report.json"
	l40s      = "../../app/testdata/dossier/pcie-l40s-remote-nic/report.json"
	noGPU     = "../../app/testdata/dossier/no-gpu/report.json"
	largeSize = 64 << 20
	// h200Earlier is the H200 machine's quick dossier as first committed
	// (commit ed74bd8, docs/examples before 2f96f08): another run of the
	// same configuration, on another GPU (its serial differs), 3.5
	// minutes before h200.
	h200Earlier = "testdata/h200x1-quick-ed74bd8.report.json"
)

func load(t *testing.T, path string) *dossier.Report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := dossier.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// jitter moves every measurement by a factor inside its noise: ±4% at
// most for bandwidth-bound rows (the floor is 5%), ±25% for small ones
// and ±15% for pageable copies (the H200 machine's observed spreads),
// alternating in sign.
func jitter(r *dossier.Report) {
	sign := 1.0
	for i := range r.Measurements.Collectives {
		m := &r.Measurements.Collectives[i]
		f := 1 + sign*0.04
		if m.Bytes < 1<<20 || m.Bottleneck == "latency" {
			f = 1 + sign*0.25
		}
		m.AlgBW *= f
		m.BusBW *= f
		m.InPlaceBusBW *= f
		m.TimeUS /= f
		sign = -sign
	}
	for i := range r.Measurements.Copies {
		m := &r.Measurements.Copies[i]
		f := 1 + sign*0.04
		if strings.Contains(m.Test, "pageable") {
			f = 1 + sign*0.15
		}
		m.GBps *= f
		sign = -sign
	}
}

func firstResult(r *dossier.Report, source string, status result.Status) *result.Result {
	for i := range r.Results {
		if r.Results[i].Source == source && r.Results[i].Status == status {
			return &r.Results[i]
		}
	}
	return nil
}

type want struct {
	section, subject, effect string
}

func TestCompare(t *testing.T) {
	cases := []struct {
		name     string
		old, new string
		plant    func(t *testing.T, r *dossier.Report)
		plantOld func(t *testing.T, r *dossier.Report)
		worse    bool
		want     []want // each must be among the changes
		changes  int    // -1: any number
		moved    int    // measurements moved beyond noise (-1: any)
		compared int    // -1: any
		// hardware: the reports are of two kinds of node (said first; no
		// GPU, NIC or measurement compared).
		hardware bool
	}{
		{name: "h200 itself", old: h200, new: h200, changes: 0, moved: 0, compared: 61},
		{name: "hgx itself", old: hgx, new: hgx, changes: 0, moved: 0, compared: 0},
		{name: "l40s itself", old: l40s, new: l40s, changes: 0, moved: 0, compared: 0},
		{name: "no-gpu itself", old: noGPU, new: noGPU, changes: 0, moved: 0, compared: 0},
		{
			name: "two real runs of the H200 machine", old: h200Earlier, new: h200,
			want:    []want{{SectionVersions, "gdrcheck", Changed}, {SectionTopology, "GPU 0000:00:06.0 (GPU0)", Changed}},
			changes: 2, moved: 0, compared: 61,
		},
		{name: "h200 jitter within noise", old: h200, new: h200, plant: func(t *testing.T, r *dossier.Report) { jitter(r) }, changes: 0, moved: 0, compared: 61},
		{
			name: "driver bumped", old: h200, new: h200,
			plant: func(t *testing.T, r *dossier.Report) { r.Inventory.Driver = "580.200.01" },
			want:  []want{{SectionVersions, "driver", Changed}}, changes: 1, moved: 0, compared: 61,
		},
		{
			name: "all_reduce 20% slower at large sizes", old: h200, new: h200,
			plant: func(t *testing.T, r *dossier.Report) {
				n := 0
				for i := range r.Measurements.Collectives {
					m := &r.Measurements.Collectives[i]
					if m.Collective == "all_reduce" && m.Bytes >= largeSize {
						m.AlgBW *= 0.8
						m.BusBW *= 0.8
						m.TimeUS /= 0.8
						n++
					}
				}
				if n == 0 {
					t.Fatal("no large all_reduce row to slow down")
				}
			},
			worse: true, want: []want{{SectionMeasurements, "all_reduce 64M (1 rank)", Worse}}, changes: 1, moved: 1, compared: 61,
		},
		{
			name: "a row OLD measured has no bandwidth in NEW", old: h200, new: h200,
			plant: func(t *testing.T, r *dossier.Report) {
				for i := range r.Measurements.Collectives {
					if m := &r.Measurements.Collectives[i]; m.Collective == "all_reduce" && m.Bytes >= largeSize {
						m.AlgBW, m.BusBW = math.NaN(), 0
						return
					}
				}
				t.Fatal("no large all_reduce row")
			},
			worse: true, want: []want{{SectionMeasurements, "all_reduce", Worse}}, changes: 1, moved: 1, compared: 61,
		},
		{
			name: "a copy OLD measured reads 0 GB/s in NEW", old: h200, new: h200,
			plant: func(t *testing.T, r *dossier.Report) {
				for i := range r.Measurements.Copies {
					if m := &r.Measurements.Copies[i]; m.Test == "d2d" && m.GBps > 0 {
						m.GBps = 0
						return
					}
				}
				t.Fatal("no d2d copy")
			},
			worse: true, want: []want{{SectionMeasurements, "copy d2d", Worse}}, changes: 1, moved: 1, compared: 61,
		},
		{
			name: "check pass to fail", old: h200, new: h200,
			plant: func(t *testing.T, r *dossier.Report) {
				x := firstResult(r, result.SourceCheck, result.Pass)
				if x == nil {
					t.Fatal("no passing check")
				}
				x.Status, x.Reason, x.Message = result.Fail, "Planted", "planted failure"
			},
			worse: true, want: []want{{SectionChecks, "gpu.health GPU0", Worse}}, changes: -1, moved: 0, compared: 61,
		},
		{
			name: "check fail to pass is better", old: h200, new: h200,
			plantOld: func(t *testing.T, r *dossier.Report) {
				firstResult(r, result.SourceCheck, result.Pass).Status = result.Fail
			},
			worse: false, want: []want{{SectionChecks, "gpu.health GPU0", Better}}, changes: 1, moved: 0, compared: 61,
		},
		{
			name: "skipped check now fails", old: h200, new: h200,
			plant: func(t *testing.T, r *dossier.Report) {
				x := firstResult(r, result.SourceCheck, result.Skip)
				x.Status, x.Reason = result.Fail, "Planted"
			},
			worse: true, want: []want{{SectionChecks, "gdr.", Worse}}, changes: 1, moved: 0, compared: 61,
		},
		{
			name: "pass to unknown is a change, not worse", old: h200, new: h200,
			plant: func(t *testing.T, r *dossier.Report) {
				firstResult(r, result.SourceCheck, result.Pass).Status = result.Unknown
			},
			want: []want{{SectionChecks, "gpu.health GPU0", Changed}}, changes: 1, moved: 0, compared: 61,
		},
		{
			name: "pageable copy 20% slower is noise", old: h200, new: h200,
			plantOld: func(t *testing.T, r *dossier.Report) {
				r.Measurements.Copies = append(r.Measurements.Copies, dossier.CopyMeasurement{Test: "h2d_pageable", Peer: -1, Bytes: 64 << 20, GBps: 7.8, Valid: true})
			},
			plant: func(t *testing.T, r *dossier.Report) {
				r.Measurements.Copies = append(r.Measurements.Copies, dossier.CopyMeasurement{Test: "h2d_pageable", Peer: -1, Bytes: 64 << 20, GBps: 6.4, Valid: true})
			},
			changes: 0, moved: 0, compared: 62,
		},
		{
			name: "pinned host copy 7% slower is noise", old: h200, new: h200,
			plant:   func(t *testing.T, r *dossier.Report) { r.Measurements.Copies[2].GBps *= 0.93 },
			changes: 0, moved: 0, compared: 61,
		},
		{
			name: "pinned host copy 15% slower moved", old: h200, new: h200,
			plant: func(t *testing.T, r *dossier.Report) { r.Measurements.Copies[1].GBps *= 0.85 },
			worse: true, want: []want{{SectionMeasurements, "copy h2d_pinned GPU0 64M", Worse}}, changes: 1, moved: 1, compared: 61,
		},
		{
			name: "device copy 10% slower, a copy invalid, a copy of another size", old: h200, new: h200,
			plant: func(t *testing.T, r *dossier.Report) {
				r.Measurements.Copies[0].GBps *= 0.9
				r.Measurements.Copies[1].Valid = false
				r.Measurements.Copies[2].Bytes = 1 << 30
			},
			worse: true, want: []want{{SectionMeasurements, "copy d2d GPU0 64M", Worse}, {SectionMeasurements, "copy h2d_pinned GPU0 64M", Worse}},
			changes: 2, moved: 1, compared: 60,
		},
		{
			name: "wrong data", old: h200, new: h200,
			plant: func(t *testing.T, r *dossier.Report) { r.Measurements.Collectives[3].Wrong = 2 },
			worse: true, want: []want{{SectionMeasurements, "all_reduce 16K", Worse}}, changes: 1, moved: 0, compared: 61,
		},
		{
			name: "NIC port down", old: hgx, new: hgx,
			plant: func(t *testing.T, r *dossier.Report) {
				r.Inventory.NICs[0].Ports[0].State = "DOWN"
				r.Inventory.NICs[0].Ports[0].PhysState = "Disabled"
			},
			worse: true, want: []want{{SectionTopology, "NIC 0000:5d:00.0 (mlx5_0) port 1", Worse}}, changes: 2, moved: 0, compared: 0,
		},
		{
			name: "a NIC lost, a port and a GPU added", old: hgx, new: hgx,
			plantOld: func(t *testing.T, r *dossier.Report) {
				r.Inventory.GPUs = r.Inventory.GPUs[1:]
			},
			plant: func(t *testing.T, r *dossier.Report) {
				r.Inventory.NICs[0].Ports = append(r.Inventory.NICs[0].Ports, dossier.Port{Number: 9, State: "ACTIVE"})
				r.Inventory.NICs = r.Inventory.NICs[:len(r.Inventory.NICs)-1]
			},
			worse: true, want: []want{{SectionTopology, "NIC ", Worse}, {SectionTopology, "NIC 0000:5d:00.0 (mlx5_0) port 9", Better}, {SectionTopology, "GPU 0000:", Better}},
			changes: -1, moved: 0, compared: 0,
		},
		{
			name: "GPU missing", old: hgx, new: hgx,
			plant: func(t *testing.T, r *dossier.Report) {
				r.Inventory.GPUs = append(r.Inventory.GPUs[:3], r.Inventory.GPUs[4:]...)
			},
			worse: true, want: []want{{SectionTopology, "GPU 0000:", Worse}}, changes: -1, moved: 0, compared: 0,
		},
		{
			name: "NVLinks lost and a GPU link narrowed", old: hgx, new: hgx,
			plant: func(t *testing.T, r *dossier.Report) {
				r.Inventory.GPUs[1].NVLinksActive = 16
				r.Inventory.GPUs[1].PCIe.CurWidth = 8
				r.Topology.GPULinks[0].NVLinks = 16
			},
			worse: true, want: []want{
				{SectionTopology, "GPU link ", Worse},
			}, changes: 3, moved: 0, compared: 0,
		},
		{
			name: "GDR lost on a pairing", old: hgx, new: hgx,
			plant: func(t *testing.T, r *dossier.Report) {
				r.Topology.DataPaths[0].GDR, r.Topology.DataPaths[0].GDRWhy = dossier.GDRPathOnly, "no nvidia_peermem or dma-buf"
			},
			worse: true, want: []want{{SectionTopology, "data path GPU 0000:18:00.0", Worse}}, changes: 1, moved: 0, compared: 0,
		},
		{
			name: "firmware and environment changed", old: hgx, new: hgx,
			plant: func(t *testing.T, r *dossier.Report) {
				r.Inventory.NICs[2].Firmware = "28.40.1000"
				x := firstResult(r, result.SourceCheck, result.Pass)
				x.Evidence = append(x.Evidence, result.Evidence{Source: "environment", Value: "NCCL_IB_HCA=mlx5_0"})
			},
			want: []want{{SectionVersions, "NIC ", Changed}, {SectionSettings, "environment NCCL_IB_HCA", Changed}}, changes: 2, moved: 0, compared: 0,
		},
		{
			// The review's D14: NEW cut short, OLD's failures simply
			// absent from it, was "nothing got worse", exit 0.
			name: "NEW incomplete, old failures absent", old: h200, new: h200, worse: true,
			plant: func(t *testing.T, r *dossier.Report) {
				r.Complete, r.Interrupted = false, "interrupted by SIGINT"
				r.Results = slices.DeleteFunc(r.Results, func(x result.Result) bool { return x.Status != result.Pass })
			},
			want: []want{{SectionSettings, "run", Worse}}, changes: -1, moved: -1, compared: -1,
		},
		{
			name: "two kinds of node", old: hgx, new: l40s, worse: true, hardware: true,
			want: []want{{SectionChecks, "verdict", Worse}}, changes: -1, moved: 0, compared: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, n := load(t, tc.old), load(t, tc.new)
			if tc.plant != nil {
				tc.plant(t, n)
			}
			if tc.plantOld != nil {
				tc.plantOld(t, o)
			}
			d := Compare(o, n, "OLD", "NEW", DefaultOptions())
			var text bytes.Buffer
			if err := d.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if d.Worse() != tc.worse {
				t.Errorf("Worse() = %v, want %v\n%s", d.Worse(), tc.worse, text.String())
			}
			if tc.changes >= 0 && len(d.Changes) != tc.changes {
				t.Errorf("%d changes, want %d\n%s", len(d.Changes), tc.changes, text.String())
			}
			if tc.moved >= 0 && d.Moved != tc.moved {
				t.Errorf("%d moved, want %d\n%s", d.Moved, tc.moved, text.String())
			}
			if tc.compared >= 0 && d.Compared != tc.compared {
				t.Errorf("%d compared, want %d", d.Compared, tc.compared)
			}
			if (d.Hardware != nil) != tc.hardware {
				t.Errorf("different hardware %+v, want %v", d.Hardware, tc.hardware)
			}
			if tc.hardware {
				if !strings.Contains(text.String(), "\n\nDIFFERENT HARDWARE: OLD is NVIDIA H200 x8, 400 Gb/s, NEW is NVIDIA L40S x4, 400 Gb/s.\n") {
					t.Errorf("not said first:\n%s", text.String())
				}
				for _, c := range d.Changes {
					if c.Section == SectionTopology || c.Section == SectionMeasurements {
						t.Errorf("compared across kinds of node: %+v", c)
					}
				}
			}
			for _, w := range tc.want {
				found := false
				for _, c := range d.Changes {
					if c.Section == w.section && strings.HasPrefix(c.Subject, w.subject) && c.Effect == w.effect {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s change in %s on %q\n%s", w.effect, w.section, w.subject, text.String())
				}
			}
		})
	}
}

// TestNoise checks the noise rule on single rows: the floors, the latency
// class and the in-place spread.
func TestNoise(t *testing.T) {
	row := func(ranks int, bytes uint64, timeUS, bus, inPlace float64, bottleneck string) dossier.CollectiveMeasurement {
		return dossier.CollectiveMeasurement{Collective: "all_reduce", Ranks: ranks, Bytes: bytes, TimeUS: timeUS, AlgBW: bus, BusBW: bus, InPlaceBusBW: inPlace, Bottleneck: bottleneck}
	}
	cases := []struct {
		name     string
		old, new dossier.CollectiveMeasurement
		effect   string // "" no change
	}{
		{"large 4% drop is noise", row(8, 1<<30, 5000, 400, 0, "NVLink"), row(8, 1<<30, 5200, 384, 0, "NVLink"), ""},
		{"large 6% drop moved", row(8, 1<<30, 5000, 400, 0, "NVLink"), row(8, 1<<30, 5300, 376, 0, "NVLink"), Worse},
		{"large 6% rise moved", row(8, 1<<30, 5000, 400, 0, "NVLink"), row(8, 1<<30, 4700, 424, 0, "NVLink"), Better},
		{"small 45% drop is noise", row(8, 1024, 30, 0.1, 0, "latency"), row(8, 1024, 55, 0.055, 0, "latency"), ""},
		{"small 60% drop moved", row(8, 1024, 30, 0.1, 0, "latency"), row(8, 1024, 75, 0.04, 0, "latency"), Worse},
		{"fast row without model is latency-bound", row(8, 8<<20, 10, 800, 0, ""), row(8, 8<<20, 13, 620, 0, ""), ""},
		{"in-place spread widens the floor", row(8, 1<<30, 5000, 400, 360, "NVLink"), row(8, 1<<30, 5400, 370, 400, "NVLink"), ""},
		{"beyond the in-place spread", row(8, 1<<30, 5000, 400, 380, "NVLink"), row(8, 1<<30, 6000, 340, 345, "NVLink"), Worse},
		{"one rank ignores in place", row(1, 1<<30, 500, 0, 0, ""), row(1, 1<<30, 600, 0, 0, ""), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, n := &dossier.Report{}, &dossier.Report{}
			o.Measurements.Collectives = []dossier.CollectiveMeasurement{tc.old}
			n.Measurements.Collectives = []dossier.CollectiveMeasurement{tc.new}
			if tc.old.Ranks == 1 {
				o.Measurements.Collectives[0].AlgBW, n.Measurements.Collectives[0].AlgBW = 2000, 1600
			}
			d := Compare(o, n, "a", "b", DefaultOptions())
			got := ""
			if len(d.Changes) == 1 {
				got = d.Changes[0].Effect
			} else if len(d.Changes) > 1 {
				t.Fatalf("%d changes: %+v", len(d.Changes), d.Changes)
			}
			want := tc.effect
			if tc.old.Ranks == 1 {
				want = Worse // 2000 → 1600 algbw
			}
			if got != want {
				t.Errorf("effect %q, want %q: %+v", got, want, d.Changes)
			}
		})
	}
}

// TestGolden renders a diff of every kind of planted change in text,
// Markdown and JSON.
func TestGolden(t *testing.T) {
	pairs := []struct {
		name     string
		old, new string
		plant    func(r *dossier.Report)
	}{
		{"hgx-planted", hgx, hgx, func(r *dossier.Report) {
			r.Inventory.Driver = "580.200.01"
			r.Inventory.NICs[0].Ports[0].State = "DOWN"
			r.Inventory.GPUs = r.Inventory.GPUs[:7]
			r.Results[0].Status = result.Fail
		}},
		{"h200-slower", h200, h200, func(r *dossier.Report) {
			for i := range r.Measurements.Collectives {
				if m := &r.Measurements.Collectives[i]; m.Collective == "all_reduce" && m.Bytes >= largeSize {
					m.AlgBW *= 0.8
				}
			}
			r.Measurements.Copies = r.Measurements.Copies[:3]
		}},
		{"h200-same", h200, h200, func(r *dossier.Report) { jitter(r) }},
	}
	for _, p := range pairs {
		o, n := load(t, p.old), load(t, p.new)
		p.plant(n)
		d := Compare(o, n, "old/report.json", "new/report.json", DefaultOptions())
		for _, f := range []struct {
			ext   string
			write func(*bytes.Buffer) error
		}{
			{"txt", func(b *bytes.Buffer) error { return d.WriteText(b) }},
			{"md", func(b *bytes.Buffer) error { return d.WriteMarkdown(b) }},
			{"json", func(b *bytes.Buffer) error { return report.WriteJSON(b, d) }},
		} {
			var b bytes.Buffer
			if err := f.write(&b); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", p.name+"."+f.ext), b.Bytes(), *update)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, bad := range []func(*Options){
		func(o *Options) { o.Floor = 0 },
		func(o *Options) { o.NoisyFloor = -1 },
		func(o *Options) { o.LatencyUS = 0 },
		func(o *Options) { o.HostFloor = 0 },
		func(o *Options) { o.LatencyFloor = 0 },
		func(o *Options) { o.JitterUS = 0 },
	} {
		o := DefaultOptions()
		bad(&o)
		if o.Validate() == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Error(err)
	}
}
