package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/launch"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/rendezvous"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// JobOptions make `bench nccl` one rank of a multi-process job.
type JobOptions struct {
	Job    launch.Job
	Secret []byte
	// JoinTimeout bounds the wait for every rank at the rendezvous.
	JoinTimeout time.Duration
	// Listen is where rank 0 listens ("": the rendezvous address).
	Listen string
	// Split groups the ranks into the communicators measured (all: one).
	Split launch.Split
	// Hierarchical also runs the hierarchical all-reduce (node, rail).
	Hierarchical bool
}

// RankDir is rank's output directory under a job's: rank 0 writes the
// job's results.json in dir itself, every other rank its own part (and
// NCCL's log) in dir/rank-N, so ranks sharing a file system never write
// the same file.
func RankDir(dir string, rank int) string {
	if rank == 0 {
		return dir
	}
	return filepath.Join(dir, fmt.Sprintf("rank-%d", rank))
}

// BenchNCCLJob runs the collectives as one rank of a job: rank 0 makes
// the NCCL unique id and serves it at the rendezvous, the others fetch it;
// every rank joins the communicator on its one GPU (ncclCommInitRank) and
// runs the same sweep. A rank that dies or fails makes the others abort
// their communicators. At the end rank 0 gathers every rank's part,
// prints the job's nccl-tests table (o.Text) and writes results.json with
// every rank's part and the failures; the other ranks write their own
// part and print nothing. The returned envelope is rank 0's document, or
// the rank's own.
func (s *Session) BenchNCCLJob(ctx context.Context, g *GPUs, o NCCLOptions, jo JobOptions) (*report.Envelope, string, error) {
	started := s.Now()
	job := jo.Job
	setup := o.Setup
	if setup == nil {
		var err error
		if setup, err = s.SetupNCCL(RankDir(s.OutDir(o.Out, "bench-nccl"), job.Rank)); err != nil {
			return nil, "", err
		}
	}
	dir, ev := setup.Dir, setup.Evidence
	if len(g.Devices) != 1 {
		return nil, dir, toolErr(fmt.Errorf("rank %d of %d: one GPU per process, not %d", job.Rank, job.Size, len(g.Devices)))
	}
	lib, err := nccl.Open(o.Lib)
	if err != nil {
		return nil, dir, toolErr(fmt.Errorf("cannot run NCCL benchmarks: %w", err))
	}
	defer lib.Close()
	ver, _, _ := lib.Version()
	cfg := o.Config
	if cfg.Buffers, err = bench.ResolveBuffers(o.Buffers, lib); err != nil {
		return nil, dir, toolErr(fmt.Errorf("--%w", err))
	}
	cfg.Devices = g.Devices
	if cfg.Root < 0 || cfg.Root >= job.Size {
		return nil, dir, toolErr(fmt.Errorf("-r %d: want a rank in 0..%d", cfg.Root, job.Size-1))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, dir, toolErr(err)
	}
	hostID := os.Getenv("NCCL_HOSTID")
	rc := rendezvous.Config{Addr: job.Rendezvous, Rank: job.Rank, Size: job.Size, Host: s.Host, Node: cmp.Or(hostID, s.Host), Secret: jo.Secret,
		JoinTimeout: jo.JoinTimeout, Hosts: job.Hosts, Listen: jo.Listen}
	// The bootstrap: rank 0 makes the id and serves it; the rest fetch it.
	var coord *rendezvous.Coordinator
	var member *rendezvous.Member
	var id []byte
	var lost <-chan struct{}
	var nodes []string
	if job.Rank == 0 {
		if id, err = lib.UniqueID(ctx, g.RT); err != nil {
			return nil, dir, toolErr(err)
		}
		if coord, err = rendezvous.Serve(ctx, rc, id); err != nil {
			return nil, dir, jobFailure(err)
		}
		defer coord.Close()
		lost, nodes = coord.Lost(), coord.Nodes()
	} else {
		if member, id, err = rendezvous.Join(ctx, rc); err != nil {
			return nil, dir, jobFailure(err)
		}
		defer member.Close()
		lost, nodes = member.Lost(), member.Nodes()
	}
	cfg.Job = &bench.JobRank{UniqueID: id, Rank: job.Rank, World: job.Size}
	split := cmp.Or(jo.Split, launch.SplitAll)
	color, groups := split.Color(nodes, job.Rank)
	if split != launch.SplitAll {
		cfg.Job.Split = &bench.SplitColor{Color: color}
	}
	if jo.Hierarchical {
		intra, _ := launch.SplitIntra.Color(nodes, job.Rank)
		rail, _ := launch.SplitRail.Color(nodes, job.Rank)
		cfg.Job.Hier = &bench.HierColors{Intra: intra, Rail: rail}
	}
	// A lost peer ends this rank's run: the context's cancellation aborts
	// the communicator (the bench's guard calls ncclCommAbort).
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	peerLost := errors.New("a peer rank failed")
	go func() {
		select {
		case <-lost:
			cancel(peerLost)
		case <-runCtx.Done():
		}
	}()
	results, runErr := bench.RunNCCL(runCtx, g.RT, lib, cfg)
	aborted := runErr != nil && context.Cause(runCtx) == peerLost
	if !aborted && runErr != nil {
		// An NCCL error seen while rank 0's abort is on its way (the
		// peer's loss reached NCCL first) is an abort too.
		select {
		case <-lost:
			aborted = true
		case <-time.After(time.Second):
		}
	}
	if aborted {
		if coord != nil {
			runErr = fmt.Errorf("%w; aborted: %v", coord.Err(), runErr)
		} else {
			runErr = fmt.Errorf("%w; aborted: %v", member.Err(), runErr)
		}
	} else if runErr != nil {
		// This rank failed by itself: the others must not wait for it.
		if coord != nil {
			coord.Abort(runErr.Error())
		} else {
			member.Fail(runErr.Error())
		}
	}
	ev.Collect()
	pid := os.Getpid()
	dev := g.devices()[0]
	mine := bench.RankResult{Rank: job.Rank, Host: s.Host, PID: pid, Device: dev, Measurements: results, Evidence: ev, NCCLHostID: hostID, Aborted: aborted, Group: color,
		Logs: bench.ReadRankLogs(ev)}
	if runErr != nil {
		mine.Error = runErr.Error()
	}
	rep := &bench.NCCLReport{NCCL: ver, NCCLPath: lib.Path, CUDARuntime: g.Runtime, CUDADriver: g.Driver, Evidence: ev, Devices: []bench.Device{dev},
		Config: map[string]any{"minbytes": cfg.MinBytes, "maxbytes": cfg.MaxBytes, "stepfactor": cfg.StepFactor, "stepbytes": cfg.StepBytes,
			"warmup_iters": cfg.Warmup, "iters": cfg.Iters, "check": cfg.Check, "datatype": cfg.DType.Name, "redop": cfg.Op.Name, "root": cfg.Root,
			"buffers": cfg.Buffers, "rank": job.Rank, "world_size": job.Size, "split": string(split)}}
	gatherTimeout := cfg.OpTimeout + 30*time.Second
	if cfg.OpTimeout <= 0 {
		gatherTimeout = 5*time.Minute + 30*time.Second
	}
	if member != nil {
		// Not rank 0: its own part on disk, then to rank 0; nothing printed.
		rep.Measurements = results
		rep.Complete = runErr == nil
		if runErr != nil {
			rep.Error = runErr.Error()
		}
		env := s.Envelope("bench-nccl", started, nil, rep)
		if err := WriteAtomic(filepath.Join(dir, "results.json"), env); err != nil && o.Warn != nil {
			fmt.Fprintf(o.Warn, "gdrcheck: writing %s: %s\n", printable.Line(dir), printable.Line(err.Error()))
		}
		b, _ := json.Marshal(mine)
		derr := member.Deliver(ctx, b, gatherTimeout)
		if runErr != nil {
			return env, dir, jobFailure(runErr)
		}
		if derr != nil {
			return env, dir, jobFailure(derr)
		}
		return env, dir, benchOutcome(nil, results, nil)
	}
	// Rank 0: gather, combine, judge, print, write.
	b, _ := json.Marshal(mine)
	parts, gerr := coord.Gather(ctx, b, gatherTimeout)
	jr := &bench.JobReport{Launcher: string(job.Launcher), WorldSize: job.Size, Rendezvous: job.Rendezvous, Split: string(split), Groups: groups}
	hosts := coord.Hosts()
	for r, p := range parts {
		if p == nil {
			continue // gerr names it
		}
		var rr bench.RankResult
		if err := json.Unmarshal(p, &rr); err != nil || rr.Rank != r {
			// A part that cannot be read is a rank missing from the job,
			// not one left out in silence.
			why := fmt.Sprintf("its result names rank %d", rr.Rank)
			if err != nil {
				why = "its result could not be read: " + err.Error()
			}
			jr.Failures = append(jr.Failures, rendezvous.Failure{Rank: r, Host: hosts[r], Reason: why})
			continue
		}
		jr.Ranks = append(jr.Ranks, rr)
		if rr.Error != "" && r != 0 && !rr.Aborted {
			jr.Failures = append(jr.Failures, rendezvous.Failure{Rank: r, Host: rr.Host, Reason: rr.Error})
		}
	}
	var je *rendezvous.JobError
	if errors.As(gerr, &je) {
		for _, f := range je.Failures {
			if !slices.ContainsFunc(jr.Failures, func(x rendezvous.Failure) bool { return x.Rank == f.Rank }) {
				jr.Failures = append(jr.Failures, f)
			}
		}
	}
	slices.SortFunc(jr.Failures, func(a, b rendezvous.Failure) int { return a.Rank - b.Rank })
	jr.NCCLLogs = bench.JudgeJobLogs(jr.Ranks)
	// The logs' text is judged; the document keeps where they are, not
	// their copies (rank 0's are in dir, the others' in their rank-N).
	for i := range jr.Ranks {
		jr.Ranks[i].Logs = nil
	}
	rep.Job = jr
	rep.Devices = nil
	for _, r := range jr.Ranks {
		rep.Devices = append(rep.Devices, r.Device)
	}
	combined := bench.CombineRanks(jr.Ranks, cfg.DType)
	if len(jr.Ranks) < job.Size {
		// Without every rank the times are not the job's: keep each rank's
		// own under job.ranks, and the table as rank 0 measured it.
		combined = results
	}
	rep.Measurements = combined
	exp, noModel := o.Judge.expectedJob(g, jr)
	rep.Expected = exp
	judgements := bench.NCCLFailed(failedIn(combined), runErr)
	for _, f := range jr.Failures {
		judgements = append(judgements, result.Result{ID: bench.JudgeNCCLID, Status: result.Fail, Subject: fmt.Sprintf("rank %d (%s)", f.Rank, f.Host),
			Reason: "RankFailed", Message: f.Reason})
	}
	switch {
	case noModel != nil:
		judgements = append(judgements, bench.NoModel(bench.JudgeNCCLID, noModel)...)
	case exp != nil && len(jr.Failures) == 0 && runErr == nil:
		judgements = append(judgements, bench.JudgeNCCL(exp.Basis, combined, o.Judge.Pass)...)
	}
	jobErr := runErr
	if jobErr == nil && gerr != nil {
		jobErr = gerr
	}
	rep.Complete = jobErr == nil
	if jobErr != nil {
		rep.Error = jobErr.Error()
		rep.Interrupted = errors.Is(jobErr, context.Canceled) && ctx.Err() != nil
	}
	text := bench.NCCLText{W: o.Text}
	text.JobHeader(rep, cfg)
	text.WriteJobTables(combined, jobErr)
	env := s.Envelope("bench-nccl", started, judgements, rep)
	path := filepath.Join(dir, "results.json")
	if err := WriteAtomic(path, env); err != nil && o.Warn != nil {
		fmt.Fprintf(o.Warn, "gdrcheck: writing %s: %s\n", printable.Line(path), printable.Line(err.Error()))
	}
	text.JobTrailer(jr.NCCLLogs)
	shown := *ev
	if jr.NCCLLogs != nil {
		shown.Summary = nil // rank 0's own log is in the job's verdicts
	}
	text.Trailer(judgements, &shown, dir)
	if jobErr != nil {
		if errors.Is(jobErr, context.Canceled) && ctx.Err() != nil {
			return env, dir, jobErr
		}
		return env, dir, jobFailure(jobErr)
	}
	return env, dir, benchOutcome(nil, combined, judgements)
}

// jobFailure is a job that did not run to its end: a Failure (exit 1),
// naming the ranks; an interrupt stays one.
func jobFailure(err error) error {
	if errors.Is(err, context.Canceled) {
		var je *rendezvous.JobError
		if !errors.As(err, &je) {
			return err
		}
	}
	return &Failure{err}
}

// expectedJob is the basis of a job's judgement: this node's hardware, as
// many nodes as the ranks name distinct hosts (NCCL_HOSTID where set, as
// NCCL itself counts them), the ranks spread evenly over them.
func (j Judging) expectedJob(g *GPUs, jr *bench.JobReport) (*bench.Expected, error) {
	if j.Off {
		return nil, nil
	}
	nodes := map[string]int{}
	for _, r := range jr.Ranks {
		nodes[r.NodeKey()]++
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("no rank reported")
	}
	per := -1
	for _, n := range nodes {
		if per >= 0 && n != per {
			return nil, fmt.Errorf("ranks spread unevenly over %d nodes: the model needs the same GPUs per node", len(nodes))
		}
		per = n
	}
	if g.Host == nil {
		return nil, fmt.Errorf("host not discovered")
	}
	sys, err := model.FromHost(g.Host)
	if err != nil {
		return nil, err
	}
	want := j.Want
	want.GPUs = 0
	sys.Nodes, sys.GPUsPerNode = len(nodes), per
	switch launch.Split(jr.Split) {
	case launch.SplitIntra: // each communicator is one node's ranks
		sys.Nodes = 1
	case launch.SplitRail: // each is one GPU of every node
		sys.GPUsPerNode = 1
	}
	if err := sys.Validate(); err != nil {
		return nil, err
	}
	return bench.NewExpected(model.Healthy(sys, g.Host, want), j.Profile), nil
}
