package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/printable"
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
every readiness check on it. The output opens with the node verdict on one line (READY,
DEGRADED or NOT READY, the host, the time, the failing check IDs; JSON: "verdict"); see
check --help for the rule and --strict. Exit code 0 when nothing fails, 1 when a check
fails or broke (with --strict also when a result is unknown), 2 when the tool itself could
not run.`,
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

// minBenchSize is the smallest --bench-size: the pass's collectives start
// at 8 bytes.
const minBenchSize = 8

// runFormats are run's output formats: text is the inventory, the
// topology and the checks' table.
var runFormats = []report.Format{report.Text, report.JSON, report.Markdown, report.JUnit}

func runMain(ctx context.Context, g *globals, o runOptions) error {
	f, err := report.ParseFormat(o.format, runFormats...)
	if err != nil {
		return toolError(err)
	}
	if err := o.checks.validate(); err != nil {
		return err
	}
	ro := app.RunOptions{Node: g.node(), Checks: o.checks.options(), Out: o.out, Bench: o.bench}
	if o.bench {
		if f != report.Text {
			return toolError(fmt.Errorf("--bench prints text: use --format text, and --out DIR for the results as JSON"))
		}
		if ro.BenchSize, err = collective.ParseSize(o.benchSize); err != nil {
			return toolError(fmt.Errorf("--bench-size: %v", err))
		}
		if ro.BenchSize < minBenchSize {
			return toolError(fmt.Errorf("--bench-size %s: at least %d bytes (the smallest collective size)", o.benchSize, minBenchSize))
		}
		// Refused here, before the checks run and print.
		if !machine.NewRoot(g.root).Live() {
			return toolError(fmt.Errorf("--bench runs on the live host only (--root is %s)", g.root))
		}
	}
	nr, err := g.session.Run(ctx, ro)
	if err != nil {
		return err
	}
	defer nr.Close()
	rep := nr.Checks
	writeVerdict(g, f, rep.Verdict)
	if f != report.Text {
		if err := report.Write(g.out, f, nr.Envelope); err != nil {
			return err
		}
	} else {
		if err := nr.Summary.WriteInventory(g.out); err != nil {
			return err
		}
		fmt.Fprintln(g.out)
		if err := writeTopoText(g.out, nr.Summary, useColor("auto", g.out)); err != nil {
			return err
		}
		fmt.Fprintln(g.out, "\nReadiness checks:")
		if err := report.WriteTable(g.out, rep.Results, time.Duration(rep.DurationMS*float64(time.Millisecond))); err != nil {
			return err
		}
	}
	var benchErr error
	if o.bench { // text only: other formats were refused above
		benchErr = runQuickBench(ctx, g, nr)
	}
	// The report is printed whole even when --out could not be written;
	// then the run fails for it.
	if nr.OutErr != nil {
		return nr.OutErr
	}
	if notReady(rep) {
		return &exitError{code: ExitFailed, err: fmt.Errorf("%s", rep.CountsLine())}
	}
	return benchErr
}

// runQuickBench prints the short benchmark pass of `gdrcheck run --bench`
// as it runs, on the CUDA runtime the run opened.
func runQuickBench(ctx context.Context, g *globals, nr *app.NodeRun) error {
	fmt.Fprintln(g.out, "\nNCCL collectives:")
	if nr.BenchErr != nil {
		return nr.BenchErr
	}
	_, errN := nr.BenchNCCL(ctx, g.out, g.errOut)
	fmt.Fprintln(g.out, "\nCopies:")
	env, dir, errC := nr.BenchCopy(ctx, g.errOut)
	if env != nil {
		bench.WriteCopyText(g.out, env.Data.(*bench.CopyReport), nr.Copy, env.Results)
		fmt.Fprintf(g.out, "Results: %s\n", printable.Line(dir+"/results.json"))
	}
	if errN != nil {
		return benchError(errN)
	}
	return benchError(errC)
}
