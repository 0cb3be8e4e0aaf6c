package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// BenchNCCLJob runs the collectives as one process of a job (runJob):
// process 0 makes the NCCL unique id and serves it at the rendezvous, the
// others fetch it; every process joins the communicator on its GPUs
// (ncclCommInitRank: one GPU, or several in one group, as nccl-tests' -g
// under MPI, each announced at the rendezvous so that the NCCL ranks are
// numbered in process order) and runs the same sweep. A rank that dies or fails
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
	switch {
	case len(g.Devices) == 0:
		return nil, dir, toolErr(fmt.Errorf("rank %d of %d: no GPU to run on", job.Rank, job.Size))
	case len(g.Devices) > rendezvous.MaxGPUs:
		return nil, dir, toolErr(fmt.Errorf("rank %d of %d: %d GPUs in one process: at most %d", job.Rank, job.Size, len(g.Devices), rendezvous.MaxGPUs))
	case len(g.Devices) > 1 && (j.split != launch.SplitAll || jo.Hierarchical):
		return nil, dir, toolErr(fmt.Errorf("rank %d of %d drives %d GPUs: --split and --hierarchical need one GPU per process (not built yet for several)", job.Rank, job.Size, len(g.Devices)))
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
	// A root at or above the process count may be a rank where processes
	// drive several GPUs: every process checks it once the ranks are
	// counted (run), and refuses it alike.
	if j.cfg.Root < 0 {
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
	end, err := runJob(ctx, jobSpec[ncclPart]{
		Config: rendezvous.Config{Addr: job.Rendezvous, Rank: job.Rank, Size: job.Size, Host: s.Host, Node: cmp.Or(j.hostID, s.Host), Secret: jo.Secret,
			JoinTimeout: jo.JoinTimeout, Hosts: job.Hosts, Listen: jo.Listen, GPUs: len(g.Devices)},
		ID: id, Gather: gather, Run: j.run, Warn: o.Warn,
		Failed: func(p ncclPart) (string, string) {
			for _, rr := range p.Ranks {
				if !rr.Aborted && rr.Error != "" {
					return rr.Host, rr.Error
				}
			}
			// Aborted: another rank's failure stopped it, and that rank is named.
			return "", ""
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

// ncclPart is what a process of the job sends rank 0: its rank at the
// rendezvous and the part of each of its NCCL ranks (one where it drives
// one GPU).
type ncclPart struct {
	Rank  int                `json:"rank"`
	Ranks []bench.RankResult `json:"ranks"`
}

// ncclJob is one process's bench nccl job: what its run needs and what
// it measured.
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
	// The job's ranks: every process's GPU count (by process), this
	// process's first NCCL rank, and their total.
	counts       []int
	first, world int
	// What the run gives: the communicators measured side by side, this
	// rank's measurements and error, its document.
	groups  int
	results []bench.NCCLResult
	runErr  error
	rep     *bench.NCCLReport
	env     *report.Envelope // a member's own document
}

// run is the process's sweep on the job's communicator (or its
// split's), a lost rank aborting it; a member writes its own
// results.json. It returns the process's part for rank 0: a row per NCCL
// rank of its GPUs, the measurements, evidence and logs on the first.
func (j *ncclJob) run(ctx context.Context, peer rendezvous.Peer, id []byte) (ncclPart, error) {
	job, cfg := j.jo.Job, &j.cfg
	nodes := peer.Nodes()
	j.counts = peer.GPUs()
	j.first, j.world = 0, 0
	for r, n := range j.counts {
		if r < job.Rank {
			j.first += n
		}
		j.world += n
	}
	multi := j.world != job.Size // some process drives several GPUs
	switch {
	case len(j.counts) != job.Size || j.counts[job.Rank] != len(j.g.Devices):
		return ncclPart{}, fmt.Errorf("rendezvous: GPU counts %v do not give this process (rank %d of %d) its %d GPUs", j.counts, job.Rank, job.Size, len(j.g.Devices))
	case multi && (j.split != launch.SplitAll || j.jo.Hierarchical):
		return ncclPart{}, toolErr(fmt.Errorf("the job's processes drive %s GPUs: --split and --hierarchical need one GPU per process (not built yet for several)", countsText(j.counts)))
	case cfg.Root >= j.world:
		return ncclPart{}, toolErr(fmt.Errorf("-r %d: want a rank in 0..%d", cfg.Root, j.world-1))
	}
	cfg.Job = &bench.JobRank{UniqueID: id, Rank: j.first, World: j.world}
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
	devs := j.g.devices()
	mine := ncclPart{Rank: job.Rank}
	for i, dev := range devs {
		rr := bench.RankResult{Rank: j.first + i, Host: j.s.Host, PID: os.Getpid(), Device: dev, NCCLHostID: j.hostID, Aborted: aborted, Group: color}
		if i == 0 {
			rr.Measurements, rr.Evidence, rr.Logs = results, j.ev, bench.ReadRankLogs(j.ev)
		}
		if multi {
			rr.Process = new(job.Rank)
		}
		if runErr != nil {
			rr.Error = runErr.Error()
		}
		mine.Ranks = append(mine.Ranks, rr)
	}
	settings := cfg.Settings()
	settings["rank"], settings["world_size"], settings["split"] = job.Rank, job.Size, string(j.split)
	if multi {
		// The process's rank at the rendezvous stays "rank"; its GPUs are
		// NCCL ranks first_rank.. of nccl_world_size.
		settings["first_rank"], settings["gpus"], settings["nccl_world_size"] = j.first, len(devs), j.world
	}
	j.rep = &bench.NCCLReport{NCCL: j.ver, NCCLPath: j.lib.Path, CUDARuntime: j.g.Runtime, CUDADriver: j.g.Driver, Evidence: j.ev, Devices: devs,
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

// countsText is the GPU counts of the processes: "2,2,1".
func countsText(counts []int) string {
	s := make([]string, len(counts))
	for i, n := range counts {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
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
func (j *ncclJob) report(ctx context.Context, end jobEnd[ncclPart]) (*report.Envelope, string, error) {
	job, rep, o, dir := j.jo.Job, j.rep, j.o, j.dir
	jr := &bench.JobReport{Launcher: string(job.Launcher), WorldSize: j.world, Rendezvous: job.Rendezvous, Split: string(j.split), Groups: j.groups,
		Failures: end.Failures}
	for _, p := range end.Parts {
		if p != nil {
			jr.Ranks = append(jr.Ranks, p.Ranks...)
		}
	}
	if j.world != job.Size {
		j.processes(jr, end.Hosts)
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
	if len(jr.Ranks) < j.world {
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

// processes says which process drove which ranks, where some process
// drives several GPUs, and names a failed process by its first NCCL rank
// (the rendezvous names processes by their own rank).
func (j *ncclJob) processes(jr *bench.JobReport, hosts []string) {
	first := 0
	for r, n := range j.counts {
		p := bench.JobProcess{Process: r, GPUs: n, FirstRank: first}
		if r < len(hosts) {
			p.Host = hosts[r]
		}
		jr.Processes = append(jr.Processes, p)
		first += n
	}
	for i, f := range jr.Failures {
		if f.Rank < 0 || f.Rank >= len(jr.Processes) {
			continue
		}
		p := jr.Processes[f.Rank]
		jr.Failures[i].Reason = fmt.Sprintf("process %d (ranks %d..%d): %s", p.Process, p.FirstRank, p.FirstRank+p.GPUs-1, f.Reason)
		jr.Failures[i].Rank = p.FirstRank
	}
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
