package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/machine"
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
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
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

func runMain(ctx context.Context, g *globals, o runOptions) error {
	switch o.format {
	case "json", "text":
	default:
		return &exitError{code: ExitToolErr, err: fmt.Errorf("--format %q: want text or json", o.format)}
	}
	if o.bench && o.format == "json" {
		return &exitError{code: ExitToolErr, err: fmt.Errorf("--bench prints text: use --format text, and --out DIR for the results as JSON")}
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return &exitError{code: ExitToolErr, err: fmt.Errorf("--out: %w", err)}
		}
	}
	h, rep, err := g.judgeNode(ctx, o.checks)
	if err != nil {
		return err
	}
	s := h.Summarize()
	s.Root = g.root
	if o.out != "" {
		// Written before anything slower runs, so an interrupted
		// benchmark pass still leaves the node's report.
		if err := writeAtomic(filepath.Join(o.out, "run.json"), runReport{Host: s, Checks: rep}); err != nil {
			return &exitError{code: ExitToolErr, err: fmt.Errorf("--out: %w", err)}
		}
	}
	if o.format == "json" {
		if err := writeJSON(g.out, runReport{Host: s, Checks: rep}); err != nil {
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
		if err := rep.WriteTable(g.out); err != nil {
			return err
		}
	}
	var benchErr error
	if o.bench { // text only: --format json was refused above
		benchErr = runQuickBench(ctx, g, o, h)
	}
	if rep.Counts.Failed() {
		return &exitError{code: ExitFailed, err: fmt.Errorf("%s", rep.CountsLine())}
	}
	return benchErr
}

// runQuickBench is the short benchmark pass of `gdrcheck run --bench`.
// h is the node run discovered: the benchmarks do not discover it again.
func runQuickBench(ctx context.Context, g *globals, o runOptions, h *topology.Host) error {
	if !machine.NewRoot(g.root).Live() {
		return toolError(fmt.Errorf("--bench runs on the live host only"))
	}
	bo := benchOptions{format: "text", opTimeout: 5 * time.Minute, margin: 0.85, out: o.out, host: h}
	size, err := collective.ParseSize(o.benchSize)
	if err != nil {
		return toolError(fmt.Errorf("--bench-size: %v", err))
	}
	fmt.Fprintln(g.out, "\nNCCL collectives:")
	cfg := bench.NCCLConfig{Collectives: collective.All(), MinBytes: 8, MaxBytes: size, StepFactor: 4, Warmup: 2, Iters: 10, Check: 1, OpTimeout: bo.opTimeout}
	cfg.DType, _ = bench.DTypeByName("float")
	cfg.Op, _ = bench.RedOpByName("sum")
	if o.out != "" {
		bo.out = filepath.Join(o.out, "nccl")
	}
	errN := runBenchNCCL(ctx, g, bo, cfg, 0)
	fmt.Fprintln(g.out, "\nCopies:")
	if o.out != "" {
		bo.out = filepath.Join(o.out, "copy")
	}
	cc := bench.CopyConfig{Bytes: size, Iters: 10, Warmup: 2, Timeout: bo.opTimeout,
		Tests: []string{bench.CopyD2D, bench.CopyH2DPinned, bench.CopyD2HPinned, bench.CopyBidirPinned, bench.CopyP2P, bench.CopyP2PBidir, bench.CopyLatency}}
	errC := runBenchCopy(ctx, g, bo, cc, 0)
	if errN != nil {
		return errN
	}
	return errC
}
