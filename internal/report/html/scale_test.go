package html

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestNiceStep(t *testing.T) {
	for _, c := range []struct {
		span float64
		n    int
		want float64
	}{
		{10, 5, 2}, {100, 5, 20}, {1, 5, 0.2}, {7, 5, 2}, {450, 5, 100}, {480, 6, 100},
		{0.03, 3, 0.01}, {1000, 4, 500}, {0, 5, 1}, {-3, 5, 1}, {math.Inf(1), 5, 1}, {3, 0, 1},
	} {
		if got := NiceStep(c.span, c.n); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("NiceStep(%v, %d) = %v, want %v", c.span, c.n, got, c.want)
		}
	}
}

func TestLinearTicks(t *testing.T) {
	for _, c := range []struct {
		max  float64
		n    int
		want []float64
	}{
		{10, 5, []float64{0, 2, 4, 6, 8, 10}},
		{9.5, 5, []float64{0, 2, 4, 6, 8, 10}},
		{480, 5, []float64{0, 100, 200, 300, 400, 500}},
		{0.3, 3, []float64{0, 0.1, 0.2, 0.3}},
		{1, 4, []float64{0, 0.5, 1}},
		{0, 5, []float64{0, 1}},
		{-1, 5, []float64{0, 1}},
		{math.NaN(), 5, []float64{0, 1}},
	} {
		got := LinearTicks(c.max, c.n)
		if !slices.EqualFunc(got, c.want, func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }) {
			t.Errorf("LinearTicks(%v, %d) = %v, want %v", c.max, c.n, got, c.want)
		}
		if c.max > 0 && got[len(got)-1] < c.max {
			t.Errorf("LinearTicks(%v): last tick %v below the maximum", c.max, got[len(got)-1])
		}
	}
}

func TestLog2Ticks(t *testing.T) {
	pow := func(es ...int) []float64 {
		var out []float64
		for _, e := range es {
			out = append(out, math.Ldexp(1, e))
		}
		return out
	}
	for _, c := range []struct {
		min, max float64
		n        int
		want     []float64
	}{
		{8, 128, 10, pow(3, 4, 5, 6, 7)},
		{8, 8 << 30, 10, pow(0, 5, 10, 15, 20, 25, 30, 35)},
		{8, 1 << 30, 10, pow(0, 5, 10, 15, 20, 25, 30)},
		{1024, 1 << 20, 3, pow(10, 15, 20)},
		{1, 1 << 40, 3, pow(0, 20, 40)},
		{3, 1 << 12, 10, pow(0, 2, 4, 6, 8, 10, 12)},
		{6, 100, 10, pow(2, 3, 4, 5, 6, 7)},
		{16, 16, 5, pow(4, 5)},
		{0, 16, 5, nil},
		{16, 8, 5, nil},
	} {
		got := Log2Ticks(c.min, c.max, c.n)
		if !slices.Equal(got, c.want) {
			t.Errorf("Log2Ticks(%v, %v, %d) = %v, want %v", c.min, c.max, c.n, got, c.want)
		}
		if len(got) > c.n {
			t.Errorf("Log2Ticks(%v, %v, %d): %d ticks", c.min, c.max, c.n, len(got))
		}
		if got != nil && (got[0] > c.min || got[len(got)-1] < c.max) {
			t.Errorf("Log2Ticks(%v, %v): %v does not cover the range", c.min, c.max, got)
		}
	}
}

func TestScales(t *testing.T) {
	l := Linear{Min: 0, Max: 100, From: 300, To: 20} // a y axis: up is smaller
	for _, c := range [][2]float64{{0, 300}, {100, 20}, {50, 160}} {
		if got := l.At(c[0]); math.Abs(got-c[1]) > 1e-9 {
			t.Errorf("Linear.At(%v) = %v, want %v", c[0], got, c[1])
		}
	}
	g := Log2{Min: 8, Max: 8 << 20, From: 50, To: 250}
	for _, c := range [][2]float64{{8, 50}, {8 << 20, 250}, {8 << 10, 150}} {
		if got := g.At(c[0]); math.Abs(got-c[1]) > 1e-9 {
			t.Errorf("Log2.At(%v) = %v, want %v", c[0], got, c[1])
		}
	}
	if got := (Linear{Min: 5, Max: 5, From: 1, To: 9}).At(5); got != 1 {
		t.Errorf("degenerate Linear.At = %v, want From", got)
	}
}

func TestLabels(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{8, "8 B"}, {512, "512 B"}, {1024, "1 KiB"}, {64 << 20, "64 MiB"}, {8 << 30, "8 GiB"}, {1536, "1.5 KiB"}, {1 << 40, "1 TiB"}, {1 << 50, "1024 TiB"}, {123456, "120.6 KiB"}} {
		if got := BytesLabel(c.v); got != c.want {
			t.Errorf("BytesLabel(%v) = %q, want %q", c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		v    float64
		want string
	}{{0.5, "0.5"}, {2, "2"}, {12.5, "12.5"}, {1000, "1000"}, {0.125, "0.125"}, {-0.0001, "0"}, {0.30000000000000004, "0.3"}} {
		if got := Number(c.v); got != c.want {
			t.Errorf("Number(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestRangeTicks(t *testing.T) {
	cases := []struct {
		lo, hi float64
		n      int
		want   []float64
	}{
		{1290, 1920, 5, []float64{1400, 1600, 1800}}, {1290, 1920, 10, []float64{1300, 1400, 1500, 1600, 1700, 1800, 1900}},
		{0.5, 2.5, 4, []float64{0.5, 1, 1.5, 2, 2.5}},
		{-3, 3, 3, []float64{-2, 0, 2}},
		{5, 5, 4, []float64{5}},
	}
	for _, c := range cases {
		got := RangeTicks(c.lo, c.hi, c.n)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("RangeTicks(%g, %g, %d) = %v, want %v", c.lo, c.hi, c.n, got, c.want)
		}
	}
}
