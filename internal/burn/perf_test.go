package burn

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

func TestJudgeBandwidth(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	sched := func(n int) Schedule {
		var s Schedule
		for i := range n {
			s.Windows = append(s.Windows, Window{Start: t0.Add(time.Duration(i) * time.Minute), End: t0.Add(time.Duration(i+1) * time.Minute)})
		}
		return s
	}
	// copies is one bidir_pinned copy on GPU 0000:18:00.0 per window at
	// the rates given (negative: the window did not measure it), judged
	// against a model expecting 55 GB/s each way.
	copies := func(rates ...float64) [][]Throughput {
		var out [][]Throughput
		for _, r := range rates {
			tp := Throughput{Test: "bidir_pinned", Subject: "0000:18:00.0", GBps: r, Measured: r >= 0}
			if r < 0 {
				tp.GBps, tp.Why = 0, "no pass of copies finished"
			} else {
				st := result.Pass
				if r/2/55 < 0.85 {
					st = result.Warn
				}
				tp.Model = &ModelJudged{Measured: r / 2, Expected: 55, Status: st, Ratio: r / 2 / 55, Basis: "PCIe Gen5 x16"}
			}
			out = append(out, []Throughput{tp})
		}
		return out
	}
	for _, c := range []struct {
		name     string
		sched    Schedule
		windows  [][]Throughput
		id       string
		status   result.Status
		reason   string
		contains string
	}{
		{"steady", sched(4), copies(100, 102, 99, 101), IDBandwidth, result.Pass, "BandwidthSteady", "every window within 10% of the first 2 window(s)' 101.0 GB/s; 99.0–102.0 GB/s over 4 window(s)"},
		// The copies lose a fifth in the last window: a node that slows as it heats.
		{"20% down in the last window", sched(4), copies(100, 102, 99, 80.8), IDBandwidth, result.Warn, "SlowingUnderLoad", "bidir_pinned on 0000:18:00.0: window 4 (12:03:00–12:04:00): 80.8 GB/s against 101.0 GB/s in the first 2 window(s) (20% below)"},
		{"a third down", sched(3), copies(100, 100, 66), IDBandwidth, result.Fail, "SlowedUnderLoad", "window 3 (12:02:00–12:03:00): 66.0 GB/s against 100.0 GB/s in the first 2 window(s) (34% below)"},
		// Two windows: the first is the reference.
		{"two windows", sched(2), copies(100, 85), IDBandwidth, result.Warn, "SlowingUnderLoad", "85.0 GB/s against 100.0 GB/s in the first 1 window(s) (15% below)"},
		{"a window that did not measure", sched(4), copies(100, 100, -1, 100), IDBandwidth, result.Unknown, "BandwidthUnmeasured", "not measured in window 3 (12:02:00–12:03:00) (no pass of copies finished)"},
		{"the first windows did not measure", sched(3), copies(-1, 100, 100), IDBandwidth, result.Unknown, "BandwidthUnmeasured", "the first 2 window(s) did not all measure it"},
		{"a slowdown is named though a window did not measure", sched(4), copies(100, 100, -1, 60), IDBandwidth, result.Fail, "SlowedUnderLoad", "window 4 (12:03:00–12:04:00): 60.0 GB/s"},
		{"one window", sched(1), copies(100), IDBandwidth, result.Unknown, "OneWindow", "no later window"},
		{"as the model expects", sched(3), copies(100, 102, 99), IDModel, result.Pass, "AsExpected", "lowest window 3 (12:02:00–12:03:00): 49.5 GB/s, expected 55.0 GB/s (PCIe Gen5 x16): 90% of expected; 90–93% of expected over 3 window(s)"},
		{"below the model in the last window", sched(4), copies(100, 102, 99, 80.8), IDModel, result.Warn, "BelowExpected", "worst window 4 (12:03:00–12:04:00): 40.4 GB/s, expected 55.0 GB/s (PCIe Gen5 x16): 73% of expected"},
		{"the model's windows not all measured", sched(3), copies(100, -1, 100), IDModel, result.Unknown, "BandwidthUnmeasured", "not measured in window 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range JudgeBandwidth(c.sched, c.windows) {
				if r.ID != c.id {
					continue
				}
				if r.Status != c.status || r.Reason != c.reason || !strings.Contains(r.Message, c.contains) {
					t.Errorf("%s %s %s %q;\nwant %s %s with %q", r.ID, r.Status, r.Reason, r.Message, c.status, c.reason, c.contains)
				}
				return
			}
			t.Errorf("no %s result", c.id)
		})
	}
	// A one-rank collective's bus bandwidth is 0 by nccl-tests' factors:
	// nothing to judge, no verdict (and no pass).
	zero := [][]Throughput{{{Test: "nccl all_reduce", Subject: "node", Measured: true}}, {{Test: "nccl all_reduce", Subject: "node", Measured: true}}}
	if rs := JudgeBandwidth(sched(2), zero); len(rs) != 0 {
		t.Errorf("busbw 0: %+v", rs)
	}
	// An NCCL collective's bus bandwidth falling 20% by the last window
	// warns like a copy.
	nccl := [][]Throughput{{{Test: "nccl all_reduce", Subject: "node", GBps: 360, Measured: true}}, {{Test: "nccl all_reduce", Subject: "node", GBps: 362, Measured: true}}, {{Test: "nccl all_reduce", Subject: "node", GBps: 288, Measured: true}}}
	if rs := JudgeBandwidth(sched(3), nccl); len(rs) != 1 || rs[0].Status != result.Warn || rs[0].Subject != "nccl all_reduce node" || !strings.Contains(rs[0].Message, "288.0 GB/s against 361.0 GB/s") {
		t.Errorf("nccl: %+v", rs)
	}
}

// The bandwidth judging of an hour-long burn-in of an 8-GPU node: 12
// windows of 72 copies (8 bidir_pinned, 8 d2d, 56 p2p_bidir pairs) and 7
// NCCL collectives.
func BenchmarkJudgeBandwidth8GPU12Windows(b *testing.B) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	var s Schedule
	var ws [][]Throughput
	for i := range 12 {
		s.Windows = append(s.Windows, Window{Start: t0.Add(time.Duration(i) * 5 * time.Minute), End: t0.Add(time.Duration(i+1) * 5 * time.Minute)})
		var w []Throughput
		for g := range 8 {
			w = append(w, Throughput{Test: "bidir_pinned", Subject: fmt.Sprint(g), GBps: 100, Measured: true},
				Throughput{Test: "d2d", Subject: fmt.Sprint(g), GBps: 2000, Measured: true})
			for p := range 8 {
				if p != g {
					w = append(w, Throughput{Test: "p2p_bidir", Subject: fmt.Sprintf("%d>%d", g, p), GBps: 700, Measured: true})
				}
			}
		}
		for c := range 7 {
			w = append(w, Throughput{Test: fmt.Sprint("nccl ", c), Subject: "node", GBps: 350, Measured: true})
		}
		ws = append(ws, w)
	}
	for b.Loop() {
		if len(JudgeBandwidth(s, ws)) != 79 {
			b.Fatal("verdicts")
		}
	}
}
