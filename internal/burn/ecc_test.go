package burn

import (
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// A planted series per case: two GPUs of 80 GB (81,559 MiB), windows of
// 5 minutes, each GPU's volatile corrected count at the baseline and at
// every window's end (-1: not read).
func TestJudgeECC(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	sched := func(n int, w time.Duration) Schedule {
		var s Schedule
		for i := range n {
			s.Windows = append(s.Windows, Window{Start: t0.Add(time.Duration(i) * w), End: t0.Add(time.Duration(i+1) * w)})
		}
		return s
	}
	mem := uint64(81559)
	reading := func(counts ...int64) *GPUReading {
		f := &gpu.Facts{}
		for i, c := range counts {
			g := gpu.GPU{BusID: []string{"0000:18:00.0", "0000:3a:00.0"}[i], MemoryMiB: &mem}
			if c >= 0 {
				v := uint64(c)
				g.ECC.VolatileCorrected = &v
			}
			f.GPUs = append(f.GPUs, g)
		}
		return &GPUReading{Facts: f}
	}
	series := func(pairs ...[2]int64) []*GPUReading {
		var out []*GPUReading
		for _, p := range pairs {
			out = append(out, reading(p[0], p[1]))
		}
		return out
	}
	off := reading(0, 0)
	no := false
	off.Facts.GPUs[1].ECC.Current = &no
	for _, c := range []struct {
		name     string
		sched    Schedule
		base     []*GPUReading
		ends     []*GPUReading
		subject  string
		status   result.Status
		reason   string
		contains string
	}{
		// Counted since boot, but not under the workload: passes, the
		// rate proven within the ceiling over 4 × 5 min × 79.6 GiB.
		{"clean", sched(4, 5*time.Minute), series([2]int64{2, 0}), series([2]int64{2, 0}, [2]int64{2, 0}, [2]int64{2, 0}, [2]int64{2, 0}),
			"0000:18:00.0", result.Pass, "CorrectedECCWithinRate", "4 window(s): 0 corrected error(s) over 26.5 GiB-hours"},
		{"a burst in window 3", sched(4, 5*time.Minute), series([2]int64{0, 0}), series([2]int64{0, 0}, [2]int64{0, 0}, [2]int64{0, 40}, [2]int64{0, 40}),
			"0000:3a:00.0", result.Warn, "CorrectedECCErrors", "window 3 (12:10:00–12:15:00): 40 corrected error(s), 6.03 per GiB-hour"},
		{"the burst leaves the other GPU clean", sched(4, 5*time.Minute), series([2]int64{0, 0}), series([2]int64{0, 0}, [2]int64{0, 0}, [2]int64{0, 40}, [2]int64{0, 40}),
			"0000:18:00.0", result.Pass, "CorrectedECCWithinRate", "0 corrected error(s)"},
		// One a window, under the ceiling, but never stopping.
		{"a steady rise", sched(4, 5*time.Minute), series([2]int64{5, 0}), series([2]int64{5, 0}, [2]int64{6, 0}, [2]int64{7, 0}, [2]int64{8, 0}),
			"0000:18:00.0", result.Warn, "CorrectedECCRising", "window 4 (12:15:00–12:20:00): new corrected errors in 3 windows in a row"},
		{"not read", sched(2, 5*time.Minute), series([2]int64{0, 0}), series([2]int64{0, -1}, [2]int64{0, 0}),
			"0000:3a:00.0", result.Unknown, "ECCUnread", "window 1 (12:00:00–12:05:00): the corrected count was not read at both ends"},
		{"a reset", sched(2, 5*time.Minute), series([2]int64{9, 0}), series([2]int64{0, 0}, [2]int64{0, 0}),
			"0000:18:00.0", result.Unknown, "ECCUnread", "went from 9 to 0"},
		{"too short to prove the rate", sched(1, time.Minute), series([2]int64{0, 0}), series([2]int64{0, 0}),
			"0000:18:00.0", result.Unknown, "TooShortForECCRate", "proving the ceiling needs about 5.22 GiB-hours (0.066 hours on this GPU)"},
		{"ECC off", sched(1, 5*time.Minute), series([2]int64{0, 0}), []*GPUReading{off},
			"0000:3a:00.0", result.Unknown, "ECCUnread", "ECC is off"},
		{"counted between the baselines", sched(2, 5*time.Minute), series([2]int64{0, 0}, [2]int64{3, 0}), series([2]int64{3, 0}, [2]int64{3, 0}),
			"node", result.Skip, "ECCBefore", "between the baselines (not judged): 0000:18:00.0: 3"},
		{"a GPU gone at a window's end", sched(2, 5*time.Minute), series([2]int64{0, 0}), []*GPUReading{reading(0, 0), reading(0)},
			"0000:3a:00.0", result.Unknown, "ECCUnread", "window 2 (12:05:00–12:10:00): the driver does not report the GPU at its end"},
		{"no reading at a window's end", sched(2, 5*time.Minute), series([2]int64{0, 0}), []*GPUReading{reading(0, 0), {FactsError: "NVML: GPU is lost"}},
			"0000:18:00.0", result.Unknown, "ECCUnread", "window 2 (12:05:00–12:10:00): no reading at its end"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := JudgeECC(c.sched, c.base, c.ends, 0)
			for _, r := range rs {
				if r.Subject != c.subject {
					continue
				}
				if r.ID != IDECC || r.Status != c.status || r.Reason != c.reason || !strings.Contains(r.Message, c.contains) {
					t.Errorf("%s %s %s %q;\nwant %s %s with %q", r.ID, r.Status, r.Reason, r.Message, c.status, c.reason, c.contains)
				}
				return
			}
			t.Errorf("no result for %s in %+v", c.subject, rs)
		})
	}
	// The ceiling is the cited field rate in these units.
	if ECCCeiling < 0.573 || ECCCeiling > 0.574 {
		t.Errorf("ECCCeiling %g, want 70,000 FIT/Mbit = 0.5734 per GiB-hour", ECCCeiling)
	}
}
