package burn

import (
	"fmt"
	"math"
	"strings"

	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// IDOptics is the verdict on each RDMA NIC's temperature and on the
// optical module in each of its ports, at every window's end.
const IDOptics = "burn.optics"

// RxDropDB is how far (dB) a lane's received optical power may fall from
// its reading before the workload to a window's end before it warns. Our
// choice, not a standard's: SFF-8636 and CMIS give received power to ±3 dB
// absolute accuracy, but one module's reading against itself over a
// burn-in is far steadier than that, and 2 dB (the power down to 63%) is
// a large share of a short-reach link's margin — IEEE 802.3 budgets a
// 400GBASE-DR4 channel at 3 dB of insertion loss — so a fall
// of that size under load points at a connector, a fibre or a laser going
// bad before the module's own thresholds do.
const RxDropDB = 2.0

// NICTempMargin is how close (°C) to its critical threshold (mlx5's
// tempN_crit, the firmware's high threshold for the sensor) a NIC sensor
// may read before it warns: our choice, as the driver gives no warning
// level of its own.
const NICTempMargin = 10.0

// JudgeOptics judges, at every window's end, each RDMA NIC's hwmon
// temperatures and each port's module diagnostics, against the module's
// (or the sensor's) own thresholds:
//
//   - a module temperature at or above its high-warning threshold warns,
//     at or above its high-alarm threshold fails; a NIC sensor at or above
//     its critical threshold fails, within NICTempMargin of it warns;
//   - a lane's received power below the module's low-warning threshold
//     warns, below its low-alarm threshold fails; a fall of more than
//     RxDropDB from the reading before the workload warns;
//   - the module's own flags (judgeFlags): an alarm, a loss of signal or
//     a Tx fault raised during a window fails, a warning or a loss of
//     lock warns, naming the flag, the lane and the window; flags On
//     before the workload are burn.before (skip), not judged;
//   - what could not be read (no netdev, no hwmon, the command failed, no
//     thresholds to judge against, no flags printed) is unknown, never a
//     pass; a module that has no diagnostics at all (a passive copper
//     cable) is skip.
//
// before are the samples taken before the workload (the last is the
// reference for received power), after those at each window's end. h
// names the NICs that must have been read; a NIC the samples do not hold
// at all (samples written before the burn-in read optics) is unknown.
func JudgeOptics(h *topology.Host, s Schedule, before, after []*cf.Sample) []result.Result {
	if h == nil || len(h.NICs) == 0 {
		return nil
	}
	n := min(len(after), len(s.Windows))
	var out []result.Result
	for _, nic := range h.NICs {
		out = append(out, judgeNICTemps(nic.Name, s, after[:n])...)
		for _, p := range nic.Ports {
			out = append(out, judgeModule(nic.Name, p.Number, p.NetDev, s, after[:n], before)...)
		}
	}
	return out
}

// nicOf is the sample's reading of a NIC, nil when it has none.
func nicOf(sm *cf.Sample, dev string) *cf.NIC {
	if sm == nil {
		return nil
	}
	for i := range sm.NICs {
		if sm.NICs[i].Device == dev {
			return &sm.NICs[i]
		}
	}
	return nil
}

// moduleOf is the sample's reading of a port's module, nil when none.
func moduleOf(sm *cf.Sample, dev string, port int) *cf.Module {
	nr := nicOf(sm, dev)
	if nr == nil {
		return nil
	}
	for i := range nr.Modules {
		if nr.Modules[i].Port == port {
			return &nr.Modules[i]
		}
	}
	return nil
}

// finding is one thing a window showed.
type finding struct {
	status result.Status
	reason string
	text   string
}

// worst is the result of findings: the worst status and its first reason.
func worst(fs []finding) (result.Status, string) {
	rank := map[result.Status]int{result.Fail: 3, result.Warn: 2, result.Unknown: 1}
	st, reason := result.Pass, ""
	for _, f := range fs {
		if rank[f.status] > rank[st] {
			st, reason = f.status, f.reason
		}
	}
	return st, reason
}

// texts are the findings' texts of one status, in order.
func texts(fs []finding, st result.Status) []string {
	var out []string
	for _, f := range fs {
		if f.status == st {
			out = append(out, f.text)
		}
	}
	return out
}

func judgeNICTemps(dev string, s Schedule, after []*cf.Sample) []result.Result {
	// Sensors in the order first seen; per sensor its findings and peak.
	type state struct {
		fs       []finding
		peak     float64
		peakIn   string
		read     int
		crit     float64
		label    string
		unreadIn []string
		noCritIn []string
	}
	per := map[string]*state{}
	var order []string
	var unread []string         // windows with no sensor reading at all, and why
	seen := map[string][]bool{} // per sensor, per window: listed
	for i, sm := range after {
		name := s.Name(i)
		nr := nicOf(sm, dev)
		switch {
		case nr == nil:
			unread = append(unread, name+": NIC not in the sample")
			continue
		case len(nr.Sensors) == 0:
			unread = append(unread, name+": "+cmpOr(nr.SensorsMissing, "no temperature sensor"))
			continue
		}
		for _, ts := range nr.Sensors {
			st := per[ts.Name]
			if st == nil {
				st = &state{peak: math.Inf(-1), label: ts.Label}
				per[ts.Name] = st
				order = append(order, ts.Name)
				seen[ts.Name] = make([]bool, len(after))
			}
			seen[ts.Name][i] = true
			if ts.TempC == nil {
				_, ch, _ := strings.Cut(ts.Name, "/")
				st.unreadIn = append(st.unreadIn, fmt.Sprintf("%s: %s", name, cmpOr(ts.Missing[ch+"_input"], "not read")))
				continue
			}
			st.read++
			t := *ts.TempC
			if t > st.peak {
				st.peak, st.peakIn = t, name
			}
			if ts.CritC == nil {
				st.noCritIn = append(st.noCritIn, name)
				continue
			}
			st.crit = *ts.CritC
			switch {
			case t >= *ts.CritC:
				st.fs = append(st.fs, finding{result.Fail, "NICTempCritical", fmt.Sprintf("%s: %.1f °C, at or above its critical threshold %.1f °C", name, t, *ts.CritC)})
			case t >= *ts.CritC-NICTempMargin:
				st.fs = append(st.fs, finding{result.Warn, "NICTempNearCritical", fmt.Sprintf("%s: %.1f °C, within %.0f °C of its critical threshold %.1f °C", name, t, NICTempMargin, *ts.CritC)})
			}
		}
	}
	// A sensor another window listed and this one did not (its hwmon
	// device went away with a driver reload) was not read there.
	for _, name := range order {
		for i, ok := range seen[name] {
			if !ok && nicOf(after[i], dev) != nil && len(nicOf(after[i], dev).Sensors) > 0 {
				per[name].unreadIn = append(per[name].unreadIn, s.Name(i)+": sensor not listed")
			}
		}
	}
	var out []result.Result
	if len(order) == 0 {
		why := "no window's end had a reading"
		if len(unread) > 0 {
			why = strings.Join(byReason(unread), "; ")
		}
		return []result.Result{{ID: IDOptics, Source: Source, Subject: dev, Status: result.Unknown, Reason: "NICTempUnread",
			Message: "the NIC's temperature was not read: " + why,
			Remedy:  "mlx5 exposes its temperatures through hwmon from Linux 6.6 (/sys/class/infiniband/DEV/device/hwmon); on older kernels read them with the vendor's tools (mget_temp -d DEV)"}}
	}
	for _, name := range order {
		st := per[name]
		subj := dev + " " + name
		if st.label != "" {
			subj += " (" + st.label + ")"
		}
		r := result.Result{ID: IDOptics, Source: Source, Subject: subj}
		status, reason := worst(st.fs)
		peak := fmt.Sprintf("highest %.1f °C (%s) over %d window end(s)", st.peak, st.peakIn, st.read)
		switch {
		case status == result.Fail || status == result.Warn:
			r.Status, r.Reason = status, reason
			r.Message = strings.Join(compact(append(texts(st.fs, result.Fail), texts(st.fs, result.Warn)...)), "; ") + "; " + peak
			r.Remedy = "a NIC this hot under load lacks airflow (a blocked or failed fan, a missing blank, a heat sink off its ASIC) and will throttle or shut its ports: check the chassis airflow and the NIC's heat sink"
		case len(unread) > 0 || len(st.unreadIn) > 0:
			r.Status, r.Reason = result.Unknown, "NICTempUnread"
			r.Message = "temperature not read in " + strings.Join(byReason(append(unread, st.unreadIn...)), "; ") + "; " + peak
		case len(st.noCritIn) > 0:
			r.Status, r.Reason = result.Unknown, "NoThreshold"
			r.Message = "the driver gives no critical threshold to judge against (" + strings.Join(compact(st.noCritIn), ", ") + "); " + peak
		default:
			r.Status, r.Reason = result.Pass, "NICTempBelowCritical"
			r.Message = fmt.Sprintf("more than %.0f °C below its critical threshold %.1f °C at every window's end; %s", NICTempMargin, st.crit, peak)
		}
		out = append(out, r)
	}
	return out
}

// judgeModule is the module's verdict and, when its own flags were On
// before the workload, their burn.before report.
func judgeModule(dev string, port int, netdev string, s Schedule, after, before []*cf.Sample) []result.Result {
	subj := (&cf.Module{Port: port, Netdev: netdev}).Key(dev)
	var fs []finding
	var unread, noDDM []string
	var ref *cf.Sample
	if len(before) > 0 {
		ref = before[len(before)-1]
	}
	var refM *cf.Module
	if m := moduleOf(ref, dev, port); m != nil && m.DDM.Monitored() {
		refM = m
	}
	lit := func(l cf.Lane) bool { // a lane the link uses
		if refM != nil {
			for _, rl := range refM.DDM.Lanes {
				if rl.Lane == l.Lane {
					return !rl.Dark()
				}
			}
		}
		return !l.Dark()
	}
	var peak = math.Inf(-1)
	var peakIn, ident string
	judged := 0
	// What the module cannot be judged against is said once, at the first
	// window that showed it.
	said := map[string]bool{}
	once := func(kind string, f finding) {
		if !said[kind] {
			said[kind] = true
			fs = append(fs, f)
		}
	}
	for i, sm := range after {
		name := s.Name(i)
		m := moduleOf(sm, dev, port)
		switch {
		case m == nil:
			unread = append(unread, name+": port not in the sample")
			continue
		case m.DDM != nil && !m.DDM.Monitored():
			noDDM = append(noDDM, name)
			ident = moduleName(m.DDM)
			continue
		case m.DDM == nil:
			unread = append(unread, name+": "+cmpOr(m.Missing, "not read"))
			continue
		}
		if netdev == "" && m.Netdev != "" {
			subj = m.Key(dev)
		}
		judged++
		d := m.DDM
		ident = moduleName(d)
		// Temperature against the module's own thresholds.
		switch {
		case d.TempC == nil:
			fs = append(fs, finding{result.Unknown, "ModuleTempUnread", name + ": no module temperature"})
		case d.Temp == nil || d.Temp.HighWarn == nil && d.Temp.HighAlarm == nil:
			once("temp", finding{result.Unknown, "NoThreshold", fmt.Sprintf("%s: module at %.2f °C prints no temperature thresholds", name, *d.TempC)})
		default:
			t := *d.TempC
			if t > peak {
				peak, peakIn = t, name
			}
			switch {
			case d.Temp.HighAlarm != nil && t >= *d.Temp.HighAlarm:
				fs = append(fs, finding{result.Fail, "ModuleTempAlarm", fmt.Sprintf("%s: module at %.2f °C, at or above its high-alarm threshold %.2f °C", name, t, *d.Temp.HighAlarm)})
			case d.Temp.HighWarn != nil && t >= *d.Temp.HighWarn:
				fs = append(fs, finding{result.Warn, "ModuleTempWarning", fmt.Sprintf("%s: module at %.2f °C, at or above its high-warning threshold %.2f °C", name, t, *d.Temp.HighWarn)})
			}
		}
		// Received power per lane in use.
		for _, l := range d.Lanes {
			if !lit(l) {
				continue
			}
			lane := fmt.Sprintf("%s: lane %d", name, l.Lane)
			if l.RxMW == nil {
				fs = append(fs, finding{result.Unknown, "RxPowerUnread", lane + ": no received power"})
				continue
			}
			rx := *l.RxMW
			lim := d.RxPower
			switch {
			case lim == nil || lim.LowWarn == nil && lim.LowAlarm == nil:
				once("rx", finding{result.Unknown, "NoThreshold", fmt.Sprintf("%s: Rx power %s, the module prints no receive-power thresholds", lane, power(rx))})
			case lim.LowAlarm != nil && rx < *lim.LowAlarm:
				fs = append(fs, finding{result.Fail, "RxPowerAlarm", fmt.Sprintf("%s: Rx power %s, below the module's low-alarm threshold %s", lane, power(rx), power(*lim.LowAlarm))})
			case lim.LowWarn != nil && rx < *lim.LowWarn:
				fs = append(fs, finding{result.Warn, "RxPowerWarning", fmt.Sprintf("%s: Rx power %s, below the module's low-warning threshold %s", lane, power(rx), power(*lim.LowWarn))})
			}
			if refM == nil {
				continue
			}
			for _, rl := range refM.DDM.Lanes {
				if rl.Lane != l.Lane || rl.RxMW == nil || *rl.RxMW <= 0 {
					continue
				}
				if drop := cf.DBm(*rl.RxMW) - cf.DBm(rx); drop > RxDropDB {
					fs = append(fs, finding{result.Warn, "RxPowerDrop", fmt.Sprintf("%s: Rx power fell %.1f dB, from %s before the workload to %s (more than %.0f dB)", lane, drop, power(*rl.RxMW), power(rx), RxDropDB)})
				}
			}
		}
	}
	// The module's own flags (a lane dark before the workload is not
	// judged, as for its power).
	dark := func(lane int) bool {
		if refM == nil {
			return false
		}
		for _, rl := range refM.DDM.Lanes {
			if rl.Lane == lane {
				return rl.Dark()
			}
		}
		return false
	}
	fj := judgeFlags(subj, dev, port, s, after, before, dark)
	if judged > 0 {
		fs = append(fs, fj.findings...)
	}
	r := result.Result{ID: IDOptics, Source: Source, Subject: subj}
	status, reason := worst(fs)
	if len(fj.carried) > 0 {
		ident = "; On since before the workload, not judged (burn.before): " + strings.Join(fj.carried, ", ") + "; module " + ident
	} else if ident != "" {
		ident = "; module " + ident
	}
	flagsRaised := false
	for _, f := range fj.findings {
		flagsRaised = flagsRaised || f.status == result.Fail || f.status == result.Warn
	}
	switch {
	case status == result.Fail || status == result.Warn:
		r.Status, r.Reason = status, reason
		r.Message = strings.Join(compact(append(texts(fs, result.Fail), texts(fs, result.Warn)...)), "; ") + ident
		r.Remedy = "a module running hot lacks airflow or is failing; received power low or falling is a dirty or damaged connector, a bent or cracked fibre, or the far end's laser fading: clean and reseat both ends, then swap the module or cable; the module's own thresholds are in ethtool -m"
		if flagsRaised {
			r.Remedy += "; a flag the module raised (an alarm, a loss of signal, a Tx fault) is its own detection of the fault: check the far end and the cable, clean and reseat, then swap the module, reading ethtool -m after each step (its flags latch until read)"
		}
	case len(unread) > 0:
		r.Status, r.Reason = result.Unknown, "OpticsUnread"
		r.Message = "module diagnostics not read: " + strings.Join(byReason(unread), "; ") + ident
		r.Remedy = "ethtool -m needs a network interface on the port and a driver that reads the module; on InfiniBand ports without IPoIB read the module with mlxlink -d DEV -m or from the switch"
	case status == result.Unknown:
		r.Status, r.Reason = status, reason
		r.Message = strings.Join(compact(texts(fs, result.Unknown)), "; ") + ident
	case judged == 0 && len(noDDM) > 0:
		r.Status, r.Reason = result.Skip, "NoDiagnostics"
		r.Message = "the module prints no diagnostics (a passive copper cable, or DDM not implemented): nothing to judge" + ident
	case judged == 0:
		r.Status, r.Reason = result.Unknown, "OpticsUnread"
		r.Message = "no window's end read the module" + ident
	case len(noDDM) > 0:
		r.Status, r.Reason = result.Unknown, "OpticsUnread"
		r.Message = "no diagnostics in " + strings.Join(compact(noDDM), ", ") + ident
	default:
		r.Status, r.Reason = result.Pass, "OpticsWithinThresholds"
		flags := fmt.Sprintf("up to %d flags read at each", fj.most)
		if fj.cmisLanes {
			flags += "; ethtool's CMIS per-lane alarm and warning lines do not show every lane's bit, so a lane's alarm may go unseen"
		}
		r.Message = fmt.Sprintf("module temperature below its high-warning threshold (highest %.2f °C, %s), received power above its low-warning threshold on every lane in use, none falling more than %.0f dB, and none of the module's own flags (alarms, warnings, loss of signal or lock, faults) raised, at %d window end(s) (%s)%s", peak, peakIn, RxDropDB, judged, flags, ident)
	}
	out := []result.Result{r}
	if fj.before != nil {
		out = append(out, *fj.before)
	}
	return out
}

// byReason groups "WINDOW: REASON" entries by their reason, in order:
// "window 1 (...), window 2 (...): REASON".
func byReason(entries []string) []string {
	var reasons []string
	wins := map[string][]string{}
	for _, e := range entries {
		w, why, ok := strings.Cut(e, "): ")
		if !ok {
			reasons = append(reasons, e)
			continue
		}
		if _, seen := wins[why]; !seen {
			reasons = append(reasons, why)
		}
		wins[why] = append(wins[why], w+")")
	}
	out := make([]string, 0, len(reasons))
	for _, r := range reasons {
		if ws, ok := wins[r]; ok {
			out = append(out, strings.Join(compact(ws), ", ")+": "+r)
			continue
		}
		out = append(out, r)
	}
	return out
}

// moduleName is the module as messages show it: vendor, part number and
// identifier.
func moduleName(d *cf.DDM) string {
	return strings.TrimSpace(strings.TrimSpace(d.Vendor+" "+d.PN) + " " + d.Identifier)
}

// power shows a power in mW as "-6.90 dBm (0.2042 mW)".
func power(mw float64) string {
	if mw <= 0 {
		return "no light (0 mW)"
	}
	return fmt.Sprintf("%.2f dBm (%.4f mW)", cf.DBm(mw), mw)
}

// cmpOr is s, or def when s is "".
func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
