package burn

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Result ids.
const (
	IDFatal      = "burn.fatal"      // fatal counters (link_downed, uncorrectable AER, ...)
	IDErrorRate  = "burn.error-rate" // correctable errors per bit moved
	IDUnmeasured = "burn.unmeasured" // traffic on a link no counter watches
	IDBefore     = "burn.before"     // counted before the workload: reported, never judged
	IDUnsampled  = "burn.unsampled"  // windows without an end sample
)

// Source is the Source of the burn-in's results.
const Source = "burn"

// DefaultConfidence is the one-sided confidence of the error-rate bounds.
const DefaultConfidence = 0.95

// Options tune the judging.
type Options struct {
	// Confidence of the error-rate bounds; 0: DefaultConfidence.
	Confidence float64
	// Thresholds replace the default error-rate ceilings of the media
	// they name ("InfiniBand", "Ethernet", "PCIe"): a site that holds its
	// post-FEC links to 1e-15, as NVIDIA tests its cables, says so here.
	Thresholds map[string]Threshold
	// SkipBandwidth leaves the workload's bandwidth unjudged (burn.bandwidth,
	// burn.model): for a workload whose rates mean nothing, as a fake
	// runtime's in the tests.
	SkipBandwidth bool
}

// Judge turns a series into verdicts:
//
//   - burn.fatal: a fatal counter (Class Fatal) that counted in a window fails
//     that window, naming the device, the links through it and the window; a
//     reset or saturated one is unknown for that window; a device that carried
//     traffic and whose fatal counters were all read in every such window
//     passes once, and one whose fatal counters could not be read is unknown
//     once, naming the windows.
//   - burn.error-rate: each correctable counter (Class Correctable) as events per bit
//     moved, over the whole run, with Poisson bounds at Options.Confidence:
//     pass when the upper bound is within the medium's threshold, fail when
//     the lower bound is above it, warn when only the estimate is above it,
//     unknown when too few bits moved to tell (never a pass). A window
//     whose own rate fails or warns is named on its own too.
//   - burn.fatal also fails an NVLink that was up at the baseline and down
//     at a window's end (NVLinkDown).
//   - burn.nvlink-crc: an NVLink's CRC errors by DCGM's rule: any in a
//     window warns, NVLinkCRCPerSecond or more fails; a link that carried
//     traffic and counted none passes.
//   - burn.unmeasured: a link that carried traffic through no device whose
//     counters were read is unknown (an NVLink whose counters were not read).
//   - burn.before: what counted before the first window is reported (skip),
//     never failed.
//   - burn.unsampled: windows without an end sample are unknown.
func Judge(s *Series, o Options) []result.Result {
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = DefaultConfidence
	}
	var out []result.Result
	out = append(out, judgeFatal(s)...)
	out = append(out, judgeNVLinksDown(s)...)
	out = append(out, judgeNVLinkCRC(s, o.Confidence)...)
	thr := maps.Clone(Thresholds)
	maps.Copy(thr, o.Thresholds)
	out = append(out, judgeRates(s, o.Confidence, thr)...)
	out = append(out, judgeUnmeasured(s)...)
	out = append(out, judgeBefore(s)...)
	if len(s.Unsampled) > 0 {
		var names []string
		for _, i := range s.Unsampled {
			names = append(names, fmt.Sprintf("%d", i+1))
		}
		out = append(out, res(IDUnsampled, result.Unknown, "node", "WindowNotSampled",
			fmt.Sprintf("window(s) %s have no end sample (the burn-in stopped before they ended): their traffic and counters are not judged", strings.Join(names, ", ")), ""))
	}
	result.SetSource(out, Source)
	return out
}

func res(id string, st result.Status, subject, reason, msg, remedy string, ev ...result.Evidence) result.Result {
	titles := map[string]string{
		IDFatal:      "burn-in: no link went down and no uncorrectable error",
		IDErrorRate:  "burn-in: correctable errors per bit moved within the specification",
		IDUnmeasured: "burn-in: every link that carried traffic was watched by a counter",
		IDBefore:     "burn-in: counted before the workload (not judged)",
		IDUnsampled:  "burn-in: every window sampled",
		IDNVLinkCRC:  "burn-in: no NVLink CRC errors under load",
	}
	return result.Result{ID: id, Title: titles[id], Status: st, Subject: subject, Reason: reason, Message: msg, Remedy: remedy, Evidence: ev}
}

// evidence is a delta as evidence: the file it was read from and its values.
func evidence(d Device, dl Delta, window string) result.Evidence {
	file, field := dl.Counter, ""
	if strings.HasPrefix(dl.Counter, "aer_dev_") {
		file, field, _ = strings.Cut(dl.Counter, "/")
		field += " "
	}
	src := file
	if d.Dir != "" {
		src = d.Dir + "/" + file
	}
	v := fmt.Sprintf("%s%d → %d", field, dl.From, dl.To)
	if dl.State == Missing {
		v = field + "not read: " + dl.Why
	}
	return result.Evidence{Source: src, Value: v, Note: window}
}

// change is a delta as a message shows it: "link_downed +1 (3 → 4)".
func change(dl Delta) string {
	name := shortName(dl.Counter)
	switch dl.State {
	case Counted:
		return fmt.Sprintf("%s +%d (%d → %d)", name, dl.Change, dl.From, dl.To)
	case Reset, Saturated:
		return fmt.Sprintf("%s at least +%d (%s)", name, dl.Change, dl.Why)
	}
	return fmt.Sprintf("%s not read (%s)", name, dl.Why)
}

// shortName drops the "counters/" group of a port counter; AER fields keep
// their file ("aer_dev_fatal/DLP").
func shortName(c string) string {
	if s, ok := strings.CutPrefix(c, "counters/"); ok {
		return s
	}
	return c
}

// traffic is the links through a device as a message shows them.
func traffic(ts []Traffic) string {
	if len(ts) == 0 {
		return "while it carried no scheduled traffic"
	}
	var parts []string
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s (%s)", t.Link, bytesText(float64(t.Bytes))))
	}
	return "while it carried " + strings.Join(parts, ", ")
}

func bytesText(b float64) string {
	for _, u := range []struct {
		div  float64
		unit string
	}{{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}} {
		if b >= u.div {
			return fmt.Sprintf("%.3g %s", b/u.div, u.unit)
		}
	}
	return fmt.Sprintf("%.0f B", b)
}

// unsureRemedy is what to do about a counter that was reset or saturated
// within a window.
func unsureRemedy(d Device) string {
	if d.Kind == NVLinkDevice {
		return "find what reset the NVLink counters within the window (nvidia-smi nvlink -re, a GPU reset, a driver reload: burn.gpu and the kernel log say which), then rerun the burn-in"
	}
	return "clear the port's counters (perfquery -x -R) or find who clears them, then rerun the burn-in"
}

func fatalRemedy(d Device) string {
	if d.Kind == NVLinkDevice {
		return nvlinkRemedy(d)
	}
	if d.Kind == PortDevice {
		port := strings.Replace(d.Label, " port ", " -p ", 1)
		return fmt.Sprintf("check the cable and transceiver of %s and the switch port it plugs into (mlxlink -d %s -m -c: the module and its error counters; ibdiagnet on the fabric), reseat or replace them, then rerun the burn-in", d.Label, port)
	}
	return fmt.Sprintf("read the kernel log of the window for the AER report of %s, check that link's slot, riser and retimer (lspci -vvv -s %s), reseat or replace the part, then rerun the burn-in", d.Label, d.Name)
}

// judgeFatal judges the fatal counters of every device.
func judgeFatal(s *Series) []result.Result {
	var out []result.Result
	type state struct {
		dev       Device
		carried   []string // windows it carried traffic in
		unread    windows  // where a fatal counter was not read, and why
		unreadEv  []result.Evidence
		unclean   bool // failed or unknown in some window
		evidences []result.Evidence
	}
	devs := map[string]*state{}
	var order []string
	for _, w := range s.Windows {
		for _, dd := range w.Devices {
			st := devs[dd.Device.Name]
			if st == nil {
				st = &state{dev: dd.Device}
				devs[dd.Device.Name] = st
				order = append(order, dd.Device.Name)
			}
			carried := len(dd.Traffic) > 0
			if carried {
				st.carried = append(st.carried, w.Name)
			}
			var bad, unsure, unread, gone []string
			var badEv, unsureEv, unreadEv []result.Evidence
			reason := ""
			for _, dl := range dd.Deltas {
				if ClassOf(dd.Device.Kind, dl.Counter) == Info {
					continue
				}
				if dl.Gone {
					name := shortName(dl.Counter)
					if file, _, ok := strings.Cut(dl.Counter, "/"); ok && strings.HasPrefix(file, "aer_dev_") {
						name = file
					}
					if slices.Contains(gone, name) {
						continue
					}
					gone = append(gone, name)
					badEv = append(badEv, evidence(dd.Device, dl, w.Name))
					continue
				}
				if ClassOf(dd.Device.Kind, dl.Counter) != Fatal || movedField(dd, dl) {
					continue
				}
				switch {
				case dl.State != Missing && dl.Change > 0:
					bad = append(bad, change(dl))
					badEv = append(badEv, evidence(dd.Device, dl, w.Name))
					if reason == "" || dl.Counter == "counters/link_downed" {
						reason = fatalReason(dd.Device, dl.Counter)
					}
				case dl.State == Reset || dl.State == Saturated:
					unsure = append(unsure, change(dl))
					unsureEv = append(unsureEv, evidence(dd.Device, dl, w.Name))
				case dl.State == Missing:
					unread = append(unread, shortName(dl.Counter)+": "+dl.Why)
					unreadEv = append(unreadEv, evidence(dd.Device, dl, w.Name))
				default:
					st.evidences = append(st.evidences, evidence(dd.Device, dl, w.Name))
				}
			}
			if len(gone) > 0 {
				bad = append(bad, fmt.Sprintf("%s read at the window's start and gone at its end (the device fell off the bus, its driver was unbound or its port went away)", strings.Join(gone, ", ")))
				if reason == "" {
					reason = "CountersGone"
				}
			}
			switch {
			case len(bad) > 0:
				st.unclean = true
				out = append(out, res(IDFatal, result.Fail, dd.Device.Name, reason,
					fmt.Sprintf("%s: %s: %s, %s", w.Name, dd.Device.Label, strings.Join(bad, ", "), traffic(dd.Traffic)),
					fatalRemedy(dd.Device), badEv...))
			case len(unsure) > 0:
				st.unclean = true
				reason := "CounterReset"
				if strings.Contains(strings.Join(unsure, " "), "maximum") {
					reason = "CounterSaturated"
				}
				out = append(out, res(IDFatal, result.Unknown, dd.Device.Name, reason,
					fmt.Sprintf("%s: %s: %s: what happened in the window cannot be told, %s", w.Name, dd.Device.Label, strings.Join(unsure, ", "), traffic(dd.Traffic)),
					unsureRemedy(dd.Device), unsureEv...))
			case len(unread) > 0 && carried:
				st.unread.add(w.Index, unread...)
				st.unreadEv = append(st.unreadEv, unreadEv...)
			}
		}
	}
	for _, name := range order {
		st := devs[name]
		switch {
		case len(st.unread.idx) > 0:
			out = append(out, res(IDFatal, result.Unknown, name, "CounterNotRead",
				fmt.Sprintf("%s carried traffic in %s but its fatal-error counters could not be read (%s): errors there are not known", st.dev.Label, st.unread.text(), strings.Join(st.unread.why, "; ")),
				"", limit(st.unreadEv)...))
		case !st.unclean && len(st.carried) > 0:
			out = append(out, res(IDFatal, result.Pass, name, "NoFatalErrors",
				fmt.Sprintf("%s: no fatal error counted in the %d window(s) it carried traffic", st.dev.Label, len(st.carried)), "", limit(st.evidences)...))
		}
	}
	return out
}

// windows collects the windows something happened in, and the distinct
// reasons, for one message instead of one per window.
type windows struct {
	idx []int
	why []string
}

func (w *windows) add(i int, why ...string) {
	if !slices.Contains(w.idx, i) {
		w.idx = append(w.idx, i)
	}
	for _, y := range why {
		if !slices.Contains(w.why, y) {
			w.why = append(w.why, y)
		}
	}
}

// text is "window 2" or "windows 1, 2, 3".
func (w *windows) text() string {
	var n []string
	for _, i := range w.idx {
		n = append(n, strconv.Itoa(i+1))
	}
	if len(n) == 1 {
		return "window " + n[0]
	}
	return "windows " + strings.Join(n, ", ")
}

// movedField reports whether dl is an AER file's TOTAL_ line while another
// field of the same file moved: the field names the error, the total would
// repeat it.
func movedField(dd DeviceDeltas, dl Delta) bool {
	file, field, ok := strings.Cut(dl.Counter, "/")
	if !ok || !strings.HasPrefix(field, "TOTAL_ERR_") {
		return false
	}
	for _, o := range dd.Deltas {
		if o.Counter != dl.Counter && strings.HasPrefix(o.Counter, file+"/") && o.State != Missing && o.Change > 0 {
			return true
		}
	}
	return false
}

// limit keeps the first evidences of a long list.
func limit(ev []result.Evidence) []result.Evidence {
	const max = 8
	if len(ev) > max {
		return ev[:max]
	}
	return ev
}

func fatalReason(d Device, counter string) string {
	switch {
	case counter == "counters/link_downed":
		return "LinkDowned"
	case counter == "counters/excessive_buffer_overrun_errors":
		return "BufferOverrun"
	case counter == "counters/local_link_integrity_errors":
		return "LinkIntegrityErrors"
	case strings.HasPrefix(counter, "aer_dev_fatal/"):
		return "FatalAER"
	case strings.HasPrefix(counter, "aer_dev_nonfatal/"):
		return "NonFatalAER"
	case d.Kind == NVLinkDevice && (counter == gpu.NVLinkReplay):
		return "NVLinkReplay"
	case d.Kind == NVLinkDevice && (counter == gpu.NVLinkRecovery || counter == gpu.NVLinkRecoveryEvents || counter == gpu.NVLinkRecoveryFailed):
		return "NVLinkRecovery"
	case d.Kind == NVLinkDevice:
		return "NVLinkErrors"
	}
	return "FatalCounter"
}

// Rate is an error-rate judgement: k events over bits.
type Rate struct {
	Events uint64  `json:"events"`
	Bits   float64 `json:"bits"`
	// Estimate is Events/Bits; Lower and Upper its one-sided bounds at
	// the confidence used.
	Estimate float64 `json:"estimate"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
}

// RateOf estimates an error rate with its bounds; bits must be positive.
func RateOf(k uint64, bits, conf float64) Rate {
	return Rate{Events: k, Bits: bits, Estimate: float64(k) / bits,
		Lower: PoissonLower(k, conf) / bits, Upper: PoissonUpper(k, conf) / bits}
}

// verdict judges a rate against a threshold: pass when the upper bound is
// within it, fail when the lower bound is above it, warn when the estimate
// alone is above it, unknown otherwise (too few bits to tell).
func (r Rate) verdict(thr float64) (result.Status, string) {
	switch {
	case r.Upper <= thr:
		return result.Pass, "ErrorRateWithinSpec"
	case r.Lower > thr:
		return result.Fail, "ErrorRateAboveSpec"
	case r.Estimate > thr:
		return result.Warn, "ErrorRateMayExceedSpec"
	}
	return result.Unknown, "TooFewBits"
}

func (r Rate) text(conf float64) string {
	return fmt.Sprintf("%d in %.3g bits: %.2g per bit, between %.2g and %.2g at %g%% confidence",
		r.Events, r.Bits, r.Estimate, r.Lower, r.Upper, conf*100)
}

func rateRemedy(d Device) string {
	if d.Kind == PortDevice {
		port := strings.Replace(d.Label, " port ", " -p ", 1)
		return fmt.Sprintf("%s has a marginal link: clean or replace the transceiver and cable and check the switch port (mlxlink -d %s -c shows the link's raw and effective BER), then rerun the burn-in", d.Label, port)
	}
	return fmt.Sprintf("the PCIe link at %s is marginal: check its speed and width, reseat the device, riser or retimer, then rerun the burn-in", d.Label)
}

// judgeRates judges every correctable counter of every device, per window
// (failures and warnings only) and over the whole run.
func judgeRates(s *Series, conf float64, thresholds map[string]Threshold) []result.Result {
	type total struct {
		counterTotal
		moved bool    // carried traffic or counted an error somewhere
		notes windows // the windows' notes on their bits
	}
	var totals byCounter[total]
	var out []result.Result
	for _, w := range s.Windows {
		for _, dd := range w.Devices {
			thr, medium := thresholdOf(thresholds, dd.Device)
			for _, dl := range dd.Deltas {
				if ClassOf(dd.Device.Kind, dl.Counter) != Correctable {
					continue
				}
				t := totals.get(dd.Device, dl.Counter, func(c counterTotal) *total { return &total{counterTotal: c} })
				carried := dd.Bits > 0 || len(dd.Traffic) > 0
				if !carried && dl.Change == 0 && dl.State != Reset && dl.State != Saturated {
					continue // idle, and nothing happened (or nothing read)
				}
				t.moved = true
				if dd.Note != "" {
					t.notes.add(w.Index, dd.Note)
				}
				if !t.add(w, dd, dl) {
					continue
				}
				if dd.Bits <= 0 {
					if dl.Change == 0 {
						continue
					}
					out = append(out, res(IDErrorRate, result.Warn, dd.Device.Name, "ErrorsWithoutTraffic",
						fmt.Sprintf("%s: %s: %s with no traffic through it to measure a rate against", w.Name, dd.Device.Label, change(dl)),
						rateRemedy(dd.Device), evidence(dd.Device, dl, w.Name)))
					continue
				}
				r := RateOf(dl.Change, dd.Bits, conf)
				if st, reason := r.verdict(thr.BER); st == result.Fail || st == result.Warn {
					out = append(out, res(IDErrorRate, st, dd.Device.Name, reason,
						fmt.Sprintf("%s: %s: %s %s (bits from %s), %s; %s allows %.0g",
							w.Name, dd.Device.Label, shortName(dl.Counter), r.text(conf), dd.BitsFrom, traffic(dd.Traffic), medium, thr.BER),
						rateRemedy(dd.Device), evidence(dd.Device, dl, w.Name)))
				}
			}
		}
	}
	for _, t := range totals.inOrder() {
		if !t.moved {
			continue
		}
		thr, medium := thresholdOf(thresholds, t.dev)
		name := shortName(t.counter)
		switch {
		case len(t.inexact) > 0:
			out = append(out, res(IDErrorRate, result.Unknown, t.dev.Name, "CounterNotExact",
				fmt.Sprintf("%s: %s over the run cannot be told: %s", t.dev.Label, name, strings.Join(t.inexact, "; ")), "", limit(t.ev)...))
		case len(t.unread.idx) > 0:
			out = append(out, res(IDErrorRate, result.Unknown, t.dev.Name, "CounterNotRead",
				fmt.Sprintf("%s: %s could not be read in %s (%s): its error rate is not known", t.dev.Label, name, t.unread.text(), strings.Join(t.unread.why, "; ")), "", limit(t.ev)...))
		case t.bits <= 0 && t.k > 0:
			// Errors with no traffic at all: each window already warned.
		case t.bits <= 0:
			msg := fmt.Sprintf("%s: %s over %d window(s): 0 in 0 bits: no bits its counters can vouch for crossed it, so its error rate is not known", t.dev.Label, name, t.windows)
			if len(t.notes.idx) > 0 {
				msg += fmt.Sprintf(" (in %s %s)", t.notes.text(), strings.Join(t.notes.why, "; "))
			}
			out = append(out, res(IDErrorRate, result.Unknown, t.dev.Name, "TooFewBits", msg, ""))
		default:
			r := RateOf(t.k, t.bits, conf)
			st, reason := r.verdict(thr.BER)
			msg := fmt.Sprintf("%s: %s over %d window(s): %s; %s allows %.0g", t.dev.Label, name, t.windows, r.text(conf), medium, thr.BER)
			remedy := ""
			switch st {
			case result.Unknown:
				need := PoissonUpper(t.k, conf) / thr.BER
				msg = fmt.Sprintf("%s: %s over %d window(s): %s; proving %s's %.0g needs about %.2g bits through it, %.2g moved: run the burn-in longer or with more traffic on it",
					t.dev.Label, name, t.windows, r.text(conf), medium, thr.BER, need, t.bits)
			case result.Fail, result.Warn:
				remedy = rateRemedy(t.dev)
			}
			if len(t.notes.idx) > 0 {
				msg += fmt.Sprintf(" (in %s %s)", t.notes.text(), strings.Join(t.notes.why, "; "))
			}
			ev := append(slices.Clone(limit(t.ev)), result.Evidence{Source: "threshold", Value: fmt.Sprintf("%.0g per bit (%s)", thr.BER, medium), Note: thr.Source})
			out = append(out, res(IDErrorRate, st, t.dev.Name, reason, msg, remedy, ev...))
		}
	}
	return out
}

// counterTotal is one device's counter summed over the windows that
// count for it.
type counterTotal struct {
	dev     Device
	counter string
	k       uint64  // events counted exactly
	bits    float64 // the bits of the windows counted exactly
	windows int
	inexact []string // windows whose delta was reset or saturated, with why
	unread  windows  // windows whose delta was missing, and why
	ev      []result.Evidence
}

// add takes one window's delta: a missing one is unread, a reset or
// saturated one inexact, a counted one summed with the device's bits;
// each that was not counted exactly, or counted an event, is evidence.
// It reports whether the delta was counted exactly.
func (t *counterTotal) add(w WindowDeltas, dd DeviceDeltas, dl Delta) bool {
	t.windows++
	switch dl.State {
	case Missing:
		t.unread.add(w.Index, dl.Why)
	case Counted:
		t.k += dl.Change
		t.bits += dd.Bits
		if dl.Change > 0 {
			t.ev = append(t.ev, evidence(dd.Device, dl, w.Name))
		}
		return true
	default:
		t.inexact = append(t.inexact, fmt.Sprintf("%s: %s", w.Name, change(dl)))
	}
	t.ev = append(t.ev, evidence(dd.Device, dl, w.Name))
	return false
}

// byCounter keeps one T per device and counter, in the order first seen.
type byCounter[T any] struct {
	m     map[[2]string]*T
	order []*T
}

// get is the T of the device's counter, made by mk on first sight.
func (b *byCounter[T]) get(d Device, counter string, mk func(counterTotal) *T) *T {
	key := [2]string{d.Name, counter}
	if t, ok := b.m[key]; ok {
		return t
	}
	if b.m == nil {
		b.m = map[[2]string]*T{}
	}
	t := mk(counterTotal{dev: d, counter: counter})
	b.m[key] = t
	b.order = append(b.order, t)
	return t
}

// inOrder is every T, in the order first seen.
func (b *byCounter[T]) inOrder() []*T { return b.order }

// judgeUnmeasured reports, once per link, traffic no counter watched.
func judgeUnmeasured(s *Series) []result.Result {
	type seen struct {
		windows []string
		bytes   float64
	}
	links := map[Link]*seen{}
	var order []Link
	for _, w := range s.Windows {
		for _, t := range w.Unmeasured {
			x := links[t.Link]
			if x == nil {
				x = &seen{}
				links[t.Link] = x
				order = append(order, t.Link)
			}
			x.windows = append(x.windows, fmt.Sprintf("%d", w.Index+1))
			x.bytes += float64(t.Bytes)
		}
	}
	var out []result.Result
	for _, l := range order {
		x := links[l]
		why := "no device on it had its counters read"
		if l.Kind == NVLink {
			why = "its NVLink counters were not read at both ends of the window (no GPU reading, or the driver gave none for this link)"
		}
		out = append(out, res(IDUnmeasured, result.Unknown, l.String(), "NotMeasured",
			fmt.Sprintf("%s carried %s in window(s) %s, but %s: errors on it are not known", l, bytesText(x.bytes), strings.Join(x.windows, ", "), why), ""))
	}
	return out
}

// judgeBefore reports what counted before the workload, one result per
// device and baseline interval.
func judgeBefore(s *Series) []result.Result {
	type group struct {
		dev     Device
		between string
		items   []string
		ev      []result.Evidence
	}
	groups := map[[2]string]*group{}
	var order [][2]string
	for _, m := range s.Before {
		key := [2]string{m.Device.Name, m.Between}
		g := groups[key]
		if g == nil {
			g = &group{dev: m.Device, between: m.Between}
			groups[key] = g
			order = append(order, key)
		}
		if m.Between == "" {
			g.items = append(g.items, fmt.Sprintf("%s=%d", shortName(m.Delta.Counter), m.Delta.To))
		} else {
			g.items = append(g.items, change(m.Delta))
		}
		g.ev = append(g.ev, evidence(m.Device, m.Delta, "before the first window"))
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i][1] < order[j][1] })
	var out []result.Result
	for _, key := range order {
		g := groups[key]
		if g.between == "" {
			out = append(out, res(IDBefore, result.Skip, g.dev.Name, "CountedBeforeBurn",
				fmt.Sprintf("%s: %s before the first window (since boot or since the counters were last cleared): not judged; the burn-in judges only what changes from here", g.dev.Label, strings.Join(g.items, ", ")),
				"", limit(g.ev)...))
			continue
		}
		out = append(out, res(IDBefore, result.Skip, g.dev.Name, "MovedBeforeBurn",
			fmt.Sprintf("%s: %s between %s, before the workload (link training, another job): not judged", g.dev.Label, strings.Join(g.items, ", "), g.between),
			"", limit(g.ev)...))
	}
	return out
}
