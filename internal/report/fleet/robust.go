package fleet

import "math"

// MedianMAD is the median of vals and their median absolute deviation
// from it, the robust centre and spread every comparison of measurements
// uses (the roll-up's outliers, fleet plan's judging of a campaign's
// steps). It reorders vals and overwrites them with the deviations.
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

// RobustZ is x's modified z-score against a sample of median med and MAD
// mad, 0.6745·(x−med)/MAD (Iglewicz and Hoaglin), with the MAD floored at
// o.MADFloor of the median; ok is false when the scale is 0 (nothing to
// compare by). Low says whether x is an outlier on the low side (z < −o.Z).
func (o Options) RobustZ(x, med, mad float64) (z float64, low, ok bool) {
	scale := max(mad, o.MADFloor*med)
	if scale <= 0 {
		return 0, false, false
	}
	z = 0.6745 * (x - med) / scale
	return z, z < -o.Z, true
}
