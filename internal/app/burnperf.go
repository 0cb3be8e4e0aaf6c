package app

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// burnThroughput is each window's bandwidths, for burn.JudgeBandwidth:
// every copy's (as the bench reports it) and every NCCL collective's bus
// bandwidth, each judged against the model where the bench has an
// expectation — through the bench's own judging (bench.JudgeCopyRows,
// bench.JudgeRows) on the basis a bench run on these GPUs has (the node
// h as it should be, the site profile left out). It reads only the
// burn-in's document and the node, so a replay judges the same. The
// results are the model's absence (burn.model unknown), once.
func burnThroughput(h *topology.Host, doc *BurnDoc) ([][]burn.Throughput, []result.Result) {
	g := &GPUs{Host: h, BusIDs: map[int]string{}, GPUs: map[int]*topology.GPU{}}
	for _, d := range doc.GPUs {
		g.Devices = append(g.Devices, d.Device)
		g.BusIDs[d.Device] = d.Address
		g.GPUs[d.Device] = h.GPUByAddress(d.Address)
	}
	var basis *model.Basis
	var out []result.Result
	if b, err := g.basis(model.Want{}); err == nil {
		basis = &b
	} else if len(doc.Work) > 0 {
		out = append(out, result.Result{ID: burn.IDModel, Source: burn.Source, Status: result.Unknown, Subject: "node", Reason: "NoModel",
			Message: "no expected performance to judge the burn-in's bandwidths against: " + err.Error()})
	}
	pass := model.DefaultMargin().Pass
	name := func(d int) string {
		if a := g.BusIDs[d]; a != "" {
			return a
		}
		return fmt.Sprintf("CUDA device %d", d)
	}
	windows := make([][]burn.Throughput, 0, len(doc.Work))
	for _, w := range doc.Work {
		var ts []burn.Throughput
		judged := bench.JudgeCopyRows(basis, g.GPUs, w.Copies, pass)
		for i, r := range w.Copies {
			subject := name(r.Dev)
			if r.Peer >= 0 {
				subject += ">" + name(r.Peer)
			}
			t := burn.Throughput{Test: r.Test, Subject: subject, GBps: r.GBps, Measured: r.Error == "", Why: r.Error}
			if j := judged[i]; j.Expected != nil && t.Measured {
				t.Model = &burn.ModelJudged{Measured: j.Measured, Expected: j.Expected.GBps, Status: j.Status, Ratio: j.Ratio,
					Basis: fmt.Sprintf("%s, limited by %s", j.Expected.Description, j.Expected.Bottleneck)}
			}
			ts = append(ts, t)
		}
		for _, c := range w.NCCL {
			t := burn.Throughput{Test: "nccl " + c.Collective, Subject: "node", GBps: c.Rate(), Measured: c.Error == "", Why: c.Error}
			if c.Row != nil && c.Row.OutOfPlace != nil && t.Measured {
				res := []bench.NCCLResult{{Collective: collective.Collective(c.Collective), Ranks: len(doc.GPUs), Rows: []collective.Row{*c.Row}}}
				if js := bench.JudgeRows(basis, res, pass); len(js) == 1 && js[0].Expected != nil {
					p := js[0].Expected
					t.Model = &burn.ModelJudged{Measured: c.Row.OutOfPlace.AlgBW, Expected: p.AlgBW, Status: js[0].Status, Ratio: js[0].Ratio,
						Basis: fmt.Sprintf("algbw at %s by %s, limited by %s", collective.FormatSize(c.Row.Bytes), p.Algorithm, p.Bottleneck)}
				}
			}
			ts = append(ts, t)
		}
		windows = append(windows, ts)
	}
	return windows, out
}
