package model

import (
	"fmt"
	"math"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Margin is how close to the expectation a measurement must come. Ratios
// are measured/expected for bandwidths (expected/measured for times).
type Margin struct {
	// Pass and Warn apply to bandwidth-bound results (large sizes): at or
	// above Pass passes, at or above Warn warns, below fails.
	Pass float64 `json:"pass"`
	Warn float64 `json:"warn"`
	// LoosePass and LooseWarn apply to latency-bound and transition
	// results and to estimates (pageable copies): the model's fixed costs
	// are NCCL's tuning constants, not measurements of this machine, so
	// only a gross miss fails. LoosePass 0 skips those results instead.
	LoosePass float64 `json:"loose_pass"`
	LooseWarn float64 `json:"loose_warn"`
}

// DefaultMargin passes bandwidth-bound results at ≥85% of expected and warns
// from 70%; latency-bound ones pass at ≥50% and warn from 20%.
func DefaultMargin() Margin {
	return Margin{Pass: 0.85, Warn: 0.70, LoosePass: 0.50, LooseWarn: 0.20}
}

// Validate checks that the thresholds are ordered and in range.
func (m Margin) Validate() error {
	if !(m.Pass > 0 && m.Pass <= 1 && m.Warn >= 0 && m.Warn <= m.Pass) {
		return fmt.Errorf("margin pass %g / warn %g: want 0 ≤ warn ≤ pass ≤ 1, pass > 0", m.Pass, m.Warn)
	}
	if m.LoosePass != 0 && !(m.LoosePass > 0 && m.LoosePass <= 1 && m.LooseWarn >= 0 && m.LooseWarn <= m.LoosePass) {
		return fmt.Errorf("loose margin pass %g / warn %g: want 0 ≤ warn ≤ pass ≤ 1 (pass 0 skips)", m.LoosePass, m.LooseWarn)
	}
	return nil
}

// Judge compares a measured bandwidth with the expected one under the
// strict thresholds: the status and measured/expected. A result faster
// than expected passes (ratio > 1 says the model's assumptions were
// pessimistic, e.g. NVLS in use where it was modelled off). An expectation
// of zero or less cannot be judged (Unknown); a negative or non-finite
// measurement is an Error.
func Judge(measured, expected float64, m Margin) (result.Status, float64) {
	return judge(measured, expected, m.Pass, m.Warn)
}

// JudgeLoose is Judge with the loose thresholds (Skip when LoosePass is 0).
func JudgeLoose(measured, expected float64, m Margin) (result.Status, float64) {
	if m.LoosePass == 0 {
		if expected > 0 && measured >= 0 {
			return result.Skip, measured / expected
		}
		return result.Skip, 0
	}
	return judge(measured, expected, m.LoosePass, m.LooseWarn)
}

func judge(measured, expected, pass, warn float64) (result.Status, float64) {
	if !(expected > 0) || math.IsInf(expected, 0) {
		return result.Unknown, 0
	}
	if measured < 0 || math.IsNaN(measured) || math.IsInf(measured, 0) {
		return result.Error, 0
	}
	r := measured / expected
	switch {
	case r >= pass:
		return result.Pass, r
	case r >= warn:
		return result.Warn, r
	}
	return result.Fail, r
}

// Judge compares a measured algbw (GB/s, nccl-tests' out-of-place algbw)
// with the prediction: strictly in the bandwidth regime, loosely otherwise
// (and for Loose predictions).
// The ratio is the same as busbw's (both scale by the same factor), and it
// works for one rank, where busbw is zero.
func (p Prediction) Judge(measuredAlgBW float64, m Margin) (result.Status, float64) {
	return judgeBy(p.strict(), measuredAlgBW, p.AlgBW, p.Interval.margin(m))
}

// strict: judged by the strict thresholds.
func (p Prediction) strict() bool { return p.Regime == RegimeBandwidth && !p.Loose }

// judgeBy is Judge when strict, else JudgeLoose.
func judgeBy(strict bool, measured, expected float64, m Margin) (result.Status, float64) {
	if strict {
		return Judge(measured, expected, m)
	}
	return JudgeLoose(measured, expected, m)
}

// JudgeTime compares a measured time (µs) with the prediction; the ratio
// is expected/measured, so slower is lower, as for bandwidths.
func (p Prediction) JudgeTime(measuredUS float64, m Margin) (result.Status, float64) {
	if !(measuredUS > 0) || math.IsInf(measuredUS, 0) {
		return result.Error, 0
	}
	// expected/measured time is measured/expected bandwidth.
	return judgeBy(p.strict(), p.TimeUS, measuredUS, p.Interval.margin(m))
}

// Judge compares a measured copy bandwidth (GB/s) with the expectation;
// estimates are judged loosely.
func (c CopyExpectation) Judge(measuredGBps float64, m Margin) (result.Status, float64) {
	return judgeBy(!c.Loose, measuredGBps, c.GBps, m)
}
