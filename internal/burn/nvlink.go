package burn

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// NVLinkDevice is one NVLink of a GPU, whose counters the driver reads
// (GPUReading.Facts, gpu.NVLinkCounters). Its Device.Name is "ADDR#N".
const NVLinkDevice DeviceKind = "nvlink"

// IDNVLinkCRC is the verdict on NVLink CRC errors.
const IDNVLinkCRC = "burn.nvlink-crc"

// NVLinkCRCPerSecond is the CRC error rate on one NVLink above which the
// burn-in fails: DCGM's health watch fails a GPU whose NVLink CRC errors
// reach 100 per second and warns on any lower count
// (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR in common/DcgmGPUHardwareLimits.h,
// judged in modules/health/DcgmHealthWatch.cpp, DCGM 4.6). NVIDIA
// publishes no bit error ratio for NVLink, so there is no per-bit threshold
// to hold the rate to; the per-bit rate is shown, not judged.
const NVLinkCRCPerSecond = 100.0

// nvlinkClass is how an NVLink's counters are judged (docs/burn.md). DCGM's
// health watch fails on any new replay or recovery error of NVLink 1 to 4
// and on any new NVLink 5 recovery, effective (post-FEC), integrity or
// receive error (DCGM_LIMIT_MAX_NVLINK_ERROR = 1); CRC errors it warns on
// below 100 per second.
var nvlinkClass = map[string]Class{
	gpu.NVLinkReplay:          Fatal,
	gpu.NVLinkRecovery:        Fatal,
	gpu.NVLinkRecoveryEvents:  Fatal,
	gpu.NVLinkRecoveryFailed:  Fatal,
	gpu.NVLinkEffectiveErrors: Fatal,
	gpu.NVLinkIntegrityErrors: Fatal,
	gpu.NVLinkRcvErrors:       Fatal,
	gpu.NVLinkCRCFlit:         NVLinkCRC,
	gpu.NVLinkCRCData:         NVLinkCRC,
}

// NVLinkCRC: an NVLink's CRC counters, judged by DCGM's rule (any error
// warns, NVLinkCRCPerSecond fails) with the rate per bit shown.
const NVLinkCRC Class = "nvlink-crc"

// NVLinkDown is an NVLink that was up at the baseline and down at a
// window's end.
type NVLinkDown struct {
	Link  Link   `json:"link"`
	Label string `json:"label"`
	// Traffic is what the schedule put on it in the window.
	Traffic []Traffic `json:"traffic,omitempty"`
}

// nvlinkKey is an NVLink's device name: "0000:18:00.0#3".
func nvlinkKey(addr string, n int) string { return addr + "#" + strconv.Itoa(n) }

// AddNVLinks adds the NVLink counters the GPU readings hold to a series
// Attribute made of the same schedule: per window, each NVLink read at
// both ends becomes a device (kind NVLinkDevice) whose deltas and traffic
// are judged with the rest, its bits from its own received-payload counter
// when that counted exactly, else the schedule's; the NVLink traffic it
// accounts for leaves Unmeasured. baseline are the readings taken with the
// baseline samples, ends those of the window ends (ends[i] is window i's);
// a window without one keeps its NVLink traffic unmeasured. A link up at
// the baseline and down at a window's end is listed in the window's
// NVLinksDown. Counters that were not zero at the first baseline or moved
// between baselines join Before.
func (s *Series) AddNVLinks(h *topology.Host, sched Schedule, baseline, ends []*GPUReading) {
	if len(baseline) == 0 {
		return
	}
	s.Before = append(s.Before, nvlinkBefore(h, baseline)...)
	base := baseline[len(baseline)-1]
	from := base
	for i := range s.Windows {
		if i >= len(ends) {
			break
		}
		to := ends[i]
		w := &s.Windows[i]
		w.addNVLinks(h, sched.Windows[w.Index], from, to)
		w.NVLinksDown = nvlinksDown(h, sched.Windows[w.Index], base, to)
		from = to
	}
}

// nvlinkReadings are a reading's NVLink counters by device name.
func nvlinkReadings(r *GPUReading) map[string]*cf.Reading {
	out := map[string]*cf.Reading{}
	if r == nil || r.Facts == nil {
		return out
	}
	for _, g := range r.Facts.GPUs {
		for _, c := range g.NVLinkCounters {
			out[nvlinkKey(g.BusID, c.Link)] = &cf.Reading{Values: c.Values, Missing: c.Missing}
		}
	}
	return out
}

func nvlinkDevice(h *topology.Host, addr string, n int) Device {
	label := fmt.Sprintf("%s NVLink %d", addr, n)
	if g := h.GPUByAddress(addr); g != nil {
		label = fmt.Sprintf("%s (GPU%d) NVLink %d", addr, g.Index, n)
	}
	return Device{Kind: NVLinkDevice, Name: nvlinkKey(addr, n), Label: label, Medium: "NVLink"}
}

func splitKey(k string) (string, int) {
	addr, n, _ := strings.Cut(k, "#")
	i, _ := strconv.Atoi(n)
	return addr, i
}

// addNVLinks adds one window's NVLink devices.
func (w *WindowDeltas) addNVLinks(h *topology.Host, win Window, from, to *GPUReading) {
	fr, tr := nvlinkReadings(from), nvlinkReadings(to)
	keys := make([]string, 0, len(tr))
	for k := range tr {
		keys = append(keys, k)
	}
	for k := range fr {
		if _, ok := tr[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		ai, ni := splitKey(keys[i])
		aj, nj := splitKey(keys[j])
		return ai < aj || (ai == aj && ni < nj)
	})
	measured := map[Link]bool{}
	for _, k := range keys {
		addr, n := splitKey(k)
		l := NVLinkLink(addr, n)
		dd := DeviceDeltas{Device: nvlinkDevice(h, addr, n)}
		for _, t := range win.Traffic {
			if t.Link == l && t.Bytes > 0 {
				dd.Traffic = append(dd.Traffic, t)
			}
		}
		dd.Deltas = nvlinkDeltas(fr[k], tr[k])
		judged, read := false, false
		for _, d := range dd.Deltas {
			if ClassOf(NVLinkDevice, d.Counter) != Info {
				judged = true
				read = read || d.State != Missing
			}
		}
		if !judged {
			// Nothing of this link's that is judged was read at either
			// end: its traffic stays unmeasured, never a pass.
			continue
		}
		if rx := dd.Delta(gpu.NVLinkRxKiB); rx != nil && rx.State == Counted {
			dd.Bits, dd.BitsFrom = float64(rx.Change)*1024*8, gpu.NVLinkRxKiB+" (payload received, KiB)"
		} else if len(dd.Traffic) > 0 {
			dd.Bits, dd.BitsFrom = float64(dd.Traffic[0].Bytes)*8, "schedule"
		}
		if read {
			measured[l] = true
		}
		w.Devices = append(w.Devices, dd)
	}
	w.Unmeasured = slices.DeleteFunc(w.Unmeasured, func(t Traffic) bool { return measured[t.Link] })
}

// nvlinkDeltas are the changes of every counter either reading has; one
// the driver refused at both ends (an NVLink 5 counter on an older GPU,
// the data-link counters on Blackwell) is left out, since it is none of
// this link's counters. Judging needs at least one judged counter read at
// both ends.
func nvlinkDeltas(from, to *cf.Reading) []Delta {
	var names []string
	for _, r := range []*cf.Reading{from, to} {
		if r == nil {
			continue
		}
		for k := range r.Values {
			names = append(names, k)
		}
		for k := range r.Missing {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	names = slices.Compact(names)
	out := []Delta{}
	for _, n := range names {
		_, _, fok := from.Get(n)
		_, _, tok := to.Get(n)
		if !fok && !tok && from != nil && to != nil {
			continue
		}
		out = append(out, diff(from, to, n))
	}
	return out
}

// nvlinksDown lists the links up at the baseline reading and down (or no
// longer listed) at the window's end, where the driver's NVLink state was
// read at both.
func nvlinksDown(h *topology.Host, win Window, base, end *GPUReading) []NVLinkDown {
	if base == nil || base.Facts == nil || end == nil || end.Facts == nil {
		return nil
	}
	var out []NVLinkDown
	for _, bg := range base.Facts.GPUs {
		eg := end.Facts.GPUByBusID(bg.BusID)
		if !bg.NVLinkQueried || eg == nil || !eg.NVLinkQueried {
			continue // a GPU gone is burn.gpu's; an unread state is no evidence
		}
		for _, bl := range bg.NVLinks {
			if !bl.Active {
				continue
			}
			up := false
			for _, el := range eg.NVLinks {
				up = up || (el.Link == bl.Link && el.Active)
			}
			if up {
				continue
			}
			l := NVLinkLink(bg.BusID, bl.Link)
			d := NVLinkDown{Link: l, Label: nvlinkDevice(h, bg.BusID, bl.Link).Label}
			for _, t := range win.Traffic {
				if t.Link == l && t.Bytes > 0 {
					d.Traffic = append(d.Traffic, t)
				}
			}
			out = append(out, d)
		}
	}
	return out
}

// nvlinkBefore lists the judged NVLink counters not zero at the first
// baseline reading, then those that moved between baseline readings.
func nvlinkBefore(h *topology.Host, baseline []*GPUReading) []Moved {
	var out []Moved
	judged := func(c string) bool { return ClassOf(NVLinkDevice, c) != Info }
	first := nvlinkReadings(baseline[0])
	for _, k := range sortedKeys(first) {
		addr, n := splitKey(k)
		for _, c := range first[k].Names() {
			if v := first[k].Values[c]; v > 0 && judged(c) {
				out = append(out, Moved{Device: nvlinkDevice(h, addr, n),
					Delta: Delta{Counter: c, State: Counted, To: v, Change: v, Why: "counted since the driver loaded or the counters were last reset"}})
			}
		}
	}
	for j := 1; j < len(baseline); j++ {
		fr, tr := nvlinkReadings(baseline[j-1]), nvlinkReadings(baseline[j])
		between := fmt.Sprintf("baseline samples %d and %d", j, j+1)
		for _, k := range sortedKeys(tr) {
			addr, n := splitKey(k)
			for _, d := range nvlinkDeltas(fr[k], tr[k]) {
				if judged(d.Counter) && (d.Change > 0 || d.State == Reset) {
					out = append(out, Moved{Device: nvlinkDevice(h, addr, n), Delta: d, Between: between})
				}
			}
		}
	}
	return out
}

func sortedKeys(m map[string]*cf.Reading) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// judgeNVLinksDown fails each NVLink that went down, naming the GPU, the
// link and the windows at whose end it was down.
func judgeNVLinksDown(s *Series) []result.Result {
	type down struct {
		d   NVLinkDown
		win []string
		tr  []Traffic
	}
	links := map[Link]*down{}
	var order []Link
	for _, w := range s.Windows {
		for _, d := range w.NVLinksDown {
			x := links[d.Link]
			if x == nil {
				x = &down{d: d}
				links[d.Link] = x
				order = append(order, d.Link)
			}
			x.win = append(x.win, w.Name)
			x.tr = append(x.tr, d.Traffic...)
		}
	}
	var out []result.Result
	for _, l := range order {
		x := links[l]
		msg := fmt.Sprintf("%s: %s was up at the baseline and down at the end of %s, %s", x.win[0], x.d.Label, strings.Join(x.win, ", "), traffic(x.tr))
		out = append(out, res(IDFatal, result.Fail, l.String(), "NVLinkDown", msg,
			fmt.Sprintf("read the kernel log of the window for an NVLink Xid (74, 145 and the like) on %s, check the GPU's seating and the NVSwitch baseboard (nvidia-smi nvlink -s, fabric manager's log), reset the GPU or reboot, then rerun the burn-in", l.GPU),
			result.Evidence{Source: "nvml", Value: fmt.Sprintf("NVLink %d: active at the baseline, inactive at the window's end", l.Num), Note: x.win[0]}))
	}
	return out
}

// judgeNVLinkCRC judges every NVLink's CRC counters by DCGM's rule, per
// window (any error warns; NVLinkCRCPerSecond or more fails), and once per
// link and counter over the run: a pass names how many bits crossed it
// without a CRC error and the bound that puts on the rate per bit.
func judgeNVLinkCRC(s *Series, conf float64) []result.Result {
	type total struct {
		counterTotal
		dirty bool // a window counted a CRC error: it has its own verdict
	}
	var totals byCounter[total]
	var out []result.Result
	for _, w := range s.Windows {
		secs := w.Window.End.Sub(w.Window.Start).Seconds()
		for _, dd := range w.Devices {
			if dd.Device.Kind != NVLinkDevice {
				continue
			}
			for _, dl := range dd.Deltas {
				if ClassOf(NVLinkDevice, dl.Counter) != NVLinkCRC {
					continue
				}
				carried := len(dd.Traffic) > 0 || dd.Bits > 0
				if !carried && dl.Change == 0 && dl.State != Reset {
					continue
				}
				t := totals.get(dd.Device, dl.Counter, func(c counterTotal) *total { return &total{counterTotal: c} })
				t.add(w, dd, dl)
				if dl.State == Missing || dl.Change == 0 {
					continue // nothing counted in this window: the run's verdict says so
				}
				t.dirty = true
				ev := evidence(dd.Device, dl, w.Name)
				perSec := float64(dl.Change) / secs
				rate := "no bits to measure a rate per bit against"
				if dd.Bits > 0 {
					rate = RateOf(dl.Change, dd.Bits, conf).text(conf) + " (bits from " + dd.BitsFrom + ")"
				}
				st, reason := result.Warn, "NVLinkCRCErrors"
				if perSec >= NVLinkCRCPerSecond {
					st, reason = result.Fail, "NVLinkCRCRate"
				}
				out = append(out, res(IDNVLinkCRC, st, dd.Device.Name, reason,
					fmt.Sprintf("%s: %s: %s, %.3g per second, %s; %s: any CRC error warns, %g per second fails (DCGM's health watch)",
						w.Name, dd.Device.Label, change(dl), perSec, traffic(dd.Traffic), rate, NVLinkCRCPerSecond),
					nvlinkRemedy(dd.Device), ev, crcRule()))
			}
		}
	}
	for _, t := range totals.inOrder() {
		name := t.counter
		switch {
		case t.dirty:
			// Each window with errors has its own verdict.
		case len(t.inexact) > 0:
			out = append(out, res(IDNVLinkCRC, result.Unknown, t.dev.Name, "CounterNotExact",
				fmt.Sprintf("%s: %s over the run cannot be told: %s", t.dev.Label, name, strings.Join(t.inexact, "; ")), "", limit(t.ev)...))
		case len(t.unread.idx) > 0:
			out = append(out, res(IDNVLinkCRC, result.Unknown, t.dev.Name, "CounterNotRead",
				fmt.Sprintf("%s: %s could not be read in %s (%s): CRC errors on it are not known", t.dev.Label, name, t.unread.text(), strings.Join(t.unread.why, "; ")), "", limit(t.ev)...))
		default:
			msg := fmt.Sprintf("%s: %s: no CRC error in %d window(s)", t.dev.Label, name, t.windows)
			if t.bits > 0 {
				msg += fmt.Sprintf(" over %.3g bits (at most %.2g per bit at %g%% confidence)", t.bits, PoissonUpper(0, conf)/t.bits, conf*100)
			}
			out = append(out, res(IDNVLinkCRC, result.Pass, t.dev.Name, "NoNVLinkCRCErrors", msg, "", crcRule()))
		}
	}
	return out
}

func crcRule() result.Evidence {
	return result.Evidence{Source: "threshold", Value: fmt.Sprintf("any NVLink CRC error warns, %g per second fails", NVLinkCRCPerSecond),
		Note: "DCGM 4.6 health watch: DCGM_LIMIT_MAX_NVLINK_CRC_ERROR (common/DcgmGPUHardwareLimits.h, modules/health/DcgmHealthWatch.cpp); NVIDIA publishes no NVLink bit error ratio"}
}

func nvlinkRemedy(d Device) string {
	addr, n := splitKey(d.Name)
	return fmt.Sprintf("NVLink %d of %s is marginal: read the kernel log for NVLink Xids, compare its counters with its peer's end (nvidia-smi nvlink -e -i %s), reseat the GPU or have the baseboard serviced if the errors return, then rerun the burn-in", n, addr, addr)
}
