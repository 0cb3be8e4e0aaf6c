package model

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Each kind of system lands in its evidence class, with the width its
// runs give it: narrow where many runs agree, wide (and saying so) where
// few or none exist.
func TestIntervalClasses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		p         Params
		size      float64
		class     string
		minW      float64
		maxW      float64
		basisPart string
	}{
		{"8×H100 NVLS", Params{GPU: "h100"}, 8 * gib, ClassNodeNVLS, 0.05, 0.05, "runs"},
		{"8×H100 ring", Params{GPU: "h100", NVLS: offp()}, 8 * gib, ClassNodeNVLink, 0.05, 0.05, "runs"},
		{"GB200 NVL72 rack", Params{GPU: "gb200", GPUsPerNode: 72}, 8 * gib, ClassDomainNVLS, 0.15, 0.15, "few runs (2)"},
		{"GB200 NVL72 two racks", Params{GPU: "gb200", GPUsPerNode: 72, Nodes: 2, NICsPerNode: 72, NICRateGbps: 400}, 16 * gib, ClassDomainNVLS, 0.15, 0.15, "few runs"},
		{"GB300 NVL72 rack", Params{GPU: "gb300", GPUsPerNode: 72}, 8 * gib, ClassDomainNVLS, 0.25, 0.25, "no public calibration for gb300"},
		{"GB200 NVL72, NVLS off", Params{GPU: "gb200", GPUsPerNode: 72, NVLS: offp()}, 8 * gib, ClassDomainNVLink, 0.25, 0.25, "no public calibration"},
		{"2×8 B200 NVLS-tree", Params{GPU: "b200", Nodes: 2, NICsPerNode: 8, NICRateGbps: 400}, 8 * gib, ClassNVLSTree, 0.05, 0.15, "4 runs"},
		{"4×8 H100 SHARP+NVLS", Params{GPU: "h100", Nodes: 4, NICsPerNode: 8, NICRateGbps: 400, SHARP: true}, 8 * gib, ClassNVLSSharp, 0.25, 0.25, "no public calibration"},
		{"8×8 H100 CollNet", Params{GPU: "h100", Nodes: 8, NICsPerNode: 8, NICRateGbps: 400, SHARP: true, NVLS: offp()}, 8 * gib, ClassCollNet, 0.15, 0.20, "few runs (1)"},
		{"10×8 H100 ring", Params{GPU: "h100", Nodes: 10, NICsPerNode: 8, NICRateGbps: 400}, 16 * gib, ClassNetwork, 0.05, 0.10, "runs"},
		{"1×H200", Params{GPU: "h200", GPUsPerNode: 1}, 8 * gib, ClassOneRank, 0.10, 0.15, "3 runs"},
	} {
		e, err := Expect(mustSystem(t, tc.p), collective.AllReduce, tc.size)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		iv := e.Interval
		if iv.Class != tc.class || iv.HalfWidth < tc.minW || iv.HalfWidth > tc.maxW || !strings.Contains(iv.Basis, tc.basisPart) {
			t.Errorf("%s: %s ±%.2f (%s), want %s ±%.2f–%.2f (%q)", tc.name, iv.Class, iv.HalfWidth, iv.Basis, tc.class, tc.minW, tc.maxW, tc.basisPart)
		}
		if !near(iv.LowBusBW, e.BusBW*(1-iv.HalfWidth), 1e-5) || !near(iv.HighBusBW, e.BusBW*(1+iv.HalfWidth), 1e-5) ||
			!near(iv.LowAlgBW, e.AlgBW*(1-iv.HalfWidth), 1e-5) {
			t.Errorf("%s: interval %g–%g busbw around %g ±%g", tc.name, iv.LowBusBW, iv.HighBusBW, e.BusBW, iv.HalfWidth)
		}
	}
}

// The hierarchical all-reduce, with no public run of the whole, takes its
// widest phase's class: the node's NVLink or PCIe one, and the network's.
func TestIntervalHierarchical(t *testing.T) {
	for _, tc := range []struct {
		p     Params
		w     float64
		basis string
	}{
		{Params{GPU: "h100", Nodes: 4, NICsPerNode: 8, NICRateGbps: 400}, 0.07, "one node, NVLink"},
		{Params{GPU: "l40s", GPUsPerNode: 4, Nodes: 2, NICsPerNode: 2, NICRateGbps: 400}, 0.15, "one node, PCIe ±15%"},
	} {
		ps, err := Predict(mustSystem(t, tc.p), collective.AllReduce, 8*gib)
		if err != nil {
			t.Fatal(err)
		}
		iv := algo(t, ps, AlgoHierarchical).Interval
		if iv.Class != ClassHierarchical || !near(iv.HalfWidth, tc.w, 1e-9) || !strings.Contains(iv.Basis, tc.basis) || iv.Runs != 0 {
			t.Errorf("%s: %+v, want ±%g (%q)", tc.p.GPU, iv, tc.w, tc.basis)
		}
	}
}

// Latency-bound and transition predictions carry no interval: the runs
// are peak figures, and those are judged loosely anyway.
func TestIntervalOnlyWhereStrict(t *testing.T) {
	ps, err := Predict(mustSystem(t, Params{GPU: "h100"}), collective.AllReduce, 8)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Interval != (Interval{}) {
			t.Errorf("%s at 8 B (%s): interval %+v", p.Algorithm, p.Regime, p.Interval)
		}
	}
}

// Widths follow the stated rule from a class's residuals.
func TestIntervalWidthRule(t *testing.T) {
	for _, tc := range []struct {
		res   []float64
		want  float64
		basis string
	}{
		{nil, 0.25, "no public calibration"},
		{[]float64{0.01}, 0.15, "few runs (1)"},
		{[]float64{0.09, -0.02}, 0.18, "few runs (2)"},
		{[]float64{0.01, -0.01, 0.02}, 0.05, "3 runs"},
		{[]float64{0.087, -0.04, 0.0, 0.03}, 0.11, "4 runs"}, // 2 × RMS 5.02% = 10.04%, rounded up
		{[]float64{0.066, -0.01, 0.0, 0.01, 0.0}, 0.07, "5 runs"},
		{[]float64{0.4}, 0.5, "few runs (1)"}, // at most intervalMax
	} {
		w, basis := classEvidence{residuals: tc.res}.width()
		if !near(w, tc.want, 1e-9) || !strings.Contains(basis, tc.basis) {
			t.Errorf("residuals %v: ±%g (%s), want ±%g (%s)", tc.res, w, basis, tc.want, tc.basis)
		}
	}
}

// Judging passes a measurement within a wide interval that the margin
// alone would warn about, fails one below it by more than its
// half-width, and leaves narrow classes to the margin.
func TestJudgeWithInterval(t *testing.T) {
	m := DefaultMargin()
	wide, err := Expect(mustSystem(t, Params{GPU: "gb300", GPUsPerNode: 72}), collective.AllReduce, 8*gib)
	if err != nil {
		t.Fatal(err)
	}
	narrow, err := Expect(mustSystem(t, Params{GPU: "h100"}), collective.AllReduce, 8*gib)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		p     Prediction
		ratio float64
		want  result.Status
	}{
		{"no calibration, 78%: within ±25%", wide, 0.78, result.Pass},
		{"no calibration, 60%: below by less than 25%", wide, 0.60, result.Warn},
		{"no calibration, 45%: below by more", wide, 0.45, result.Fail},
		{"narrow, 80%: the margin's warn", narrow, 0.80, result.Warn},
		{"narrow, 86%: the margin's pass", narrow, 0.86, result.Pass},
		{"narrow, 65%: the margin's fail", narrow, 0.65, result.Fail},
	} {
		st, _ := tc.p.Judge(tc.ratio*tc.p.AlgBW, m)
		if st != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, st, tc.want)
		}
		// The same from a time.
		if st, _ := tc.p.JudgeTime(tc.p.TimeUS/tc.ratio, m); st != tc.want {
			t.Errorf("%s by time: %s, want %s", tc.name, st, tc.want)
		}
	}
	// A prediction built without an interval keeps the margin.
	bare := narrow
	bare.Interval = Interval{}
	if st, _ := bare.Judge(0.80*bare.AlgBW, m); st != result.Warn {
		t.Errorf("no interval, 80%%: %s, want warn", st)
	}
}

// A GB200 tray (4 GPUs on the rack's NVSwitches, a 400G NIC each)
// modelled as its NVL72 domain predicts what the rack itself does.
func TestInDomain(t *testing.T) {
	tray := mustSystem(t, Params{GPU: "gb200", GPUsPerNode: 4, NVLinkTopology: NVLinkSwitch, NICsPerNode: 4, NICRateGbps: 400})
	rack, err := tray.InDomain(72)
	if err != nil {
		t.Fatal(err)
	}
	if rack.GPUsPerNode != 72 || rack.NICsPerNode != 72 || len(rack.Notes) == 0 {
		t.Errorf("domain: %d GPUs, %d NICs, notes %v", rack.GPUsPerNode, rack.NICsPerNode, rack.Notes)
	}
	want, err := Expect(mustSystem(t, Params{GPU: "gb200", GPUsPerNode: 72}), collective.AllReduce, 8*gib)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Expect(rack, collective.AllReduce, 8*gib)
	if err != nil {
		t.Fatal(err)
	}
	if got.BusBW != want.BusBW || got.Interval.Class != ClassDomainNVLS {
		t.Errorf("tray as its domain: %g (%s), the rack: %g", got.BusBW, got.Interval.Class, want.BusBW)
	}
	if same, err := tray.InDomain(4); err != nil || same.GPUsPerNode != 4 {
		t.Errorf("a domain of the host's own GPUs: %v, %v", same.GPUsPerNode, err)
	}
	for _, tc := range []struct {
		s    System
		gpus int
		want string
	}{
		{tray, 70, "not a whole number"},
		{mustSystem(t, Params{GPU: "a100", GPUsPerNode: 4}), 8, "needs NVSwitches"},
	} {
		if _, err := tc.s.InDomain(tc.gpus); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("InDomain(%d) on %s: %v, want %q", tc.gpus, tc.s.NVLinkTopology, err, tc.want)
		}
	}
}
