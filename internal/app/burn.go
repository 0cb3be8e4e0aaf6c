package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/collect/counters"
	"github.com/gdrcheck/gdrcheck/internal/collect/nvml/live"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// BurnOptions are a `gdrcheck burn` run's.
type BurnOptions struct {
	// Duration is the whole workload, Window one stretch of it between two
	// counter samples.
	Duration, Window time.Duration
	// Settle is the pause between the two baseline samples: what counts in
	// it counts without the workload (0: a tenth of a window, at most 10 s).
	Settle time.Duration
	// Out is the directory of burn.json and samples/ ("" chooses one).
	Out string
	// Bytes is the size of every copy.
	Bytes uint64
	// OpTimeout bounds every wait for GPU work.
	OpTimeout time.Duration
	GPU       GPUOptions
	// NCCL runs every NCCL collective once per window (checked), with
	// the library at NCCLLib ("" searches).
	NCCL    bool
	NCCLLib string
	// RDMA loops GPU memory through every GPU–NIC pair (ib_write_bw from
	// PerftestDir, "" searches PATH) beside the copies, where the node has
	// RDMA NICs.
	RDMA        bool
	PerftestDir string
	// Job makes the burn-in one rank of a job of several nodes (one rank
	// a node, each driving all its node's GPUs): after its own NCCL pass,
	// each window runs every collective across the job's nodes on one of
	// this node's GPUs, the next GPU each window, so the fabric and every
	// GPU's NIC path carry traffic in turn. Needs NCCL. nil: one node.
	Job   *JobOptions
	Judge burn.Options
	// SensorEvery is how often the GPUs' clocks, power and temperature
	// are read while the workload runs (0: every 2 s).
	SensorEvery time.Duration
	// Progress receives a line per window (nil: none).
	Progress io.Writer
	// Warn receives problems that do not stop the run.
	Warn io.Writer
	// Strict is the sign-off: an unknown or error verdict (a link whose
	// counters could not be read, too few bits to prove a rate) fails too.
	Strict bool
	// Force lets the run write into a directory that is not empty (an
	// earlier burn-in's is replaced).
	Force bool
}

// BurnDoc is burn.json's data: the workload window by window, the
// counters' deltas attributed to the links that carried it, and how far
// the run got.
type BurnDoc struct {
	Duration string `json:"duration"`
	Window   string `json:"window"`
	// Complete is false while the run goes on and when it was cut short
	// (Stopped says why); the windows sampled so far are judged either way.
	Complete bool   `json:"complete"`
	Stopped  string `json:"stopped,omitempty"`
	// GPUs maps the CUDA devices the workload used to the node's GPUs.
	GPUs     []BurnGPU     `json:"gpus"`
	Schedule burn.Schedule `json:"schedule"`
	// Work is what ran in each window (copies, validated), by window.
	Work   []BurnWork   `json:"work"`
	Series *burn.Series `json:"series,omitempty"`
	// Samples are the counter samples' files under samples/, in order: the
	// baselines, then one per window end.
	Samples []string `json:"samples"`
	Notes   []string `json:"notes,omitempty"`
}

// BurnGPU is one CUDA device of the workload and the node's GPU it is.
type BurnGPU struct {
	Device  int    `json:"cuda_device"`
	Address string `json:"pci_address"`
	GPU     string `json:"gpu,omitempty"` // "GPU3"; "" when the node's discovery does not know it
}

// BurnWork is one window's workload.
type BurnWork struct {
	Window int `json:"window"` // 0-based
	Passes int `json:"passes"`
	// Copies are the last pass's results, one per test and device (its
	// rate, whether its data came back right).
	Copies []bench.CopyResult `json:"copies"`
	// Wrong counts wrong bytes over every pass of the window.
	Wrong int64 `json:"wrong_bytes"`
	// NCCL is the window's pass of every NCCL collective (its checked
	// run's #wrong, its bus bandwidth); empty when NCCL did not run.
	NCCL []BurnCollective `json:"nccl,omitempty"`
	// Errors are the passes' errors (a copy that failed).
	Errors []string `json:"errors,omitempty"`
	// Sensors are the GPUs' clocks, power and temperature read while the
	// window's workload ran.
	Sensors []burn.GPUSensors `json:"sensors,omitempty"`
	// RDMA are the window's GPU-memory loopbacks through the GPU–NIC
	// pairs, run beside the copies.
	RDMA []BurnRDMA `json:"rdma,omitempty"`
	// Job is the window's pass of every collective across the job's nodes
	// (BurnOptions.Job) on JobGPUs, every GPU of this node at once (their
	// PCI addresses): as this rank saw it (rank 0: the job's combined
	// rows). JobGPU is the one GPU an earlier gdrcheck's pass ran on (the
	// node's next GPU each window), read from its burn.json.
	Job     []BurnCollective `json:"job,omitempty"`
	JobGPUs []string         `json:"job_gpus,omitempty"`
	JobGPU  string           `json:"job_gpu,omitempty"`
}

// JobOn is the PCI addresses of the GPUs the window's pass across the
// nodes ran on (an earlier burn.json's one GPU included).
func (w BurnWork) JobOn() []string {
	if len(w.JobGPUs) == 0 && w.JobGPU != "" {
		return []string{w.JobGPU}
	}
	return w.JobGPUs
}

// BurnCollective is one NCCL collective of a window's pass.
type BurnCollective struct {
	Collective string `json:"collective"`
	// BusBW is the out-of-place bus bandwidth at the measured size (Row),
	// GB/s. (A burn.json of an earlier gdrcheck holds nccl-tests'
	// "Avg bus bandwidth" here, the mean over both halves: Rate reads Row
	// when it is there.)
	BusBW float64 `json:"busbw_gbs"`
	Wrong int64   `json:"wrong"`
	Error string  `json:"error,omitempty"`
	// Row is its measured size's row (what the model judges); nil in a
	// burn.json written before it was kept.
	Row *collective.Row `json:"row,omitempty"`
}

// burnCollective is a window's record of one collective the bench ran.
func burnCollective(m bench.NCCLResult) BurnCollective {
	// The mean stands only where no row has an out-of-place half (Rate).
	c := BurnCollective{Collective: string(m.Collective), BusBW: m.AvgBusBW, Wrong: m.Wrong, Error: m.Error}
	if n := len(m.Rows); n > 0 {
		c.Row = &m.Rows[n-1]
	}
	c.BusBW = c.Rate()
	return c
}

// Rate is the bandwidth a window's collective is judged by over the
// windows: the out-of-place bus bandwidth at its measured size. Not the
// mean over sizes and halves that nccl-tests prints as "Avg bus
// bandwidth": on one rank an in-place broadcast or reduce moves nothing
// and takes a fraction of a microsecond, so that mean swings by tens of
// TB/s from pass to pass (the H100 burn-in of docs/device-runs.md failed
// burn.bandwidth on it); the out-of-place half is a real copy.
func (c BurnCollective) Rate() float64 {
	if c.Row != nil && c.Row.OutOfPlace != nil {
		return c.Row.OutOfPlace.BusBW
	}
	return c.BusBW
}

// burnTests are the copies each pass runs on every GPU: both directions
// of its PCIe link at once, and its memory.
var burnTests = []string{bench.CopyBidirPinned, bench.CopyD2D}

// Burn is a burn-in on its own, with no dossier around it (`health
// --burn`; `gdrcheck burn` and `run --profile burnin` run the same
// burnOn as the dossier's burn phase): the workload for o.Duration in
// windows of o.Window on the live host (copies between every GPU and the
// host, both ways at once, and within each GPU's memory, every byte
// checked; NCCL's collectives; the loopbacks), the error counters sampled
// before the workload and at each window's end, attributed to the links
// that carried the window's traffic and judged (internal/burn), into
// o.Out. burn.json is rewritten after every window, so an interrupted run
// leaves a valid document of the windows done.
func (s *Session) Burn(ctx context.Context, n NodeOptions, o BurnOptions) (*report.Envelope, string, error) {
	if err := requireLive(n.Root); err != nil {
		return nil, "", fmt.Errorf("burn: %w", err)
	}
	if err := o.validate(); err != nil {
		return nil, "", err
	}
	dir := s.OutDir(o.Out, "burn")
	if err := prepareBurnDir(dir, o.Force); err != nil {
		return nil, dir, err
	}
	root, cleanup, err := snapshot.OpenContext(ctx, n.source())
	if err != nil {
		return nil, dir, toolErr(err)
	}
	defer cleanup()
	_, stop, h, err := DiscoverWithin(ctx, root, cmp.Or(n.Timeout, burnReadTimeout))
	if err != nil {
		return nil, dir, err
	}
	stop()
	o.GPU.Host = h
	gpus, err := openGPUs(ctx, o.GPU)
	if err != nil {
		return nil, dir, err
	}
	defer gpus.Close()
	t := burnTarget{root: root, host: h, gpus: gpus, dir: dir, readTimeout: cmp.Or(n.Timeout, burnReadTimeout)}
	t.rdma, t.rdmaNote = burnRDMAPlan(ctx, n, h, o)
	if o.NCCL {
		if t.nccl, err = s.SetupNCCL(filepath.Join(dir, "nccl")); err != nil {
			return nil, dir, err
		}
	}
	env, err := s.burnOn(ctx, t, o)
	return env, dir, err
}

// validate refuses options that cannot mean anything, before anything runs.
func (o BurnOptions) validate() error {
	switch {
	case o.Window <= 0 || o.Duration <= 0:
		return toolErr(fmt.Errorf("burn: --duration %s and --window %s must be positive", o.Duration, o.Window))
	case o.Window > o.Duration:
		return toolErr(fmt.Errorf("burn: --window %s is longer than --duration %s", o.Window, o.Duration))
	case o.Bytes == 0:
		return toolErr(fmt.Errorf("burn: the copy size must be positive"))
	}
	return nil
}

// prepareBurnDir makes dir and its samples/ folder; a dir that is not
// empty is refused unless force (then only its samples are removed).
func prepareBurnDir(dir string, force bool) error {
	if names, err := os.ReadDir(dir); err == nil && len(names) > 0 && !force {
		return toolErr(fmt.Errorf("burn: --out %s is not empty (an earlier burn-in's burn.json and samples would be mixed with this one's): choose another directory, or --force", dir))
	} else if err == nil && force {
		_ = os.RemoveAll(filepath.Join(dir, "samples")) // this run's samples only
	}
	if err := os.MkdirAll(filepath.Join(dir, "samples"), 0o755); err != nil {
		return toolErr(fmt.Errorf("burn: %w", err))
	}
	return nil
}

// burnTarget is what a burn-in runs on: the node as discovered through
// root, its GPUs (opened by the caller, who closes them), NCCL's setup
// (nil: no NCCL in the workload) and the directory of burn.json and
// samples/.
type burnTarget struct {
	root machine.Root
	host *topology.Host
	gpus *GPUs
	nccl *NCCLSetup
	// rdma is the loopback plan (nil: none, rdmaNote says why).
	rdma        *burnLoopback
	rdmaNote    string
	dir         string
	readTimeout time.Duration
	// onWindow is told after each window is sampled, judged and burn.json
	// rewritten (nil: nothing).
	onWindow func(env *report.Envelope)
}

// burnOn runs the burn-in on t: the baselines, then the windows, each
// sampled, judged and written. Session.Burn and the dossier's burn phase
// run it.
func (s *Session) burnOn(ctx context.Context, t burnTarget, o BurnOptions) (*report.Envelope, error) {
	started := s.Now()
	windows := int(o.Duration / o.Window)
	root, h, gpus, dir := t.root, t.host, t.gpus, t.dir
	doc := &BurnDoc{Duration: o.Duration.String(), Window: o.Window.String(), Schedule: burn.Schedule{Windows: []burn.Window{}}, Work: []BurnWork{}, Samples: []string{}}
	if t.rdmaNote != "" {
		doc.Notes = append(doc.Notes, t.rdmaNote)
	}
	links := map[int]burn.Link{}
	for _, d := range gpus.Devices {
		bg := BurnGPU{Device: d, Address: gpus.BusIDs[d]}
		if g := h.GPUByAddress(bg.Address); g != nil {
			bg.GPU = fmt.Sprintf("GPU%d", g.Index)
			links[d] = burn.GPUHostLink(bg.Address)
		} else {
			doc.Notes = append(doc.Notes, fmt.Sprintf("CUDA device %d (%s) is not a GPU discovery found: its traffic is not attributed to a link", d, cmp.Or(bg.Address, "no PCI address")))
		}
		doc.GPUs = append(doc.GPUs, bg)
	}

	var before, after burnSamples
	// gpuReading is what the driver and the kernel log say at a sample.
	sample := func(label string, into *burnSamples) error {
		// An interrupted workload still has its last window sampled, so
		// that what it did is judged: the read has its own deadline.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.readTimeout)
		defer cancel()
		sm := counters.Read(root.WithContext(sctx), h, label, s.Now)
		sm.NICs = counters.ReadNICs(sctx, root.WithContext(sctx), h, s.Now)
		gr := gpuReadingOf(sctx, root.WithContext(sctx), label, s.Now())
		if sctx.Err() != nil {
			return toolErr(fmt.Errorf("burn: reading the counters (%s) did not finish within %s", label, t.readTimeout))
		}
		name := filepath.Join("samples", label+".json")
		if err := WriteAtomic(filepath.Join(dir, name), sm); err != nil {
			return toolErr(fmt.Errorf("burn: %w", err))
		}
		gname := filepath.Join("samples", label+"-gpu.json")
		if err := WriteAtomic(filepath.Join(dir, gname), gr); err != nil {
			return toolErr(fmt.Errorf("burn: %w", err))
		}
		doc.Samples = append(doc.Samples, name, gname)
		into.add(sm, gr)
		return nil
	}
	write := func(results []result.Result) *report.Envelope {
		env := s.Envelope("burn", started, results, doc)
		if err := WriteAtomic(filepath.Join(dir, "burn.json"), env); err != nil && o.Warn != nil {
			fmt.Fprintf(o.Warn, "gdrcheck: writing burn.json: %s\n", printable.Line(err.Error()))
		}
		return env
	}
	judge := func() []result.Result {
		rs, err := judgeBurn(h, doc, before, after, o.Judge)
		if err != nil {
			return []result.Result{{ID: burn.IDFatal, Source: burn.Source, Status: result.Error, Subject: "node", Reason: "AttributionFailed", Message: err.Error()}}
		}
		return rs
	}

	// Two baselines: what counts between them counts without the workload.
	settle := cmp.Or(o.Settle, min(o.Window/10, 10*time.Second))
	if err := sample("baseline-1", &before); err != nil {
		return write(nil), err
	}
	if err := sleepCtx(ctx, settle); err != nil {
		doc.Stopped = "interrupted before the workload: " + err.Error()
		return write(judge()), err
	}
	if err := sample("baseline-2", &before); err != nil {
		return write(nil), err
	}

	tests := burnTests
	if len(gpus.Devices) > 1 {
		tests = append(slices.Clone(tests), bench.CopyP2PBidir) // every GPU pair, both ways at once
	}
	cfg := bench.CopyConfig{Devices: gpus.Devices, Bytes: o.Bytes, Iters: 10, Warmup: 1, Tests: tests,
		Timeout: cmp.Or(o.OpTimeout, 5*time.Minute), LocalCPUs: gpus.localCPUs}
	nsetup := t.nccl
	// NCCL's checked run verifies on the host: at 1 GiB its seven
	// collectives took a whole 10 s window on the GPU machine, so its size
	// is capped and the copies keep most of the window.
	nbytes := min(o.Bytes, 256<<20)
	ncfg := bench.NCCLConfig{Collectives: collective.All(), MinBytes: nbytes, MaxBytes: nbytes, StepFactor: 2, Warmup: 1, Iters: 5, Check: 1,
		OpTimeout: cmp.Or(o.OpTimeout, 5*time.Minute)}
	ncfg.DType, _ = bench.DTypeByName("float")
	ncfg.Op, _ = bench.RedOpByName("sum")
	var runErr error
	for i := 0; i < windows && runErr == nil; i++ {
		start := s.Now()
		deadline := start.Add(o.Window)
		work := BurnWork{Window: i}
		moved := map[burn.Link]uint64{}
		// The sensors are read while the workload runs, on their own
		// goroutine, each read under a deadline.
		var sw burn.SensorWindow
		wctx, stopSensors := context.WithCancel(ctx)
		sensorsDone := make(chan struct{})
		go func() {
			defer close(sensorsDone)
			tick := time.NewTicker(cmp.Or(o.SensorEvery, 2*time.Second))
			defer tick.Stop()
			for {
				select {
				case <-wctx.Done():
					return
				case <-tick.C:
					rctx, cancel := context.WithTimeout(wctx, t.readTimeout)
					f, err := live.New(live.WithRoot(root.WithContext(rctx)), live.WithSensorsOnly()).Collect(rctx)
					cancel()
					if err == nil {
						sw.Add(f)
					}
				}
			}
		}()
		if nsetup != nil {
			// Every collective once, its data checked; NCCL's own traffic
			// between GPUs is not charged to links (which links a ring or
			// tree uses is NCCL's choice), its errors and #wrong are.
			env, _, err := s.BenchNCCL(ctx, gpus, NCCLOptions{Lib: o.NCCLLib, Setup: nsetup, Config: ncfg, Judge: Judging{Off: true}, Warn: o.Warn})
			if env != nil {
				if nr, ok := env.Data.(*bench.NCCLReport); ok {
					for _, m := range nr.Measurements {
						work.NCCL = append(work.NCCL, burnCollective(m))
					}
				}
			}
			switch {
			case err != nil && ctx.Err() != nil:
				runErr = err // interrupted, not an NCCL failure
			case err != nil:
				work.Errors = append(work.Errors, "nccl: "+err.Error())
			}
			if o.Job != nil && runErr == nil {
				runErr = s.burnJobPass(ctx, gpus, i, nsetup, dir, ncfg, o, &work)
			}
		}
		// The loopbacks run beside the copies, round after round, on
		// their own goroutine: GPU memory, its PCIe path to the NIC and
		// the port under load together.
		rdmaDone := make(chan []BurnRDMA, 1)
		if t.rdma != nil {
			go func() { rdmaDone <- rdmaRounds(ctx, t.rdma, o, rdmaDir(dir, i), s.Now, deadline) }()
		} else {
			rdmaDone <- nil
		}
		for runErr == nil && s.Now().Before(deadline) {
			res, err := bench.RunCopy(ctx, gpus.RT, cfg)
			work.Passes++
			work.Copies = res
			for _, r := range res {
				work.Wrong += r.Wrong
				// A copy cut short by the interruption is not a failed copy.
				if r.Error != "" && ctx.Err() == nil {
					work.Errors = append(work.Errors, fmt.Sprintf("%s on device %d: %s", r.Test, r.Dev, r.Error))
				}
				if r.Error != "" {
					continue
				}
				switch {
				case r.Test == bench.CopyBidirPinned:
					if l, ok := links[r.Dev]; ok {
						moved[l] += 2 * r.Bytes * uint64(r.Iters) // both directions of the link
					}
				case r.Test == bench.CopyP2PBidir:
					for _, l := range peerLinks(h, gpus, r.Dev, r.Peer) {
						moved[l.link] += 2 * r.Bytes * uint64(r.Iters) / l.share
					}
				}
			}
			if err != nil {
				runErr = err
				break
			}
		}
		work.RDMA = <-rdmaDone
		if t.rdma != nil {
			chargeRDMA(t.rdma, work.RDMA, moved)
		}
		end := s.Now()
		stopSensors()
		<-sensorsDone
		work.Sensors = sw.GPUs()
		w := burn.Window{Start: start, End: end, Traffic: []burn.Traffic{}}
		for l, b := range moved {
			if b > 0 {
				w.Traffic = append(w.Traffic, burn.Traffic{Link: l, Bytes: b})
			}
		}
		slices.SortFunc(w.Traffic, func(a, b burn.Traffic) int { return strings.Compare(a.Link.String(), b.Link.String()) })
		doc.Schedule.Windows = append(doc.Schedule.Windows, w)
		doc.Work = append(doc.Work, work)
		if err := sample(fmt.Sprintf("window-%d", i+1), &after); err != nil {
			runErr = cmp.Or(runErr, err)
			break
		}
		rs := judge()
		env := write(rs)
		if t.onWindow != nil {
			t.onWindow(env)
		}
		if o.Progress != nil {
			// Each window left takes as long as this one did, its
			// sample and judging included.
			left := time.Duration(windows-i-1) * s.Now().Sub(start)
			fmt.Fprintf(o.Progress, "gdrcheck: burn %s (%d of %d, about %s left): %d pass(es), %s moved, %s\n", doc.Schedule.Name(i), i+1, windows,
				left.Round(time.Second), work.Passes, gib(moved), result.Worst(rs))
		}
	}
	rs := judge()
	switch {
	case runErr != nil && errors.Is(runErr, context.Canceled):
		doc.Stopped = "interrupted: " + runErr.Error()
	case runErr != nil:
		doc.Stopped = runErr.Error()
	default:
		doc.Complete = true
	}
	env := write(rs)
	if runErr != nil {
		return env, runErr
	}
	return env, burnOutcome(rs, o.Strict)
}

// burnJobPass is a window's pass of every collective across the job's
// nodes (BurnOptions.Job) on every GPU of this node at once (one process a
// node driving all of its GPUs, each a rank of the job's communicator),
// its rows and errors kept in work. The error is an interruption's only: a
// failed pass is the window's finding (burn.data).
func (s *Session) burnJobPass(ctx context.Context, gpus *GPUs, window int, nsetup *NCCLSetup, dir string, cfg bench.NCCLConfig, o BurnOptions, work *BurnWork) error {
	work.JobGPUs = nil
	for _, d := range gpus.Devices {
		work.JobGPUs = append(work.JobGPUs, gpus.BusIDs[d])
	}
	setup := &NCCLSetup{Dir: filepath.Join(dir, "job", fmt.Sprintf("window-%d", window+1)), Evidence: nsetup.Evidence}
	env, _, err := s.BenchNCCLJob(ctx, gpus, NCCLOptions{Lib: o.NCCLLib, Setup: setup, Config: cfg, Judge: Judging{Off: true}, Warn: o.Warn}, *o.Job)
	if env != nil {
		if nr, ok := env.Data.(*bench.NCCLReport); ok {
			for _, m := range nr.Measurements {
				work.Job = append(work.Job, burnCollective(m))
			}
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil:
		job := o.Job.Job
		work.Errors = append(work.Errors, fmt.Sprintf("job (rank %d of %d, on %s): %v", job.Rank, job.Size, strings.Join(work.JobGPUs, ","), err))
	}
	return nil
}

// burnOutcome is a burn-in's error: a failed verdict, or under --strict an
// unknown or error one.
func burnOutcome(rs []result.Result, strict bool) error {
	if strict {
		for _, r := range rs {
			if r.Status == result.Unknown || r.Status == result.Error {
				return failure("--strict: %s %s: %s", r.ID, r.Subject, r.Message)
			}
		}
	}
	return judged(rs)
}

// gpuReadingOf is what the driver (live NVML, or a capture's facts) and
// the kernel log's Xid lines say at a sample taken at at.
func gpuReadingOf(ctx context.Context, r machine.Root, label string, at time.Time) *burn.GPUReading {
	gr := &burn.GPUReading{Label: label, At: at}
	if f, err := live.New(live.WithRoot(r)).Collect(ctx); err != nil {
		gr.FactsError = err.Error()
	} else {
		gr.Facts = f
	}
	if b, err := r.Run(ctx, machine.CmdDmesg); err != nil {
		gr.XidError = err.Error()
	} else {
		gr.Xids = burn.XidsOf(node.ParseXids(b))
	}
	return gr
}

// burnSamples are the counter samples and GPU readings taken together,
// in order: the baselines, or the windows' ends.
type burnSamples struct {
	counters []*cf.Sample
	gpus     []*burn.GPUReading
}

func (b *burnSamples) add(c *cf.Sample, g *burn.GPUReading) {
	b.counters, b.gpus = append(b.counters, c), append(b.gpus, g)
}

// judgeBurn is every verdict of a burn-in: the counters' deltas attributed
// to the links (burn.Judge), the GPUs' own counters (burn.JudgeGPUs), their
// clocks under load (burn.JudgeSensors), their corrected ECC errors as a
// rate (burn.JudgeECC), their power (burn.JudgePower), the NICs' temperatures
// and optics (burn.JudgeOptics), the bandwidth of
// every window against the first windows and the model
// (burn.JudgeBandwidth) and the workload's data (workResults). A burn-in run and its replay judge through it; it sets
// doc.Series. The error is the attribution's: samples that do not fit the
// schedule or the node.
func judgeBurn(h *topology.Host, doc *BurnDoc, before, after burnSamples, o burn.Options) ([]result.Result, error) {
	if len(doc.Schedule.Windows) == 0 {
		return []result.Result{}, nil
	}
	series, err := burn.Attribute(h, doc.Schedule, before.counters, after.counters)
	if err != nil {
		return nil, err
	}
	series.AddNVLinks(h, doc.Schedule, before.gpus, after.gpus)
	doc.Series = series
	sensors := make([][]burn.GPUSensors, 0, len(doc.Work))
	for _, w := range doc.Work {
		sensors = append(sensors, w.Sensors)
	}
	rs := append(burn.Judge(series, o), burn.JudgeGPUs(doc.Schedule, before.gpus, after.gpus)...)
	rs = append(rs, burn.JudgeSensors(doc.Schedule, sensors)...)
	rs = append(rs, rdmaResults(doc)...)
	rs = append(rs, burn.JudgeECC(doc.Schedule, before.gpus, after.gpus, o.Confidence)...)
	rs = append(rs, burn.JudgePower(doc.Schedule, sensors)...)
	rs = append(rs, burn.JudgeOptics(h, doc.Schedule, before.counters, after.counters)...)
	if !o.SkipBandwidth {
		tp, nomodel := burnThroughput(h, doc)
		rs = append(append(rs, nomodel...), burn.JudgeBandwidth(doc.Schedule, tp)...)
	}
	return append(rs, workResults(doc)...), nil
}

// workResults judges the workload itself: data that came back wrong fails
// (burn.data), naming the window and the copy.
func workResults(doc *BurnDoc) []result.Result {
	var out []result.Result
	for _, w := range doc.Work {
		name := doc.Schedule.Name(w.Window)
		var ncclWrong int64
		for _, c := range append(slices.Clone(w.NCCL), w.Job...) {
			ncclWrong += c.Wrong
		}
		switch {
		case w.Wrong > 0 || ncclWrong > 0 || len(w.Errors) > 0:
			msg := fmt.Sprintf("%s: %d wrong byte(s) over %d pass(es) of copies, %d wrong element(s) in NCCL's checked collectives", name, w.Wrong, w.Passes, ncclWrong)
			if len(w.Errors) > 0 {
				msg += "; " + w.Errors[0]
			}
			out = append(out, result.Result{ID: "burn.data", Source: burn.Source, Status: result.Fail, Subject: fmt.Sprintf("window %d", w.Window+1), Reason: "DataCorrupted",
				Message: msg, Remedy: "a copy whose data came back wrong is silent corruption or a failing device: run gdrcheck check (gpu.health: ECC, Xid), reseat or replace the GPU, and rerun the burn-in"})
		case w.Passes == 0 && len(w.NCCL) == 0:
			out = append(out, result.Result{ID: "burn.data", Source: burn.Source, Status: result.Unknown, Subject: fmt.Sprintf("window %d", w.Window+1), Reason: "NoWork", Message: name + ": no pass of the workload finished"})
		default:
			out = append(out, result.Result{ID: "burn.data", Source: burn.Source, Status: result.Pass, Subject: fmt.Sprintf("window %d", w.Window+1), Reason: "DataValid",
				Message: fmt.Sprintf("%s: %d pass(es) of %d copies, every byte compared, and %d NCCL collective(s)%s, each with its checked run verified: nothing wrong", name, w.Passes, len(w.Copies), len(w.NCCL), jobText(w))})
		}
	}
	return out
}

// jobText says what a window ran across the job's nodes, "" when nothing.
func jobText(w BurnWork) string {
	if len(w.Job) == 0 {
		return ""
	}
	return fmt.Sprintf(" here and %d across the job's nodes (on %s)", len(w.Job), strings.Join(w.JobOn(), ","))
}

// peerLink is a link a GPU-to-GPU copy crosses and the share of its
// bytes it carries.
type peerLink struct {
	link  burn.Link
	share uint64
}

// peerLinks are the links a copy between CUDA devices a and b crosses: the
// NVLinks of a that reach b (directly, or every active link to the
// switches, the bytes shared among them) where the pair is on NVLink,
// else their PCIe path. None when either is not a GPU discovery found.
func peerLinks(h *topology.Host, g *GPUs, a, b int) []peerLink {
	ga, gb := h.GPUByAddress(g.BusIDs[a]), h.GPUByAddress(g.BusIDs[b])
	if ga == nil || gb == nil {
		return nil
	}
	if h.GPURelation(ga, gb).Level != level.NVLink {
		return []peerLink{{burn.GPUPeerLink(ga.Address, gb.Address), 1}}
	}
	var nv []int
	for _, l := range ga.NVLinks {
		if l.Active && (l.RemoteType == "nvswitch" || strings.EqualFold(l.RemoteBusID, gb.Address)) {
			nv = append(nv, l.Link)
		}
	}
	out := make([]peerLink, 0, len(nv))
	for _, n := range nv {
		out = append(out, peerLink{burn.NVLinkLink(ga.Address, n), uint64(len(nv))})
	}
	return out
}

// burnReadTimeout bounds discovery and every counter sample when the
// command gives no --timeout.
const burnReadTimeout = 30 * time.Second

func gib(moved map[burn.Link]uint64) string {
	var t uint64
	for _, b := range moved {
		t += b
	}
	return fmt.Sprintf("%.1f GiB", float64(t)/(1<<30))
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
