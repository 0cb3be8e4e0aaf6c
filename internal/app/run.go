package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// RunOptions are a `gdrcheck run` run's.
type RunOptions struct {
	Node   NodeOptions
	Checks CheckOptions
	// Out is the directory for run.json and, with Bench, the benchmarks'
	// results ("": no run.json, and the benchmarks choose their folders).
	Out string
	// Bench requires the benchmark pass (the deprecated --bench): every
	// NCCL collective and the copies, up to BenchSize bytes; when it
	// cannot run that is the run's error (BenchErr).
	Bench bool
	// AutoBench runs the benchmark pass where it applies: on the live host
	// and a node with GPUs; elsewhere BenchSkip says why not.
	AutoBench bool
	// BenchSize is the largest size of the pass (0: the profile's).
	BenchSize uint64
	// Profile is how much the pass measures ("" quick).
	Profile Profile
	// Include are jobs of several nodes to bring into the dossier: rank
	// 0's results.json of a multi-rank bench nccl (the file or its
	// folder). Read before anything runs; one that cannot be read, or
	// none of whose ranks ran on this node, is the run's error.
	Include []string
	// Force lets Out be a folder that already holds a dossier or other
	// files (run --force); without it such a folder is refused before
	// anything runs.
	Force bool
	// Burn is the burn-in of ProfileBurnin (its Duration, Window, Bytes,
	// NCCL, Judge, Strict, Progress, Warn; Out, GPU and Force are the
	// run's). Validated before anything runs.
	Burn BurnOptions
}

// NodeRun is a node discovered and judged by Run; Dossier runs the rest.
// When the benchmarks apply it holds the CUDA runtime of its benchmark
// pass until Close.
type NodeRun struct {
	Summary *topology.Summary
	Checks  *checks.Report
	// NCCL and Copy configure the benchmark pass.
	NCCL bench.NCCLConfig
	Copy bench.CopyConfig
	// BenchErr says why the benchmark pass cannot run (no CUDA runtime,
	// no GPU, not the live host, --out not writable); nil when it can.
	BenchErr error
	// BenchSkip says why the benchmark pass does not apply here (no GPU,
	// a snapshot); "" when it does.
	BenchSkip string
	// OutErr says why the folder Out could not be made (a ToolError
	// naming the user's path). The report itself is whole: the caller
	// still prints it, then fails with OutErr.
	OutErr error

	s         *Session
	out       string
	gpus      *GPUs
	ncclSetup *NCCLSetup
	judging   Judging
	profile   Profile
	started   time.Time
	node      NodeOptions // what was read, for the benchmarks that read it again (bench rdma)
	host      *topology.Host
	env       *checks.Env
	lock      io.Closer // the dossier's lock (dossier.Lock), held until Close
	included  []*includedJob
	burn      BurnOptions
}

// quickPass is the fraction of the expected bandwidth that passes in the
// benchmark pass of `run --bench`.
const quickPass = 0.85

// Run is the first half of `gdrcheck run`: it discovers the node, runs
// the readiness checks and decides whether the benchmarks apply (Bench:
// required, and refused off the live host (requireLive); AutoBench: on the
// live host with GPUs, else BenchSkip says why not). When they do it loads the process's one CUDA runtime before
// the checks, so that the checks' library probe and the benchmarks share
// it, and picks the devices after them; failing at either is the
// benchmarks' error (BenchErr), not the checks'. NodeRun.Dossier runs the
// rest and writes the dossier, from its first phase on, so an interrupted
// benchmark pass still leaves the node's report.
//
// Out is made only once the node is judged. When it cannot be made the
// run still returns its report, with OutErr set (and BenchErr, since the
// benchmarks' results would go there too).
func (s *Session) Run(ctx context.Context, o RunOptions) (_ *NodeRun, err error) {
	started := s.Now()
	if o.Bench {
		// Refused before the checks run and print.
		if err := requireLive(o.Node.Root); err != nil {
			return nil, err
		}
	}
	if o.Profile == "" {
		o.Profile = ProfileQuick
	}
	nr := &NodeRun{s: s, out: o.Out, profile: o.Profile, started: started, node: o.Node, burn: o.Burn}
	if o.Profile == ProfileBurnin {
		if err := o.Burn.validate(); err != nil {
			return nil, err
		}
	}
	p, err := planChecks(o.Checks)
	if err != nil {
		return nil, err
	}
	if o.Out != "" {
		// Before the work: an hour of benchmarks must not end in "cannot
		// write", nor overwrite the last run's evidence unasked.
		if err := dossier.CheckOut(o.Out, o.Force); err != nil {
			return nil, toolErr(fmt.Errorf("--out %s: %w", o.Out, err))
		}
	}
	for _, path := range o.Include {
		j, err := readIncluded(ctx, path)
		if err != nil {
			return nil, toolErr(err)
		}
		nr.included = append(nr.included, j)
	}
	r, cleanup, h, err := openNode(ctx, o.Node)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	live := isLive(o.Node.Root)
	bench := o.Bench
	if o.AutoBench && !o.Bench {
		switch notLive := requireLive(o.Node.Root); {
		case notLive != nil:
			nr.BenchSkip = notLive.Error()
		case len(h.GPUs) == 0:
			nr.BenchSkip = "no NVIDIA GPU on the PCI bus: there is nothing to benchmark"
		default:
			bench = true
		}
	}
	if bench {
		// NCCL's debug settings go into the environment before the
		// checks probe the libraries, which loads NCCL.
		if nr.ncclSetup, err = s.SetupNCCL(subdir(o.Out, rawNCCL)); err != nil {
			return nil, err
		}
		nr.NCCL, nr.Copy = o.Profile.benchConfig(o.BenchSize)
	}
	// One CUDA runtime per process: the benchmarks' is loaded before the
	// checks, whose library probe asks it instead of loading its own.
	var rt *cuda.Runtime
	if bench {
		rt, nr.BenchErr = openRuntime("")
	}
	nr.Checks, nr.env = p.judge(ctx, r, h, live, rt)
	nr.host = h
	if rt != nil {
		nr.gpus, nr.BenchErr = useGPUs(ctx, rt, GPUOptions{Host: h})
	}
	for i, j := range nr.included {
		// A job none of whose ranks ran here is another node's.
		if _, _, err := dossier.NewJob(j.input(jobName(i)), dossier.JobContext{Self: h.Hostname, Host: h, GDR: true}); err != nil {
			return nil, toolErr(fmt.Errorf("--include %s: %w", o.Include[i], err))
		}
	}
	nr.Summary = h.Summarize()
	nr.Summary.Root = o.Node.Root
	// The pairing's GDR column says "path only" when nothing on this node
	// can register GPU memory (gdr.kernel-module says why).
	nr.Summary.Pairing = nr.Summary.Pairing.WithGDRBlocked(checks.GDRBlocked(nr.env))
	// The benchmarks are judged against the node as it should be: the
	// site profile where there is one, the catalogue otherwise.
	nr.judging = Judging{Pass: quickPass, Want: model.WantOf(p.expect), Profile: o.Checks.Expect}
	if o.Out != "" {
		err := os.MkdirAll(o.Out, 0o755)
		if err != nil {
			err = fmt.Errorf("--out %s: cannot make the directory: %w", o.Out, dossier.WithoutPath(err))
		} else if nr.lock, err = dossier.Lock(o.Out); err != nil {
			// Another run writes this dossier: two writers would mix
			// their files under one SHA256SUMS. This one writes nothing.
			err = fmt.Errorf("--out %s: %w", o.Out, err)
			nr.out = ""
		}
		if err != nil {
			nr.OutErr = toolErr(err)
			if nr.BenchErr == nil {
				nr.BenchErr = nr.OutErr
			}
		}
	}
	if !bench && !o.AutoBench {
		nr.BenchSkip = "the benchmarks were not asked for"
	}
	return nr, nil
}

// The dossier's folders of raw outputs.
var (
	rawNCCL = filepath.Join("raw", "nccl")
	rawCopy = filepath.Join("raw", "copy")
	rawRDMA = filepath.Join("raw", "rdma")
	rawNVLS = filepath.Join("raw", "nvls")
)

// BenchNCCL runs the pass's collectives (BenchErr when it cannot run);
// their text goes to text as they run, problems that do not stop the run
// to warn.
func (nr *NodeRun) BenchNCCL(ctx context.Context, text, warn io.Writer) (*report.Envelope, error) {
	if nr.BenchErr != nil {
		return nil, nr.BenchErr
	}
	env, _, err := nr.s.BenchNCCL(ctx, nr.gpus, NCCLOptions{Setup: nr.ncclSetup, Config: nr.NCCL, Judge: nr.judging, Text: text, Warn: warn})
	return env, err
}

// BenchCopy runs the pass's copies (BenchErr when it cannot run) and
// returns their document and output directory.
func (nr *NodeRun) BenchCopy(ctx context.Context, warn io.Writer) (*report.Envelope, string, error) {
	if nr.BenchErr != nil {
		return nil, "", nr.BenchErr
	}
	return nr.s.BenchCopy(ctx, nr.gpus, CopyOptions{Out: subdir(nr.out, rawCopy), Config: nr.Copy, Judge: nr.judging, Warn: warn})
}

// Close ends the benchmark pass's CUDA runtime.
func (nr *NodeRun) Close() {
	if nr.gpus != nil {
		nr.gpus.Close()
	}
	if nr.lock != nil {
		nr.lock.Close() // the dossier's lock: another run may write it now
		nr.lock = nil
	}
}

// subdir is dir/name, or "" (a benchmark chooses its own) when dir is "".
func subdir(dir, name string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, name)
}
