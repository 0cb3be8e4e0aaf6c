package model

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/printable"
)

// ReportOptions choose what a report predicts.
type ReportOptions struct {
	Collectives []collective.Collective // nil: all
	Sizes       []float64               // nil: DefaultSizes
	// All lists every applicable algorithm, not only the fastest.
	All bool
	// WhatIfs are the lines System.Apply returned, to print with the system.
	WhatIfs []string
	Margin  Margin
	// NoCopies leaves out the copy and perftest expectations.
	NoCopies bool
}

// DefaultSizes span the latency-bound to the bandwidth-bound regime.
func DefaultSizes() []float64 { return []float64{8, 1 << 20, 64 << 20, 8 << 30} }

// Derived are the system's bandwidths as the model sees them.
type Derived struct {
	NVLinkGBps  float64 `json:"nvlink_gbps,omitempty"` // per GPU, NCCL-effective
	IntraGBps   float64 `json:"intra_node_ring_gbps,omitempty"`
	NetworkGBps float64 `json:"network_gbps,omitempty"` // per node
	RailGBps    float64 `json:"rail_gbps,omitempty"`    // one GPU's NIC path
	PCIeGBps    float64 `json:"pcie_gbps"`              // per GPU, DMA
	MemCopyGBps float64 `json:"memory_copy_gbps"`
}

// Report is what `gdrcheck model` prints.
type Report struct {
	System      System            `json:"system"`
	Derived     Derived           `json:"derived"`
	WhatIfs     []string          `json:"what_ifs,omitempty"`
	Margin      Margin            `json:"margin"`
	Collectives []Prediction      `json:"collectives"`
	Copies      []CopyExpectation `json:"copies,omitempty"`
	// Basis, for the model of a host, says where System, the hardware as
	// it should be, came from (Basis.Source): "catalogue", "catalogue +
	// site profile FILE".
	Basis string `json:"basis,omitempty"`
	// Deviations name how the node as found falls short of System ("16
	// NVLinks", "PCIe Gen5 x8"), and AsFound is its model: the
	// explanation of a shortfall, shown beside the expectation, never the
	// expectation itself. Both empty when the node is as it should be.
	Deviations []string `json:"deviations,omitempty"`
	AsFound    *Report  `json:"as_found,omitempty"`
}

// BuildReport predicts the chosen collectives at the chosen sizes.
func BuildReport(s System, o ReportOptions) (*Report, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if o.Margin == (Margin{}) {
		o.Margin = DefaultMargin()
	}
	if err := o.Margin.Validate(); err != nil {
		return nil, err
	}
	colls := o.Collectives
	if len(colls) == 0 {
		colls = collective.All()
	}
	sizes := o.Sizes
	if len(sizes) == 0 {
		sizes = DefaultSizes()
	}
	p := newPaths(s)
	r := &Report{System: s, WhatIfs: o.WhatIfs, Margin: o.Margin, Collectives: []Prediction{}}
	fin := func(t term) float64 {
		if math.IsInf(t.gbps, 1) {
			return 0
		}
		return sig(t.gbps)
	}
	r.Derived = Derived{NVLinkGBps: sig(p.nvl.gbps), IntraGBps: fin(p.intra), NetworkGBps: fin(p.inter),
		RailGBps: fin(p.rail), PCIeGBps: sig(p.pcie.gbps), MemCopyGBps: sig(p.hbm.gbps)}
	for _, c := range colls {
		for _, b := range sizes {
			ps, err := predict(p, c, b)
			if err != nil {
				return nil, err
			}
			if !o.All {
				ps = ps[:1]
			}
			r.Collectives = append(r.Collectives, ps...)
		}
	}
	if !o.NoCopies {
		r.Copies = copies(p)
	}
	return r, nil
}

// FormatTime prints µs as nccl-tests-like text: "13.67 us", "31.31 ms".
func FormatTime(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.3f s", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.2f ms", us/1e3)
	}
	return fmt.Sprintf("%.2f us", us)
}

// WriteText prints the report for a person. Names that can come from a
// host (the GPU's, the link layer, the source, notes) or from the command
// line (what-ifs) are printed escaped (printable.Line), and the page as a
// whole keeps only tabs and line breaks (printable.Text).
func (r *Report) WriteText(w io.Writer) error { return r.WriteTextWith(w, TextOptions{Formulas: true}) }

// TextOptions shape WriteTextWith's page.
type TextOptions struct {
	// Formulas prints every formula the tables refer to ([n]); without it
	// one line says how many there are and how to see them.
	Formulas bool
}

// WriteTextWith is WriteText with o.
func (r *Report) WriteTextWith(w io.Writer, o TextOptions) error {
	var b strings.Builder
	l := printable.Line
	s := r.System
	fmt.Fprintf(&b, "Expected performance: %d node(s) × %d GPU(s) = %d rank(s), %s (%s)\n", s.Nodes, s.GPUsPerNode, s.Ranks(), l(s.GPUName), l(s.Source))
	if r.Basis != "" {
		fmt.Fprintf(&b, "Judged against the hardware as it should be: %s (%s)\n", l(s.Name()), l(r.Basis))
	}
	if len(r.Deviations) > 0 {
		fmt.Fprintf(&b, "This node as found falls short: %s", l(strings.Join(r.Deviations, ", ")))
		if r.AsFound != nil {
			b.WriteString("; what it would reach is in the AS FOUND columns, as the explanation, not the expectation")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  GPU\t%s (%s, %s), memory %.0f GB/s peak\n", l(s.GPUName), l(s.GPU), l(s.Arch), s.MemGBps)
	switch s.NVLinkTopology {
	case NVLinkNone:
		fmt.Fprintf(tw, "  NVLink\tnone\n")
	default:
		nvls := "NVLS off"
		if s.NVLS {
			nvls = "NVLS on"
		}
		what := map[string]string{NVLinkSwitch: "to NVSwitches", NVLinkMesh: fmt.Sprintf("direct, %d per pair", s.NVLinkPairLinks),
			NVLinkPartial: fmt.Sprintf("in bridged pairs (%d links), PCIe between pairs", s.NVLinkPairLinks)}[s.NVLinkTopology]
		fmt.Fprintf(tw, "  NVLink\tgeneration %d, %d links per GPU × %g GB/s per direction, %s, %s\n", s.NVLinkGen, s.NVLinks, s.NVLinkLinkGBps, what, nvls)
	}
	if s.GPUsPerNode > 1 {
		fmt.Fprintf(tw, "  PCIe\tGen%d x%d per GPU; GPUs at most %s apart\n", s.PCIeGen, s.PCIeWidth, l(s.GPUPath))
	} else {
		fmt.Fprintf(tw, "  PCIe\tGen%d x%d\n", s.PCIeGen, s.PCIeWidth)
	}
	if s.NICsPerNode > 0 {
		gdr := "GDR on"
		if !s.GDR {
			gdr = "GDR off (host staging)"
		}
		where := "NIC beside its GPU"
		switch {
		case s.NICRemoteSocket:
			where = "NICs on the other socket"
		case s.NICSharesSwitch:
			where = "NIC under its GPU's PCIe switch"
		}
		sharp := "SHARP off"
		if s.SHARP {
			sharp = "SHARP on"
		}
		fmt.Fprintf(tw, "  Network\t%d NIC(s) per node × %g Gb/s %s, NIC PCIe Gen%d x%d, %s, %s, %s\n", s.NICsPerNode, s.NICRateGbps, l(s.NICLinkLayer), s.NICPCIeGen, s.NICPCIeWidth, gdr, where, sharp)
	} else {
		fmt.Fprintf(tw, "  Network\tnone\n")
	}
	d := r.Derived
	var parts []string
	if d.NVLinkGBps > 0 {
		parts = append(parts, fmt.Sprintf("NVLink %.1f GB/s per GPU (NCCL)", d.NVLinkGBps))
	}
	if d.IntraGBps > 0 && d.IntraGBps != d.NVLinkGBps {
		parts = append(parts, fmt.Sprintf("ring inside the node %.1f GB/s", d.IntraGBps))
	}
	if d.NetworkGBps > 0 {
		parts = append(parts, fmt.Sprintf("network %.1f GB/s per node", d.NetworkGBps))
	}
	parts = append(parts, fmt.Sprintf("PCIe %.1f GB/s per GPU", d.PCIeGBps), fmt.Sprintf("memory copy %.0f GB/s", d.MemCopyGBps))
	fmt.Fprintf(tw, "  Derived\t%s\n", strings.Join(parts, "; "))
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, x := range r.WhatIfs {
		fmt.Fprintf(&b, "  What if: %s\n", l(x))
	}

	formulas := map[string]int{}
	var order []string
	ref := func(f string) string {
		i, ok := formulas[f]
		if !ok {
			order = append(order, f)
			i = len(order)
			formulas[f] = i
		}
		return fmt.Sprintf("[%d]", i)
	}
	b.WriteString("\nCollectives (nccl-tests conventions: out-of-place, size as -b/-e, busbw = algbw × factor):\n\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	found := r.AsFound
	head := "  COLLECTIVE\tSIZE\tALGORITHM\tPROTO\tTIME\tALGBW GB/s\tBUSBW GB/s\tINTERVAL\tBOTTLENECK\tREGIME\tFORMULA"
	if found != nil {
		head += "\tAS FOUND BUSBW"
	}
	fmt.Fprintln(tw, head)
	star := false
	seenClass := map[string]bool{}
	var classes []Interval
	for _, p := range r.Collectives {
		algo := string(p.Algorithm)
		if p.Best && hasAlternatives(r.Collectives, p) {
			algo += " *"
			star = true
		}
		if p.Loose {
			algo += " (loose)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%s\t%s\t%s\t%s", p.Collective, collective.FormatSize(uint64(p.Bytes)), algo, p.Protocol,
			FormatTime(p.TimeUS), p.AlgBW, p.BusBW, intervalText(p), p.Bottleneck, p.Regime, ref(p.Formula))
		if c := p.Interval.Class; c != "" && !seenClass[c] {
			seenClass[c] = true
			classes = append(classes, p.Interval)
		}
		if found != nil {
			v := "-"
			if q, ok := found.counterpart(p); ok {
				v = fmt.Sprintf("%.2f (%s)", q.BusBW, q.Algorithm)
			}
			fmt.Fprintf(tw, "\t%s", v)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(classes) > 0 {
		b.WriteString("\nIntervals (where a healthy run lies, from the measured runs of each class; docs/model.md):\n")
		for _, iv := range classes {
			fmt.Fprintf(&b, "  %s: ±%.0f%%, %s\n", iv.Class, 100*iv.HalfWidth, iv.Basis)
		}
	}
	if len(r.Copies) > 0 {
		b.WriteString("\nCopies and perftest (large transfers):\n\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		head := "  TEST\tEXPECTED\tBOTTLENECK\tFORMULA\tWHAT"
		if found != nil {
			head = "  TEST\tEXPECTED\tAS FOUND\tBOTTLENECK\tFORMULA\tWHAT"
		}
		fmt.Fprintln(tw, head)
		for _, c := range r.Copies {
			v := fmt.Sprintf("%.2f GB/s", c.GBps)
			if c.Gbps > 0 {
				v += fmt.Sprintf(" (%.1f Gb/s)", c.Gbps)
			}
			what := c.Description
			if c.Loose {
				what += " (estimate, judged loosely)"
			}
			if found != nil {
				f := "-"
				for _, fc := range found.Copies {
					if fc.Test == c.Test {
						f = fmt.Sprintf("%.2f GB/s", fc.GBps)
					}
				}
				v += "\t" + f
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Test, v, c.Bottleneck, ref(c.Formula), what)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if o.Formulas {
		b.WriteString("\nFormulas (S: size in bytes, n: ranks, g: GPUs per node, N: nodes; α from NCCL's tuning constants):\n")
		for i, f := range order {
			fmt.Fprintf(&b, "  [%d] %s\n", i+1, f)
		}
	} else if len(order) > 0 {
		fmt.Fprintf(&b, "\nFormulas: the tables' [1]–[%d]; --formulas prints them (and --format json holds them).\n", len(order))
	}
	m := r.Margin
	fmt.Fprintf(&b, "\nJudging: bandwidth-regime results pass at ≥ %.0f%% of expected, warn at ≥ %.0f%%, fail below;", m.Pass*100, m.Warn*100)
	if m.LoosePass == 0 {
		b.WriteString(" latency-bound and transition results, and estimates, are not judged (skip).\n")
	} else {
		fmt.Fprintf(&b, " latency-bound and transition results, and estimates, pass at ≥ %.0f%%, warn at ≥ %.0f%%.\n", m.LoosePass*100, m.LooseWarn*100)
	}
	b.WriteString("A bandwidth-regime result within its interval passes: where an interval is wider than the margin, the pass line drops to its lower edge and the warn line one half-width below that.\n")
	if star {
		b.WriteString("* the fastest algorithm: the one a measurement is judged against.\n")
	}
	notes := s.Notes
	if found != nil {
		for _, n := range found.System.Notes {
			notes = append(notes, "as found: "+n)
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "  - %s\n", l(n))
		}
	}
	_, err := io.WriteString(w, printable.Text(b.String()))
	return err
}

// counterpart is the prediction of r for what p predicts: the fastest
// algorithm where p is the fastest, else the same algorithm and protocol.
func (r *Report) counterpart(p Prediction) (Prediction, bool) {
	for _, q := range r.Collectives {
		if q.Collective != p.Collective || q.Bytes != p.Bytes {
			continue
		}
		if p.Best && q.Best || !p.Best && q.Algorithm == p.Algorithm && q.Protocol == p.Protocol {
			return q, true
		}
	}
	return Prediction{}, false
}

func hasAlternatives(ps []Prediction, p Prediction) bool {
	for _, q := range ps {
		if q.Collective == p.Collective && q.Bytes == p.Bytes && q.Algorithm != p.Algorithm {
			return true
		}
	}
	return false
}

// intervalText is a prediction's interval for the table: busbw, or algbw
// for one rank (busbw 0); "- (loose)" for a prediction judged loosely,
// which has none.
func intervalText(p Prediction) string {
	iv := p.Interval
	if iv.Class == "" {
		return "- (loose)"
	}
	if p.Ranks == 1 {
		return fmt.Sprintf("%.0f–%.0f algbw (±%.0f%%)", iv.LowAlgBW, iv.HighAlgBW, 100*iv.HalfWidth)
	}
	return fmt.Sprintf("%.0f–%.0f (±%.0f%%)", iv.LowBusBW, iv.HighBusBW, 100*iv.HalfWidth)
}
