package noise

import (
	"math"
	"sort"
)

// Robust is the outlier rule that compares one measurement with many of
// its kind by their median and median absolute deviation: gdrcheck fleet
// judges each node against its hardware class by it, and fleet plan each
// campaign step against the other steps of its level.
type Robust struct {
	// Z: a value whose robust z is below −Z is a low outlier.
	Z float64
	// MADFloor is the least MAD as a fraction of the median, so that
	// values measured identically do not accuse one 0.1% below them.
	MADFloor float64
	// MinValues is the fewest values to judge one against the others.
	MinValues int
}

// DefaultRobust: |z| > 3.5 (Iglewicz and Hoaglin's cut-off for the
// modified z-score), a MAD of at least 1% of the median, 5 values.
func DefaultRobust() Robust { return Robust{Z: 3.5, MADFloor: 0.01, MinValues: 5} }

// Score is x's modified z-score against values of median med and MAD
// mad, 0.6745·(x−med)/scale (Iglewicz and Hoaglin), the scale the MAD
// floored at MADFloor of the median; ok is false when the scale is 0
// (nothing to compare by). Low says whether x is a low outlier (z < −Z).
func (r Robust) Score(x, med, mad float64) (z float64, low, ok bool) {
	scale := r.Scale(med, mad)
	if scale <= 0 {
		return 0, false, false
	}
	z = 0.6745 * (x - med) / scale
	return z, z < -r.Z, true
}

// Scale is the MAD floored at MADFloor of the median.
func (r Robust) Scale(med, mad float64) float64 { return max(mad, r.MADFloor*med) }

// MedianMAD is the median of vals and their median absolute deviation
// from it. It reorders vals and overwrites them with the deviations.
func MedianMAD(vals []float64) (med, mad float64) {
	if len(vals) == 0 {
		return 0, 0
	}
	med = median(vals)
	for i, v := range vals {
		vals[i] = math.Abs(v - med)
	}
	return med, median(vals)
}

// median sorts v and returns its median.
func median(v []float64) float64 {
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
