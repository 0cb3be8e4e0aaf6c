package burn

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// opticsModule is the real QSFP-DD module's diagnostics, cooled to 55 °C
// (below its 70 °C warning threshold, so its temperature warning flag,
// On in the real output at 70.49 °C, is Off) unless a test says
// otherwise.
func opticsModule(t *testing.T) *cf.DDM {
	t.Helper()
	b, err := os.ReadFile("testdata/optics/qsfpdd-cmis-arista-qdd-400g-xdr4.txt")
	if err != nil {
		t.Fatal(err)
	}
	d, err := cf.ParseEthtoolModule("qsfpdd", string(b))
	if err != nil {
		t.Fatal(err)
	}
	d.TempC = new(55.0)
	setFlag(d, "Module temperature high warning", 0, false)
	return d
}

// setFlag sets a flag of d, as ethtool would print it: a lane-status
// line printed "None" becomes one entry a lane of the module.
func setFlag(d *cf.DDM, name string, lane int, on bool) {
	for i, f := range d.Flags {
		if f.Name == name && f.Lane == lane {
			d.Flags[i].On = on
			return
		}
	}
	var out []cf.Flag
	for _, f := range d.Flags {
		if f.Name == name && f.Lane == 0 {
			for l := range d.Lanes {
				out = append(out, cf.Flag{Name: name, Lane: l + 1, On: on && l+1 == lane})
			}
			continue
		}
		out = append(out, f)
	}
	d.Flags = out
}

func opticsHost(noNetdev bool) *topology.Host {
	if noNetdev {
		return &topology.Host{NICs: []*topology.NIC{{Name: "mlx5_0", Ports: []topology.Port{{Number: 1}}}}}
	}
	return &topology.Host{NICs: []*topology.NIC{{Name: "mlx5_0", Ports: []topology.Port{{Number: 1, NetDev: "eth2"}}}}}
}

func opticsSample(d *cf.DDM, asic float64) *cf.Sample {
	return &cf.Sample{NICs: []cf.NIC{{Device: "mlx5_0",
		Sensors: []cf.TempSensor{{Name: "hwmon2/temp1", Label: "asic", TempC: new(asic), CritC: new(105.0)}},
		Modules: []cf.Module{{Port: 1, Netdev: "eth2", DDM: d}}}}}
}

// clone copies a DDM deeply enough to change its monitors.
func clone(d *cf.DDM) *cf.DDM {
	c := *d
	c.Lanes = nil
	for _, l := range d.Lanes {
		x := l
		if l.RxMW != nil {
			x.RxMW = new(*l.RxMW)
		}
		c.Lanes = append(c.Lanes, x)
	}
	if d.TempC != nil {
		c.TempC = new(*d.TempC)
	}
	c.Flags = append([]cf.Flag(nil), d.Flags...)
	return &c
}

func TestJudgeOptics(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	var sched Schedule
	for i := range 3 {
		sched.Windows = append(sched.Windows, Window{Start: t0.Add(time.Duration(i) * time.Minute), End: t0.Add(time.Duration(i+1) * time.Minute)})
	}
	base := opticsModule(t)
	type want struct {
		subject string
		status  result.Status
		reason  string
		has     []string
	}
	mod := "mlx5_0/1 (eth2)"
	asic := "mlx5_0 hwmon2/temp1 (asic)"
	for _, tc := range []struct {
		name     string
		noNetdev bool                   // the port has no network interface (InfiniBand)
		plant    func(w int, d *cf.DDM) // w: window index
		asic     func(w int) float64
		drop     func(before, after []*cf.Sample) ([]*cf.Sample, []*cf.Sample)
		want     []want
	}{
		{name: "clean", want: []want{
			{mod, result.Pass, "OpticsWithinThresholds", []string{"highest 55.00 °C", "at 3 window end(s)"}},
			{asic, result.Pass, "NICTempBelowCritical", []string{"highest 61.0 °C"}},
		}},
		{name: "rx below warning in window 2, hot module in window 3", plant: func(w int, d *cf.DDM) {
			if w == 1 {
				*d.Lanes[2].RxMW = 0.15 // -8.24 dBm: under the -6.90 dBm warning, above the -8.90 dBm alarm
			}
			if w == 2 {
				*d.TempC = 72.5
			}
		}, want: []want{{mod, result.Warn, "RxPowerWarning", []string{
			"window 2 (12:01:00–12:02:00): lane 3: Rx power -8.24 dBm (0.1500 mW), below the module's low-warning threshold -6.90 dBm (0.2042 mW)",
			"window 2 (12:01:00–12:02:00): lane 3: Rx power fell 10.9 dB, from 2.65 dBm (1.8427 mW) before the workload to -8.24 dBm",
			"window 3 (12:02:00–12:03:00): module at 72.50 °C, at or above its high-warning threshold 70.00 °C",
		}}}},
		{name: "rx below alarm fails", plant: func(w int, d *cf.DDM) {
			if w == 2 {
				*d.Lanes[0].RxMW = 0.1
			}
		}, want: []want{{mod, result.Fail, "RxPowerAlarm", []string{"window 3 (12:02:00–12:03:00): lane 1: Rx power -10.00 dBm (0.1000 mW), below the module's low-alarm threshold -8.90 dBm (0.1288 mW)"}}}},
		{name: "module at its alarm threshold fails", plant: func(w int, d *cf.DDM) {
			if w == 0 {
				*d.TempC = 75
			}
		}, want: []want{{mod, result.Fail, "ModuleTempAlarm", []string{"window 1 (12:00:00–12:01:00): module at 75.00 °C, at or above its high-alarm threshold 75.00 °C"}}}},
		{name: "module at its warning threshold warns", plant: func(w int, d *cf.DDM) {
			if w == 1 {
				*d.TempC = 70
			}
		}, want: []want{{mod, result.Warn, "ModuleTempWarning", []string{"window 2"}}}},
		{name: "a fall of 2.5 dB above thresholds warns", plant: func(w int, d *cf.DDM) {
			if w == 2 {
				*d.Lanes[1].RxMW = 1.0477 // 2.70 dBm -> 0.20 dBm
			}
		}, want: []want{{mod, result.Warn, "RxPowerDrop", []string{"window 3 (12:02:00–12:03:00): lane 2: Rx power fell 2.5 dB, from 2.70 dBm (1.8629 mW) before the workload to 0.20 dBm (1.0477 mW)"}}}},
		{name: "a fall of 1.5 dB passes", plant: func(w int, d *cf.DDM) {
			if w == 2 {
				*d.Lanes[1].RxMW = 1.3188 // 2.70 dBm -> 1.20 dBm
			}
		}, want: []want{{mod, result.Pass, "OpticsWithinThresholds", nil}}},
		{name: "no thresholds is unknown", plant: func(w int, d *cf.DDM) {
			d.Temp, d.RxPower = nil, nil
		}, want: []want{{mod, result.Unknown, "NoThreshold", []string{"prints no temperature thresholds"}}}},
		{name: "module unread in window 2 is unknown", drop: func(before, after []*cf.Sample) ([]*cf.Sample, []*cf.Sample) {
			after[1].NICs[0].Modules[0] = cf.Module{Port: 1, Netdev: "eth2", Missing: "ethtool -m eth2: exit status 1: netlink error: Input/output error"}
			return before, after
		}, want: []want{{mod, result.Unknown, "OpticsUnread", []string{"window 2 (12:01:00–12:02:00): ethtool -m eth2: exit status 1"}}}},
		{name: "no netdev is unknown", noNetdev: true, drop: func(before, after []*cf.Sample) ([]*cf.Sample, []*cf.Sample) {
			for _, s := range append(before, after...) {
				s.NICs[0].Modules[0] = cf.Module{Port: 1, Missing: "no network interface on the port (InfiniBand without IPoIB): ethtool -m needs one"}
			}
			return before, after
		}, want: []want{{"mlx5_0/1", result.Unknown, "OpticsUnread", []string{"InfiniBand without IPoIB"}}}},
		{name: "passive copper is skip", drop: func(before, after []*cf.Sample) ([]*cf.Sample, []*cf.Sample) {
			for _, s := range append(before, after...) {
				s.NICs[0].Modules[0].DDM = &cf.DDM{Identifier: "0x11 (QSFP28)", Layout: cf.LayoutSFF8636}
			}
			return before, after
		}, want: []want{{mod, result.Skip, "NoDiagnostics", []string{"0x11 (QSFP28)"}}}},
		{name: "samples without optics (an old burn-in) are unknown", drop: func(before, after []*cf.Sample) ([]*cf.Sample, []*cf.Sample) {
			for _, s := range append(before, after...) {
				s.NICs = nil
			}
			return before, after
		}, want: []want{{mod, result.Unknown, "OpticsUnread", []string{"port not in the sample"}}, {"mlx5_0", result.Unknown, "NICTempUnread", nil}}},
		{name: "NIC at its critical temperature fails", asic: func(w int) float64 { return []float64{80, 96, 105}[w] },
			want: []want{{asic, result.Fail, "NICTempCritical", []string{
				"window 3 (12:02:00–12:03:00): 105.0 °C, at or above its critical threshold 105.0 °C",
				"window 2 (12:01:00–12:02:00): 96.0 °C, within 10 °C of its critical threshold 105.0 °C"}}}},
		{name: "a sensor gone in window 2 is unknown", drop: func(before, after []*cf.Sample) ([]*cf.Sample, []*cf.Sample) {
			after[1].NICs[0].Sensors = append(after[1].NICs[0].Sensors, cf.TempSensor{Name: "hwmon2/temp2", Label: "sensor64", TempC: new(40.0), CritC: new(75.0)})
			after[1].NICs[0].Sensors = after[1].NICs[0].Sensors[1:]
			return before, after
		}, want: []want{
			{asic, result.Unknown, "NICTempUnread", []string{"window 2 (12:01:00–12:02:00): sensor not listed"}},
			{"mlx5_0 hwmon2/temp2 (sensor64)", result.Unknown, "NICTempUnread", []string{"window 1 (12:00:00–12:01:00), window 3 (12:02:00–12:03:00): sensor not listed"}},
		}},
		{name: "a temperature unreadable in window 3 is unknown", drop: func(before, after []*cf.Sample) ([]*cf.Sample, []*cf.Sample) {
			after[2].NICs[0].Sensors[0].TempC = nil
			after[2].NICs[0].Sensors[0].Missing = map[string]string{"temp1_input": "read temp1_input: input/output error"}
			return before, after
		}, want: []want{{asic, result.Unknown, "NICTempUnread", []string{"window 3 (12:02:00–12:03:00): read temp1_input: input/output error"}}}},
		{name: "no hwmon is unknown", drop: func(before, after []*cf.Sample) ([]*cf.Sample, []*cf.Sample) {
			for _, s := range after {
				s.NICs[0].Sensors, s.NICs[0].SensorsMissing = nil, "not exposed: no hwmon device on the NIC's PCI function"
			}
			return before, after
		}, want: []want{{"mlx5_0", result.Unknown, "NICTempUnread", []string{"window 1 (12:00:00–12:01:00), window 2 (12:01:00–12:02:00), window 3 (12:02:00–12:03:00): not exposed: no hwmon device"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := []*cf.Sample{opticsSample(clone(base), 50), opticsSample(clone(base), 50)}
			var after []*cf.Sample
			for w := range 3 {
				d := clone(base)
				if tc.plant != nil {
					tc.plant(w, d)
				}
				a := 50.0 + float64(w)*5 + 1
				if tc.asic != nil {
					a = tc.asic(w)
				}
				after = append(after, opticsSample(d, a))
			}
			if tc.drop != nil {
				before, after = tc.drop(before, after)
			}
			got := map[string]result.Result{}
			for _, r := range JudgeOptics(opticsHost(tc.noNetdev), sched, before, after) {
				if r.ID != IDOptics || r.Source != Source {
					t.Errorf("result %+v", r)
				}
				got[r.Subject] = r
			}
			if testing.Verbose() {
				for _, r := range got {
					t.Logf("%s %s %s: %s", r.Status, r.Subject, r.Reason, r.Message)
				}
			}
			for _, w := range tc.want {
				r, ok := got[w.subject]
				if !ok {
					t.Fatalf("no result for %q in %v", w.subject, got)
				}
				if r.Status != w.status || r.Reason != w.reason {
					t.Errorf("%s: %s %s (%s), want %s %s", w.subject, r.Status, r.Reason, r.Message, w.status, w.reason)
				}
				for _, s := range w.has {
					if !strings.Contains(r.Message, s) {
						t.Errorf("%s: message %q lacks %q", w.subject, r.Message, s)
					}
				}
			}
		})
	}
}

// Dark lanes (the QSFP-DD's lanes 5–8, unused by 400G-DR4) are not judged:
// their 0 mW is no light by design, not a lost signal.
func TestJudgeOpticsDarkLanes(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	sched := Schedule{Windows: []Window{{Start: t0, End: t0.Add(time.Minute)}}}
	d := opticsModule(t)
	if !d.Lanes[4].Dark() || d.Lanes[3].Dark() {
		t.Fatalf("fixture lanes: %+v", d.Lanes)
	}
	rs := JudgeOptics(opticsHost(false), sched, []*cf.Sample{opticsSample(d, 50)}, []*cf.Sample{opticsSample(d, 50)})
	for _, r := range rs {
		if r.Subject == "mlx5_0/1 (eth2)" && r.Status != result.Pass {
			t.Errorf("%+v", r)
		}
	}
	// A lane lit before the workload and dark at a window's end is judged:
	// no light fails.
	dark := clone(d)
	*dark.Lanes[0].RxMW = 0
	zero := 0.0
	dark.Lanes[0].BiasMA, dark.Lanes[0].TxMW = &zero, &zero
	rs = JudgeOptics(opticsHost(false), sched, []*cf.Sample{opticsSample(d, 50)}, []*cf.Sample{opticsSample(dark, 50)})
	for _, r := range rs {
		if r.Subject == "mlx5_0/1 (eth2)" && (r.Status != result.Fail || !strings.Contains(r.Message, "lane 1: Rx power no light (0 mW)")) {
			t.Errorf("%+v", r)
		}
	}
}

// TestJudgeOpticsFlags plants the module's own flags on the real QSFP-DD
// output (CMIS) and the real SFP output (SFF-8472): a flag raised during a
// window fails (an alarm, a loss of signal, a Tx fault) or warns (a
// warning, a loss of lock), named with its lane and window; one On before
// the workload is burn.before, not judged, until a read shows it cleared;
// flags not printed are unknown, never a pass.
func TestJudgeOpticsFlags(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	var sched Schedule
	for i := range 3 {
		sched.Windows = append(sched.Windows, Window{Start: t0.Add(time.Duration(i) * time.Minute), End: t0.Add(time.Duration(i+1) * time.Minute)})
	}
	b, err := os.ReadFile("../facts/counters/testdata/ethtool-m/sfp-sff8472-10g-sr.txt")
	if err != nil {
		t.Fatal(err)
	}
	sfp, err := cf.ParseEthtoolModule("sfp", string(b))
	if err != nil {
		t.Fatal(err)
	}
	const mod = "mlx5_0/1 (eth2)"
	const w1, w2, w3 = "window 1 (12:00:00–12:01:00)", "window 2 (12:01:00–12:02:00)", "window 3 (12:02:00–12:03:00)"
	type plantFn func(i int, d *cf.DDM) // i: 0, 1 the samples before the workload, 2.. the window ends
	for _, tc := range []struct {
		name   string
		base   *cf.DDM // nil: the QSFP-DD
		plant  plantFn
		drop   func(after []*cf.Sample)
		status result.Status
		reason string
		has    []string
		lacks  []string
		before []string // burn.before's message holds these; nil: no burn.before result
		// dropBefore: the second sample before the workload did not read
		// the module
		dropBefore bool
	}{
		{name: "clean", status: result.Pass, reason: "OpticsWithinThresholds",
			has: []string{"none of the module's own flags (alarms, warnings, loss of signal or lock, faults) raised, at 3 window end(s) (up to 109 flags read at each; ethtool's CMIS per-lane alarm and warning lines do not show every lane's bit"}},
		{name: "Rx power low alarm on a CMIS lane line in window 2", plant: func(i int, d *cf.DDM) {
			if i == 3 {
				setFlag(d, "Laser rx power low alarm", 5, true)
			}
		}, status: result.Fail, reason: "ModuleAlarm",
			has:   []string{w2 + ": a lane (ethtool's line for lane 5, which for CMIS shows lane(s) 3): Laser rx power low alarm raised during the window"},
			lacks: []string{w1, w3}},
		{name: "loss of signal on lane 2 in window 3", plant: func(i int, d *cf.DDM) {
			if i == 4 {
				setFlag(d, "Rx loss of signal", 2, true)
			}
		}, status: result.Fail, reason: "LossOfSignal", has: []string{w3 + ": lane 2: Rx loss of signal raised during the window"}},
		{name: "Tx fault on lane 4 in window 1", plant: func(i int, d *cf.DDM) {
			if i == 2 {
				setFlag(d, "Tx fault", 4, true)
			}
		}, status: result.Fail, reason: "TxFault", has: []string{w1 + ": lane 4: Tx fault raised during the window"}},
		{name: "temperature warning in window 1 warns", plant: func(i int, d *cf.DDM) {
			if i == 2 {
				setFlag(d, "Module temperature high warning", 0, true)
			}
		}, status: result.Warn, reason: "ModuleWarning", has: []string{w1 + ": Module temperature high warning raised during the window"}},
		{name: "loss of lock warns", plant: func(i int, d *cf.DDM) {
			if i == 3 {
				setFlag(d, "Rx loss of lock", 1, true)
			}
		}, status: result.Warn, reason: "LossOfLock", has: []string{w2 + ": lane 1: Rx loss of lock raised during the window"}},
		{name: "an alarm outranks a warning", plant: func(i int, d *cf.DDM) {
			if i == 2 {
				setFlag(d, "Module temperature high warning", 0, true)
			}
			if i == 4 {
				setFlag(d, "Module voltage low alarm", 0, true)
			}
		}, status: result.Fail, reason: "ModuleAlarm", has: []string{w3 + ": Module voltage low alarm raised", w1 + ": Module temperature high warning raised"}},
		{name: "On at the first sample before only (boot) is burn.before", plant: func(i int, d *cf.DDM) {
			if i == 0 {
				setFlag(d, "Rx loss of signal", 3, true)
			}
		}, status: result.Pass, reason: "OpticsWithinThresholds", before: []string{"Rx loss of signal (lane 3) (baseline-1)"}},
		{name: "On throughout is burn.before, not judged", plant: func(i int, d *cf.DDM) {
			setFlag(d, "Module temperature high warning", 0, true)
		}, status: result.Pass, reason: "OpticsWithinThresholds",
			has:    []string{"On since before the workload, not judged (burn.before): Module temperature high warning"},
			before: []string{"Module temperature high warning (baseline-1, baseline-2; still On at the end of " + w1 + ", " + w2 + ", " + w3 + ")"}},
		{name: "On before, cleared in window 2, raised again in window 3", plant: func(i int, d *cf.DDM) {
			if i != 3 {
				setFlag(d, "Laser bias current high alarm", 2, true)
			}
		}, status: result.Fail, reason: "ModuleAlarm",
			has: []string{w3 + ": a lane (ethtool's line for lane 2, which for CMIS shows lane(s) 1): Laser bias current high alarm raised"}, lacks: []string{w1 + ":", w2 + ":"},
			before: []string{"Laser bias current high alarm (lane 2) (baseline-1, baseline-2; still On at the end of " + w1 + ")"}},
		{name: "second sample before unread: On since the first is carried", plant: func(i int, d *cf.DDM) {
			if i != 1 {
				setFlag(d, "Module voltage high warning", 0, true)
			}
		}, dropBefore: true, status: result.Pass, reason: "OpticsWithinThresholds",
			before: []string{"Module voltage high warning (baseline-1; still On at the end of " + w1 + ", " + w2 + ", " + w3 + ")"}},
		{name: "second sample before unread: window 1's flag raised since the first", plant: func(i int, d *cf.DDM) {
			if i == 2 {
				setFlag(d, "Tx fault", 2, true)
			}
		}, dropBefore: true, status: result.Fail, reason: "TxFault",
			has: []string{w1 + ": lane 2: Tx fault raised since the module's flags were last read before the workload (baseline-1)"}},
		{name: "a dark lane's loss of signal is not judged", plant: func(i int, d *cf.DDM) {
			if i == 3 {
				setFlag(d, "Rx loss of signal", 6, true)
			}
		}, status: result.Pass, reason: "OpticsWithinThresholds"},
		{name: "window 2 unread: a flag at window 3 was raised since window 1's end", plant: func(i int, d *cf.DDM) {
			if i == 4 {
				setFlag(d, "Tx loss of signal", 1, true)
			}
		}, drop: func(after []*cf.Sample) {
			after[1].NICs[0].Modules[0] = cf.Module{Port: 1, Netdev: "eth2", Missing: "ethtool -m eth2: exit status 1"}
		}, status: result.Fail, reason: "LossOfSignal", has: []string{w3 + ": lane 1: Tx loss of signal raised since they were read at the end of " + w1}},
		{name: "no flags printed is unknown", plant: func(i int, d *cf.DDM) {
			d.Flags = nil
		}, status: result.Unknown, reason: "FlagsUnread",
			has: []string{"the module's own alarm, warning and status flags were not read: " + w1 + ", " + w2 + ", " + w3 + ": ethtool printed no alarm, warning or status flag"}},
		{name: "flags not implemented is unknown", plant: func(i int, d *cf.DDM) {
			d.Flags, d.FlagsImplemented = nil, new(false)
		}, status: result.Unknown, reason: "FlagsUnread", has: []string{"the module says its alarm and warning flags are not implemented"}},
		{name: "flags missing in window 2 only is unknown", plant: func(i int, d *cf.DDM) {
			if i == 3 {
				d.Flags = nil
			}
		}, status: result.Unknown, reason: "FlagsUnread", has: []string{"the module's own flags were not read in " + w2 + ": ethtool printed no alarm"}},
		{name: "SFF-8472: not latched, said so", base: sfp, plant: func(i int, d *cf.DDM) {
			if i == 3 {
				setFlag(d, "Laser rx power low alarm", 1, true)
			}
		}, status: result.Fail, reason: "ModuleAlarm",
			has:   []string{w2 + ": lane 1: Laser rx power low alarm raised at the window's end (SFF-8472 flags are not latched: the condition held at the reading)"},
			lacks: []string{"CMIS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			if base == nil {
				base = opticsModule(t)
			}
			var samples []*cf.Sample
			for i := range 5 {
				d := clone(base)
				if tc.base != nil {
					d.TempC = new(40.0)
				}
				if tc.plant != nil {
					tc.plant(i, d)
				}
				sm := opticsSample(d, 50)
				if i < 2 {
					sm.Label = fmt.Sprintf("baseline-%d", i+1)
				}
				samples = append(samples, sm)
			}
			before, after := samples[:2], samples[2:]
			if tc.drop != nil {
				tc.drop(after)
			}
			if tc.dropBefore {
				before[1].NICs[0].Modules[0] = cf.Module{Port: 1, Netdev: "eth2", Missing: "ethtool -m eth2: exit status 1"}
			}
			var r, bf *result.Result
			for _, x := range JudgeOptics(opticsHost(false), sched, before, after) {
				switch {
				case x.ID == IDOptics && x.Subject == mod:
					r = &x
				case x.ID == IDBefore:
					if x.Subject != mod || x.Status != result.Skip || x.Reason != "ModuleFlagsBefore" {
						t.Errorf("burn.before %+v", x)
					}
					bf = &x
				}
			}
			if r == nil {
				t.Fatal("no module result")
			}
			if testing.Verbose() {
				t.Logf("%s %s: %s", r.Status, r.Reason, r.Message)
				if bf != nil {
					t.Logf("before: %s", bf.Message)
				}
			}
			if r.Status != tc.status || r.Reason != tc.reason {
				t.Errorf("%s %s (%s), want %s %s", r.Status, r.Reason, r.Message, tc.status, tc.reason)
			}
			for _, h := range tc.has {
				if !strings.Contains(r.Message, h) {
					t.Errorf("message %q lacks %q", r.Message, h)
				}
			}
			for _, h := range tc.lacks {
				if strings.Contains(r.Message, h) {
					t.Errorf("message %q has %q", r.Message, h)
				}
			}
			switch {
			case tc.before == nil && bf != nil:
				t.Errorf("unexpected burn.before: %s", bf.Message)
			case tc.before != nil && bf == nil:
				t.Errorf("no burn.before, want %v", tc.before)
			case bf != nil:
				for _, h := range tc.before {
					if !strings.Contains(bf.Message, h) {
						t.Errorf("burn.before %q lacks %q", bf.Message, h)
					}
				}
			}
		})
	}
}
