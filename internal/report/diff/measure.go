package diff

import (
	"fmt"
	"math"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
)

// sample is one measurement as compared: its key, the number, and what
// decides its noise.
type sample struct {
	subject string
	unit    string
	v       float64
	// noisy marks a collective the model called latency-bound.
	noisy bool
	test  string // a copy's test, which decides its noise
	// spread is |in-place − out-of-place| / out-of-place where both were
	// measured on more than one rank, else 0.
	spread float64
	wrong  int64
	failed string // a copy that did not validate, or errored
	timeUS float64
}

// latency reports whether the model called a row latency-bound.
func latencyByModel(m dossier.CollectiveMeasurement) bool { return m.Bottleneck == "latency" }

// collectiveSamples keys nccl rows by their Key (collective, size and
// ranks). On one rank bus bandwidth is 0 by definition and NCCL does
// nothing in place: algorithm bandwidth is compared there, without a
// spread.
func collectiveSamples(ms []dossier.CollectiveMeasurement) map[string]sample {
	out := map[string]sample{}
	for _, m := range ms {
		k := m.Key()
		v, unit := m.Compared()
		s := sample{subject: k, unit: unit, v: v, wrong: m.Wrong, timeUS: m.TimeUS, noisy: latencyByModel(m)}
		if unit == dossier.UnitBusBW && m.InPlaceBusBW > 0 && m.BusBW > 0 {
			s.spread = math.Abs(m.InPlaceBusBW-m.BusBW) / m.BusBW
		}
		out[k] = s
	}
	return out
}

// copySamples keys copies by their Key, which holds the size: a copy of
// another size is another measurement.
func copySamples(ms []dossier.CopyMeasurement) map[string]sample {
	out := map[string]sample{}
	for _, m := range ms {
		k := m.Key()
		s := sample{subject: k, unit: dossier.UnitCopy, v: m.GBps, test: m.Test}
		if !m.Valid {
			s.failed = "did not validate"
		}
		if m.Error != "" {
			s.failed = m.Error
		}
		out[k] = s
	}
	return out
}

// rdmaSamples are the RDMA runs by key (their bandwidth; a latency run
// has none to compare).
func rdmaSamples(ms []dossier.RDMAMeasurement) map[string]sample {
	out := map[string]sample{}
	for _, m := range ms {
		k := m.Key()
		out[k] = sample{subject: k, unit: dossier.UnitRDMA, v: m.Gbps, test: "rdma", failed: m.Error}
	}
	return out
}

func (c *comparer) measurements(o, n *dossier.Report) {
	c.compareSamples(collectiveSamples(o.Measurements.Collectives), collectiveSamples(n.Measurements.Collectives), true)
	c.compareSamples(copySamples(o.Measurements.Copies), copySamples(n.Measurements.Copies), false)
	c.compareSamples(rdmaSamples(o.Measurements.RDMA), rdmaSamples(n.Measurements.RDMA), false)
}

// noise is the relative move a pair of samples may make unnoticed, and
// the words for it.
func (c *comparer) noise(a, b sample, collective bool) (float64, string) {
	var floor float64
	var class string
	if collective {
		t := math.Min(a.timeUS, b.timeUS)
		if t <= 0 {
			t = math.Max(a.timeUS, b.timeUS)
		}
		floor, class = c.opts.Collective(t, a.noisy || b.noisy)
	} else {
		floor, class = c.opts.Copy(a.test)
	}
	if s := math.Max(a.spread, b.spread); s > floor {
		return s, fmt.Sprintf("%s; widened to the in-place/out-of-place spread %.1f%%", class, s*100)
	}
	return floor, class
}

func (c *comparer) compareSamples(om, nm map[string]sample, collective bool) {
	for _, k := range sortedKeys(om, nm) {
		a, okA := om[k]
		b, okB := nm[k]
		switch {
		case !okB:
			c.d.OnlyOld = append(c.d.OnlyOld, k)
			continue
		case !okA:
			c.d.OnlyNew = append(c.d.OnlyNew, k)
			continue
		}
		c.d.Compared++
		if b.wrong > 0 && a.wrong == 0 {
			c.add(Change{Section: SectionMeasurements, Subject: k, Field: "wrong", Old: "0", New: fmt.Sprint(b.wrong), Effect: Worse, Reason: "the collective returned wrong data"})
		}
		if b.failed != "" && a.failed == "" {
			why := "the copy failed"
			if b.unit == dossier.UnitRDMA {
				why = "the RDMA run measured nothing"
			}
			c.add(Change{Section: SectionMeasurements, Subject: k, Field: "valid", Old: "valid", New: b.failed, Effect: Worse, Reason: why})
			continue
		}
		if a.failed != "" || b.failed != "" || !(a.v > 0) {
			continue // nothing measured to compare (a latency copy, a failed run)
		}
		if !(b.v > 0) { // 0 or NaN where OLD measured: not a pass
			c.d.Moved++
			c.add(Change{Section: SectionMeasurements, Subject: k, Field: a.unit, Old: num(a.v), New: "(none)", Effect: Worse, Reason: "measured in OLD, no bandwidth in NEW"})
			continue
		}
		floor, class := c.noise(a, b, collective)
		ratio := b.v / a.v
		if ratio <= 1+floor && ratio >= 1/(1+floor) {
			continue
		}
		c.d.Moved++
		effect, dir := Worse, "dropped"
		if ratio > 1 {
			effect, dir = Better, "rose"
		}
		c.add(Change{
			Section: SectionMeasurements, Subject: k, Field: a.unit,
			Old: num(a.v), New: num(b.v), Delta: pct(a.v, b.v), Effect: effect,
			Reason: fmt.Sprintf("%s beyond its noise of ×%s either way (%s)", dir, num(1+floor), class),
		})
	}
}
