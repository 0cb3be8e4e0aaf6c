package burn

import (
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

func TestJudgePower(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	sched := Schedule{Windows: []Window{{Start: t0, End: t0.Add(time.Minute)}, {Start: t0.Add(time.Minute), End: t0.Add(2 * time.Minute)}}}
	addrs := []string{"0000:18:00.0", "0000:3a:00.0", "0000:4b:00.0"}
	// window gives each GPU a mean power (0: not read), its highest
	// reading 5% above, a 700 W limit and the clock events named.
	window := func(powers []float64, events ...[]string) []GPUSensors {
		var out []GPUSensors
		for i, p := range powers {
			g := GPUSensors{Address: addrs[i], Samples: 10, SMClockMHz: 1980, PowerLimitW: 700}
			if p > 0 {
				g.PowerW, g.MaxPowerW, g.PowerSamples = p, p*1.05, 10
			}
			if i < len(events) {
				g.ClockEvents = events[i]
			}
			out = append(out, g)
		}
		return out
	}
	for _, c := range []struct {
		name     string
		windows  [][]GPUSensors
		subject  string
		status   result.Status
		reason   string
		contains string
	}{
		{"peers alike", [][]GPUSensors{window([]float64{650, 640, 655}), window([]float64{650, 645, 660})}, "0000:3a:00.0", result.Pass, "PowerWithPeers", "mean power 640–645 W over 2 window(s), enforced limit 700 W"},
		// One GPU draws 30% less than its peers under the same load.
		{"one GPU 30% below", [][]GPUSensors{window([]float64{650, 455, 650}), window([]float64{650, 455, 650})}, "0000:3a:00.0", result.Warn, "PowerBelowPeers", "window 1 (12:00:00–12:01:00): board power 455 W against its peers' median 650 W (30% below)"},
		// Of two GPUs, the one 30% below the other (18% below their mean).
		{"two GPUs, one 30% below", [][]GPUSensors{window([]float64{650, 455})}, "0000:3a:00.0", result.Warn, "PowerBelowPeers", "455 W against its peers' median 650 W (30% below)"},
		{"the peers of the low GPU pass", [][]GPUSensors{window([]float64{650, 455, 650}), window([]float64{650, 455, 650})}, "0000:18:00.0", result.Pass, "PowerWithPeers", ""},
		{"at its limit with sw_power_cap", [][]GPUSensors{window([]float64{650, 680, 650}, nil, []string{"sw_power_cap"}), window([]float64{650, 650, 650})}, "0000:3a:00.0", result.Warn, "PowerThrottled", "window 1 (12:00:00–12:01:00): power throttling: up to 714 W against its enforced limit of 700 W, clocks cut by sw_power_cap"},
		// The cap event alone, far from the limit, is not power throttling.
		{"sw_power_cap far from the limit", [][]GPUSensors{window([]float64{300, 300}, []string{"sw_power_cap"}), window([]float64{300, 300})}, "0000:18:00.0", result.Pass, "PowerWithPeers", ""},
		{"one GPU", [][]GPUSensors{window([]float64{120}), window([]float64{121})}, "0000:18:00.0", result.Skip, "NoPeers", "mean power 120–121 W over 2 window(s)"},
		{"one GPU throttled", [][]GPUSensors{window([]float64{690}, []string{"sw_power_cap"})}, "0000:18:00.0", result.Warn, "PowerThrottled", "power throttling"},
		{"power not read in a window", [][]GPUSensors{window([]float64{650, 650}), window([]float64{650, 0})}, "0000:3a:00.0", result.Unknown, "PowerUnread", "board power not read in window 2 (12:01:00–12:02:00)"},
		// A window whose sensor summary lacks the GPU altogether.
		{"absent from a window", [][]GPUSensors{window([]float64{650, 650}), window([]float64{650})}, "0000:3a:00.0", result.Unknown, "PowerUnread", "board power not read in window 2 (12:01:00–12:02:00)"},
		{"never read", [][]GPUSensors{window([]float64{0, 0})}, "0000:3a:00.0", result.Unknown, "NoPower", "no board power"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range JudgePower(sched, c.windows) {
				if r.Subject != c.subject {
					continue
				}
				if r.ID != IDPower || r.Status != c.status || r.Reason != c.reason || !strings.Contains(r.Message, c.contains) {
					t.Errorf("%s %s %s %q;\nwant %s %s with %q", r.ID, r.Status, r.Reason, r.Message, c.status, c.reason, c.contains)
				}
				return
			}
			t.Errorf("no result for %s", c.subject)
		})
	}
}

// The window's mean power counts only the readings that gave one (it was
// divided by every sample before, understating a GPU whose power read
// failed now and then).
func TestSensorWindowPowerMean(t *testing.T) {
	var w SensorWindow
	for _, p := range []float64{600, 0, 700} {
		c, lim := uint32(1980), 700.0
		g := gpu.GPU{BusID: "0000:18:00.0", Sensors: gpu.Sensors{SMClockMHz: &c, PowerLimitW: &lim}}
		if p > 0 {
			g.Sensors.PowerW = &p
		}
		w.Add(&gpu.Facts{GPUs: []gpu.GPU{g}})
	}
	got := w.GPUs()
	if len(got) != 1 || got[0].Samples != 3 || got[0].PowerSamples != 2 || got[0].PowerW != 650 || got[0].MaxPowerW != 700 {
		t.Errorf("%+v", got)
	}
}
