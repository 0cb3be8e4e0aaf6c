package burn

import (
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

func TestJudgeSensors(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	sched := Schedule{Windows: []Window{{Start: t0, End: t0.Add(time.Minute)}}}
	reading := func(clocks []uint32, events ...[]string) *gpu.Facts {
		f := &gpu.Facts{}
		for i, c := range clocks {
			c := c
			p, lim, temp := 650.0, 700.0, uint32(60+i)
			g := gpu.GPU{BusID: []string{"0000:18:00.0", "0000:3a:00.0", "0000:4b:00.0"}[i], ClockEvents: []string{},
				Sensors: gpu.Sensors{SMClockMHz: &c, PowerW: &p, PowerLimitW: &lim, TempC: &temp}}
			if i < len(events) {
				g.ClockEvents = events[i]
			}
			f.GPUs = append(f.GPUs, g)
		}
		return f
	}
	for _, c := range []struct {
		name     string
		reads    []*gpu.Facts
		subject  string
		status   result.Status
		reason   string
		contains string
	}{
		{"peers alike", []*gpu.Facts{reading([]uint32{1980, 1965, 1980}), reading([]uint32{1980, 1980, 1950})}, "0000:3a:00.0", result.Pass, "ClocksWithPeers", "mean SM clock 1972–1972 MHz"},
		{"one slow GPU", []*gpu.Facts{reading([]uint32{1980, 1500, 1980}), reading([]uint32{1980, 1560, 1980})}, "0000:3a:00.0", result.Warn, "ClocksBelowPeers", "SM clock 1530 MHz against the GPUs' median 1980 MHz (23% below)"},
		{"power brake under load", []*gpu.Facts{reading([]uint32{1980, 1980}, nil, []string{"sw_power_cap", "hw_power_brake_slowdown"})}, "0000:3a:00.0", result.Fail, "SlowdownUnderLoad", "hw_power_brake_slowdown under load"},
		{"one GPU", []*gpu.Facts{reading([]uint32{1980})}, "0000:18:00.0", result.Skip, "NoPeers", "one GPU"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w SensorWindow
			for _, f := range c.reads {
				w.Add(f)
			}
			rs := JudgeSensors(sched, [][]GPUSensors{w.GPUs()})
			for _, r := range rs {
				if r.Subject == c.subject {
					if r.Status != c.status || r.Reason != c.reason || !strings.Contains(r.Message, c.contains) {
						t.Errorf("%s %s %q; want %s %s with %q", r.Status, r.Reason, r.Message, c.status, c.reason, c.contains)
					}
					return
				}
			}
			t.Errorf("no result for %s in %+v", c.subject, rs)
		})
	}
	if rs := JudgeSensors(sched, [][]GPUSensors{{{Address: "0000:18:00.0"}}}); len(rs) != 1 || rs[0].Status != result.Unknown {
		t.Errorf("no samples: %+v", rs)
	}
	// A driver that gives no clock at all (the window's summary is empty).
	if rs := JudgeSensors(sched, [][]GPUSensors{{}}); len(rs) != 1 || rs[0].Status != result.Unknown || rs[0].Reason != "NoSensors" {
		t.Errorf("no GPU with a clock: %+v", rs)
	}
}
