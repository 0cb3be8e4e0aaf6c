package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/profile"
	"github.com/gdrcheck/gdrcheck/internal/rendezvous"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// RDMAOptions are bench rdma's.
type RDMAOptions struct {
	Plan        rdma.Options
	DryRun      bool
	PerftestDir string
	Out         string
	Timeout     time.Duration // per run (server and client)
	Judging     rdma.Judging
	// Job makes a cross-node run one rank of a job (nil: no launcher and
	// no --rank/--world-size).
	Job *JobOptions
	// ServerAddr is where the partner's clients reach this rank's servers
	// ("": this host's address on the network that reaches rank 0).
	ServerAddr string
	// Profile is the site profile (--expect; nil: none): with
	// gdr.required: false, a node with nothing to test is not a failure.
	Profile *profile.Profile
}

// RDMADoc is bench rdma's document: the plan, and what each pair measured.
type RDMADoc struct {
	Plan  *rdma.Plan        `json:"plan"`
	Pairs []rdma.PairResult `json:"pairs,omitempty"`
	Out   string            `json:"out,omitempty"`
	// Job is a cross-node run's: rank 0's has every rank's part, another
	// rank's its own.
	Job *RDMAJob `json:"job,omitempty"`
}

// RDMAJob is a cross-node run's job: who ran, what each rank saw, which
// ranks failed.
type RDMAJob struct {
	Launcher   string               `json:"launcher"`
	WorldSize  int                  `json:"world_size"`
	Rank       int                  `json:"rank"`
	Rendezvous string               `json:"rendezvous"`
	Ranks      []rdma.RankPart      `json:"ranks"`
	Failures   []rendezvous.Failure `json:"failures,omitempty"`
}

// PlanRDMA discovers the node behind n.Root (live or a snapshot), reads its
// registration path and plans the tests.
func PlanRDMA(ctx context.Context, n NodeOptions, o rdma.Options) (*rdma.Plan, error) {
	r, cleanup, h, err := openNode(ctx, n)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	f := sysinfo.CollectRegistration(ctx, r, sysinfo.Options{})
	var reg rdma.Registration
	reg.PeerMem, reg.DMABuf, reg.Known, reg.Why = checks.Registration(&checks.Env{Host: h, Facts: f})
	o.Registration = reg
	p, err := rdma.Build(h, o, RDMAModel)
	if err != nil {
		return nil, toolErr(err)
	}
	return p, nil
}

// RDMAModel is a pair's expectation from the performance model, where the
// model's node-wide NIC (rate, link layer) and GPU path fit the pair: the
// model's ib_write_bw figures for host and GPU memory.
func RDMAModel(h *topology.Host, e *rdma.Entry) (rdma.Expectation, bool) {
	if e.Runs0Test() == rdma.WriteLat {
		return rdma.Expectation{}, false
	}
	s, err := model.FromHost(h)
	if err != nil || s.NICRateGbps != e.RateGbps || s.NICLinkLayer != e.LinkLayer || e.RateGbps == 0 {
		return rdma.Expectation{}, false
	}
	l, _, err := level.Parse(e.Level)
	if err != nil {
		return rdma.Expectation{}, false
	}
	// The model's GPU path is the node's: a pair placed otherwise gets the
	// line rate only.
	near := l == level.PIX || l == level.PXB
	if near != (s.GDR && !s.NICRemoteSocket) {
		return rdma.Expectation{}, false
	}
	hostX, err1 := model.ExpectCopy(s, model.PerftestWriteHost)
	gpuX, err2 := model.ExpectCopy(s, model.PerftestWriteCUDA)
	if err1 != nil || err2 != nil {
		return rdma.Expectation{}, false
	}
	return rdma.Expectation{LineGbps: e.RateGbps, HostGbps: hostX.Gbps, GPUGbps: gpuX.Gbps,
		Source: "the model (ib_write_bw: host " + hostX.Formula + "; GPU " + gpuX.Formula + ")"}, true
}

// BenchRDMA plans and, unless o.DryRun, runs and judges the tests; it
// returns the envelope (gdrcheck.bench-rdma/v1) and the folder of the raw
// outputs and results.json ("" on a dry run). A node with nothing to test
// (no RDMA NIC, no GPU) gives one result: a fail (exit 1: no GPU Direct
// RDMA path was measured), a skip when the site profile says the node is
// not meant for GDR (gdr.required: false).
func (s *Session) BenchRDMA(ctx context.Context, n NodeOptions, o RDMAOptions) (*report.Envelope, string, error) {
	started := s.Now()
	p, err := PlanRDMA(ctx, n, o.Plan)
	if err != nil {
		return nil, "", err
	}
	doc := &RDMADoc{Plan: p}
	if len(p.Entries) == 0 {
		why := "no GPU–NIC pair to test"
		if len(p.Notes) > 0 {
			why = p.Notes[0]
		}
		r := result.Result{ID: rdma.ID, Status: result.Fail, Subject: "node", Reason: "NothingToTest",
			Message: why + ": no GPU Direct RDMA path was measured",
			Remedy:  "run bench rdma on a node with RDMA NICs and GPU memory registration (gdr.kernel-module); if this node is not meant for GPU Direct RDMA, say so in the site profile (gdr: {required: false}) and pass it with --expect"}
		switch required, stated := o.Profile.GDRRequired(); {
		case stated && !required:
			r.Status, r.Message, r.Remedy = result.Skip, why+" (the site profile says gdr.required: false)", ""
		case o.DryRun:
			// A plan measures nothing either way: it says so, and fails
			// nothing.
			r.Status, r.Message = result.Skip, why
		}
		rs := []result.Result{r}
		return s.Envelope("bench-rdma", started, rs, doc), "", judged(rs)
	}
	if o.DryRun {
		return s.Envelope("bench-rdma", started, []result.Result{}, doc), "", nil
	}
	if err := requireLive(n.Root); err != nil {
		return nil, "", fmt.Errorf("bench rdma: %w; --dry-run plans from any root", err)
	}
	if p.Mode == rdma.ModeCrossNode {
		return s.benchRDMACross(ctx, started, p, o)
	}
	dir := s.OutDir(o.Out, "bench-rdma")
	doc.Out = dir
	prs, runErr := bench.RunRDMA(ctx, p, bench.RDMAOptions{PerftestDir: o.PerftestDir, Out: dir, Timeout: o.Timeout})
	doc.Pairs = prs
	if runErr != nil && !errors.Is(runErr, context.Canceled) && !errors.Is(runErr, context.DeadlineExceeded) {
		return nil, dir, toolErr(runErr)
	}
	env, err := s.judgeRDMA(started, doc, dir, o.Judging, runErr)
	return env, dir, err
}

// judgeRDMA judges doc.Pairs (j, or rdma.DefaultJudging when j is unset),
// writes the envelope to results.json under dir, and says how the command
// ends: a failed write is a tool error; then runErr (the run was
// interrupted); then a result in error; then the verdict (judged).
func (s *Session) judgeRDMA(started time.Time, doc *RDMADoc, dir string, j rdma.Judging, runErr error) (*report.Envelope, error) {
	if j.Pass == 0 {
		j = rdma.DefaultJudging
	}
	rs := rdma.Judge(doc.Pairs, j)
	env := s.Envelope("bench-rdma", started, rs, doc)
	if err := WriteAtomic(filepath.Join(dir, "results.json"), env); err != nil {
		return env, toolErr(err)
	}
	if runErr != nil {
		return env, runErr
	}
	for _, r := range rs {
		if r.Status == result.Error {
			return env, failure("%s %s: %s", r.ID, r.Subject, r.Message)
		}
	}
	return env, judged(rs)
}

// RDMANothing is the one line bench rdma prints on a node with nothing to
// test ("" when there is something).
func RDMANothing(env *report.Envelope) string {
	doc, _ := env.Data.(*RDMADoc)
	if doc == nil || doc.Plan == nil || len(doc.Plan.Entries) > 0 {
		return ""
	}
	return "bench rdma: " + strings.Join(doc.Plan.Notes, "; ")
}
