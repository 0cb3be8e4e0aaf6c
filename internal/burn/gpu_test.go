package burn

import (
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

func TestJudgeGPUs(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	sched := Schedule{Windows: []Window{{Start: t0, End: t0.Add(time.Minute)}, {Start: t0.Add(time.Minute), End: t0.Add(2 * time.Minute)}}}
	u := func(v uint64) *uint64 { return &v }
	yes := true
	g := func(ecc, replay uint64, events ...string) gpu.GPU {
		return gpu.GPU{BusID: "0000:18:00.0", ECC: gpu.ECC{VolatileUncorrected: u(ecc)}, Remapped: gpu.Remapped{Uncorrectable: u(0)},
			PCIe: gpu.PCIe{ReplayCounter: u(replay)}, ClockEvents: append([]string{}, events...)}
	}
	reading := func(at time.Duration, gs ...gpu.GPU) *GPUReading {
		return &GPUReading{At: t0.Add(at), Facts: &gpu.Facts{GPUs: gs}}
	}
	for _, c := range []struct {
		name     string
		base     []*GPUReading
		ends     []*GPUReading
		status   result.Status
		reason   string
		contains string
	}{
		{"clean", []*GPUReading{reading(0, g(0, 5))}, []*GPUReading{reading(time.Minute, g(0, 5)), reading(2*time.Minute, g(0, 5))}, result.Pass, "GPUClean", "2 window(s)"},
		// An uncorrectable error counted before the workload is not the workload's.
		{"ECC in window 2", []*GPUReading{reading(0, g(3, 0))}, []*GPUReading{reading(time.Minute, g(3, 0)), reading(2*time.Minute, g(4, 0))}, result.Fail, "GPUErrors", "window 2 (12:01:00–12:02:00): 1 new uncorrectable ECC error(s)"},
		{"replays", []*GPUReading{reading(0, g(0, 5))}, []*GPUReading{reading(time.Minute, g(0, 9)), reading(2*time.Minute, g(0, 9))}, result.Warn, "GPUWarnings", "4 PCIe replay(s)"},
		{"hardware slowdown", []*GPUReading{reading(0, g(0, 0))}, []*GPUReading{reading(time.Minute, g(0, 0, "sw_power_cap", "hw_thermal_slowdown")), reading(2*time.Minute, g(0, 0))}, result.Fail, "GPUErrors", "hw_thermal_slowdown"},
		{"driver reloaded", []*GPUReading{reading(0, g(7, 0))}, []*GPUReading{reading(time.Minute, g(0, 0)), reading(2*time.Minute, g(0, 0))}, result.Unknown, "GPUCountersUnknown", "went from 7 to 0"},
		{"a GPU gone at a window's end", []*GPUReading{reading(0, g(0, 0))}, []*GPUReading{reading(time.Minute), reading(2 * time.Minute)}, result.Fail, "GPUErrors", "window 1 (12:00:00–12:01:00): the driver no longer reports this GPU"},
		{"no facts at an end", []*GPUReading{reading(0, g(0, 0))}, []*GPUReading{{At: t0.Add(time.Minute), FactsError: "NVML: GPU is lost"}, reading(2*time.Minute, g(0, 0))}, result.Unknown, "NoGPUFacts", "GPU is lost"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := JudgeGPUs(sched, c.base, c.ends)
			found := false
			for _, r := range rs {
				if r.Status == c.status && r.Reason == c.reason && strings.Contains(r.Message, c.contains) {
					found = true
				}
				if r.Status == result.Pass && c.status != result.Pass {
					t.Errorf("a pass beside %s: %+v", c.reason, r)
				}
			}
			if !found {
				t.Errorf("no %s %s with %q in %+v", c.status, c.reason, c.contains, rs)
			}
		})
	}
	// The kernel log unread at a window's end: the GPU is not called clean
	// of Xids (it was before the review), whatever its counters say.
	unread := reading(time.Minute, g(0, 0))
	unread.XidError = "dmesg: read kernel buffer failed: Operation not permitted"
	for _, r := range JudgeGPUs(sched, []*GPUReading{reading(0, g(0, 0))}, []*GPUReading{unread, reading(2*time.Minute, g(0, 0))}) {
		if r.Subject == "0000:18:00.0" && (r.Status != result.Unknown || !strings.Contains(r.Message, "not read: Xid (1 window(s))")) {
			t.Errorf("Xids unread: %s %s %q", r.Status, r.Reason, r.Message)
		}
	}
	// Xid 79 logged during window 1 fails GPU0; one before the workload is
	// reported only; a pending remap fails.
	base := reading(0, g(0, 0))
	base.Xids = []Xid{{When: t0.Add(-time.Hour), Bus: "0000:18:00", Code: 31, Line: "NVRM: Xid (PCI:0000:18:00): 31"}}
	end1 := reading(time.Minute, g(0, 0))
	end1.Xids = append(base.Xids, Xid{When: t0.Add(30 * time.Second), Bus: "0000:18:00", Code: 79, Line: "NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus."})
	pending := g(0, 0)
	pending.Remapped.Pending = &yes
	rs := JudgeGPUs(sched, []*GPUReading{base}, []*GPUReading{end1, reading(2*time.Minute, pending)})
	var got []string
	for _, r := range rs {
		got = append(got, string(r.Status)+" "+r.Reason+" "+r.Message)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"skip XidBefore Xid lines in the kernel log before the workload (not judged): Xid 31 on 0000:18:00", "fail GPUErrors window 1 (12:00:00–12:01:00): Xid 79", "window 2 (12:01:00–12:02:00): a row remap waits for a GPU reset"} {
		if !strings.Contains(all, want) {
			t.Errorf("lacks %q:\n%s", want, all)
		}
	}
}
