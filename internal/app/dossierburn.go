package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
)

// BurnDir is the burn-in's folder in a dossier, among the raw outputs
// (listed and summed with them): burn.json and its samples, what
// `gdrcheck burn --replay` judges again.
var BurnDir = filepath.Join(dossier.RawDir, "burn")

// burnIn is the dossier's burn phase (profile burnin): the burn-in on the
// run's GPUs, its burn.json and samples under raw/burn/, and the dossier
// rewritten after every window with the burn section so far, so that a
// run stopped in its third hour leaves the windows it judged.
func (d *dossierRun) burnIn(ctx context.Context) (string, string) {
	if why := d.skipBench(); why != "" {
		return dossier.PhaseSkipped, why
	}
	nr := d.nr
	o := nr.burn
	if o.Warn == nil {
		o.Warn = d.o.Warn
	}
	dir := nr.s.OutDir(subdir(nr.out, BurnDir), "burn")
	// The dossier's own folder (CheckOut refused anyone else's before
	// the run): an earlier run's samples go.
	if err := prepareBurnDir(dir, true); err != nil {
		return dossier.PhaseFailed, err.Error()
	}
	root, cleanup, err := snapshot.OpenContext(ctx, nr.node.source())
	if err != nil {
		return dossier.PhaseFailed, err.Error()
	}
	defer cleanup()
	t := burnTarget{root: root, host: nr.host, gpus: nr.gpus, dir: dir, readTimeout: cmp.Or(nr.node.Timeout, burnReadTimeout)}
	t.rdma, t.rdmaNote = burnRDMAPlan(ctx, nr.node, nr.host, o)
	if o.NCCL && nr.ncclSetup != nil {
		// NCCL's debug log goes where the run's does (its settings are
		// read once per process); the burn's results beside burn.json.
		t.nccl = &NCCLSetup{Dir: filepath.Join(dir, "nccl"), Evidence: nr.ncclSetup.Evidence}
	}
	t.onWindow = func(env *report.Envelope) {
		d.takeBurn(env, dir)
		if err := d.saveUnfinished(fmt.Sprintf("%s under way (%d window(s) judged)", PhaseBurn, len(d.rep.Burn.Windows))); err != nil && d.o.Warn != nil {
			fmt.Fprintf(d.o.Warn, "gdrcheck: writing the dossier during the burn-in: %s\n", printable.Line(dossier.WithoutPath(err).Error()))
		}
	}
	env, err := nr.s.burnOn(ctx, t, o)
	if env != nil {
		d.takeBurn(env, dir)
	}
	var f *Failure
	switch {
	case err == nil:
		return dossier.PhaseDone, ""
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return dossier.PhaseInterrupted, "interrupted: the windows sampled are judged"
	case errors.As(err, &f) && !errors.Is(err, bench.ErrWatchdog):
		return dossier.PhaseDone, "" // a finding, in the results
	}
	return dossier.PhaseFailed, err.Error()
}

// takeBurn takes the burn-in's document as it stands: its verdicts and
// the dossier's burn section.
func (d *dossierRun) takeBurn(env *report.Envelope, dir string) {
	doc, ok := env.Data.(*BurnDoc)
	if !ok {
		return
	}
	d.burned = sourced(env.Results, burn.Source)
	d.rep.Burn = BurnSection(doc, d.rel(filepath.Join(dir, "burn.json")))
}

// BurnSection is the dossier's burn section of a burn-in's document: the
// work and the GPUs' sensors window by window, and every sampled device's
// counters per window (burn.Series.Timeline). path is burn.json's path in
// the dossier.
func BurnSection(doc *BurnDoc, path string) *dossier.Burn {
	b := &dossier.Burn{Duration: doc.Duration, Window: doc.Window, Complete: doc.Complete, Stopped: doc.Stopped, Path: path,
		Windows: []dossier.BurnWindow{}, Timeline: doc.Series.Timeline(), Notes: doc.Notes}
	if b.Timeline == nil {
		b.Timeline = []burn.TimelineRow{}
	}
	names := map[int]string{}
	byAddr := map[string]string{} // PCI address → "GPU3"
	for _, g := range doc.GPUs {
		names[g.Device] = cmp.Or(g.GPU, g.Address, fmt.Sprintf("CUDA device %d", g.Device))
		if g.GPU != "" {
			byAddr[g.Address] = g.GPU
		}
	}
	name := func(dev int) string { return cmp.Or(names[dev], fmt.Sprintf("CUDA device %d", dev)) }
	for _, w := range doc.Work {
		bw := dossier.BurnWindow{Index: w.Window, Name: doc.Schedule.Name(w.Window), Passes: w.Passes, Wrong: w.Wrong,
			Copies: []dossier.BurnRate{}, GPUs: w.Sensors, Errors: w.Errors}
		if w.Window >= 0 && w.Window < len(doc.Schedule.Windows) {
			sw := doc.Schedule.Windows[w.Window]
			bw.Start, bw.End = sw.Start, sw.End
			for _, t := range sw.Traffic {
				bw.Moved += t.Bytes
			}
		}
		for _, c := range w.Copies {
			gpu := name(c.Dev)
			if c.Peer >= 0 {
				gpu += ">" + name(c.Peer)
			}
			bw.Copies = append(bw.Copies, dossier.BurnRate{Name: c.Test, GPU: gpu, GBps: c.GBps, Wrong: c.Wrong, Error: c.Error})
		}
		for _, x := range w.RDMA {
			gpu := cmp.Or(byAddr[x.GPU], x.GPU)
			bw.RDMA = append(bw.RDMA, dossier.BurnRate{Name: "ib_write_bw " + x.Memory, GPU: fmt.Sprintf("%s>%s:%d", gpu, x.NIC, x.Port), GBps: x.Gbps / 8, Error: x.Error})
		}
		for _, c := range w.NCCL {
			bw.NCCL = append(bw.NCCL, dossier.BurnRate{Name: c.Collective, GBps: c.Rate(), Wrong: c.Wrong, Error: c.Error})
		}
		var on []string
		for _, a := range w.JobOn() {
			on = append(on, cmp.Or(byAddr[a], a))
		}
		for _, c := range w.Job {
			bw.Job = append(bw.Job, dossier.BurnRate{Name: c.Collective, GPU: strings.Join(on, ","), GBps: c.Rate(), Wrong: c.Wrong, Error: c.Error})
		}
		b.Windows = append(b.Windows, bw)
	}
	return b
}
