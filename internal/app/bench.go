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
	"strconv"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/dl"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// ToolError is an error after which the tool could not run (a missing
// library, no GPU, a bad option): the command line exits 2 on it.
type ToolError struct{ Err error }

func (e *ToolError) Error() string { return e.Err.Error() }
func (e *ToolError) Unwrap() error { return e.Err }

func toolErr(err error) error { return &ToolError{err} }

// Failure is a finding, not a tool error: wrong data, a judgement that
// failed, a watchdog abort. The command line exits 1 on it.
type Failure struct{ Err error }

func (e *Failure) Error() string { return e.Err.Error() }
func (e *Failure) Unwrap() error { return e.Err }

func failure(format string, a ...any) error { return &Failure{fmt.Errorf(format, a...)} }

// GPUOptions choose the CUDA runtime and the devices of a benchmark.
type GPUOptions struct {
	CUDART  string // path of libcudart.so ("" searches)
	Devices string // --devices: CUDA ordinals, comma-separated
	NGPUs   int    // -g: the first N devices (0: all)
	// PerRank picks the devices of one process of a job when Devices is
	// empty: LocalRank's, or the only one visible (a launcher that binds
	// one GPU per task through CUDA_VISIBLE_DEVICES); with NGPUs above 1,
	// devices LocalRank*NGPUs.. (NGPUs of them), as nccl-tests' -g numbers
	// them under MPI.
	PerRank   bool
	LocalRank int
	// Host is the node already discovered; nil: the benchmark runs
	// without the mapping to discovered GPUs (and without a model).
	Host *topology.Host
}

// GPUs is the CUDA runtime and the devices a benchmark runs on. Close ends
// the runtime's lifetime: one runtime per process, opened by OpenGPUs and
// passed to every benchmark of a command.
type GPUs struct {
	RT      *cuda.Runtime
	Devices []int
	BusIDs  map[int]string
	GPUs    map[int]*topology.GPU // CUDA ordinal -> discovered GPU
	Host    *topology.Host
	Runtime string // CUDA runtime version
	Driver  string // CUDA version the driver supports
}

// OpenGPUs opens the GPUs of a benchmark command on the live host that n
// names: it refuses any other root (requireLive), discovers the host
// unless o.Host is given (for the GPUs' names and the model; where
// discovery fails the benchmark runs without them), loads the CUDA runtime
// and picks the devices. Nothing is written.
func OpenGPUs(ctx context.Context, n NodeOptions, o GPUOptions) (*GPUs, error) {
	if err := requireLive(n.Root); err != nil {
		return nil, err
	}
	if o.Host == nil {
		if h, cleanup, err := Discover(ctx, n); err == nil {
			cleanup()
			o.Host = h
		}
	}
	return openGPUs(ctx, o)
}

// openGPUs loads the CUDA runtime and picks the devices.
func openGPUs(ctx context.Context, o GPUOptions) (*GPUs, error) {
	rt, err := openRuntime(o.CUDART)
	if err != nil {
		return nil, err
	}
	return useGPUs(ctx, rt, o)
}

// openRuntime loads the CUDA runtime of the benchmarks.
func openRuntime(path string) (*cuda.Runtime, error) {
	rt, err := cuda.Open(path)
	if err != nil {
		if errors.Is(err, dl.ErrNotFound) {
			return nil, toolErr(fmt.Errorf("cannot run GPU benchmarks: %w", err))
		}
		return nil, toolErr(err)
	}
	return rt, nil
}

// ParseDevices reads --devices: CUDA ordinals, comma-separated, each at
// most once (NCCL refuses a device given twice to one communicator).
func ParseDevices(s string) ([]int, error) {
	var ds []int
	for f := range strings.SplitSeq(s, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, toolErr(fmt.Errorf("--devices %q: %q is not a device number (0, 1, ...)", s, f))
		}
		if slices.Contains(ds, d) {
			return nil, toolErr(fmt.Errorf("--devices %q: device %d is given twice", s, d))
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// useGPUs picks the devices of o on the open runtime rt; when it fails,
// rt's lifetime ends with it. o.CUDART is not used.
func useGPUs(ctx context.Context, rt *cuda.Runtime, o GPUOptions) (_ *GPUs, err error) {
	g := &GPUs{RT: rt, BusIDs: map[int]string{}, GPUs: map[int]*topology.GPU{}, Host: o.Host}
	defer func() {
		if err != nil {
			g.Close()
		}
	}()
	g.Runtime, g.Driver, _ = rt.Versions(ctx)
	n, err := rt.DeviceCount(ctx)
	if err != nil {
		return nil, toolErr(fmt.Errorf("no usable GPU: %w", err))
	}
	if n == 0 {
		return nil, toolErr(fmt.Errorf("no usable GPU: the CUDA runtime sees no device"))
	}
	switch {
	case o.Devices != "":
		if g.Devices, err = ParseDevices(o.Devices); err != nil {
			return nil, err
		}
		for _, d := range g.Devices {
			if d >= n {
				return nil, toolErr(fmt.Errorf("--devices %q: device %d is not one of 0..%d", o.Devices, d, n-1))
			}
		}
	case o.PerRank && o.NGPUs > 1:
		lo := o.LocalRank * o.NGPUs
		if lo+o.NGPUs > n {
			return nil, toolErr(fmt.Errorf("-g %d, local rank %d: devices %d..%d, but only %d GPU(s) visible (0..%d): give --devices or fewer ranks per node", o.NGPUs, o.LocalRank, lo, lo+o.NGPUs-1, n, n-1))
		}
		for d := range o.NGPUs {
			g.Devices = append(g.Devices, lo+d)
		}
	case o.PerRank:
		switch {
		case o.LocalRank < n:
			g.Devices = []int{o.LocalRank}
		case n == 1:
			g.Devices = []int{0}
		default:
			return nil, toolErr(fmt.Errorf("local rank %d: only %d GPU(s) visible (0..%d): give --devices or fewer ranks per node", o.LocalRank, n, n-1))
		}
	case o.NGPUs > 0:
		if o.NGPUs > n {
			return nil, toolErr(fmt.Errorf("-g %d: only %d GPU(s) visible", o.NGPUs, n))
		}
		for d := range o.NGPUs {
			g.Devices = append(g.Devices, d)
		}
	default:
		for d := range n {
			g.Devices = append(g.Devices, d)
		}
	}
	// Map CUDA ordinals to the discovered GPUs by bus id (CUDA's order
	// need not be PCI order).
	for _, d := range g.Devices {
		bus, err := rt.PCIBusID(ctx, d)
		if err != nil {
			return nil, toolErr(err)
		}
		bus = pci.NormalizeBusID(bus)
		g.BusIDs[d] = bus
		if g.Host != nil {
			g.GPUs[d] = g.Host.GPUByAddress(bus)
		}
	}
	return g, nil
}

// Close ends the CUDA runtime's use by this command: this is the one place
// where its lifetime ends. Its thread ends and its C memory is freed;
// libcudart stays loaded (see cuda.Runtime.Close), and a runtime wedged in
// a call is kept as it is.
func (g *GPUs) Close() { _ = g.RT.Close() }

func (g *GPUs) name(d int) string {
	if x := g.GPUs[d]; x != nil && x.Name != "" {
		return x.Name
	}
	return "GPU"
}

func (g *GPUs) localCPUs(d int) []int {
	if x := g.GPUs[d]; x != nil && x.Dev != nil {
		return []int(x.Dev.LocalCPUs)
	}
	return nil
}

func (g *GPUs) devices() []bench.Device {
	var out []bench.Device
	for _, d := range g.Devices {
		out = append(out, bench.Device{CUDA: d, BusID: g.BusIDs[d], Name: g.name(d)})
	}
	return out
}

// basis is what the benchmarks on the devices in use are judged against:
// this host as it should be (the catalogue and the site profile) and as
// found. A run on some of the GPUs is held to that many GPUs; a run on all
// of them to the profile's count.
func (g *GPUs) basis(want model.Want) (model.Basis, error) {
	if g.Host == nil {
		return model.Basis{}, fmt.Errorf("host not discovered")
	}
	s, err := model.FromHost(g.Host)
	if err != nil {
		return model.Basis{}, err
	}
	if len(g.Devices) < len(g.Host.GPUs) {
		want.GPUs = 0
	}
	s.GPUsPerNode = len(g.Devices)
	s.Nodes = 1
	if err := s.Validate(); err != nil {
		return model.Basis{}, err
	}
	return model.Healthy(s, g.Host, want), nil
}

// Judging of benchmarks against the model.
type Judging struct {
	Off  bool    // --no-judge
	Pass float64 // --pass-ratio
	// Want is the site profile's part that sets expectations (gpus.count,
	// nics.rate_gbps, ...); zero: the catalogue and the node as found.
	Want model.Want
	// Profile is the path of the site profile Want came from ("": none),
	// named in the documents as the expectation's basis.
	Profile string
}

// JudgingWithProfile is judging against the site profile at path (""
// none): the same loading as check --expect (LoadProfile), read before
// anything runs.
func JudgingWithProfile(j Judging, path string) (Judging, error) {
	e, err := LoadProfile(path)
	if err != nil {
		return j, err
	}
	j.Want, j.Profile = model.WantOf(e), path
	return j, nil
}

// expected is the basis the benchmarks on g are judged against, named for
// their documents; nil and why when there is none (not judged: nil, nil).
func (j Judging) expected(g *GPUs) (*bench.Expected, error) {
	if j.Off {
		return nil, nil
	}
	b, err := g.basis(j.Want)
	if err != nil {
		return nil, err
	}
	return bench.NewExpected(b, j.Profile), nil
}

// OutDir is a benchmark's output directory: Dir, or
// gdrcheck-results/<kind>-<time> under the working directory. It is made
// only once the libraries have loaded, so a host without them is left
// without empty result folders.
func (s *Session) OutDir(dir, kind string) string {
	if dir != "" {
		return dir
	}
	return filepath.Join("gdrcheck-results", kind+"-"+s.Now().Format("20060102-150405"))
}

// WriteAtomic writes a JSON document with renameio (never a torn file).
func WriteAtomic(path string, v any) error {
	var b strings.Builder
	if err := report.WriteJSON(&b, v); err != nil {
		return err
	}
	return renameio.WriteFile(path, []byte(b.String()), 0o644)
}

// NCCLSetup is a `bench nccl` run's output directory and NCCL's debug
// settings, applied to the process.
type NCCLSetup struct {
	Dir      string
	Evidence *bench.NCCLEvidence
}

// SetupNCCL chooses the output directory (out, or one under
// gdrcheck-results) and applies NCCL's debug settings pointing into it.
// It must run before anything loads NCCL (see bench.NCCLDebug.Apply); it
// does not make the directory.
func (s *Session) SetupNCCL(out string) (*NCCLSetup, error) {
	dir := s.OutDir(out, "bench-nccl")
	ev, err := bench.NCCLDebug{Dir: dir}.Apply()
	if err != nil {
		return nil, toolErr(err)
	}
	return &NCCLSetup{Dir: dir, Evidence: ev}, nil
}

// NCCLOptions are a `bench nccl` run's.
type NCCLOptions struct {
	Lib     string // path of libnccl.so.2 ("" searches)
	Buffers string // --buffers
	Out     string // output directory ("" chooses one), when Setup is nil
	// Setup is the run's setup when the caller applied it early (run
	// --bench does, before its checks probe the libraries); nil: BenchNCCL
	// applies it before it loads NCCL.
	Setup  *NCCLSetup
	Config bench.NCCLConfig
	Judge  Judging
	// Text receives the run's text view (bench.NCCLText) as it goes (nil:
	// none).
	Text io.Writer
	// Warn receives problems that do not stop the run (a results.json
	// that could not be written).
	Warn io.Writer
	// OnRow is told of every finished row (progress); nil: nobody.
	OnRow func(coll collective.Collective, r collective.Row)
}

// BenchNCCL runs NCCL collectives on g and writes results.json (after every
// row, so an interrupted run leaves a valid partial document) and NCCL's
// evidence into the output directory. The returned error is the run's.
func (s *Session) BenchNCCL(ctx context.Context, g *GPUs, o NCCLOptions) (*report.Envelope, string, error) {
	started := s.Now()
	setup := o.Setup
	if setup == nil {
		var err error
		if setup, err = s.SetupNCCL(o.Out); err != nil {
			return nil, "", err
		}
	}
	dir, ev := setup.Dir, setup.Evidence
	lib, err := nccl.Open(o.Lib)
	if err != nil {
		return nil, dir, toolErr(fmt.Errorf("cannot run NCCL benchmarks: %w", err))
	}
	defer lib.Close() // after RunNCCL has destroyed or aborted its communicators
	ver, _, _ := lib.Version()
	cfg := o.Config
	if cfg.Buffers, err = bench.ResolveBuffers(o.Buffers, lib); err != nil {
		return nil, dir, toolErr(fmt.Errorf("--%w", err))
	}
	cfg.Devices = g.Devices
	if cfg.Root < 0 || cfg.Root >= len(g.Devices) {
		return nil, dir, toolErr(fmt.Errorf("-r %d: want a rank in 0..%d", cfg.Root, len(g.Devices)-1))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, dir, toolErr(err)
	}
	rep := &bench.NCCLReport{NCCL: ver, NCCLPath: lib.Path, CUDARuntime: g.Runtime, CUDADriver: g.Driver, Evidence: ev, Devices: g.devices(),
		Config: cfg.Settings()}
	exp, noModel := o.Judge.expected(g)
	rep.Expected = exp
	path := filepath.Join(dir, "results.json")
	text := bench.NCCLText{W: o.Text}
	text.Header(rep, cfg, s.Host, os.Getpid())
	// partial holds the rows finished so far, collective by collective in
	// the order they ran.
	var partial []bench.NCCLResult
	cfg.OnNote = func(n string) {
		rep.Notes = append(rep.Notes, n)
		text.Note(n)
	}
	cfg.OnRow = func(coll collective.Collective, r collective.Row) {
		if len(partial) == 0 || partial[len(partial)-1].Collective != coll {
			partial = append(partial, bench.NCCLResult{Collective: coll, Ranks: len(g.Devices)})
			text.Collective(coll)
		}
		text.Row(r)
		if o.OnRow != nil {
			o.OnRow(coll, r)
		}
		cur := &partial[len(partial)-1]
		cur.Rows = append(cur.Rows, r)
		// Every finished row is on disk: an interrupted run leaves a
		// valid, partial results.json.
		snap := *rep
		snap.Measurements = partial
		_ = WriteAtomic(path, s.Envelope("bench-nccl", started, nil, &snap))
	}
	results, runErr := bench.RunNCCL(ctx, g.RT, lib, cfg)
	text.Footers(results, runErr)
	rep.Measurements = results
	ev.Collect()
	// An NCCL error is explained first: its code's name, meaning and
	// remedy.
	judgements := bench.NCCLFailed(failedIn(results), runErr)
	switch {
	case noModel != nil:
		judgements = append(judgements, bench.NoModel(bench.JudgeNCCLID, noModel)...)
	case exp != nil:
		judgements = append(judgements, bench.JudgeNCCL(exp.Basis, results, o.Judge.Pass)...)
	}
	rep.Complete = runErr == nil
	if runErr != nil {
		rep.Error = runErr.Error()
		rep.Interrupted = errors.Is(runErr, context.Canceled)
	}
	env := s.Envelope("bench-nccl", started, judgements, rep)
	if err := WriteAtomic(path, env); err != nil && o.Warn != nil {
		fmt.Fprintf(o.Warn, "gdrcheck: writing %s: %s\n", printable.Line(path), printable.Line(err.Error()))
	}
	text.Trailer(judgements, ev, dir)
	return env, dir, benchOutcome(runErr, results, judgements)
}

// failedIn is the collective a run ended in, "node" when none had started.
func failedIn(results []bench.NCCLResult) string {
	if n := len(results); n > 0 && results[n-1].Error != "" {
		return string(results[n-1].Collective)
	}
	return "node"
}

// benchOutcome maps a run's outcome to an error: an interrupt
// (context.Canceled), a Failure (a watchdog abort, wrong data, a failed
// judgement) or a ToolError.
func benchOutcome(runErr error, results []bench.NCCLResult, js []result.Result) error {
	if runErr != nil {
		switch {
		case errors.Is(runErr, context.Canceled):
			return runErr
		case errors.Is(runErr, bench.ErrWatchdog):
			return &Failure{runErr}
		}
		return toolErr(runErr)
	}
	var wrong int64
	for _, r := range results {
		wrong += r.Wrong
	}
	if wrong > 0 {
		return failure("%d wrong elements: the collectives returned bad data", wrong)
	}
	return judged(js)
}

func judged(js []result.Result) error {
	for _, j := range js {
		if j.Status == result.Fail {
			return failure("%s", j.Message)
		}
	}
	return nil
}

// CopyOptions are a `bench copy` run's.
type CopyOptions struct {
	Out    string
	Config bench.CopyConfig
	Judge  Judging
	Warn   io.Writer
}

// BenchCopy runs the copy benchmarks on g and writes results.json.
func (s *Session) BenchCopy(ctx context.Context, g *GPUs, o CopyOptions) (*report.Envelope, string, error) {
	started := s.Now()
	dir := s.OutDir(o.Out, "bench-copy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, dir, toolErr(err)
	}
	cfg := o.Config
	cfg.Devices = g.Devices
	cfg.LocalCPUs = g.localCPUs
	rep := &bench.CopyReport{CUDARuntime: g.Runtime, CUDADriver: g.Driver, Devices: g.devices()}
	exp, noModel := o.Judge.expected(g)
	rep.Expected = exp
	res, runErr := bench.RunCopy(ctx, g.RT, cfg)
	rep.Measurements = res
	rep.Complete = runErr == nil
	if runErr != nil {
		rep.Error = runErr.Error()
	}
	var judgements []result.Result
	switch {
	case noModel != nil:
		judgements = bench.NoModel(bench.JudgeCopyID, noModel)
	case exp != nil:
		judgements = bench.JudgeCopies(exp.Basis, g.GPUs, res, o.Judge.Pass)
	}
	env := s.Envelope("bench-copy", started, judgements, rep)
	path := filepath.Join(dir, "results.json")
	if err := WriteAtomic(path, env); err != nil && o.Warn != nil {
		fmt.Fprintf(o.Warn, "gdrcheck: writing %s: %s\n", printable.Line(path), printable.Line(err.Error()))
	}
	if runErr != nil {
		return env, dir, benchOutcome(runErr, nil, nil)
	}
	for _, r := range res {
		if r.Error != "" || !r.Valid {
			return env, dir, failure("%s on GPU %d: %s", r.Test, r.Dev, cmp.Or(r.Error, fmt.Sprintf("%d bytes wrong", r.Wrong)))
		}
	}
	return env, dir, judged(judgements)
}

// QuickBenchTimeout bounds every wait for GPU work of `run --bench`.
const QuickBenchTimeout = 5 * time.Minute
