package model

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
)

// Every collective prediction carries an interval: how far a healthy
// measurement may sit from it, from the public runs of its class (the
// spread of their residuals, measured/predicted − 1). A class with few
// public runs gets a wide interval and says so; a class with none says
// "no public calibration" rather than a precise-looking number.

// Interval widths.
const (
	// intervalFloor is the narrowest interval, however well a class's
	// runs agree: run-to-run spread of one healthy system is a few
	// percent (the 8×H100 runs of nccl#1455, 365-370 GB/s).
	intervalFloor = 0.05
	// intervalFewRuns is the narrowest for a class of fewer than
	// intervalManyRuns runs: too few to see the spread.
	intervalFewRuns  = 0.15
	intervalManyRuns = 3
	// intervalNone is the width of a class with no public run.
	intervalNone = 0.25
	// intervalMax bounds any width, so a judging margin stays a margin
	// (TestPublicRuns holds every run within ±10% anyway).
	intervalMax = 0.5
)

// Interval is where a healthy measurement of a prediction may lie, and
// what that is known from.
type Interval struct {
	// Class is the prediction's evidence class ("NVLS, one node").
	Class string `json:"class"`
	// LowBusBW and HighBusBW bound busbw, LowAlgBW and HighAlgBW algbw
	// (GB/s; one rank has busbw 0).
	LowBusBW  float64 `json:"low_busbw_gbps"`
	HighBusBW float64 `json:"high_busbw_gbps"`
	LowAlgBW  float64 `json:"low_algbw_gbps"`
	HighAlgBW float64 `json:"high_algbw_gbps"`
	// HalfWidth is the interval's half-width as a share of the
	// prediction (0.06: ±6%).
	HalfWidth float64 `json:"half_width"`
	// Runs is how many public runs the class has; Basis says what the
	// width rests on.
	Runs  int    `json:"runs"`
	Basis string `json:"basis"`
}

// Evidence classes: what a prediction's accuracy is known from. A class
// groups predictions whose error has one cause (an algorithm on one kind
// of path), so the runs of the class speak for all of them.
const (
	ClassOneRank      = "one rank (device copy)"
	ClassNodeNVLink   = "one node, NVLink ring/tree/p2p"
	ClassNodePCIe     = "one node, PCIe"
	ClassNodeNVLS     = "NVLS, one node (up to 8 GPUs)"
	ClassDomainNVLS   = "NVLS in a rack-scale NVLink domain"
	ClassDomainNVLink = "other algorithms in a rack-scale NVLink domain"
	ClassNVLSTree     = "NVLS-tree across nodes"
	ClassNVLSSharp    = "NVLS with SHARP across nodes"
	ClassCollNet      = "CollNet (SHARP) across nodes"
	ClassHierarchical = "hierarchical all-reduce"
	ClassNetwork      = "several nodes, ring/tree/p2p on the network"
)

// classOf is the evidence class of a prediction by algo on s.
func classOf(s System, algo Algorithm) string {
	rack := s.GPUsPerNode > nvlsBaseboardGPUs && s.NVLinkTopology != NVLinkNone
	switch {
	case algo == AlgoLocal:
		return ClassOneRank
	case rack && (algo == AlgoNVLS || algo == AlgoNVLSTree || algo == AlgoNVLSSharp):
		return ClassDomainNVLS
	case rack:
		return ClassDomainNVLink
	case algo == AlgoNVLS:
		return ClassNodeNVLS
	case algo == AlgoNVLSTree:
		return ClassNVLSTree
	case algo == AlgoNVLSSharp:
		return ClassNVLSSharp
	case algo == AlgoCollNet:
		return ClassCollNet
	case algo == AlgoHierarchical:
		return ClassHierarchical
	case s.Nodes > 1:
		return ClassNetwork
	case s.NVLinkTopology == NVLinkSwitch || s.NVLinkTopology == NVLinkMesh:
		return ClassNodeNVLink
	}
	return ClassNodePCIe
}

// classEvidence is one class's residuals.
type classEvidence struct {
	residuals []float64
	gpus      map[string]bool // the runs' GPUs (spec keys)
}

// width is the class's half-width and what it rests on: with many runs
// the largest residual or twice their RMS (whichever is wider, at least
// intervalFloor); with few, at least intervalFewRuns or twice the largest
// residual; with none, intervalNone.
func (e classEvidence) width() (float64, string) {
	n := len(e.residuals)
	if n == 0 {
		return intervalNone, "no public calibration"
	}
	maxAbs, ss := 0.0, 0.0
	for _, r := range e.residuals {
		maxAbs = math.Max(maxAbs, math.Abs(r))
		ss += r * r
	}
	rms := math.Sqrt(ss / float64(n))
	if n < intervalManyRuns {
		w := ceilPercent(math.Max(intervalFewRuns, 2*maxAbs))
		return w, fmt.Sprintf("few runs (%d), largest residual %.1f%%: wide", n, 100*maxAbs)
	}
	w := ceilPercent(math.Max(intervalFloor, math.Max(maxAbs, 2*rms)))
	return w, fmt.Sprintf("%d runs, largest residual %.1f%%, RMS %.1f%%", n, 100*maxAbs, 100*rms)
}

// ceilPercent rounds a share up to a whole percent, at most
// intervalMax.
func ceilPercent(w float64) float64 { return math.Min(intervalMax, math.Ceil(w*100-1e-9)/100) }

// evidence is every class's residuals from the public and device runs,
// computed once (predicting the runs without intervals).
var (
	evidenceOnce    sync.Once
	evidenceByClass map[string]classEvidence
)

func evidence() map[string]classEvidence {
	evidenceOnce.Do(func() { evidenceByClass = computeEvidence() })
	return evidenceByClass
}

func computeEvidence() map[string]classEvidence {
	out := map[string]classEvidence{}
	for _, r := range allRuns() {
		s, err := NewSystem(r.p)
		if err != nil {
			panic(fmt.Sprintf("public run %s: %v", r.name, err)) // a test holds every run to a system
		}
		ps, err := predictWith(newPaths(s), r.c, r.size, false)
		if err != nil {
			panic(fmt.Sprintf("public run %s: %v", r.name, err))
		}
		cl := classOf(s, ps[0].Algorithm)
		e := out[cl]
		e.residuals = append(e.residuals, r.measured/observed(ps[0])-1)
		if e.gpus == nil {
			e.gpus = map[string]bool{}
		}
		e.gpus[s.GPU] = true
		out[cl] = e
	}
	return out
}

// intervalOf is the interval of a prediction on s.
func intervalOf(s System, p Prediction) Interval {
	cl := classOf(s, p.Algorithm)
	w, runs, basis := classWidth(cl)
	if cl == ClassHierarchical && s.NVLinkTopology != NVLinkSwitch && s.NVLinkTopology != NVLinkMesh {
		w, runs, basis = hierarchicalWidth(ClassNodePCIe)
	}
	if e := evidence()[cl]; (cl == ClassDomainNVLS || cl == ClassDomainNVLink) && runs > 0 && !e.gpus[s.GPU] {
		// A rack-scale system is its own family (GB200 NVL72 is not
		// GB300 NVL72): another GPU's racks do not calibrate it.
		var have []string
		for g := range e.gpus {
			have = append(have, g)
		}
		sort.Strings(have)
		w, runs, basis = intervalNone, 0, fmt.Sprintf("no public calibration for %s (the class's runs are %s)", s.GPU, strings.Join(have, ", "))
	}
	return Interval{Class: cl, LowBusBW: sig(p.BusBW * (1 - w)), HighBusBW: sig(p.BusBW * (1 + w)),
		LowAlgBW: sig(p.AlgBW * (1 - w)), HighAlgBW: sig(p.AlgBW * (1 + w)),
		HalfWidth: w, Runs: runs, Basis: basis}
}

// classWidth is a class's half-width, its number of runs and what the
// width rests on.
func classWidth(cl string) (float64, int, string) {
	if cl == ClassHierarchical {
		return hierarchicalWidth(ClassNodeNVLink)
	}
	e := evidence()[cl]
	w, basis := e.width()
	return w, len(e.residuals), basis
}

// hierarchicalWidth is the hierarchical all-reduce's: the model's own
// three calls, with no public run of the whole. Each phase is a
// prediction of a class with runs (the node's reduce-scatter and
// all-gather, in class intra; the network all-reduce), so the whole is as
// uncertain as its least certain phase.
func hierarchicalWidth(intra string) (float64, int, string) {
	wn, _, _ := classWidth(intra)
	wr, _, _ := classWidth(ClassNetwork)
	return math.Max(wn, wr), 0, fmt.Sprintf("no public run of the whole: its phases' classes (%s ±%.0f%%, %s ±%.0f%%)", intra, 100*wn, ClassNetwork, 100*wr)
}

// Classes lists the evidence classes.
func Classes() []string {
	return []string{ClassOneRank, ClassNodeNVLink, ClassNodePCIe, ClassNodeNVLS, ClassDomainNVLS, ClassDomainNVLink,
		ClassNVLSTree, ClassNVLSSharp, ClassCollNet, ClassHierarchical, ClassNetwork}
}

// margin is m widened by the interval: a measurement within it passes
// (pass at most 1 − half-width), and one below it by more than its
// half-width again fails. A narrow interval leaves m as it is: the
// operator's margin is then the wider.
func (iv Interval) margin(m Margin) Margin {
	if iv.Class == "" {
		return m // a prediction made without one
	}
	pass := math.Min(m.Pass, 1-iv.HalfWidth)
	m.Warn = math.Max(0, math.Min(m.Warn, pass-iv.HalfWidth))
	m.Pass = pass
	return m
}
