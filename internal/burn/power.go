package burn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// IDPower is the verdict on each GPU's board power under the workload:
// against the node's other GPUs under the same load, and against its
// enforced limit.
const IDPower = "burn.power"

// PowerPeerTolerance is how far below the median of its peers (the node's
// other GPUs) a GPU's mean board power under the same load may be before
// it is named.
// DCGM's diagnostic (4.5 and later: power_tolerance_pcnt, or
// tolerance_pcnt for clocks and power at once) names a GPU whose mean
// power is below (1 − tolerance) × the GPUs' mean and leaves the
// tolerance to the site (off by default). The burn-in's copies are bound
// by memory and PCIe, not compute: an H100 drew 119.5–121 W of its 700 W
// limit under them (docs/device-runs.md), where the boards' own spread
// (leakage, temperature) is a larger share than under a compute load, so
// the tolerance is wider than the clocks' 10%. The median, not the mean,
// is the reference, so that one low GPU of eight does not drag it.
const PowerPeerTolerance = 0.20

// PowerAtLimit is how close to its enforced limit a GPU's highest power
// reading must be, with a power-cap clock event in the same window, for
// it to be named power throttled: NVML's power reading is averaged, so a
// GPU held at its cap reads at or just under it.
const PowerAtLimit = 0.97

// JudgePower judges each GPU's board power window by window: a mean more
// than PowerPeerTolerance below the median of the node's other GPUs warns,
// naming both; power at its enforced limit (PowerAtLimit) together with a
// sw_power_cap clock event warns as power throttling, naming the power
// and the limit (a hardware power brake fails in burn.clocks). One GPU
// has no peer (skip, unless throttled); a window whose power was not read
// leaves the GPU unknown.
func JudgePower(s Schedule, windows [][]GPUSensors) []result.Result {
	type state struct {
		warn    []string
		read    int
		missing []string
		lo, hi  float64
		limit   float64
		peers   bool
	}
	per := map[string]*state{}
	var order []string
	n := min(len(windows), len(s.Windows))
	for i := range n {
		ws, name := windows[i], s.Name(i)
		for gi, g := range ws {
			st := per[g.Address]
			if st == nil {
				st = &state{}
				per[g.Address] = st
				order = append(order, g.Address)
			}
			if !powerRead(g) {
				st.missing = append(st.missing, name)
				continue
			}
			if st.read == 0 {
				st.lo, st.hi = g.PowerW, g.PowerW
			}
			st.read++
			st.lo, st.hi = min(st.lo, g.PowerW), max(st.hi, g.PowerW)
			st.limit = max(st.limit, g.PowerLimitW)
			// Its peers: the window's other GPUs with a power reading.
			var peers []float64
			for pi, p := range ws {
				if pi != gi && powerRead(p) {
					peers = append(peers, p.PowerW)
				}
			}
			if len(peers) > 0 {
				st.peers = true
				if med := median(peers); g.PowerW < (1-PowerPeerTolerance)*med {
					st.warn = append(st.warn, fmt.Sprintf("%s: board power %.0f W against its peers' median %.0f W (%.0f%% below)", name, g.PowerW, med, 100*(1-g.PowerW/med)))
				}
			}
			if g.PowerLimitW > 0 && g.MaxPowerW >= PowerAtLimit*g.PowerLimitW && slices.Contains(g.ClockEvents, "sw_power_cap") {
				st.warn = append(st.warn, fmt.Sprintf("%s: power throttling: up to %.0f W against its enforced limit of %.0f W, clocks cut by sw_power_cap", name, g.MaxPowerW, g.PowerLimitW))
			}
		}
	}
	var out []result.Result
	for _, addr := range order {
		st := per[addr]
		r := result.Result{ID: IDPower, Source: Source, Subject: addr}
		span := fmt.Sprintf("mean power %.0f–%.0f W over %d window(s)", st.lo, st.hi, st.read)
		if st.limit > 0 {
			span += fmt.Sprintf(", enforced limit %.0f W", st.limit)
		}
		switch {
		case len(st.warn) > 0:
			r.Status, r.Reason = result.Warn, "PowerBelowPeers"
			if strings.Contains(strings.Join(st.warn, ""), "power throttling") {
				r.Reason = "PowerThrottled"
			}
			r.Message = strings.Join(compact(st.warn), "; ") + "; " + span
			r.Remedy = "a GPU drawing less than its peers under the same load is held back (a lower power limit, a clock setting, a weak supply) or doing less work; one held at its limit is power throttled: compare nvidia-smi -q -d POWER,PERFORMANCE across the GPUs and check the limits set (nvidia-smi -pl)"
		case st.read == 0:
			r.Status, r.Reason = result.Unknown, "NoPower"
			r.Message = "no board power was read while the workload ran"
		case st.read < n:
			// In window order, those whose summary lacks the GPU altogether too.
			st.missing = st.missing[:0]
			for i := range n {
				j := slices.IndexFunc(windows[i], func(g GPUSensors) bool { return g.Address == addr })
				if j < 0 || !powerRead(windows[i][j]) {
					st.missing = append(st.missing, s.Name(i))
				}
			}
			r.Status, r.Reason = result.Unknown, "PowerUnread"
			r.Message = "board power not read in " + strings.Join(compact(st.missing), ", ") + "; " + span
		case !st.peers:
			r.Status, r.Reason = result.Skip, "NoPeers"
			r.Message = "one GPU: no peer to compare its power with, never throttled at its limit; " + span
		default:
			r.Status, r.Reason = result.Pass, "PowerWithPeers"
			r.Message = fmt.Sprintf("board power never more than %.0f%% below its peers' median, never throttled at its limit; %s", 100*PowerPeerTolerance, span)
		}
		out = append(out, r)
	}
	return out
}

// powerRead says whether a window's summary has the GPU's power: readings
// counted, or (burn.json written before they were) a highest reading.
func powerRead(g GPUSensors) bool {
	return g.PowerSamples > 0 || (g.MaxPowerW > 0 && g.Samples > 0)
}
