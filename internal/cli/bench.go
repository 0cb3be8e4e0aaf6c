package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/renameio/v2"
	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/collect/pci"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/dl"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// ExitInterrupted is the exit code after Ctrl-C (the shell's 128+SIGINT).
const ExitInterrupted = 130

type benchOptions struct {
	cudart, nccl string
	out          string
	format       string
	devices      string
	ngpus        int
	opTimeout    time.Duration
	noJudge      bool
	margin       float64
	// buffers is bench nccl's --buffers (empty: auto).
	buffers string
	// host is the node already discovered by the caller (run --bench);
	// nil: openBench discovers it.
	host *topology.Host
}

func (o *benchOptions) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.cudart, "cudart", "", "path of libcudart.so (default: search the loader path, CUDA_HOME, /usr/local/cuda)")
	cmd.Flags().StringVar(&o.out, "out", "", "directory for results.json and NCCL's logs (default gdrcheck-results/<command>-<time>)")
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	cmd.Flags().StringVar(&o.devices, "devices", "", "CUDA devices to use, e.g. 0,2 (default: the first -g, or all)")
	cmd.Flags().DurationVar(&o.opTimeout, "op-timeout", 5*time.Minute, "deadline of every wait for GPU work; on expiry the run is aborted")
	cmd.Flags().BoolVar(&o.noJudge, "no-judge", false, "do not judge results against the performance model")
	cmd.Flags().Float64Var(&o.margin, "pass-ratio", 0.85, "pass when measured/expected is at least this at large sizes")
}

func newBench(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Native benchmarks through CUDA and NCCL: collectives (nccl-tests semantics) and copies",
	}
	cmd.AddCommand(newBenchNCCL(g), newBenchCopy(g))
	return cmd
}

// benchEnv is what both benchmarks open.
type benchEnv struct {
	rt      *cuda.Runtime
	devices []int
	busIDs  map[int]string
	gpus    map[int]*topology.GPU // CUDA ordinal -> discovered GPU
	host    *topology.Host
	outDir  string
	runtime string
	driver  string
}

// toolError marks errors that mean the tool could not run (exit 2).
func toolError(err error) error { return &exitError{code: ExitToolErr, err: err} }

func openBench(ctx context.Context, g *globals, o benchOptions, kind string, ngpus int) (*benchEnv, error) {
	if !machine.NewRoot(g.root).Live() {
		return nil, toolError(fmt.Errorf("benchmarks run on the live host only (--root is %s)", g.root))
	}
	if o.format != "text" && o.format != "json" {
		return nil, toolError(fmt.Errorf("--format %q: want text or json", o.format))
	}
	e := &benchEnv{busIDs: map[int]string{}, gpus: map[int]*topology.GPU{}}
	e.outDir = o.out
	if e.outDir == "" {
		e.outDir = filepath.Join("gdrcheck-results", kind+"-"+time.Now().UTC().Format("20060102-150405"))
	}
	if err := os.MkdirAll(e.outDir, 0o755); err != nil {
		return nil, toolError(err)
	}
	rt, err := cuda.Open(o.cudart)
	if err != nil {
		if errors.Is(err, dl.ErrNotFound) {
			return nil, toolError(fmt.Errorf("cannot run GPU benchmarks: %w", err))
		}
		return nil, toolError(err)
	}
	e.rt = rt
	e.runtime, e.driver, _ = rt.Versions(ctx)
	n, err := rt.DeviceCount(ctx)
	if err != nil {
		return nil, toolError(fmt.Errorf("no usable GPU: %w", err))
	}
	if n == 0 {
		return nil, toolError(fmt.Errorf("no usable GPU: the CUDA runtime sees no device"))
	}
	switch {
	case o.devices != "":
		for _, f := range strings.Split(o.devices, ",") {
			d, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || d < 0 || d >= n {
				return nil, toolError(fmt.Errorf("--devices %q: device %q is not one of 0..%d", o.devices, f, n-1))
			}
			e.devices = append(e.devices, d)
		}
	case ngpus > 0:
		if ngpus > n {
			return nil, toolError(fmt.Errorf("-g %d: only %d GPU(s) visible", ngpus, n))
		}
		for d := 0; d < ngpus; d++ {
			e.devices = append(e.devices, d)
		}
	default:
		for d := 0; d < n; d++ {
			e.devices = append(e.devices, d)
		}
	}
	// Map CUDA ordinals to the discovered GPUs by bus id (CUDA's order
	// need not be PCI order).
	e.host = o.host
	if e.host == nil {
		if h, err := g.discover(ctx, machine.NewRoot("/")); err == nil {
			e.host = h
		}
	}
	for _, d := range e.devices {
		bus, err := rt.PCIBusID(ctx, d)
		if err != nil {
			return nil, toolError(err)
		}
		bus = pci.NormalizeBusID(bus)
		e.busIDs[d] = bus
		if e.host != nil {
			e.gpus[d] = e.host.GPUByAddress(bus)
		}
	}
	return e, nil
}

func (e *benchEnv) gpuName(d int) string {
	if g := e.gpus[d]; g != nil && g.Name != "" {
		return g.Name
	}
	return "GPU"
}

func (e *benchEnv) localCPUs(d int) []int {
	if g := e.gpus[d]; g != nil && g.Dev != nil {
		return []int(g.Dev.LocalCPUs)
	}
	return nil
}

// system is the model of this host restricted to the devices in use.
func (e *benchEnv) system() (model.System, error) {
	if e.host == nil {
		return model.System{}, fmt.Errorf("host not discovered")
	}
	s, err := model.FromHost(e.host)
	if err != nil {
		return s, err
	}
	s.GPUsPerNode = len(e.devices)
	s.Nodes = 1
	return s, s.Validate()
}

// writeAtomic writes a JSON document with renameio (never a torn file).
func writeAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return renameio.WriteFile(path, append(b, '\n'), 0o644)
}

// NCCLReport is results.json of `gdrcheck bench nccl`.
type NCCLReport struct {
	Tool        string             `json:"tool"`
	StartedAt   time.Time          `json:"started_at"`
	Complete    bool               `json:"complete"`
	Interrupted bool               `json:"interrupted,omitempty"`
	Error       string             `json:"error,omitempty"`
	Command     []string           `json:"command"`
	NCCL        string             `json:"nccl_version"`
	NCCLPath    string             `json:"nccl_path"`
	CUDARuntime string             `json:"cuda_runtime"`
	CUDADriver  string             `json:"cuda_driver"`
	Devices     []BenchDevice      `json:"devices"`
	Config      map[string]any     `json:"config"`
	Results     []bench.NCCLResult `json:"results"`
	Judgements  []result.Result    `json:"judgements,omitempty"`
	Evidence    *NCCLEvidence      `json:"nccl_evidence,omitempty"`
	Notes       []string           `json:"notes,omitempty"`
}

// BenchDevice is a GPU a benchmark ran on.
type BenchDevice struct {
	CUDA  int    `json:"cuda_device"`
	BusID string `json:"bus_id"`
	Name  string `json:"name"`
}

// NCCLEvidence is what NCCL itself wrote during the run.
type NCCLEvidence struct {
	Dir     string   `json:"dir"`
	Files   []string `json:"files"`
	Debug   string   `json:"nccl_debug"`
	Subsys  string   `json:"nccl_debug_subsys"`
	Summary []string `json:"summary,omitempty"`
}

// ncclEvidenceEnv points NCCL's logs and dumps at dir (unless the user set
// them) before the library is loaded; NCCL reads them at initialisation.
func ncclEvidenceEnv(dir string) *NCCLEvidence {
	ev := &NCCLEvidence{Dir: dir}
	set := func(k, v string) string {
		if cur, ok := os.LookupEnv(k); ok {
			return cur
		}
		os.Setenv(k, v)
		return v
	}
	ev.Debug = set("NCCL_DEBUG", "INFO")
	ev.Subsys = set("NCCL_DEBUG_SUBSYS", "INIT,NET,GRAPH,ENV")
	set("NCCL_DEBUG_FILE", filepath.Join(dir, "nccl-debug.%h.%p.log"))
	set("NCCL_TOPO_DUMP_FILE", filepath.Join(dir, "nccl-topo.xml"))
	set("NCCL_GRAPH_DUMP_FILE", filepath.Join(dir, "nccl-graph.xml"))
	return ev
}

func (ev *NCCLEvidence) collect() {
	ents, _ := os.ReadDir(ev.Dir)
	ev.Files = nil
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "nccl-") {
			ev.Files = append(ev.Files, e.Name())
		}
	}
	sort.Strings(ev.Files)
}

func newBenchNCCL(g *globals) *cobra.Command {
	var o benchOptions
	var minS, maxS, dtype, redop, colls string
	var factor, step uint64
	var warm, iters, check, root, ngpus int
	var corrupt bool
	cmd := &cobra.Command{
		Use:   "nccl",
		Short: "NCCL collectives with nccl-tests' meaning of every number",
		Long: `bench nccl runs NCCL collectives natively, one process driving the GPUs
(ncclCommInitAll), with nccl-tests' semantics: sizes -b..-e by -f (or -i), warm-up -w at
every power of two, -n timed iterations per size timed by the host clock, out-of-place
then in-place, algbw = bytes/time and busbw by nccl-tests' factors (all_reduce 2(n-1)/n;
all_gather, reduce_scatter, alltoall (n-1)/n; broadcast, reduce, sendrecv 1), and -c
checked runs with fresh non-zero data (#wrong). NCCL's own evidence (NCCL_DEBUG=INFO log,
topology and graph dumps) is kept with results.json in --out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := bench.NCCLConfig{StepFactor: factor, StepBytes: step, Warmup: warm, Iters: iters, Check: check, Root: root, OpTimeout: o.opTimeout, CorruptAfterCheck: corrupt}
			var err error
			if cfg.MinBytes, err = bench.ParseSize(minS); err != nil {
				return toolError(fmt.Errorf("-b: %v", err))
			}
			if cfg.MaxBytes, err = bench.ParseSize(maxS); err != nil {
				return toolError(fmt.Errorf("-e: %v", err))
			}
			if cfg.MinBytes > cfg.MaxBytes {
				return toolError(fmt.Errorf("-b %s is larger than -e %s", minS, maxS))
			}
			if cfg.DType, err = bench.DTypeByName(dtype); err != nil {
				return toolError(fmt.Errorf("-d: %v", err))
			}
			if cfg.Op, err = bench.RedOpByName(redop); err != nil {
				return toolError(fmt.Errorf("-o: %v", err))
			}
			names := strings.Split(colls, ",")
			if colls == "all" {
				names = nil
				for _, c := range bench.Collectives() {
					names = append(names, c.Name)
				}
			}
			for _, n := range names {
				c, err := bench.CollectiveByName(strings.TrimSpace(n))
				if err != nil {
					return toolError(fmt.Errorf("--op: %v", err))
				}
				cfg.Collectives = append(cfg.Collectives, c)
			}
			return runBenchNCCL(cmd.Context(), g, o, cfg, ngpus)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&minS, "minbytes", "b", "8", "smallest size (bytes, K, M, G)")
	f.StringVarP(&maxS, "maxbytes", "e", "128M", "largest size")
	f.Uint64VarP(&factor, "stepfactor", "f", 2, "multiply the size by this each step")
	f.Uint64VarP(&step, "stepbytes", "i", 0, "add this to the size each step (when -f is 1)")
	f.IntVarP(&ngpus, "ngpus", "g", 0, "number of GPUs (default: all)")
	f.IntVarP(&warm, "warmup_iters", "w", 5, "warm-up iterations at each power-of-two size")
	f.IntVarP(&iters, "iters", "n", 20, "timed iterations per size")
	f.IntVarP(&check, "check", "c", 1, "checked runs per size (0: no correctness check)")
	f.StringVarP(&dtype, "datatype", "d", "float", "data type: int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16")
	f.StringVarP(&redop, "redop", "o", "sum", "reduction: sum, prod, max, min, avg")
	f.IntVarP(&root, "root", "r", 0, "root rank of broadcast and reduce")
	f.StringVar(&colls, "op", "all_reduce", "collectives, comma-separated, or all: all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv")
	f.StringVar(&o.buffers, "buffers", "auto", "device buffers from auto (ncclMemAlloc where NCCL has it, as nccl-tests), nccl (ncclMemAlloc) or cuda (cudaMalloc)")
	f.StringVar(&o.nccl, "nccl", "", "path of libnccl.so.2 (default: search the loader path, NCCL_HOME)")
	f.BoolVar(&corrupt, "inject-corruption", false, "damage an output after each checked run (proves #wrong detects bad data)")
	_ = f.MarkHidden("inject-corruption")
	o.flags(cmd)
	return cmd
}

func runBenchNCCL(ctx context.Context, g *globals, o benchOptions, cfg bench.NCCLConfig, ngpus int) error {
	e, err := openBench(ctx, g, o, "bench-nccl", ngpus)
	if err != nil {
		return err
	}
	ev := ncclEvidenceEnv(e.outDir)
	lib, err := nccl.Open(o.nccl)
	if err != nil {
		return toolError(fmt.Errorf("cannot run NCCL benchmarks: %w", err))
	}
	ver, _, _ := lib.Version()
	if cfg.Buffers, err = bench.ResolveBuffers(o.buffers, lib); err != nil {
		return toolError(fmt.Errorf("--%w", err))
	}
	cfg.Devices = e.devices
	if cfg.Root < 0 || cfg.Root >= len(e.devices) {
		return toolError(fmt.Errorf("-r %d: want a rank in 0..%d", cfg.Root, len(e.devices)-1))
	}
	rep := &NCCLReport{Tool: "gdrcheck " + g.build.Version, StartedAt: time.Now().UTC(), Command: os.Args, NCCL: ver, NCCLPath: lib.Path,
		CUDARuntime: e.runtime, CUDADriver: e.driver, Evidence: ev,
		Config: map[string]any{"minbytes": cfg.MinBytes, "maxbytes": cfg.MaxBytes, "stepfactor": cfg.StepFactor, "stepbytes": cfg.StepBytes,
			"warmup_iters": cfg.Warmup, "iters": cfg.Iters, "check": cfg.Check, "datatype": cfg.DType.Name, "redop": cfg.Op.Name, "root": cfg.Root,
			"buffers": cfg.Buffers}}
	for _, d := range e.devices {
		rep.Devices = append(rep.Devices, BenchDevice{CUDA: d, BusID: e.busIDs[d], Name: e.gpuName(d)})
	}
	resultsPath := filepath.Join(e.outDir, "results.json")
	text := o.format == "text"
	w := g.out
	if text {
		fmt.Fprintf(w, "# gdrcheck bench nccl: NCCL %s (%s), CUDA runtime %s, driver CUDA %s\n", ver, lib.Path, e.runtime, e.driver)
		fmt.Fprintf(w, "# minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d validation: %d\n", cfg.MinBytes, cfg.MaxBytes, stepText(cfg), cfg.Warmup, cfg.Iters, cfg.Check)
		fmt.Fprintf(w, "# device buffers from %s\n", cfg.Buffers)
		pid := os.Getpid()
		hn, _ := os.Hostname()
		for i, d := range e.devices {
			fmt.Fprintf(w, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s\n", i, pid, hn, d, e.busIDs[d], e.gpuName(d))
		}
	}
	// partial holds the rows finished so far, collective by collective in
	// the order they ran.
	var partial []bench.NCCLResult
	cfg.OnNote = func(s string) {
		rep.Notes = append(rep.Notes, s)
		if text {
			fmt.Fprintf(w, "#\n# %s\n", s)
		}
	}
	cfg.OnRow = func(coll string, r bench.Row) {
		if len(partial) == 0 || partial[len(partial)-1].Collective != coll {
			partial = append(partial, bench.NCCLResult{Collective: coll, Ranks: len(e.devices)})
			if text {
				fmt.Fprintf(w, "#\n# Collective %s\n", coll)
				io.WriteString(w, bench.TableHeader())
			}
		}
		if text {
			fmt.Fprintln(w, r.Line())
		}
		cur := &partial[len(partial)-1]
		cur.Rows = append(cur.Rows, r)
		// Every finished row is on disk: an interrupted run leaves a valid,
		// partial results.json.
		snap := *rep
		snap.Results = partial
		_ = writeAtomic(resultsPath, snap)
	}
	results, runErr := runCollectives(ctx, e, lib, cfg, text, w)
	rep.Results = results
	ev.collect()
	rep.Evidence.Summary = summarizeNCCLLog(e.outDir, ev.Files)
	if !o.noJudge {
		rep.Judgements = judgeNCCL(e, results, o.margin)
	}
	rep.Complete = runErr == nil
	if runErr != nil {
		rep.Error = runErr.Error()
		rep.Interrupted = errors.Is(runErr, context.Canceled)
	}
	if err := writeAtomic(resultsPath, rep); err != nil {
		fmt.Fprintf(g.errOut, "gdrcheck: writing %s: %v\n", resultsPath, err)
	}
	if text {
		for _, j := range rep.Judgements {
			fmt.Fprintf(w, "# %-7s %s: %s\n", strings.ToUpper(string(j.Status)), j.Subject, j.Message)
		}
		for _, s := range rep.Evidence.Summary {
			fmt.Fprintf(w, "# NCCL: %s\n", s)
		}
		fmt.Fprintf(w, "# Results and NCCL's logs: %s\n", e.outDir)
	} else if err := writeJSON(w, rep); err != nil {
		return err
	}
	return benchExit(runErr, results, rep.Judgements)
}

func stepText(cfg bench.NCCLConfig) string {
	if cfg.StepFactor > 1 {
		return fmt.Sprintf("%d(factor)", cfg.StepFactor)
	}
	return fmt.Sprintf("%d(bytes)", cfg.StepBytes)
}

func runCollectives(ctx context.Context, e *benchEnv, lib *nccl.Library, cfg bench.NCCLConfig, text bool, w io.Writer) ([]bench.NCCLResult, error) {
	results, err := bench.RunNCCL(ctx, e.rt, lib, cfg)
	if text {
		for _, r := range results {
			if r.Error != "" {
				fmt.Fprintf(w, "# ERROR: %s\n", r.Error)
			}
			io.WriteString(w, r.Footer())
		}
		if err != nil && len(results) == 0 {
			fmt.Fprintf(w, "# ERROR: %v\n", err)
		}
	}
	return results, err
}

// benchExit maps a run's outcome to the exit code: interrupted 130, the
// tool could not run 2, a watchdog abort, wrong data or a failed judgement 1.
func benchExit(runErr error, results []bench.NCCLResult, js []result.Result) error {
	if runErr != nil {
		switch {
		case errors.Is(runErr, context.Canceled):
			return &exitError{code: ExitInterrupted, err: fmt.Errorf("interrupted; partial results kept: %v", runErr)}
		case errors.Is(runErr, bench.ErrWatchdog):
			return &exitError{code: ExitFailed, err: runErr}
		}
		return toolError(runErr)
	}
	var wrong int64
	for _, r := range results {
		wrong += r.Wrong
	}
	if wrong > 0 {
		return failed("%d wrong elements: the collectives returned bad data", wrong)
	}
	for _, j := range js {
		if j.Status == result.Fail {
			return failed("%s", j.Message)
		}
	}
	return nil
}

// judgeNCCL compares the largest size of each collective with the model.
func judgeNCCL(e *benchEnv, results []bench.NCCLResult, pass float64) []result.Result {
	s, err := e.system()
	if err != nil {
		return []result.Result{{ID: "bench.nccl", Status: result.Unknown, Subject: "node", Reason: "NoModel", Message: "no expected performance: " + err.Error()}}
	}
	m := model.DefaultMargin()
	m.Pass = pass
	var out []result.Result
	for _, r := range results {
		if len(r.Rows) == 0 {
			continue
		}
		row := r.Rows[len(r.Rows)-1]
		p, err := model.Expect(s, model.Collective(r.Collective), float64(row.Bytes))
		if err != nil {
			out = append(out, result.Result{ID: "bench.nccl", Status: result.Unknown, Subject: r.Collective, Reason: "NoModel", Message: err.Error()})
			continue
		}
		st, ratio := p.Judge(row.OutOfPlace.AlgBW, m)
		out = append(out, result.Result{ID: "bench.nccl", Status: st, Subject: r.Collective, Reason: "MeasuredVsExpected",
			Message: fmt.Sprintf("%s at %s: algbw %.1f GB/s (busbw %.1f), expected %.1f GB/s (busbw %.1f) by %s, limited by %s: %.0f%% of expected",
				r.Collective, model.FormatSize(float64(row.Bytes)), row.OutOfPlace.AlgBW, row.OutOfPlace.BusBW, p.AlgBW, p.BusBW, p.Algorithm, p.Bottleneck, 100*ratio),
			Evidence: []result.Evidence{{Source: "model", Value: p.Formula}}})
	}
	return out
}

// summarizeNCCLLog reads NCCL's debug logs of the run and returns its
// verdicts (GDR, P2P, network, version) as lines.
func summarizeNCCLLog(dir string, files []string) []string {
	var out []string
	for _, f := range files {
		if !strings.HasPrefix(f, "nccl-debug.") {
			continue
		}
		fh, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			out = append(out, f+": "+err.Error())
			continue
		}
		_, vs, err := ncclog.Analyze(f, fh)
		fh.Close()
		if err != nil {
			out = append(out, f+": "+err.Error())
			continue
		}
		for _, v := range vs {
			out = append(out, fmt.Sprintf("%s %s %s: %s", strings.ToUpper(string(v.Status)), v.ID, v.Subject, v.Message))
		}
	}
	return out
}
