package cli

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/analyze"
	"github.com/gdrcheck/gdrcheck/internal/analyze/verdict"
	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

func newAnalyze(g *globals) *cobra.Command {
	var o app.AnalyzeOptions
	var format *formatValue
	var strict bool
	cmd := &cobra.Command{
		Use:   "analyze FILE...",
		Short: "Read NCCL logs, nccl-tests, perftest, nvbandwidth, dcgmi diag and nvidia-smi topo -m outputs and say what they mean",
		Example: `  gdrcheck analyze nccl-debug.*.log                 # which transport every channel used, GDR, errors
  gdrcheck analyze all_reduce_perf.txt --expect site.yaml   # nccl-tests output against the hardware
  gdrcheck analyze ib_write_bw.txt --format md      # perftest output, as a table for a ticket`,
		Long: `analyze reads outputs operators already have and gives verdicts on them:
whether GPU Direct RDMA was used, whether bandwidth is what the hardware should
give, whether a diagnostic failed on the hardware or broke by itself.

The kind of each file is detected from its content (a NCCL_DEBUG=INFO run of
nccl-tests is read both as an NCCL log and as nccl-tests output); --kind forces
one. Kinds: ` + strings.Join(analyze.Kinds(), ", ") + `.

The files given together are one job: the NCCL debug logs among them (one per
rank or per node) are judged as one log, their ranks, hosts and channels merged,
with one set of verdicts (--separate judges each on its own).

nccl-tests numbers are judged against what the hardware should reach when it is
described: --expect PROFILE (the site profile of check --expect: gpus.model,
gpus.count, nics.count, nics.rate_gbps), or --gpu, --nodes, --nic-rate (the flags
override the profile; what neither gives is taken from the output: the GPU name,
the hosts and ranks it printed, one NIC per GPU). perftest bandwidth is judged
against --nic-rate (or nics.rate_gbps). Without them the numbers are not judged
against hardware, and a skip says so.

FILE "-" is the standard input; pipes, FIFOs and process substitution
(<(cmd)) are read once, as they come. An input that cannot be read (missing,
a directory, a device) is an error finding (analyze.input Unreadable), one that
is read but not recognised (empty, binary, another tool's output) an unknown
finding (analyze.input NotRecognised); the other inputs are still judged.
Ctrl-C stops the analysis (exit 130).

Exit status: 2 when an input could not be read (the others are still judged and
printed) or the options are wrong; else 1 when a verdict fails or says the
analysed tool itself broke; else 3 when an input was read but not recognised
(nothing was judged in it: never a success); else 1 with --strict when a verdict
is unknown (a number that could not be judged); else 0.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAnalyze(cmd.Context(), g, args, o, format.Format(), strict)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Kind, "kind", "", "read every file as this kind: "+strings.Join(analyze.Kinds(), ", "))
	format = addFormat(fl, nil, analyzeFormats...)
	fl.BoolVar(&o.Separate, "separate", false, "judge every NCCL debug log on its own, not the logs given together as one job")
	fl.StringVar(&o.Expect, "expect", "", "site profile (YAML or JSON, as check --expect): the hardware nccl-tests numbers are judged against")
	fl.StringVar(&o.Hardware.GPU, "gpu", "", "GPU model the job ran on (H200, \"H100 SXM\", A100, ...): judge nccl-tests numbers against it")
	fl.IntVar(&o.Hardware.Nodes, "nodes", 0, "nodes the job ran on (default: the hosts the output names)")
	fl.IntVar(&o.Hardware.GPUsPerNode, "gpus-per-node", 0, "GPUs per node (default: the profile's gpus.count, else the ranks per host the output names)")
	fl.IntVar(&o.Hardware.NICsPerNode, "nics-per-node", 0, "network NICs per node (default: the profile's nics.count, else one per GPU)")
	fl.Float64Var(&o.Hardware.NICRateGbps, "nic-rate", 0, "rate of each NIC in Gb/s (e.g. 400): judges perftest bandwidth, and is needed to judge a multi-node nccl-tests run")
	fl.BoolVar(&strict, "strict", false, "for sign-off: an unknown verdict (an input not recognised, a number that could not be judged) fails the run (exit 1)")
	return cmd
}

// analyzeFormats are analyze's output formats: text is each reader's own
// view; table, md and junit list the verdicts.
var analyzeFormats = []report.Format{report.Text, report.JSON, report.Table, report.Markdown, report.JUnit}

func runAnalyze(ctx context.Context, g *globals, files []string, o app.AnalyzeOptions, f report.Format, strict bool) error {
	defer tuneRuntimeForStreaming()()
	started := g.session.Now()
	a, err := app.Analyze(ctx, files, o)
	if err != nil {
		return err
	}
	for _, r := range a.Inputs {
		fmt.Fprintln(g.errOut, "gdrcheck: analyze:", printable.Text(r.Message))
	}
	switch f {
	case report.Text:
		for i, o := range a.Outputs {
			if i > 0 {
				fmt.Fprintln(g.out)
			}
			if err := o.WriteText(g.out); err != nil {
				return toolError(err)
			}
		}
		if len(a.Inputs) > 0 {
			if len(a.Outputs) > 0 {
				fmt.Fprintln(g.out)
			}
			fmt.Fprintln(g.out, "== inputs not judged")
			if err := (verdict.Text{}).Write(g.out, a.Inputs); err != nil {
				return toolError(err)
			}
		}
	default:
		if err := report.Write(g.out, f, g.envelope("analyze", started, a.Results, a.Outputs)); err != nil {
			return toolError(err)
		}
	}
	c := result.Count(a.Results)
	switch {
	case len(a.Unread) > 0:
		return toolError(fmt.Errorf("%d of %d input(s) could not be read; the others were judged", len(a.Unread), len(files)))
	case c.Failed():
		return errFailedQuietly
	case len(a.Inputs) > 0:
		// Read, but no reader recognised it: nothing was judged in it,
		// which a script must not take for success. Its own status, so
		// that 1 stays "a verdict failed" and 2 "could not read".
		return &exitError{code: ExitNotJudged, err: fmt.Errorf("%d of %d input(s) not recognised: nothing was judged in %s", len(a.Inputs), len(files), pluralIt(len(a.Inputs)))}
	case strict && c[result.Unknown] > 0:
		return errFailedQuietly
	}
	return nil
}

func pluralIt(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// Garbage collection while streaming a large file: the readers keep
// little (a few MB of capped report) and allocate a line at a time, so
// with Go's default (a collection each time the heap doubles from a few
// MB) most of a large file's CPU time went to collections. The heap may
// grow to 5× the live data instead, and to analyzeMemoryLimit at most,
// past which collections come as often as needed. docs/analyzers.md
// measures it (1 GiB inputs stay well under 200 MB RSS). Limiting the
// number of Ps as well made no difference on the 16-core H200 machine.
const (
	analyzeGCPercent   = 400
	analyzeMemoryLimit = 160 << 20
)

// tuneRuntimeForStreaming sets the collector for analyze and returns the
// function that restores it.
func tuneRuntimeForStreaming() func() {
	pct := debug.SetGCPercent(analyzeGCPercent)
	limit := debug.SetMemoryLimit(analyzeMemoryLimit)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}
