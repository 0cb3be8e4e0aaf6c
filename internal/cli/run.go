package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

type runOptions struct {
	format    string
	checks    checkOptions
	bench     bool
	benchSize string
	out       string
}

func newRun(g *globals) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run",
		Short: "The main job: discover the node, check every data-path prerequisite, report",
		Long: `run discovers the node (PCI tree, GPUs, NICs, NVLink, the GPU→NIC pairing) and runs
every readiness check on it. Exit code 0 when nothing fails, 1 when a check fails, 2 when
the tool itself could not run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMain(cmd.Context(), g, o)
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text, json, md or junit")
	cmd.Flags().BoolVar(&o.bench, "bench", false, "also run short native benchmarks (every NCCL collective up to --bench-size, copies of that size), judged against the model")
	cmd.Flags().StringVar(&o.benchSize, "bench-size", "256M", "largest size of the --bench collectives and copies")
	cmd.Flags().StringVar(&o.out, "out", "", "directory for the report: run.json (inventory, topology, checks), and with --bench the benchmarks' results and NCCL's logs")
	o.checks.flags(cmd)
	return cmd
}

// runReport is `gdrcheck run --format json`.
type runReport struct {
	Host   *topology.Summary `json:"host"`
	Checks *checks.Report    `json:"checks"`
}

// runFormats are run's output formats: text is the inventory, the
// topology and the checks' table.
var runFormats = []report.Format{report.Text, report.JSON, report.Markdown, report.JUnit}

func runMain(ctx context.Context, g *globals, o runOptions) error {
	f, err := report.ParseFormat(o.format, runFormats...)
	if err != nil {
		return toolError(err)
	}
	if o.bench && f != report.Text {
		return toolError(fmt.Errorf("--bench prints text: use --format text, and --out DIR for the results as JSON"))
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return toolError(fmt.Errorf("--out: %w", err))
		}
	}
	started := g.session.Now()
	var ncclSetup *app.NCCLSetup
	if o.bench {
		// NCCL's debug settings go into the environment before the
		// checks probe the libraries, which loads NCCL.
		if ncclSetup, err = g.session.SetupNCCL(subdir(o.out, "nccl")); err != nil {
			return err
		}
	}
	h, rep, err := g.judgeNode(ctx, o.checks)
	if err != nil {
		return err
	}
	s := h.Summarize()
	s.Root = g.root
	env := g.envelope("run", started, rep.Results, runReport{Host: s, Checks: rep})
	if o.out != "" {
		// Written before anything slower runs, so an interrupted
		// benchmark pass still leaves the node's report.
		if err := app.WriteAtomic(filepath.Join(o.out, "run.json"), env); err != nil {
			return toolError(fmt.Errorf("--out: %w", err))
		}
	}
	if f != report.Text {
		if err := report.Write(g.out, f, env); err != nil {
			return err
		}
	} else {
		if err := s.WriteInventory(g.out); err != nil {
			return err
		}
		fmt.Fprintln(g.out)
		if err := writeTopoText(g.out, s, useColor("auto", g.out)); err != nil {
			return err
		}
		fmt.Fprintln(g.out, "\nReadiness checks:")
		if err := report.WriteTable(g.out, rep.Results, time.Duration(rep.DurationMS*float64(time.Millisecond))); err != nil {
			return err
		}
	}
	var benchErr error
	if o.bench { // text only: other formats were refused above
		benchErr = runQuickBench(ctx, g, o, h, ncclSetup)
	}
	if rep.Counts.Failed() {
		return &exitError{code: ExitFailed, err: fmt.Errorf("%s", rep.CountsLine())}
	}
	return benchErr
}

// runQuickBench is the short benchmark pass of `gdrcheck run --bench`.
// h is the node run discovered: the benchmarks do not discover it again,
// and both run on one CUDA runtime.
func runQuickBench(ctx context.Context, g *globals, o runOptions, h *topology.Host, ncclSetup *app.NCCLSetup) error {
	size, err := collective.ParseSize(o.benchSize)
	if err != nil {
		return toolError(fmt.Errorf("--bench-size: %v", err))
	}
	bo := benchOptions{format: "text", opTimeout: app.QuickBenchTimeout, margin: 0.85}
	fmt.Fprintln(g.out, "\nNCCL collectives:")
	f, gpus, err := openGPUs(ctx, g, bo, 0, h)
	if err != nil {
		return err
	}
	defer gpus.Close()
	cfg := bench.NCCLConfig{Collectives: collective.All(), MinBytes: 8, MaxBytes: size, StepFactor: 4, Warmup: 2, Iters: 10, Check: 1, OpTimeout: bo.opTimeout}
	cfg.DType, _ = bench.DTypeByName("float")
	cfg.Op, _ = bench.RedOpByName("sum")
	errN := benchNCCL(ctx, g, gpus, f, bo, cfg, ncclSetup)
	fmt.Fprintln(g.out, "\nCopies:")
	bo.out = subdir(o.out, "copy")
	cc := bench.CopyConfig{Bytes: size, Iters: 10, Warmup: 2, Timeout: bo.opTimeout,
		Tests: []string{bench.CopyD2D, bench.CopyH2DPinned, bench.CopyD2HPinned, bench.CopyBidirPinned, bench.CopyP2P, bench.CopyP2PBidir, bench.CopyLatency}}
	errC := benchCopy(ctx, g, gpus, f, bo, cc)
	if errN != nil {
		return errN
	}
	return errC
}

// subdir is dir/name, or "" (a benchmark chooses its own) when dir is "".
func subdir(dir, name string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, name)
}
