package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/launch"
	"github.com/gdrcheck/gdrcheck/internal/report"
)

type benchOptions struct {
	cudart, nccl string
	out          string
	format       *formatValue
	devices      string
	opTimeout    time.Duration
	noJudge      bool
	margin       float64
	// buffers is bench nccl's --buffers (empty: auto).
	buffers string
	// expect is --expect, the site profile; judge is the judging it and
	// the other flags set, made by validate.
	expect string
	judge  app.Judging
}

func (o *benchOptions) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.cudart, "cudart", "", "path of libcudart.so (default: search the loader path, CUDA_HOME, /usr/local/cuda)")
	cmd.Flags().StringVar(&o.out, "out", "", "directory for results.json and NCCL's logs (default gdrcheck-results/<command>-<time>)")
	o.format = addFormat(cmd.Flags(), nil, report.Text, report.JSON)
	cmd.Flags().StringVar(&o.devices, "devices", "", "CUDA devices to use, e.g. 0,2 (default: the first -g, or all)")
	cmd.Flags().DurationVar(&o.opTimeout, "op-timeout", 5*time.Minute, "deadline of every wait for GPU work; on expiry the run is aborted")
	cmd.Flags().BoolVar(&o.noJudge, "no-judge", false, "do not judge results against the performance model")
	cmd.Flags().Float64Var(&o.margin, "pass-ratio", 0.85, "pass when measured/expected is at least this at large sizes")
	cmd.Flags().StringVar(&o.expect, "expect", "", "site profile (YAML or JSON, as check --expect): judge against the hardware it describes (GPU count, NVLinks, PCIe gen/width, NIC rate) with the catalogue, not the node as found")
}

// validate refuses the shared bench options that cannot mean anything and
// reads --expect into the judging (o.judge), before anything loads or is
// written.
func (o *benchOptions) validate(ngpus, iters, warm int) error {
	switch {
	case ngpus < 0:
		return toolError(fmt.Errorf("-g %d: a number of GPUs, 0 for all", ngpus))
	case iters < 1:
		return toolError(fmt.Errorf("-n %d: at least 1 timed iteration", iters))
	case warm < 0:
		return toolError(fmt.Errorf("-w %d: a number of warm-up iterations, 0 or more", warm))
	case o.opTimeout <= 0:
		return toolError(fmt.Errorf("--op-timeout %s: must be positive", o.opTimeout))
	case !(o.margin > 0 && o.margin <= 1): // also refuses NaN
		return toolError(fmt.Errorf("--pass-ratio %g: want a fraction of expected in (0, 1]", o.margin))
	}
	if o.devices != "" {
		if _, err := app.ParseDevices(o.devices); err != nil {
			return err
		}
	}
	if o.noJudge && o.expect != "" {
		return toolError(fmt.Errorf("--expect %s sets what the results are judged against; --no-judge judges nothing", o.expect))
	}
	var err error
	o.judge, err = app.JudgingWithProfile(app.Judging{Off: o.noJudge, Pass: o.margin}, o.expect)
	return err
}

func newBench(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Native benchmarks through CUDA and NCCL: collectives (nccl-tests semantics) and copies",
		Example: `  gdrcheck bench nccl -b 8 -e 1G -f 2 --op all          # every collective on every GPU of this node
  gdrcheck bench copy --size 1G                          # device, host and GPU-to-GPU copies
  gdrcheck bench rdma --dry-run                          # the perftest runs per GPU–NIC pair, not run`,
		// An unknown subcommand is an argument: refused (exit 2), not
		// answered with the help.
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newBenchNCCL(g), newBenchCopy(g), newBenchRDMA(g), newBenchNVLS(g))
	return cmd
}

// openGPUs checks a benchmark's output format and opens the GPUs through
// the use-case (app.OpenGPUs: the live host only, discovered for the model
// and the GPU names). Nothing is written before the runtime loads.
func openGPUs(ctx context.Context, g *globals, o benchOptions, gpu app.GPUOptions) (report.Format, *app.GPUs, error) {
	f := o.format.Format()
	gpu.CUDART, gpu.Devices = o.cudart, o.devices
	gpus, err := app.OpenGPUs(ctx, g.node(), gpu)
	return f, gpus, err
}

// withGPUs opens the GPUs of a bench command (see openGPUs), runs the
// benchmark on them and closes them.
func withGPUs(ctx context.Context, g *globals, o benchOptions, ngpus int, run func(*app.GPUs, report.Format) error) error {
	f, gpus, err := openGPUs(ctx, g, o, app.GPUOptions{NGPUs: ngpus})
	if err != nil {
		return err
	}
	defer gpus.Close()
	return run(gpus, f)
}

// benchError keeps the message of an interrupted benchmark.
func benchError(err error) error {
	if errors.Is(err, context.Canceled) {
		return &exitError{code: ExitInterrupted, err: fmt.Errorf("interrupted; partial results kept: %v", err)}
	}
	return err
}

func newBenchNCCL(g *globals) *cobra.Command {
	var o benchOptions
	var minS, maxS, dtype, redop, colls string
	var factor, step uint64
	var warm, iters, check, root, ngpus int
	var corrupt bool
	var jf jobFlags
	cmd := &cobra.Command{
		Use:   "nccl",
		Short: "NCCL collectives with nccl-tests' meaning of every number",
		Example: `  gdrcheck bench nccl -b 8 -e 8G -f 2 --op all_reduce,all_gather --out run1
  srun -N2 --ntasks-per-node=8 gdrcheck bench nccl -e 8G --hierarchical --out /shared/job1
  gdrcheck bench nccl -e 1G --expect site.yaml --pass-ratio 0.9   # judged against the site's hardware`,
		Long: `bench nccl runs NCCL collectives natively, one process driving the GPUs
(ncclCommInitAll), with nccl-tests' semantics: sizes -b..-e by -f (or -i), warm-up -w at
every power of two, -n timed iterations per size timed by the host clock, out-of-place
then in-place, algbw = bytes/time and busbw by nccl-tests' factors (all_reduce 2(n-1)/n;
all_gather, reduce_scatter, alltoall (n-1)/n; broadcast, reduce, sendrecv 1), and -c
checked runs with fresh non-zero data (#wrong). NCCL's own evidence (NCCL_DEBUG=INFO log,
topology and graph dumps) is kept with results.json in --out.

Under a launcher (srun, mpirun, torchrun, a Kubernetes indexed Job) or with --rank and
--world-size, each process is one rank on one GPU (its local rank's): rank 0 makes NCCL's
unique id and serves it at the rendezvous address, authenticated by the job's secret
(GDRCHECK_SECRET or --secret-file), and at the end gathers every rank's results into one
table and one results.json; the other ranks print nothing but errors. See docs/multinode.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(ngpus, iters, warm); err != nil {
				return err
			}
			if check < 0 {
				return toolError(fmt.Errorf("-c %d: a number of checked runs, 0 for none", check))
			}
			if factor == 0 {
				return toolError(fmt.Errorf("-f 0: the step factor is at least 1 (1 steps by -i)"))
			}
			cfg := bench.NCCLConfig{StepFactor: factor, StepBytes: step, Warmup: warm, Iters: iters, Check: check, Root: root, OpTimeout: o.opTimeout, CorruptAfterCheck: corrupt}
			var err error
			if cfg.MinBytes, err = collective.ParseSize(minS); err != nil {
				return toolError(fmt.Errorf("-b: %v", err))
			}
			if cfg.MaxBytes, err = collective.ParseSize(maxS); err != nil {
				return toolError(fmt.Errorf("-e: %v", err))
			}
			if cfg.MinBytes > cfg.MaxBytes {
				return toolError(fmt.Errorf("-b %s is larger than -e %s", minS, maxS))
			}
			if factor == 1 && step == 0 && cfg.MinBytes < cfg.MaxBytes {
				return toolError(fmt.Errorf("-f 1 -i 0 never grows from -b %s to -e %s: give -i BYTES, or -f 2 or more", minS, maxS))
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
				for _, c := range collective.All() {
					names = append(names, string(c))
				}
			}
			for _, n := range names {
				c, err := collective.Parse(n)
				if err != nil {
					return toolError(fmt.Errorf("--op: %v", err))
				}
				cfg.Collectives = append(cfg.Collectives, c)
			}
			job, err := jf.detect(cmd)
			if err != nil {
				return err
			}
			if job.Multi() && job.Size > 1 {
				return benchNCCLJob(cmd, g, o, cfg, ngpus, jf, job)
			}
			return withGPUs(cmd.Context(), g, o, ngpus, func(gpus *app.GPUs, f report.Format) error {
				return benchNCCL(cmd.Context(), g, gpus, f, o, cfg, nil)
			})
		},
	}
	jf.add(cmd)
	f := cmd.Flags()
	f.StringVarP(&minS, "minbytes", "b", "8", "smallest size: bytes, or with a binary unit K, M, G or T (64K, 8G, 8GiB)")
	f.StringVarP(&maxS, "maxbytes", "e", "128M", "largest size")
	f.Uint64VarP(&factor, "stepfactor", "f", 2, "multiply the size by this each step")
	f.Uint64VarP(&step, "stepbytes", "i", 0, "add this to the size each step (when -f is 1)")
	f.IntVarP(&ngpus, "ngpus", "g", 0, "number of GPUs (default: all; a process of a job: its local rank's one, or with -g N local rank k's devices kN..kN+N-1, as nccl-tests numbers them)")
	f.IntVarP(&warm, "warmup_iters", "w", 5, "warm-up iterations at each power-of-two size")
	f.IntVarP(&iters, "iters", "n", 20, "timed iterations per size")
	f.IntVarP(&check, "check", "c", 1, "checked runs per size (0: no correctness check)")
	f.StringVarP(&dtype, "datatype", "d", "float", "data type: int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16")
	f.StringVarP(&redop, "redop", "o", "sum", "reduction: sum, prod, max, min, avg")
	// -r is nccl-tests' root rank; the long name is not --root, which is
	// every command's host root (a local --root would shadow it).
	f.IntVarP(&root, "root-rank", "r", 0, "root rank of broadcast and reduce")
	f.StringVar(&colls, "op", "all_reduce", "collectives, comma-separated, or all: all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv")
	f.StringVar(&o.buffers, "buffers", "auto", "device buffers from auto (ncclMemAlloc where NCCL has it, as nccl-tests), nccl (ncclMemAlloc) or cuda (cudaMalloc)")
	f.StringVar(&o.nccl, "nccl", "", "path of libnccl.so.2 (default: search the loader path, NCCL_HOME)")
	f.BoolVar(&corrupt, "inject-corruption", false, "damage an output after each checked run (proves #wrong detects bad data)")
	_ = f.MarkHidden("inject-corruption")
	o.flags(cmd)
	return cmd
}

// benchNCCL runs the collectives on GPUs already open; setup is NCCL's
// when the caller applied it (nil: applied here, before NCCL loads).
func benchNCCL(ctx context.Context, g *globals, gpus *app.GPUs, f report.Format, o benchOptions, cfg bench.NCCLConfig, setup *app.NCCLSetup) error {
	no := app.NCCLOptions{Lib: o.nccl, Buffers: o.buffers, Out: o.out, Setup: setup, Config: cfg, Judge: o.judge, Warn: g.errOut}
	if f == report.Text {
		no.Text = g.out
	}
	env, _, err := g.session.BenchNCCL(ctx, gpus, no)
	if env != nil && f == report.JSON {
		if werr := report.WriteJSON(g.out, env); werr != nil {
			return werr
		}
	}
	return benchError(err)
}

// benchNCCLJob runs bench nccl as one rank of a job of several processes.
func benchNCCLJob(cmd *cobra.Command, g *globals, o benchOptions, cfg bench.NCCLConfig, ngpus int, jf jobFlags, job launch.Job) error {
	ctx := cmd.Context()
	jo, err := jf.options(g, job)
	if err != nil {
		return err
	}
	// One GPU per process (its local rank's), or several: -g N (local rank
	// k drives devices kN..kN+N-1, as nccl-tests numbers them) or --devices.
	f, gpus, err := openGPUs(ctx, g, o, app.GPUOptions{PerRank: o.devices == "", LocalRank: job.LocalRank, NGPUs: ngpus})
	if err != nil {
		return err
	}
	defer gpus.Close()
	no := app.NCCLOptions{Lib: o.nccl, Buffers: o.buffers, Out: o.out, Config: cfg, Judge: o.judge, Warn: g.errOut}
	if f == report.Text && job.Rank == 0 {
		no.Text = g.out
	}
	env, _, err := g.session.BenchNCCLJob(ctx, gpus, no, jo)
	if env != nil && f == report.JSON && job.Rank == 0 {
		if werr := report.WriteJSON(g.out, env); werr != nil {
			return werr
		}
	}
	if err != nil && job.Rank != 0 {
		err = fmt.Errorf("rank %d of %d: %w", job.Rank, job.Size, err)
	}
	return benchError(err)
}
