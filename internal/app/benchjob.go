package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// BenchNCCLJob runs the collectives as one rank of a job (runJob): rank
// 0 makes the NCCL unique id and serves it at the rendezvous, the others
// fetch it; every rank joins the communicator on its one GPU
// (ncclCommInitRank) and runs the same sweep. A rank that dies or fails
// makes the others abort their communicators. At the end rank 0 gathers
// every rank's part, prints the job's nccl-tests table (o.Text) and
// writes results.json with every rank's part and the failures; the other
// ranks write their own part and print nothing. The returned envelope is
// rank 0's document, or the rank's own.
func (s *Session) BenchNCCLJob(ctx context.Context, g *GPUs, o NCCLOptions, jo JobOptions) (*report.Envelope, string, error) {
	j := &ncclJob{s: s, g: g, o: o, jo: jo, started: s.Now(), split: cmp.Or(jo.Split, launch.SplitAll), hostID: os.Getenv("NCCL_HOSTID")}
	job := jo.Job
	setup := o.Setup
	if setup == nil {
		var err error
		if setup, err = s.SetupNCCL(RankDir(s.OutDir(o.Out, "bench-nccl"), job.Rank)); err != nil {
			return nil, "", err
		}
	}
	j.dir, j.ev = setup.Dir, setup.Evidence
	dir := j.dir
	if len(g.Devices) != 1 {
		return nil, dir, toolErr(fmt.Errorf("rank %d of %d: one GPU per process, not %d", job.Rank, job.Size, len(g.Devices)))
	}
	lib, err := nccl.Open(o.Lib)
	if err != nil {
		return nil, dir, toolErr(fmt.Errorf("cannot run NCCL benchmarks: %w", err))
	}
	defer lib.Close()
	j.lib = lib
	j.ver, _, _ = lib.Version()
	j.cfg = o.Config
	if j.cfg.Buffers, err = bench.ResolveBuffers(o.Buffers, lib); err != nil {
		return nil, dir, toolErr(fmt.Errorf("--%w", err))
	}
	j.cfg.Devices = g.Devices
	if j.cfg.Root < 0 || j.cfg.Root >= job.Size {
		return nil, dir, toolErr(fmt.Errorf("-r %d: want a rank in 0..%d", j.cfg.Root, job.Size-1))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, dir, toolErr(err)
	}
	// The bootstrap: rank 0 makes the id and serves it; the rest fetch it.
	var id []byte
	if job.Rank == 0 {
		if id, err = lib.UniqueID(ctx, g.RT); err != nil {
			return nil, dir, toolErr(err)
		}
	}
	gather := j.cfg.OpTimeout + 30*time.Second
	if j.cfg.OpTimeout <= 0 {
		gather = 5*time.Minute + 30*time.Second
	}
	end, err := runJob(ctx, jobSpec[bench.RankResult]{
		Config: rendezvous.Config{Addr: job.Rendezvous, Rank: job.Rank, Size: job.Size, Host: s.Host, Node: cmp.Or(j.hostID, s.Host), Secret: jo.Secret,
			JoinTimeout: jo.JoinTimeout, Hosts: job.Hosts, Listen: jo.Listen},
		ID: id, Gather: gather, Run: j.run, Warn: o.Warn,
		Failed: func(rr bench.RankResult) (string, string) {
			if rr.Aborted {
				return "", "" // another rank's failure stopped it: that rank is named
			}
			return rr.Host, rr.Error
		},
	})
	switch {
	case err != nil:
		return nil, dir, err
	case job.Rank != 0:
		// Not rank 0: its own part is on disk and went to rank 0.
		if j.runErr != nil {
			return j.env, dir, jobFailure(j.runErr)
		}
		if end.Err != nil {
			return j.env, dir, jobFailure(end.Err)
		}
		return j.env, dir, benchOutcome(nil, j.results, nil)
	}
	return j.report(ctx, end)
}

// ncclJob is one rank's bench nccl job: what its run needs and what it
// measured.
type ncclJob struct {
	s       *Session
	g       *GPUs
	o       NCCLOptions
	jo      JobOptions
	started time.Time
	split   launch.Split
	hostID  string // NCCL_HOSTID
	dir     string
	ev      *bench.NCCLEvidence
	lib     *nccl.Library
	ver     string
	cfg     bench.NCCLConfig
	// What the run gives: the communicators measured side by side, this
	// rank's measurements and error, its document.
	groups  int
	results []bench.NCCLResult
	runErr  error
	rep     *bench.NCCLReport
	env     *report.Envelope // a member's own document
}

// run is the rank's sweep on the job's communicator (or its split's), a
// lost rank aborting it; a member writes its own results.json. It
// returns the rank's part for rank 0.
func (j *ncclJob) run(ctx context.Context, peer rendezvous.Peer, id []byte) (bench.RankResult, error) {
	job, cfg := j.jo.Job, &j.cfg
	nodes := peer.Nodes()
	cfg.Job = &bench.JobRank{UniqueID: id, Rank: job.Rank, World: job.Size}
	color, groups := j.split.Color(nodes, job.Rank)
	j.groups = groups
	if j.split != launch.SplitAll {
		cfg.Job.Split = &bench.SplitColor{Color: color}
	}
	if j.jo.Hierarchical {
		intra, _ := launch.SplitIntra.Color(nodes, job.Rank)
		rail, _ := launch.SplitRail.Color(nodes, job.Rank)
		cfg.Job.Hier = &bench.HierColors{Intra: intra, Rail: rail}
	}
	results, aborted, runErr := abortable(ctx, peer, func(ctx context.Context) ([]bench.NCCLResult, error) {
		return bench.RunNCCL(ctx, j.g.RT, j.lib, *cfg)
	})
	j.results, j.runErr = results, runErr
	j.ev.Collect()
	dev := j.g.devices()[0]
	mine := bench.RankResult{Rank: job.Rank, Host: j.s.Host, PID: os.Getpid(), Device: dev, Measurements: results, Evidence: j.ev, NCCLHostID: j.hostID,
		Aborted: aborted, Group: color, Logs: bench.ReadRankLogs(j.ev)}
	if runErr != nil {
		mine.Error = runErr.Error()
	}
	settings := cfg.Settings()
	settings["rank"], settings["world_size"], settings["split"] = job.Rank, job.Size, string(j.split)
	j.rep = &bench.NCCLReport{NCCL: j.ver, NCCLPath: j.lib.Path, CUDARuntime: j.g.Runtime, CUDADriver: j.g.Driver, Evidence: j.ev, Devices: []bench.Device{dev},
		Config: settings}
	if job.Rank != 0 {
		// Not rank 0: its own part on disk before it goes to rank 0.
		j.rep.Measurements = results
		j.rep.Complete = runErr == nil
		if runErr != nil {
			j.rep.Error = runErr.Error()
		}
		j.env = j.s.Envelope("bench-nccl", j.started, nil, j.rep)
		j.write(j.env)
	}
	return mine, nil
}

// write writes env as the rank's results.json; a failure is a warning.
func (j *ncclJob) write(env *report.Envelope) {
	path := filepath.Join(j.dir, "results.json")
	if err := WriteAtomic(path, env); err != nil && j.o.Warn != nil {
		fmt.Fprintf(j.o.Warn, "gdrcheck: writing %s: %s\n", printable.Line(path), printable.Line(err.Error()))
	}
}

// report is rank 0's end of the job: every rank's part combined, judged,
// printed and written.
func (j *ncclJob) report(ctx context.Context, end jobEnd[bench.RankResult]) (*report.Envelope, string, error) {
	job, rep, o, dir := j.jo.Job, j.rep, j.o, j.dir
	jr := &bench.JobReport{Launcher: string(job.Launcher), WorldSize: job.Size, Rendezvous: job.Rendezvous, Split: string(j.split), Groups: j.groups,
		Failures: end.Failures}
	for _, p := range end.Parts {
		if p != nil {
			jr.Ranks = append(jr.Ranks, *p)
		}
	}
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
	combined := bench.CombineRanks(jr.Ranks, j.cfg.DType)
	if len(jr.Ranks) < job.Size {
		// Without every rank the times are not the job's: keep each rank's
		// own under job.ranks, and the table as rank 0 measured it.
		combined = j.results
	}
	rep.Measurements = combined
	exp, noModel := o.Judge.expectedJob(j.g, jr)
	rep.Expected = exp
	judgements := bench.NCCLFailed(failedIn(combined), j.runErr)
	for _, f := range jr.Failures {
		judgements = append(judgements, result.Result{ID: bench.JudgeNCCLID, Status: result.Fail, Subject: fmt.Sprintf("rank %d (%s)", f.Rank, f.Host),
			Reason: "RankFailed", Message: f.Reason})
	}
	switch {
	case noModel != nil:
		judgements = append(judgements, bench.NoModel(bench.JudgeNCCLID, noModel)...)
	case exp != nil && len(jr.Failures) == 0 && j.runErr == nil:
		judgements = append(judgements, bench.JudgeNCCL(exp.Basis, combined, o.Judge.Pass)...)
	}
	jobErr := j.runErr
	if jobErr == nil {
		jobErr = end.Err
	}
	rep.Complete = jobErr == nil
	if jobErr != nil {
		rep.Error = jobErr.Error()
		rep.Interrupted = errors.Is(jobErr, context.Canceled) && ctx.Err() != nil
	}
	text := bench.NCCLText{W: o.Text}
	text.JobHeader(rep, j.cfg)
	text.WriteJobTables(combined, jobErr)
	env := j.s.Envelope("bench-nccl", j.started, judgements, rep)
	j.write(env)
	text.JobTrailer(jr.NCCLLogs)
	shown := *j.ev
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
