package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// RunOptions are a `gdrcheck run` run's.
type RunOptions struct {
	Node   NodeOptions
	Checks CheckOptions
	// Out is the directory for run.json and, with Bench, the benchmarks'
	// results ("": no run.json, and the benchmarks choose their folders).
	Out string
	// Bench adds the short benchmark pass: every NCCL collective and the
	// copies, up to BenchSize bytes.
	Bench     bool
	BenchSize uint64
}

// RunReport is run.json's data beside the envelope's results: the node's
// summary and the checks' own outcome.
type RunReport struct {
	Verdict checks.Verdict    `json:"verdict"`
	Host    *topology.Summary `json:"host"`
	Checks  ChecksRun         `json:"checks"`
}

// ChecksRun is a run of checks without its results, which the envelope
// holds (once).
type ChecksRun struct {
	Counts     result.Counts     `json:"counts"`
	DurationMS float64           `json:"duration_ms"`
	Checks     []checks.CheckRun `json:"checks"`
}

// NodeRun is a node discovered, judged and written down by Run. With
// RunOptions.Bench it holds the CUDA runtime of its benchmark pass until
// Close.
type NodeRun struct {
	Envelope *report.Envelope // run.json's document
	Summary  *topology.Summary
	Checks   *checks.Report
	// NCCL and Copy configure the benchmark pass.
	NCCL bench.NCCLConfig
	Copy bench.CopyConfig
	// BenchErr says why the benchmark pass cannot run (no CUDA runtime,
	// no GPU, not the live host, --out not writable); nil when it can.
	BenchErr error
	// OutErr says why run.json could not be written into Out (a ToolError
	// naming the user's path). The report itself is whole: the caller
	// still prints it, then fails with OutErr.
	OutErr error

	s         *Session
	out       string
	gpus      *GPUs
	ncclSetup *NCCLSetup
	judging   Judging
}

// quickPass is the fraction of the expected bandwidth that passes in the
// benchmark pass of `run --bench`.
const quickPass = 0.85

// Run is `gdrcheck run`: it discovers the node, runs the readiness checks
// and writes run.json into Out before anything slower runs, so an
// interrupted benchmark pass still leaves the node's report. With Bench
// it loads the process's one CUDA runtime before the checks, so that the
// checks' library probe and the benchmarks share it, and picks the devices
// after them; failing at either is the benchmarks' error (BenchErr), not
// the checks'.
//
// Out is made only once the node is judged. When it cannot be written the
// run still returns its report, with OutErr set (and BenchErr, since the
// benchmarks' results would go there too).
func (s *Session) Run(ctx context.Context, o RunOptions) (_ *NodeRun, err error) {
	started := s.Now()
	nr := &NodeRun{s: s, out: o.Out}
	if o.Bench {
		// NCCL's debug settings go into the environment before the
		// checks probe the libraries, which loads NCCL.
		if nr.ncclSetup, err = s.SetupNCCL(subdir(o.Out, "nccl")); err != nil {
			return nil, err
		}
		nr.NCCL, nr.Copy = quickBench(o.BenchSize)
	}
	p, err := planChecks(o.Checks)
	if err != nil {
		return nil, err
	}
	r, cleanup, h, err := openNode(ctx, o.Node)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	// One CUDA runtime per process: the benchmarks' is loaded before the
	// checks, whose library probe asks it instead of loading its own.
	var rt *cuda.Runtime
	if o.Bench {
		rt, nr.BenchErr = openBenchRuntime(r, o.Node.Root)
	}
	var env *checks.Env
	nr.Checks, env = p.judge(ctx, r, h, rt)
	if rt != nil {
		nr.gpus, nr.BenchErr = useGPUs(ctx, rt, GPUOptions{Host: h})
	}
	nr.Summary = h.Summarize()
	nr.Summary.Root = o.Node.Root
	// The pairing's GDR column says "path only" when nothing on this node
	// can register GPU memory (gdr.kernel-module says why).
	nr.Summary.Pairing = nr.Summary.Pairing.WithGDRBlocked(checks.GDRBlocked(env))
	// The benchmarks are judged against the node as it should be: the
	// site profile where there is one, the catalogue otherwise.
	nr.judging = Judging{Pass: quickPass, Want: WantOf(p.expect), Profile: o.Checks.Expect}
	c := nr.Checks
	nr.Envelope = s.Envelope("run", started, c.Results, RunReport{Verdict: c.Verdict, Host: nr.Summary, Checks: ChecksRun{Counts: c.Counts, DurationMS: c.DurationMS, Checks: c.Checks}})
	if o.Out != "" {
		if nr.OutErr = writeRunJSON(o.Out, nr.Envelope); nr.OutErr != nil && nr.BenchErr == nil {
			nr.BenchErr = nr.OutErr
		}
	}
	return nr, nil
}

// writeRunJSON writes run.json into the directory out, making it. Its
// errors name the user's path, not the temporary file run.json is
// written through.
func writeRunJSON(out string, env *report.Envelope) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return toolErr(fmt.Errorf("--out %s: cannot make the directory: %w", out, cause(err)))
	}
	p := filepath.Join(out, "run.json")
	if err := WriteAtomic(p, env); err != nil {
		return toolErr(fmt.Errorf("--out %s: cannot write %s: %w", out, p, cause(err)))
	}
	return nil
}

// cause is the reason of a file-system error without the path it names
// (for renameio, a hidden temporary file the user never asked for).
func cause(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// openBenchRuntime loads the CUDA runtime of the benchmark pass, which
// runs on the live host only.
func openBenchRuntime(r machine.Root, root string) (*cuda.Runtime, error) {
	if !r.Live() {
		return nil, toolErr(fmt.Errorf("benchmarks run on the live host only (--root is %s)", root))
	}
	return openRuntime("")
}

// quickBench configures the benchmark pass of `run --bench`: every
// collective from 8 bytes to size by factors of 4, and the copies of size
// bytes that need no pageable memory.
func quickBench(size uint64) (bench.NCCLConfig, bench.CopyConfig) {
	n := bench.NCCLConfig{Collectives: collective.All(), MinBytes: 8, MaxBytes: size, StepFactor: 4, Warmup: 2, Iters: 10, Check: 1, OpTimeout: QuickBenchTimeout}
	n.DType, _ = bench.DTypeByName("float")
	n.Op, _ = bench.RedOpByName("sum")
	c := bench.CopyConfig{Bytes: size, Iters: 10, Warmup: 2, Timeout: QuickBenchTimeout,
		Tests: []string{bench.CopyD2D, bench.CopyH2DPinned, bench.CopyD2HPinned, bench.CopyBidirPinned, bench.CopyP2P, bench.CopyP2PBidir, bench.CopyLatency}}
	return n, c
}

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
	return nr.s.BenchCopy(ctx, nr.gpus, CopyOptions{Out: subdir(nr.out, "copy"), Config: nr.Copy, Judge: nr.judging, Warn: warn})
}

// Close ends the benchmark pass's CUDA runtime.
func (nr *NodeRun) Close() {
	if nr.gpus != nil {
		nr.gpus.Close()
	}
}

// subdir is dir/name, or "" (a benchmark chooses its own) when dir is "".
func subdir(dir, name string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, name)
}
