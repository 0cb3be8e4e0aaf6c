package burn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Verdict IDs on the workload's bandwidth, window by window.
const (
	// IDBandwidth judges each window's bandwidth against the first windows'.
	IDBandwidth = "burn.bandwidth"
	// IDModel judges each window's bandwidth against the model's expectation.
	IDModel = "burn.model"
)

// BaselineWindows is how many of the first windows make the reference a
// later window's bandwidth is compared with (their median); fewer when
// the burn-in has fewer windows than that and one more.
const BaselineWindows = 2

// Slowdown tolerances: a window whose bandwidth is more than SlowdownWarn
// below the first windows' warns, more than SlowdownFail fails. The same
// copy on the same GPU repeats closely from window to window: on the
// H100 of docs/device-runs.md, bidir_pinned spread 80.7–84.8 GB/s (5%) and
// d2d 1502–1506 GB/s over three windows, so 10% is twice the spread seen,
// and a quarter lost is a node that slows under sustained load (heat,
// a link retraining down), not noise.
const (
	SlowdownWarn = 0.10
	SlowdownFail = 0.25
)

// Throughput is one bandwidth a window's workload measured: a copy on a
// GPU or between two, or an NCCL collective's bus bandwidth.
type Throughput struct {
	// Test is the copy test ("bidir_pinned") or "nccl COLLECTIVE";
	// Subject the GPU ("0000:18:00.0"), the pair ("A>B") or "node".
	Test    string `json:"test"`
	Subject string `json:"subject"`
	// GBps is the bandwidth measured (a copy's GB/s as the bench reports
	// it, a collective's bus bandwidth); Measured false when the window
	// did not measure it (the copy failed, no pass finished), Why says so.
	GBps     float64 `json:"gbps"`
	Measured bool    `json:"measured"`
	Why      string  `json:"why,omitempty"`
	// Model is the bench's judgement of this measurement against the
	// model's expectation (bench.JudgeCopyRows, bench.JudgeRows); nil
	// where the model has none.
	Model *ModelJudged `json:"model,omitempty"`
}

// ModelJudged is one measurement against the model, as the bench judged it.
type ModelJudged struct {
	// Measured and Expected are in the model's terms (a device copy
	// counts read and write, a bidirectional one each direction, a
	// collective its algorithm bandwidth), GB/s.
	Measured float64       `json:"measured_gbps"`
	Expected float64       `json:"expected_gbps"`
	Status   result.Status `json:"status"`
	Ratio    float64       `json:"ratio"`
	// Basis says what the expectation is ("bidirectional host copy over
	// PCIe Gen5 x16, limited by ...").
	Basis string `json:"basis,omitempty"`
}

// JudgeBandwidth judges each measurement's bandwidth over the windows:
// against the median of the first windows (burn.bandwidth: a window more
// than SlowdownWarn below it warns, more than SlowdownFail fails, naming
// the test, the GPU, the window and both numbers — a node that slows as it
// heats), and against the model where the bench has an expectation
// (burn.model: the worst window's verdict, named). A measurement some
// window did not make is unknown for that part, unless a window that did
// already shows a slowdown. One window has no later window to compare.
func JudgeBandwidth(s Schedule, windows [][]Throughput) []result.Result {
	n := min(len(windows), len(s.Windows))
	if n == 0 {
		return nil
	}
	type series struct {
		test, subject string
		at            []*Throughput // by window; nil: not reported
	}
	var order []string
	all := map[string]*series{}
	for i := range n {
		for j := range windows[i] {
			t := &windows[i][j]
			key := t.Test + " " + t.Subject
			sr := all[key]
			if sr == nil {
				sr = &series{test: t.Test, subject: t.Subject, at: make([]*Throughput, n)}
				all[key] = sr
				order = append(order, key)
			}
			sr.at[i] = t
		}
	}
	var out []result.Result
	if n < 2 {
		out = append(out, result.Result{ID: IDBandwidth, Source: Source, Status: result.Unknown, Subject: "node", Reason: "OneWindow",
			Message: "one window: no later window to compare with the first (run the burn-in for two windows or more)"})
	}
	nb := min(BaselineWindows, n-1)
	for _, key := range order {
		sr := all[key]
		var missing []string
		for i, t := range sr.at {
			if t == nil || !t.Measured {
				why := "not measured"
				if t != nil && t.Why != "" {
					why = t.Why
				}
				missing = append(missing, fmt.Sprintf("%s (%s)", s.Name(i), why))
			}
		}
		if n >= 2 {
			if r, ok := slowdown(s, sr.test, sr.subject, sr.at, nb, missing); ok {
				out = append(out, r)
			}
		}
		if r, ok := modelVerdict(s, sr.test, sr.subject, sr.at, missing); ok {
			out = append(out, r)
		}
	}
	return out
}

// slowdown is a measurement's burn.bandwidth verdict; false when there is
// nothing to judge (a bandwidth of 0 in every window: a one-rank
// collective's bus bandwidth).
func slowdown(s Schedule, test, subject string, at []*Throughput, nb int, missing []string) (result.Result, bool) {
	r := result.Result{ID: IDBandwidth, Source: Source, Subject: test + " " + subject}
	var first, all []float64
	for i, t := range at {
		if t != nil && t.Measured {
			all = append(all, t.GBps)
			if i < nb {
				first = append(first, t.GBps)
			}
		}
	}
	if len(all) > 0 && slices.Max(all) == 0 {
		return r, false
	}
	if len(first) < nb || median(first) <= 0 {
		r.Status, r.Reason = result.Unknown, "BandwidthUnmeasured"
		r.Message = fmt.Sprintf("%s on %s: the first %d window(s) did not all measure it, so there is nothing to compare with: %s", test, subject, nb, strings.Join(compact(missing), ", "))
		return r, true
	}
	base := median(first)
	var bad, warn []string
	for i := nb; i < len(at); i++ {
		t := at[i]
		if t == nil || !t.Measured {
			continue
		}
		drop := 1 - t.GBps/base
		line := fmt.Sprintf("%s: %.1f GB/s against %.1f GB/s in the first %d window(s) (%.0f%% below)", s.Name(i), t.GBps, base, nb, 100*drop)
		switch {
		case drop > SlowdownFail:
			bad = append(bad, line)
		case drop > SlowdownWarn:
			warn = append(warn, line)
		}
	}
	span := fmt.Sprintf("%.1f–%.1f GB/s over %d window(s)", slices.Min(all), slices.Max(all), len(all))
	remedy := "a bandwidth that falls as the burn-in goes on is a node slowing under sustained load: read burn.clocks and burn.power for the same windows (thermal or power throttling), burn.gpu for PCIe replays, and check the link's width and speed (nvidia-smi -q -d PCIE) and cooling"
	switch {
	case len(bad) > 0:
		r.Status, r.Reason, r.Remedy = result.Fail, "SlowedUnderLoad", remedy
		r.Message = fmt.Sprintf("%s on %s: %s; %s", test, subject, strings.Join(compact(append(bad, warn...)), "; "), span)
	case len(warn) > 0:
		r.Status, r.Reason, r.Remedy = result.Warn, "SlowingUnderLoad", remedy
		r.Message = fmt.Sprintf("%s on %s: %s; %s", test, subject, strings.Join(compact(warn), "; "), span)
	case len(missing) > 0:
		r.Status, r.Reason = result.Unknown, "BandwidthUnmeasured"
		r.Message = fmt.Sprintf("%s on %s: not measured in %s; %s", test, subject, strings.Join(compact(missing), ", "), span)
	default:
		r.Status, r.Reason = result.Pass, "BandwidthSteady"
		r.Message = fmt.Sprintf("%s on %s: every window within %.0f%% of the first %d window(s)' %.1f GB/s; %s", test, subject, 100*SlowdownWarn, nb, base, span)
	}
	return r, true
}

// modelVerdict is a measurement's burn.model verdict: the worst window's
// status against the model; false when the model has no expectation for
// it in any window.
func modelVerdict(s Schedule, test, subject string, at []*Throughput, missing []string) (result.Result, bool) {
	r := result.Result{ID: IDModel, Source: Source, Subject: test + " " + subject}
	worst, wi := 1<<30, -1
	var lo, hi float64
	judged := 0
	for i, t := range at {
		if t == nil || !t.Measured || t.Model == nil {
			continue
		}
		if judged == 0 || t.Model.Ratio < lo {
			lo = t.Model.Ratio
		}
		if judged == 0 || t.Model.Ratio > hi {
			hi = t.Model.Ratio
		}
		judged++
		if rank := t.Model.Status.Severity(); rank < worst || (rank == worst && t.Model.Ratio < at[wi].Model.Ratio) { // Severity: lower is worse
			worst, wi = rank, i
		}
	}
	if judged == 0 {
		return r, false
	}
	m := at[wi].Model
	line := fmt.Sprintf("%s: %.1f GB/s, expected %.1f GB/s (%s): %.0f%% of expected", s.Name(wi), m.Measured, m.Expected, m.Basis, 100*m.Ratio)
	span := fmt.Sprintf("%.0f–%.0f%% of expected over %d window(s)", 100*lo, 100*hi, judged)
	switch {
	case m.Status == result.Fail || m.Status == result.Warn:
		r.Status, r.Reason = m.Status, "BelowExpected"
		r.Message = fmt.Sprintf("%s on %s, worst %s; %s", test, subject, line, span)
		r.Remedy = "a bandwidth below the model's for the node as it should be: read bench.copy's or bench.nccl's explanation (gdrcheck bench copy / nccl), and the burn-in's other verdicts for the same windows"
	case len(missing) > 0:
		r.Status, r.Reason = result.Unknown, "BandwidthUnmeasured"
		r.Message = fmt.Sprintf("%s on %s: not measured in %s; %s", test, subject, strings.Join(compact(missing), ", "), span)
	case m.Status == result.Pass:
		r.Status, r.Reason = result.Pass, "AsExpected"
		r.Message = fmt.Sprintf("%s on %s: every window as the model expects, lowest %s; %s", test, subject, line, span)
	default:
		r.Status, r.Reason = m.Status, "ModelUnsure"
		r.Message = fmt.Sprintf("%s on %s: %s; %s", test, subject, line, span)
	}
	return r, true
}
