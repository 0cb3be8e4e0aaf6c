package burn

import (
	"os"
	"strings"
	"testing"
	"time"

	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// opticsModule is the real QSFP-DD module's diagnostics, cooled to 55 °C
// (below its 70 °C warning threshold) unless a test says otherwise.
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
	return d
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
