package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
)

// VariantHierarchical names the hierarchical all-reduce's result: a
// reduce-scatter inside the node, an all-reduce across the nodes per rail,
// an all-gather inside the node, on the same data as the flat all-reduce.
const VariantHierarchical = "hierarchical"

// HierColors are this rank's two groups for the hierarchical all-reduce:
// its node (Intra) and its rail (Rail).
type HierColors struct {
	Intra, Rail int
}

// hierRun is the hierarchical all-reduce's communicators.
type hierRun struct {
	intra, rail *nccl.Comms
}

// splitHier makes the node's and the rail's communicators of the job's
// (every rank calls both splits, in this order).
func (r *ncclRun) splitHier(ctx context.Context, hc HierColors) error {
	intra, err := r.comms.Split(ctx, hc.Intra, r.comms.Rank(0), r.cfg.InitTimeout)
	if err != nil {
		return err
	}
	r.hier = &hierRun{intra: intra}
	rail, err := r.comms.Split(ctx, hc.Rail, r.comms.Rank(0), r.cfg.InitTimeout)
	if err != nil {
		return err
	}
	r.hier.rail = rail
	return nil
}

// hierStep runs one hierarchical all-reduce of count elements from the
// send buffer into the receive buffer, each stage waited for before the
// next (the stages are on two communicators, each with its own stream).
func (r *ncclRun) hierStep(ctx context.Context, count uint64) error {
	h := r.hier
	m := uint64(h.intra.World())
	elt := r.cfg.DType.Size
	chunk := count / m
	bytes := count * elt
	mine := r.recv[0].Add(uint64(h.intra.Rank(0)) * chunk * elt)
	base := nccl.Op{DType: r.cfg.DType.NCCL, RedOp: r.cfg.Op.NCCL, Elt: elt, Count: chunk}
	rs, ar, ag := base, base, base
	rs.Coll, rs.TotalBytes, rs.MaxBytes = collective.ReduceScatter, bytes, bytes
	ar.Coll, ar.TotalBytes, ar.MaxBytes = collective.AllReduce, chunk*elt, chunk*elt
	// In place: this rank's chunk is already where the gather puts it.
	ag.Coll, ag.InPlace, ag.SendInplaceOff, ag.TotalBytes, ag.MaxBytes = collective.AllGather, true, chunk*elt, bytes, bytes
	stages := []struct {
		name    string
		comms   *nccl.Comms
		op      nccl.Op
		buffers func() error
	}{
		{"reduce-scatter in the node", h.intra, rs, func() error { return h.intra.SetBuffers(0, r.send[0], mine) }},
		{"all-reduce on the rail", h.rail, ar, func() error { return h.rail.SetBuffers(0, mine, mine) }},
		{"all-gather in the node", h.intra, ag, func() error { return h.intra.SetBuffers(0, r.recv[0], r.recv[0]) }},
	}
	for _, s := range stages {
		r.doing = fmt.Sprintf("hierarchical all_reduce at %d bytes: %s", bytes, s.name)
		if err := s.buffers(); err != nil {
			return err
		}
		if err := s.comms.Enqueue(ctx, s.op, 0, 1); err != nil {
			return err
		}
		if err := s.comms.Wait(ctx, r.cfg.OpTimeout); err != nil {
			return err
		}
	}
	return nil
}

// hierarchical measures the hierarchical all-reduce at every size, as the
// flat one is measured (warm-up, -n timed iterations by the host clock,
// -c checked runs against the same expected values), out of place only.
// Each size's count is rounded down to a multiple of the node's ranks.
func (r *ncclRun) hierarchical(ctx context.Context) (NCCLResult, error) {
	c := collective.AllReduce
	n := r.comms.World()
	m := uint64(r.hier.intra.World())
	elt := r.cfg.DType.Size
	res := NCCLResult{Collective: c, Ranks: n, Variant: VariantHierarchical}
	var sums busSums
	for _, size := range Sizes(r.cfg.MinBytes, r.cfg.MaxBytes, r.cfg.StepFactor, r.cfg.StepBytes) {
		count := size / elt / m * m
		if count == 0 {
			continue
		}
		l := collective.Layout{Count: count, SendCount: count, RecvCount: count, Bytes: count * elt}
		row := collective.Row{Bytes: l.Bytes, Count: count, Type: r.cfg.DType.Name, RedOp: r.cfg.Op.Name, Root: new(-1)}
		meas := &collective.Measure{}
		row.OutOfPlace = meas
		err := func() error {
			for range r.cfg.Warmup {
				if err := r.hierStep(ctx, count); err != nil {
					return err
				}
			}
			t0 := time.Now()
			for range r.cfg.Iters {
				if err := r.hierStep(ctx, count); err != nil {
					return err
				}
			}
			delta := time.Since(t0).Seconds() / float64(r.cfg.Iters)
			meas.TimeUS = delta * 1e6
			meas.AlgBW, meas.BusBW = c.Bandwidths(count, elt, delta, n)
			doing := fmt.Sprintf("hierarchical all_reduce at %d bytes (data init)", l.Bytes)
			return r.check(ctx, c, l, false, r.cfg.Check, doing, meas, func() error { return r.hierStep(ctx, count) })
		}()
		if err != nil {
			err = r.guard(err)
			res.Rows = append(res.Rows, row)
			res.Error = err.Error()
			return res, err
		}
		sums.add(&res, meas)
		r.emit(&res, row)
	}
	sums.average(&res)
	return res, nil
}
