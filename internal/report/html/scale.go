package html

import (
	"math"
	"strconv"
	"strings"
)

// Linear maps [Min, Max] of the data onto [From, To] of the drawing.
type Linear struct {
	Min, Max float64
	From, To float64
}

// At is the drawing coordinate of v.
func (s Linear) At(v float64) float64 {
	if s.Max == s.Min {
		return s.From
	}
	return s.From + (v-s.Min)/(s.Max-s.Min)*(s.To-s.From)
}

// Log2 maps [Min, Max] (both > 0) onto [From, To] by their base-2
// logarithms: every doubling is the same distance.
type Log2 struct {
	Min, Max float64
	From, To float64
}

// At is the drawing coordinate of v (> 0).
func (s Log2) At(v float64) float64 {
	lo, hi := math.Log2(s.Min), math.Log2(s.Max)
	if hi == lo {
		return s.From
	}
	return s.From + (math.Log2(v)-lo)/(hi-lo)*(s.To-s.From)
}

// NiceStep is the tick step for a range of span data units cut into about
// n intervals: 1, 2 or 5 times a power of ten, the smallest such step that
// gives at most n intervals.
func NiceStep(span float64, n int) float64 {
	if span <= 0 || n <= 0 || math.IsInf(span, 0) || math.IsNaN(span) {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// LinearTicks are the ticks of an axis from 0 that must reach max: the
// multiples of NiceStep up to the first at or above max (so the axis'
// top is a tick), at most about n intervals. max <= 0 gives [0, 1].
func LinearTicks(max float64, n int) []float64 {
	if !(max > 0) || math.IsInf(max, 0) {
		return []float64{0, 1}
	}
	step := NiceStep(max, n)
	var ticks []float64
	for i := 0; ; i++ {
		v := float64(i) * step
		// round away the float error of i*step (0.30000000000000004)
		v = math.Round(v/step*1e6) / 1e6 * step
		ticks = append(ticks, v)
		if v >= max*(1-1e-9) {
			break
		}
	}
	return ticks
}

// Log2Ticks are the powers of two from the one at or below min to the one
// at or above max, every k-th of them so that there are at most n ticks.
// k is 1, 2, 5, 10, 20, ... and the first tick's exponent a multiple of
// it, so that the labels fall on 1 KiB, 1 MiB, 1 GiB where they can (k 5:
// 1 B, 32 B, 1 KiB, 32 KiB, ...). The first and last ticks are the axis'
// ends.
func Log2Ticks(min, max float64, n int) []float64 {
	if !(min > 0) || !(max >= min) || n < 2 {
		return nil
	}
	lo := int(math.Floor(math.Log2(min)))
	hi := int(math.Ceil(math.Log2(max)))
	if hi == lo {
		hi++
	}
	for _, k := range tickSteps() {
		a, b := floorTo(lo, k), hi
		for (b-a)%k != 0 {
			b++
		}
		if (b-a)/k+1 <= n {
			var ticks []float64
			for e := a; e <= b; e += k {
				ticks = append(ticks, math.Ldexp(1, e))
			}
			return ticks
		}
	}
	return nil
}

// tickSteps are the exponent steps Log2Ticks tries, smallest first.
func tickSteps() []int {
	out := []int{1, 2}
	for k := 5; k <= 1<<20; k *= 2 {
		out = append(out, k)
	}
	return out
}

func floorTo(v, k int) int {
	if v >= 0 {
		return v / k * k
	}
	return -((-v + k - 1) / k * k)
}

// BytesLabel is a size as a tick label: 8 B, 512 B, 1 KiB, 64 MiB, 8 GiB;
// a size that is not a whole number of its unit has one decimal (1.5 KiB).
func BytesLabel(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	v := strconv.FormatFloat(b, 'f', 1, 64)
	v = strings.TrimSuffix(v, ".0")
	return v + " " + units[i]
}

// Number prints a tick value: no trailing zeros, at most three decimals
// (0.5, 2, 12.5, 1000, 0.125).
func Number(v float64) string {
	s := strconv.FormatFloat(v, 'f', 3, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// RangeTicks are the multiples of NiceStep(hi−lo, n) within [lo, hi]: an
// axis that does not start at 0 (a strip of values around their median).
func RangeTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []float64{lo}
	}
	step := NiceStep(hi-lo, n)
	var ticks []float64
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi*(1+1e-12)+1e-12; v += step {
		ticks = append(ticks, math.Round(v/step)*step)
	}
	return ticks
}
