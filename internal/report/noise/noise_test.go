package noise

import (
	"math"
	"strings"
	"testing"
)

func TestCollective(t *testing.T) {
	o := DefaultOptions()
	cases := []struct {
		name    string
		timeUS  float64
		latency bool
		floor   float64
		class   string
	}{
		{"time unknown", 0, false, o.Floor, "bandwidth-bound"},
		{"long row", 1000, false, o.Floor, "bandwidth-bound"},
		{"model says latency", 1000, true, o.LatencyFloor, "latency-bound (the model says so)"},
		{"under the latency time", 10, false, o.LatencyFloor, "latency-bound (under 20 µs)"},
		{"jitter beyond the floor", 40, false, 8.0 / 40, "short: 40 µs, of which up to 8 µs is jitter"},
		{"jitter beyond the latency floor", 4, true, 2, "short: 4 µs"},
		{"jitter within the floor", 200, false, o.Floor, "bandwidth-bound"},
	}
	for _, tc := range cases {
		f, class := o.Collective(tc.timeUS, tc.latency)
		if math.Abs(f-tc.floor) > 1e-12 || !strings.HasPrefix(class, tc.class) {
			t.Errorf("%s: %g, %q; want %g, %q", tc.name, f, class, tc.floor, tc.class)
		}
	}
}

func TestCopy(t *testing.T) {
	o := DefaultOptions()
	for test, want := range map[string]float64{
		"d2d": o.Floor, "p2p_read": o.Floor, "h2d_pinned": o.HostFloor, "d2h_pinned": o.HostFloor,
		"h2d_pageable": o.NoisyFloor, "bidir_pinned": o.NoisyFloor, "d2h_pageable": o.NoisyFloor,
	} {
		if f, _ := o.Copy(test); f != want {
			t.Errorf("%s: %g, want %g", test, f, want)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(*Options){
		func(o *Options) { o.Floor = 0 },
		func(o *Options) { o.HostFloor = -1 },
		func(o *Options) { o.NoisyFloor = math.NaN() },
		func(o *Options) { o.LatencyFloor = math.Inf(1) },
		func(o *Options) { o.LatencyUS = 0 },
		func(o *Options) { o.JitterUS = 0 },
	} {
		o := DefaultOptions()
		bad(&o)
		if o.Validate() == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestMedianMAD(t *testing.T) {
	cases := []struct {
		vals     []float64
		med, mad float64
	}{
		{nil, 0, 0},
		{[]float64{7}, 7, 0},
		{[]float64{3, 1, 2}, 2, 1},
		{[]float64{1, 2, 3, 4}, 2.5, 1},
		{[]float64{100, 101, 99, 100, 60}, 100, 1},
	}
	for _, c := range cases {
		if med, mad := MedianMAD(append([]float64(nil), c.vals...)); med != c.med || mad != c.mad {
			t.Errorf("MedianMAD(%v) = %g, %g; want %g, %g", c.vals, med, mad, c.med, c.mad)
		}
	}
}

func TestRobustScore(t *testing.T) {
	r := DefaultRobust()
	cases := []struct {
		name        string
		x, med, mad float64
		z           float64
		low, ok     bool
	}{
		{"at the median", 100, 100, 2, 0, false, true},
		{"far below", 80, 100, 2, 0.6745 * -20 / 2, true, true},
		{"just inside", 100 - 3.5*2/0.6745 + 0.01, 100, 2, 0.6745 * (-3.5*2/0.6745 + 0.01) / 2, false, true},
		{"above is never low", 200, 100, 2, 0.6745 * 100 / 2, false, true},
		// MAD 0: the floor (1% of the median) is the scale, so 0.1% below
		// is not an outlier.
		{"MAD floored", 99.9, 100, 0, 0.6745 * -0.1 / 1, false, true},
		{"nothing to compare by", 5, 0, 0, 0, false, false},
	}
	for _, c := range cases {
		z, low, ok := r.Score(c.x, c.med, c.mad)
		if math.Abs(z-c.z) > 1e-9 || low != c.low || ok != c.ok {
			t.Errorf("%s: Score(%g, %g, %g) = %g, %v, %v; want %g, %v, %v", c.name, c.x, c.med, c.mad, z, low, ok, c.z, c.low, c.ok)
		}
	}
}
