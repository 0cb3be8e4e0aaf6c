package burn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// IDSensors is the verdict on each GPU's clocks and power under the
// workload, against the node's other GPUs under the same load.
const IDSensors = "burn.clocks"

// PeerTolerance is how far below the median of the node's GPUs a GPU's
// mean SM clock under the same load may be before it is named: 10%.
// DCGM's diagnostic (4.5 and later) applies the same rule against the
// GPUs' mean (clocks_tolerance_pcnt), its tolerance left to the site.
const PeerTolerance = 0.10

// GPUSensors summarises one GPU's sensor readings during one window's
// workload (read while it ran, not after).
type GPUSensors struct {
	Address string `json:"gpu"`
	Samples int    `json:"samples"`
	// SMClockMHz is the mean SM clock over the samples, MinSMClockMHz the
	// lowest; MaxSMClockMHz the GPU's maximum.
	SMClockMHz    float64 `json:"sm_clock_mhz"`
	MinSMClockMHz uint32  `json:"min_sm_clock_mhz"`
	MaxSMClockMHz uint32  `json:"max_sm_clock_mhz,omitempty"`
	// PowerW is the mean board power over the PowerSamples readings that
	// gave one, MaxPowerW the highest; PowerLimitW the enforced limit.
	PowerW       float64 `json:"power_w"`
	PowerSamples int     `json:"power_samples,omitempty"`
	MaxPowerW    float64 `json:"max_power_w"`
	PowerLimitW  float64 `json:"power_limit_w,omitempty"`
	MaxTempC     uint32  `json:"max_temp_c"`
	// ClockEvents are every clock event reason seen in the window.
	ClockEvents []string `json:"clock_events,omitempty"`
}

// JudgeSensors judges the GPUs' clocks under load, window by window: a
// hardware slowdown seen while the workload ran fails (the GPU protected
// itself under the load it must carry); a thermal slowdown warns; a GPU
// whose mean SM clock is more than PeerTolerance below the median of the
// node's GPUs warns, naming both. With one GPU there is no peer to compare
// with (skip); no sample is unknown.
func JudgeSensors(s Schedule, windows [][]GPUSensors) []result.Result {
	type state struct {
		bad, warn []string
		windows   int
		maxTemp   uint32
		clock     []float64
	}
	per := map[string]*state{}
	var order []string
	var out []result.Result
	single := true
	for i, ws := range windows {
		if i >= len(s.Windows) {
			break
		}
		name := s.Name(i)
		var clocks []float64
		for _, g := range ws {
			if g.Samples > 0 && g.SMClockMHz > 0 {
				clocks = append(clocks, g.SMClockMHz)
			}
		}
		if len(ws) > 1 {
			single = false
		}
		med := median(clocks)
		for _, g := range ws {
			st := per[g.Address]
			if st == nil {
				st = &state{}
				per[g.Address] = st
				order = append(order, g.Address)
			}
			if g.Samples == 0 {
				continue
			}
			st.windows++
			st.maxTemp = max(st.maxTemp, g.MaxTempC)
			st.clock = append(st.clock, g.SMClockMHz)
			for _, ev := range g.ClockEvents {
				switch {
				case slices.Contains(hwSlowdowns, ev):
					st.bad = append(st.bad, fmt.Sprintf("%s: %s under load", name, ev))
				case slices.Contains(swSlowdowns, ev):
					st.warn = append(st.warn, fmt.Sprintf("%s: %s under load", name, ev))
				}
			}
			if len(clocks) > 1 && g.SMClockMHz > 0 && g.SMClockMHz < (1-PeerTolerance)*med {
				st.warn = append(st.warn, fmt.Sprintf("%s: SM clock %.0f MHz against the GPUs' median %.0f MHz (%.0f%% below)", name, g.SMClockMHz, med, 100*(1-g.SMClockMHz/med)))
			}
		}
	}
	if len(order) == 0 && len(windows) > 0 {
		// No GPU gave a clock in any window: say so rather than nothing.
		return []result.Result{{ID: IDSensors, Source: Source, Status: result.Unknown, Subject: "node", Reason: "NoSensors",
			Message: "no GPU's clock or power could be read while the workload ran"}}
	}
	for _, addr := range order {
		st := per[addr]
		r := result.Result{ID: IDSensors, Source: Source, Subject: addr}
		lo, hi := 0.0, 0.0
		if len(st.clock) > 0 {
			lo, hi = slices.Min(st.clock), slices.Max(st.clock)
		}
		clock := fmt.Sprintf("mean SM clock %.0f–%.0f MHz over %d window(s), up to %d °C", lo, hi, st.windows, st.maxTemp)
		switch {
		case st.windows == 0:
			r.Status, r.Reason, r.Message = result.Unknown, "NoSensors", "no clock or power was read while the workload ran"
		case len(st.bad) > 0:
			r.Status, r.Reason = result.Fail, "SlowdownUnderLoad"
			r.Message = strings.Join(compact(st.bad), "; ") + "; " + clock
			r.Remedy = "a hardware slowdown under load means the GPU protected itself (power brake, temperature, an external slowdown signal): check cooling, the power supply and the board; nvidia-smi -q -d PERFORMANCE names the reason"
		case len(st.warn) > 0:
			r.Status, r.Reason = result.Warn, "ClocksBelowPeers"
			r.Message = strings.Join(compact(st.warn), "; ") + "; " + clock
			r.Remedy = "a GPU slower than its peers under the same load runs hotter or more power-limited: compare nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER across the GPUs"
		case single:
			r.Status, r.Reason = result.Skip, "NoPeers"
			r.Message = "one GPU: no peer to compare its clocks with; " + clock
		default:
			r.Status, r.Reason = result.Pass, "ClocksWithPeers"
			r.Message = fmt.Sprintf("no slowdown under load, SM clock within %.0f%% of the GPUs' median; %s", 100*PeerTolerance, clock)
		}
		out = append(out, r)
	}
	return out
}

// SensorWindow gathers one window's sensor readings, GPU by GPU.
type SensorWindow struct {
	order []string
	acc   map[string]*GPUSensors
	sum   map[string][2]float64 // clock and power sums
}

// Add takes one reading of every GPU (the driver's facts).
func (w *SensorWindow) Add(f *gpu.Facts) {
	if f == nil {
		return
	}
	if w.acc == nil {
		w.acc, w.sum = map[string]*GPUSensors{}, map[string][2]float64{}
	}
	for _, g := range f.GPUs {
		sn := g.Sensors
		if sn.SMClockMHz == nil {
			continue
		}
		a := w.acc[g.BusID]
		if a == nil {
			a = &GPUSensors{Address: g.BusID, MinSMClockMHz: *sn.SMClockMHz}
			w.acc[g.BusID] = a
			w.order = append(w.order, g.BusID)
		}
		a.Samples++
		sums := w.sum[g.BusID]
		sums[0] += float64(*sn.SMClockMHz)
		a.MinSMClockMHz = min(a.MinSMClockMHz, *sn.SMClockMHz)
		if sn.MaxSMClockMHz != nil {
			a.MaxSMClockMHz = *sn.MaxSMClockMHz
		}
		if sn.PowerW != nil {
			sums[1] += *sn.PowerW
			a.PowerSamples++
			a.MaxPowerW = max(a.MaxPowerW, *sn.PowerW)
		}
		if sn.PowerLimitW != nil {
			a.PowerLimitW = *sn.PowerLimitW
		}
		if sn.TempC != nil {
			a.MaxTempC = max(a.MaxTempC, *sn.TempC)
		}
		for _, ev := range g.ClockEvents {
			if !slices.Contains(a.ClockEvents, ev) {
				a.ClockEvents = append(a.ClockEvents, ev)
			}
		}
		w.sum[g.BusID] = sums
	}
}

// GPUs is the window's summary per GPU, in the order first seen.
func (w *SensorWindow) GPUs() []GPUSensors {
	out := make([]GPUSensors, 0, len(w.order))
	for _, addr := range w.order {
		a := *w.acc[addr]
		a.SMClockMHz = w.sum[addr][0] / float64(a.Samples)
		if a.PowerSamples > 0 {
			a.PowerW = w.sum[addr][1] / float64(a.PowerSamples)
		}
		out = append(out, a)
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
