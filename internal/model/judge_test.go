package model

import (
	"math"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

func TestJudge(t *testing.T) {
	m := DefaultMargin()
	for _, tc := range []struct {
		measured, expected float64
		want               result.Status
		ratio              float64
	}{
		{370, 370.8, result.Pass, 370 / 370.8},
		{315.18, 370.8, result.Pass, 0.85}, // exactly 85%
		{315.1, 370.8, result.Warn, 315.1 / 370.8},
		{259.56, 370.8, result.Warn, 0.70},
		{259.5, 370.8, result.Fail, 259.5 / 370.8},
		{480, 370.8, result.Pass, 480 / 370.8}, // faster than modelled: pass, ratio > 1
		{0, 370.8, result.Fail, 0},
		{100, 0, result.Unknown, 0},
		{100, -1, result.Unknown, 0},
		{100, math.Inf(1), result.Unknown, 0},
		{math.NaN(), 370.8, result.Error, 0},
		{-5, 370.8, result.Error, 0},
	} {
		st, r := Judge(tc.measured, tc.expected, m)
		if st != tc.want || !near(r, tc.ratio, 1e-9) {
			t.Errorf("Judge(%g, %g) = %s %g, want %s %g", tc.measured, tc.expected, st, r, tc.want, tc.ratio)
		}
	}
	// Configurable thresholds.
	strict := Margin{Pass: 0.95, Warn: 0.9, LoosePass: 0.5, LooseWarn: 0.2}
	if st, _ := Judge(340, 370.8, strict); st != result.Warn {
		t.Errorf("340/370.8 at 95%%: %s, want warn", st)
	}
	// Loose thresholds, and skipping.
	if st, _ := JudgeLoose(10, 15, m); st != result.Pass {
		t.Errorf("loose 10/15: %s", st)
	}
	if st, _ := JudgeLoose(4, 15, m); st != result.Warn {
		t.Errorf("loose 4/15: %s", st)
	}
	if st, _ := JudgeLoose(2, 15, m); st != result.Fail {
		t.Errorf("loose 2/15: %s", st)
	}
	skip := m
	skip.LoosePass, skip.LooseWarn = 0, 0
	if st, r := JudgeLoose(2, 15, skip); st != result.Skip || !near(r, 2.0/15, 1e-9) {
		t.Errorf("loose with LoosePass 0: %s %g, want skip", st, r)
	}
	for _, bad := range []Margin{{Pass: 0}, {Pass: 0.8, Warn: 0.9}, {Pass: 1.2, Warn: 0.5}, {Pass: 0.85, Warn: 0.7, LoosePass: 0.5, LooseWarn: 0.6}} {
		if bad.Validate() == nil {
			t.Errorf("margin %+v validated", bad)
		}
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
}

// A prediction is judged strictly only in the bandwidth regime.
func TestPredictionJudge(t *testing.T) {
	s := mustSystem(t, Params{GPU: "h100", GPUsPerNode: 8})
	big, _ := Expect(s, collective.AllReduce, 8*gib)
	small, _ := Expect(s, collective.AllReduce, 8)
	mid, _ := Expect(s, collective.AllReduce, 64*mib)
	m := DefaultMargin()
	// 60% of expected: fails at 8G, passes loosely at 8 B and at 64M.
	if st, r := big.Judge(0.6*big.AlgBW, m); st != result.Fail || !near(r, 0.6, 1e-9) {
		t.Errorf("8G at 60%%: %s %g", st, r)
	}
	if st, _ := small.Judge(0.6*small.AlgBW, m); st != result.Pass {
		t.Errorf("8 B at 60%%: %s, want pass (loose)", st)
	}
	if st, _ := mid.Judge(0.6*mid.AlgBW, m); st != result.Pass {
		t.Errorf("64M at 60%%: %s, want pass (loose)", st)
	}
	// By time: the DGX H100 sample's 13.67 µs at 8 B beats the 15 µs model.
	if st, r := small.JudgeTime(13.67, m); st != result.Pass || !near(r, 15/13.67, 1e-3) {
		t.Errorf("8 B in 13.67 µs: %s %g", st, r)
	}
	// 5 × slower than the model at 8 B fails even loosely.
	if st, _ := small.JudgeTime(80, m); st != result.Fail {
		t.Errorf("8 B in 80 µs: %s, want fail", st)
	}
	if st, _ := small.JudgeTime(0, m); st != result.Error {
		t.Errorf("zero time: %s", st)
	}
	// One rank: judged on algbw although busbw is 0.
	one := mustSystem(t, Params{GPU: "h200", GPUsPerNode: 1})
	e, _ := Expect(one, collective.AllReduce, 8*gib)
	if st, _ := e.Judge(0.9*e.AlgBW, m); e.BusBW != 0 || st != result.Pass {
		t.Errorf("one rank: busbw %g status %s", e.BusBW, st)
	}
	// Multi-node sendrecv rests on one public run: judged loosely, so a
	// run at 0.4 of it (6 GB/s) warns where a strict judgement would fail.
	mn := mustSystem(t, Params{GPU: "h100", Nodes: 10, NICsPerNode: 8, NICRateGbps: 400})
	sr, _ := Expect(mn, collective.SendRecv, 16*gib)
	if st, r := sr.Judge(6, m); !sr.Loose || st != result.Warn || !near(r, 6/(0.317*48), 1e-3) {
		t.Errorf("10-node sendrecv at 6 GB/s: loose %v %s %g, want loose warn", sr.Loose, st, r)
	}
	// Copies: estimates loosely.
	c, _ := ExpectCopy(one, CopyH2DPageable)
	if st, _ := c.Judge(11, m); st != result.Pass {
		t.Errorf("pageable 11 of 20: %s, want pass (loose)", st)
	}
	c, _ = ExpectCopy(one, CopyH2DPinned)
	if st, _ := c.Judge(40, m); st != result.Warn {
		t.Errorf("pinned 40 of 54.2: %s, want warn", st)
	}
}
