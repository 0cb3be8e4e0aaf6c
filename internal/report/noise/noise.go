// Package noise is the one model of how far a measurement of a healthy node
// moves between runs: `gdrcheck diff` compares two runs of one node under
// it, `gdrcheck fleet` one run of many nodes (a node is an outlier only when
// it is below its class beyond this noise, as well as beyond the class's own
// spread). The floors and the evidence for them are in docs/diff.md.
//
// It also holds the robust outlier rule (Robust, MedianMAD) that judges one
// measurement against many of its kind: the fleet's nodes within a class,
// fleet plan's campaign steps.
package noise

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Options: a measurement moved when new/old lies outside [1/(1+f), 1+f]
// for its floor f.
type Options struct {
	// Floor is for bandwidth-bound measurements: large collectives,
	// device and peer copies. The H200 machine's large sizes repeat
	// within 1% (docs/device-runs.md).
	Floor float64 `json:"floor"`
	// HostFloor is for pinned one-direction host copies: the H200
	// machine's device-to-host pinned copy gave 52.3–55.2 GB/s over three
	// identical runs (5.5%).
	HostFloor float64 `json:"host_floor"`
	// NoisyFloor is for pageable and bidirectional host copies: the H200
	// machine's pageable copies moved by 15% and more between identical
	// runs (6.4–8.7 GB/s over 36 runs), its bidirectional pinned copies
	// 72.8–94.9 GB/s.
	NoisyFloor float64 `json:"noisy_floor"`
	// LatencyFloor is for latency-bound collectives: on the H200 machine
	// small operations fall into a fast (≈5.7 µs) or a slow (7–9 µs) state
	// a whole process at a time; single rows moved by a factor of up to
	// 1.45 between identical builds and 1.79 between two quick dossiers
	// of the same configuration (docs/diff.md).
	LatencyFloor float64 `json:"latency_floor"`
	// LatencyUS: a collective row whose faster run took less than this is
	// latency-bound, whatever the model says (a small operation costs 6–9
	// µs on the H200 machine before it moves a byte).
	LatencyUS float64 `json:"latency_us"`
	// JitterUS is the time a collective row may gain or lose whatever its
	// size: a row of t µs moves by up to JitterUS/t (when more than the
	// floor). Eight quick dossiers of the H200 machine: 64 MiB rows of
	// 36–43 µs fell up to 5.8% (broadcast) and 11.2% (sendrecv, 4.8 µs)
	// below their median, 8 µs rows up to 48% (8 µs: the slow state).
	JitterUS float64 `json:"jitter_us"`
}

// DefaultOptions are the floors docs/diff.md argues for.
func DefaultOptions() Options {
	return Options{Floor: 0.05, HostFloor: 0.10, NoisyFloor: 0.40, LatencyFloor: 1.0, LatencyUS: 20, JitterUS: 8}
}

// Validate refuses floors that are not positive numbers.
func (o Options) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"floor", o.Floor}, {"host floor", o.HostFloor}, {"noisy floor", o.NoisyFloor}, {"latency floor", o.LatencyFloor}, {"latency time", o.LatencyUS}, {"jitter time", o.JitterUS}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%s %g: want a positive number", f.name, f.v)
		}
	}
	return nil
}

// Collective is the noise of a collective row whose faster run took
// timeUS µs (0: not known), and the words for its class; latency says the
// model called the row latency-bound.
func (o Options) Collective(timeUS float64, latency bool) (float64, string) {
	floor, class := o.Floor, "bandwidth-bound"
	switch {
	case latency:
		floor, class = o.LatencyFloor, "latency-bound (the model says so)"
	case timeUS > 0 && timeUS < o.LatencyUS:
		floor, class = o.LatencyFloor, "latency-bound (under "+num(o.LatencyUS)+" µs)"
	}
	if timeUS > 0 && o.JitterUS/timeUS > floor {
		floor, class = o.JitterUS/timeUS, fmt.Sprintf("short: %s µs, of which up to %s µs is jitter", num(timeUS), num(o.JitterUS))
	}
	return floor, class
}

// Copy is the noise of a copy test (bench copy's IDs: d2d, h2d_pinned,
// d2h_pageable, bidir_pinned, p2p_..., ...), and the words for its class.
func (o Options) Copy(test string) (float64, string) {
	switch {
	case strings.Contains(test, "pageable") || strings.Contains(test, "bidir"):
		return o.NoisyFloor, "noisy: host copies that are pageable or bidirectional vary by 15–30% between identical runs"
	case strings.HasPrefix(test, "h2d") || strings.HasPrefix(test, "d2h"):
		return o.HostFloor, "pinned host copy"
	}
	return o.Floor, "bandwidth-bound"
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
