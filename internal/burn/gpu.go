package burn

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	nf "github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// IDGPU is the verdict on each GPU's own error counters over the windows.
const IDGPU = "burn.gpu"

// GPUReading is what the driver and the kernel said of the GPUs at one
// sample: the GPU facts (ECC, row remapping, retired pages, clock events,
// the PCIe replay counter) and the kernel log's Xid lines.
type GPUReading struct {
	Label string     `json:"label"`
	At    time.Time  `json:"at"`
	Facts *gpu.Facts `json:"facts,omitempty"`
	// FactsError is why the facts could not be read ("" when read).
	FactsError string `json:"facts_error,omitempty"`
	// Xids are the kernel log's Xid lines; XidError why the log could not
	// be read ("" when read).
	Xids     []Xid  `json:"xids,omitempty"`
	XidError string `json:"xid_error,omitempty"`
}

// Xid is one kernel Xid line as the burn-in keeps it.
type Xid struct {
	When time.Time `json:"when"`
	Bus  string    `json:"bus"`
	Code int       `json:"code"`
	Line string    `json:"line"`
}

// XidsOf keeps node's Xid facts for a reading.
func XidsOf(xs []nf.Xid) []Xid {
	out := make([]Xid, 0, len(xs))
	for _, x := range xs {
		out = append(out, Xid{When: x.When, Bus: x.Bus, Code: x.Code, Line: x.Line})
	}
	return out
}

// slowdowns are the clock events that mean the hardware protected itself
// (fail) or the driver cut clocks for heat (warn) under the workload.
var (
	hwSlowdowns = []string{"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
	swSlowdowns = []string{"sw_thermal_slowdown"}
)

// JudgeGPUs judges each GPU's own counters window by window: a new
// uncorrectable ECC error, a row remap that failed or waits for a reset,
// a retired double-bit page, an Xid in the window or a hardware slowdown
// at its end fails, naming the GPU and the window; a thermal slowdown and
// PCIe replays (the GPU link's own retries) warn with their count. A GPU
// whose facts could not be read is unknown, never a pass. baseline's last
// reading is the first window's start; ends[i] is window i's end.
func JudgeGPUs(s Schedule, baseline, ends []*GPUReading) []result.Result {
	if len(baseline) == 0 || len(ends) == 0 {
		return nil
	}
	type state struct {
		bad, warn []string
		windows   int
		replays   uint64
		unknown   []string
		evs       []result.Evidence
		// unread counts, per counter, the windows it was not read at
		// both ends: a pass says only what was looked at.
		unread map[string]int
	}
	per := map[string]*state{}
	var order []string
	get := func(addr string) *state {
		st := per[addr]
		if st == nil {
			st = &state{unread: map[string]int{}}
			per[addr] = st
			order = append(order, addr)
		}
		return st
	}
	var out []result.Result
	// Xids before the workload are reported, never failed.
	if first := baseline[len(baseline)-1]; first != nil {
		var before []string
		for _, x := range first.Xids {
			before = append(before, fmt.Sprintf("Xid %d on %s", x.Code, x.Bus))
		}
		if len(before) > 0 {
			out = append(out, result.Result{ID: IDGPU, Source: Source, Status: result.Skip, Subject: "node", Reason: "XidBefore",
				Message: "Xid lines in the kernel log before the workload (not judged): " + strings.Join(compact(before), ", ")})
		}
	}
	for _, wr := range windowReadings(s, baseline, ends) {
		i, prev, cur, name := wr.i, wr.prev, wr.cur, wr.name
		if cur == nil || cur.Facts == nil {
			why := "no reading"
			if cur != nil {
				why = cur.FactsError
			}
			out = append(out, result.Result{ID: IDGPU, Source: Source, Status: result.Unknown, Subject: "node", Reason: "NoGPUFacts",
				Message: name + ": the GPUs' counters could not be read at its end: " + why})
			continue
		}
		var prevGPUs []gpu.GPU
		if prev != nil && prev.Facts != nil {
			prevGPUs = prev.Facts.GPUs
		}
		// A GPU the driver reported at the window's start and not at its
		// end fell off the bus or lost its driver: not a GPU to skip.
		for _, p := range prevGPUs {
			if findGPU(cur.Facts.GPUs, p.BusID) == nil {
				get(p.BusID).bad = append(get(p.BusID).bad, name+": the driver no longer reports this GPU at its end (fallen off the bus, or its driver lost it)")
			}
		}
		for _, g := range cur.Facts.GPUs {
			st := get(g.BusID)
			st.windows++
			p := findGPU(prevGPUs, g.BusID)
			if p == nil {
				st.unknown = append(st.unknown, name+": not read at its start")
				continue
			}
			delta := func(what string, a, b *uint64) {
				switch {
				case a == nil || b == nil:
					st.unread[what]++
				case *b < *a:
					st.unknown = append(st.unknown, fmt.Sprintf("%s: %s went from %d to %d (the driver reloaded?)", name, what, *a, *b))
				case *b > *a:
					st.bad = append(st.bad, fmt.Sprintf("%s: %d new %s", name, *b-*a, what))
				}
			}
			delta("uncorrectable ECC error(s)", p.ECC.VolatileUncorrected, g.ECC.VolatileUncorrected)
			delta("uncorrectable row remap(s)", p.Remapped.Uncorrectable, g.Remapped.Uncorrectable)
			delta("retired double-bit page(s)", p.Retired.DoubleBit, g.Retired.DoubleBit)
			if g.Remapped.Failure != nil && *g.Remapped.Failure && (p.Remapped.Failure == nil || !*p.Remapped.Failure) {
				st.bad = append(st.bad, name+": a row remap failed")
			}
			if g.Remapped.Pending != nil && *g.Remapped.Pending && (p.Remapped.Pending == nil || !*p.Remapped.Pending) {
				st.bad = append(st.bad, name+": a row remap waits for a GPU reset")
			}
			if p.PCIe.ReplayCounter == nil || g.PCIe.ReplayCounter == nil {
				st.unread["PCIe replay counter"]++
			} else if a, b := p.PCIe.ReplayCounter, g.PCIe.ReplayCounter; *b > *a {
				st.replays += *b - *a
				st.warn = append(st.warn, fmt.Sprintf("%s: %d PCIe replay(s)", name, *b-*a))
			}
			for _, ev := range g.ClockEvents {
				switch {
				case slices.Contains(hwSlowdowns, ev):
					st.bad = append(st.bad, fmt.Sprintf("%s: clocks cut by %s at its end", name, ev))
				case slices.Contains(swSlowdowns, ev):
					st.warn = append(st.warn, fmt.Sprintf("%s: clocks cut by %s at its end", name, ev))
				}
			}
			if g.ECC.VolatileUncorrected == nil && g.Remapped.Uncorrectable == nil && g.Retired.DoubleBit == nil {
				st.unknown = append(st.unknown, name+": the driver reports no ECC, remap or retirement counter")
			}
		}
		// Xids logged during the window, charged to their GPU.
		if cur.XidError != "" {
			out = append(out, result.Result{ID: IDGPU, Source: Source, Status: result.Unknown, Subject: "node", Reason: "KernelLogUnread",
				Message: name + ": the kernel log could not be read for Xid lines: " + cur.XidError})
			for _, g := range cur.Facts.GPUs {
				get(g.BusID).unread["Xid"]++
			}
			continue
		}
		w := s.Windows[i]
		for _, x := range cur.Xids {
			if x.When.IsZero() || x.When.Before(w.Start) || x.When.After(cur.At) {
				continue
			}
			addr := ""
			for _, g := range cur.Facts.GPUs {
				if strings.HasPrefix(strings.ToLower(g.BusID), strings.ToLower(x.Bus)) {
					addr = g.BusID
				}
			}
			st := get(cmp.Or(addr, x.Bus))
			st.bad = append(st.bad, fmt.Sprintf("%s: Xid %d", name, x.Code))
			st.evs = append(st.evs, result.Evidence{Source: "kernel log", Value: x.Line})
		}
	}
	for _, addr := range order {
		st := per[addr]
		r := result.Result{ID: IDGPU, Source: Source, Subject: addr, Evidence: st.evs}
		// Memory errors are counted by ECC and by remapping (Ampere and
		// later) or page retirement (before): one of the two suffices.
		memUnread := min(st.unread["uncorrectable row remap(s)"], st.unread["retired double-bit page(s)"])
		var notRead []string
		for _, c := range []struct {
			what string
			n    int
		}{{"uncorrectable ECC", st.unread["uncorrectable ECC error(s)"]}, {"row remap or page retirement", memUnread}, {"Xid", st.unread["Xid"]}, {"PCIe replay counter", st.unread["PCIe replay counter"]}} {
			if c.n > 0 {
				notRead = append(notRead, fmt.Sprintf("%s (%d window(s))", c.what, c.n))
			}
		}
		// The ECC and memory counters and the Xid lines are what a pass
		// rests on; the replay counter only adds to it.
		essential := st.unread["uncorrectable ECC error(s)"]+memUnread+st.unread["Xid"] > 0
		switch {
		case len(st.bad) > 0:
			r.Status, r.Reason = result.Fail, "GPUErrors"
			r.Message = strings.Join(compact(st.bad), "; ")
			r.Remedy = "a GPU that logs uncorrectable memory errors, Xids or hardware slowdowns under load is not ready: read nvidia-smi -q (ECC, remapping, clocks events), reset or reboot for a pending remap, check cooling and power, and RMA a GPU whose errors return"
		case len(st.unknown) > 0 || essential:
			r.Status, r.Reason = result.Unknown, "GPUCountersUnknown"
			why := st.unknown
			if len(notRead) > 0 {
				why = append(why, "not read: "+strings.Join(notRead, ", "))
			}
			r.Message = strings.Join(compact(why), "; ")
		case len(st.warn) > 0:
			r.Status, r.Reason = result.Warn, "GPUWarnings"
			r.Message = strings.Join(compact(st.warn), "; ")
			r.Remedy = "PCIe replays are the GPU link retrying: read the burn's AER verdicts for the same link, reseat the GPU or its riser; a thermal slowdown under load points at cooling"
		default:
			r.Status, r.Reason = result.Pass, "GPUClean"
			r.Message = fmt.Sprintf("%d window(s): no new uncorrectable ECC error, row remap or retired page, no Xid, no hardware slowdown", st.windows)
			if len(notRead) > 0 {
				r.Message += "; not read: " + strings.Join(notRead, ", ")
			} else {
				r.Message += ", no PCIe replay"
			}
		}
		out = append(out, r)
	}
	return out
}

// windowReading is a sampled window and the GPU readings at its start
// (the last baseline, or the previous window's end) and at its end.
type windowReading struct {
	i         int
	name      string
	prev, cur *GPUReading
}

// windowReadings pairs every window that has an end reading with the
// readings around it.
func windowReadings(s Schedule, baseline, ends []*GPUReading) []windowReading {
	var out []windowReading
	for i := range ends {
		if i >= len(s.Windows) {
			break
		}
		prev := baseline[len(baseline)-1]
		if i > 0 {
			prev = ends[i-1]
		}
		out = append(out, windowReading{i: i, name: s.Name(i), prev: prev, cur: ends[i]})
	}
	return out
}

func findGPU(gs []gpu.GPU, addr string) *gpu.GPU {
	for i := range gs {
		if gs[i].BusID == addr {
			return &gs[i]
		}
	}
	return nil
}

// compact keeps at most 8 items and says how many more there were.
func compact(items []string) []string {
	if len(items) <= 8 {
		return items
	}
	return append(slices.Clone(items[:8]), fmt.Sprintf("and %d more", len(items)-8))
}
