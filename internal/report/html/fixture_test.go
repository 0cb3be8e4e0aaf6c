package html

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

var at = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// plant says how a fixture's synthetic measurements depart from the
// model: each is measured at the model's expectation times a factor
// (healthy: 0.92), and the planted ones lower.
type plant struct {
	// collective is scaled by factor at sizes of at least fromBytes.
	collective collective.Collective
	fromBytes  uint64
	factor     float64
	// copyTest on GPU copyGPU (peer copyPeer, -1 none) is scaled by copyFactor.
	copyTest          string
	copyGPU, copyPeer int
	copyFactor        float64
	// interrupted makes the dossier incomplete.
	interrupted string
	// log is an NCCL log (under internal/analyze/ncclog/testdata) of the
	// run; "" none.
	log string
}

// fixtureReport builds the dossier of a node from its root: discovery,
// every check, and, when the node has GPUs the model knows, synthetic
// measurements at a fraction of the model's expectation (see plant),
// judged by the benchmarks' own judges.
func fixtureReport(t *testing.T, root machine.Root, p plant) *dossier.Report {
	t.Helper()
	ctx := context.Background()
	h, err := discover.Discover(ctx, discover.WithRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	facts := sysinfo.Collect(ctx, root, h, sysinfo.Options{})
	env := &checks.Env{Host: h, Facts: facts, Now: at, XidWindow: 24 * time.Hour}
	rep := checks.Run(ctx, env, checks.All(), checks.Options{})
	// Durations vary run to run: the golden files hold none.
	rep.DurationMS, h.DiscoveryMS = 0, 0
	for i := range rep.Results {
		rep.Results[i].DurationMS = 0
	}
	for i := range rep.Checks {
		rep.Checks[i].DurationMS = float64(10 * (i + 1))
	}
	s := h.Summarize()
	results := append([]result.Result(nil), rep.Results...)
	m := dossier.Measurements{Collectives: []dossier.CollectiveMeasurement{}, Copies: []dossier.CopyMeasurement{}, Curves: []dossier.Curve{}}
	var runs []dossier.NCCLRun
	phases := []dossier.Phase{{Name: "discovery", Status: dossier.PhaseDone, StartedAt: at, DurationMS: 12}, {Name: "checks", Status: dossier.PhaseDone, StartedAt: at, DurationMS: 40}}
	if sys, err := model.FromHost(h); err == nil && len(h.GPUs) > 0 {
		basis := model.Healthy(sys, h, model.Want{})
		m.Basis, m.Pass = bench.NewExpected(basis, "").Line(), 0.85
		nres := measureCollectives(basis, p, len(h.GPUs))
		results = append(results, bench.JudgeNCCL(basis, nres, m.Pass)...)
		for _, r := range nres {
			curve := dossier.Curve{Collective: string(r.Collective), Ranks: r.Ranks}
			for _, row := range r.Rows {
				x, _ := model.Expect(basis.Should, r.Collective, float64(row.Bytes))
				margin := model.DefaultMargin()
				margin.Pass = m.Pass
				st, frac := x.Judge(row.OutOfPlace.AlgBW, margin)
				exp := x.BusBW
				m.Collectives = append(m.Collectives, dossier.CollectiveMeasurement{ID: fmt.Sprintf("nccl.%s.%d", r.Collective, row.Bytes),
					Collective: string(r.Collective), Ranks: r.Ranks, Bytes: row.Bytes, TimeUS: row.OutOfPlace.TimeUS, AlgBW: row.OutOfPlace.AlgBW,
					BusBW: row.OutOfPlace.BusBW, InPlaceBusBW: row.InPlace.BusBW, ExpectedBusBW: &exp, Fraction: &frac, Bottleneck: string(x.Bottleneck),
					Status: st, Run: string(r.Collective)})
				curve.Points = append(curve.Points, dossier.CurvePoint{Bytes: row.Bytes, BusBW: x.BusBW, AlgBW: x.AlgBW, Algorithm: string(x.Algorithm)})
			}
			m.Curves = append(m.Curves, curve)
		}
		gpus := map[int]*topology.GPU{}
		for _, g := range h.GPUs {
			gpus[g.Index] = g
		}
		cres := measureCopies(basis, h, p)
		judged := bench.JudgeCopies(basis, gpus, cres, m.Pass)
		results = append(results, judged...)
		for _, c := range cres {
			m.Copies = append(m.Copies, copyMeasurement(basis, gpus, c, judged))
		}
		phases = append(phases, dossier.Phase{Name: "bench.copy", Status: dossier.PhaseDone, StartedAt: at, DurationMS: 3000},
			dossier.Phase{Name: "bench.nccl", Status: dossier.PhaseDone, StartedAt: at, DurationMS: 20000})
		if p.log != "" {
			f, err := os.Open(filepath.Join("../../analyze/ncclog/testdata", p.log))
			if err != nil {
				t.Fatal(err)
			}
			lrep, lres, err := ncclog.Analyze(p.log, f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			result.SetSource(lres, "nccl-log")
			results = append(results, lres...)
			runs = append(runs, dossier.NewNCCLRun("all_reduce", []string{"raw/nccl/" + p.log}, lrep, lres))
		}
	} else {
		phases = append(phases, dossier.Phase{Name: "bench.nccl", Status: dossier.PhaseSkipped, Reason: "no GPU the model knows", StartedAt: at})
	}
	if runs == nil {
		runs = []dossier.NCCLRun{}
	}
	verdict := checks.Judge(results, h.Hostname, at, false)
	doc := dossier.Document{Complete: p.interrupted == "", Interrupted: p.interrupted, Profile: "quick", Verdict: verdict,
		Inventory: dossier.NewInventory(h, facts), Topology: dossier.NewTopology(h, s, results, m, runs, nil),
		Checks: dossier.Checks{Counts: rep.Counts, DurationMS: rep.DurationMS, Checks: rep.Checks}, Measurements: m, NCCL: runs, Phases: phases,
		Artifacts: []dossier.Artifact{{Name: "report.json", Path: "report.json", Kind: "report", Bytes: 123456, SHA256: "5d41402abc4b2a76b9719d911017c592ae2f1b3bbdbdc5b9c8ef1e7f2d1a9c10"}}}
	if p.log != "" {
		doc.Artifacts = append(doc.Artifacts, dossier.Artifact{Name: p.log, Path: "raw/nccl/" + p.log, Kind: "nccl-log", Bytes: 20480, SHA256: "0c1d2e3f405162738495a6b7c8d9eaf0b1c2d3e4f5061728394a5b6c7d8e9f00"})
	}
	return &dossier.Report{Schema: dossier.Schema, Run: report.Run{Tool: report.Tool{Version: "test", Commit: "abc123"}, Host: "testhost",
		StartedAt: at, EndedAt: at.Add(95 * time.Second), Command: []string{"gdrcheck", "run", "--out", "dossier"}}, Results: results, Document: doc}
}

// measureCollectives are the collectives from 8 B to 1 GiB by factors of
// 4, measured at 0.92 of the model's expectation (p's planted factor where
// it applies), in place 2% below out of place.
func measureCollectives(b model.Basis, p plant, ranks int) []bench.NCCLResult {
	var out []bench.NCCLResult
	for _, c := range []collective.Collective{collective.AllReduce, collective.AllGather, collective.ReduceScatter, collective.AllToAll} {
		r := bench.NCCLResult{Collective: c, Ranks: ranks}
		for size := uint64(8); size <= 1<<30; size *= 4 {
			x, err := model.Expect(b.Should, c, float64(size))
			if err != nil {
				continue
			}
			f := 0.92
			if c == p.collective && size >= p.fromBytes {
				f = p.factor
			}
			alg := x.AlgBW * f
			bus := x.BusBW * f
			us := float64(size) / (alg * 1e3)
			zero := int64(0)
			r.Rows = append(r.Rows, collective.Row{Bytes: size, Count: size / 4, Type: "float", RedOp: "sum",
				OutOfPlace: &collective.Measure{TimeUS: us, AlgBW: alg, BusBW: bus, Wrong: &zero},
				InPlace:    &collective.Measure{TimeUS: us * 1.02, AlgBW: alg / 1.02, BusBW: bus / 1.02, Wrong: &zero}})
		}
		out = append(out, r)
	}
	return out
}

// measureCopies are every GPU's copies and every GPU pair's p2p copy at
// 0.92 of the model's expectation (p's planted one lower).
func measureCopies(b model.Basis, h *topology.Host, p plant) []bench.CopyResult {
	f := func(test string, dev, peer int) float64 {
		if test == p.copyTest && dev == p.copyGPU && peer == p.copyPeer {
			return p.copyFactor
		}
		return 0.92
	}
	tests := map[string]model.CopyTest{bench.CopyD2D: model.CopyDeviceLocal, bench.CopyH2DPinned: model.CopyH2DPinned,
		bench.CopyD2HPinned: model.CopyD2HPinned, bench.CopyBidirPinned: model.CopyBidirPinned}
	var out []bench.CopyResult
	for _, g := range h.GPUs {
		for _, test := range []string{bench.CopyD2D, bench.CopyH2DPinned, bench.CopyD2HPinned, bench.CopyBidirPinned} {
			x, err := model.ExpectCopy(b.Should, tests[test])
			if err != nil {
				continue
			}
			v := x.GBps * f(test, g.Index, -1)
			r := bench.CopyResult{Test: test, Dev: g.Index, Peer: -1, Bytes: 256 << 20, Iters: 10, Valid: true, GBps: v}
			switch test {
			case bench.CopyD2D:
				r.ReadWriteGBps, r.GBps = v, v/2
			case bench.CopyBidirPinned:
				r.GBps = 2 * v
			}
			out = append(out, r)
		}
	}
	for _, a := range h.GPUs {
		for _, c := range h.GPUs {
			if a == c {
				continue
			}
			t := model.CopyP2PNVLink
			if topology.NVLinksBetween(a, c) <= 0 && topology.NVLinksBetween(a, c) != -1 {
				t = model.CopyP2PPCIe
			}
			x, err := model.ExpectCopy(b.Should, t)
			if err != nil {
				continue
			}
			out = append(out, bench.CopyResult{Test: bench.CopyP2P, Dev: a.Index, Peer: c.Index, Bytes: 256 << 20, Iters: 10, Valid: true,
				GBps: x.GBps * f(bench.CopyP2P, a.Index, c.Index), Peered: true})
		}
	}
	return out
}

// copyMeasurement is the dossier's record of a copy: its judgement's
// status, and the expectation in the copy's own terms.
func copyMeasurement(b model.Basis, gpus map[int]*topology.GPU, c bench.CopyResult, judged []result.Result) dossier.CopyMeasurement {
	id := fmt.Sprintf("copy.%s.GPU%d", c.Test, c.Dev)
	subject := fmt.Sprintf("%s GPU%d", c.Test, c.Dev)
	if c.Peer >= 0 {
		id = fmt.Sprintf("copy.%s.GPU%d-GPU%d", c.Test, c.Dev, c.Peer)
		subject = fmt.Sprintf("%s GPU%d->GPU%d", c.Test, c.Dev, c.Peer)
	}
	cm := dossier.CopyMeasurement{ID: id, Test: c.Test, Device: c.Dev, Peer: c.Peer, Bytes: c.Bytes, GBps: c.GBps, Valid: c.Valid, Status: result.Unknown}
	for _, r := range judged {
		if r.Subject == subject {
			cm.Status = r.Status
		}
	}
	one := map[string]model.CopyTest{bench.CopyD2D: model.CopyDeviceLocal, bench.CopyH2DPinned: model.CopyH2DPinned,
		bench.CopyD2HPinned: model.CopyD2HPinned, bench.CopyBidirPinned: model.CopyBidirPinned}
	t, ok := one[c.Test]
	if c.Test == bench.CopyP2P {
		t, ok = model.CopyP2PNVLink, true
		if n := topology.NVLinksBetween(gpus[c.Dev], gpus[c.Peer]); n == 0 {
			t = model.CopyP2PPCIe
		}
	}
	if !ok {
		return cm
	}
	x, err := model.ExpectCopy(b.Should, t)
	if err != nil {
		return cm
	}
	exp, scale := x.GBps, 1.0
	switch c.Test {
	case bench.CopyD2D:
		scale = 0.5 // the record's GBps counts one way; the model read + write
	case bench.CopyBidirPinned:
		scale = 2 // both directions; the model one
	}
	exp *= scale
	frac := c.GBps / exp
	cm.ExpectedGBps, cm.Fraction = &exp, &frac
	if x.PeakGBps > 0 {
		cm.LimitGBps, cm.Limit = x.PeakGBps*scale, x.Limit
	}
	return cm
}

// fixtures are the dossiers the golden files are rendered from.
func fixtures(t *testing.T) map[string]*dossier.Report {
	t.Helper()
	out := map[string]*dossier.Report{}
	out["hgx-h200-healthy"] = fixtureReport(t, fakehost.Root(t, "../../../testdata/hosts/hgx-h200-8gpu-10nic.host"),
		plant{log: "synthetic-nvswitch-one-gpu-degraded.txt"})
	out["a100-nvlink-degraded-failing"] = fixtureReport(t, fakehost.Root(t, "../../../testdata/hosts/a100sxm-4gpu-nvlink-degraded.host"),
		plant{collective: collective.AllReduce, fromBytes: 1 << 20, factor: 0.45, copyTest: bench.CopyH2DPinned, copyGPU: 2, copyPeer: -1, copyFactor: 0.35,
			interrupted: "interrupted (SIGINT) during bench.nccl"})
	out["epyc-genoa-4gpu-pcie"] = fixtureReport(t, fakehost.Root(t, "../../../testdata/hosts/epyc-genoa-4gpu-pcie.host"), plant{})
	out["no-gpu"] = fixtureReport(t, fakehost.Root(t, "../../checks/testdata/no-gpu.host"), plant{})
	root, cleanup, err := snapshot.OpenContext(context.Background(), "../../../testdata/snapshots/h200x1-live-gdrcheck.tgz")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	out["h200x1-live-snapshot"] = fixtureReport(t, root, plant{log: "h200x1-vm-single-rank-socket-fallback-all-subsys.txt"})
	return out
}
