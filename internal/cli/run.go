package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/report/html"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

type runOptions struct {
	format    *formatValue
	checks    checkOptions
	profile   string
	bench     bool // deprecated: the benchmarks run where they apply
	noBench   bool
	benchSize string
	out       string
	quiet     bool
	verbose   bool
	include   []string
	force     bool
	// burn is the burn-in of --profile burnin; burnSize its copy size
	// (--burn-size, burn's --size), noNCCL leaves NCCL out of it.
	burn     app.BurnOptions
	burnSize string
	noNCCL   bool
	noRDMA   bool
	// sizeFlag is the name of the flag burnSize came from.
	sizeFlag string
}

// defaultRun are the options of a bare `gdrcheck`.
func defaultRun() runOptions {
	return runOptions{profile: string(app.ProfileQuick), checks: checkOptions{timeout: 10 * time.Second, xidWindow: 24 * time.Hour},
		burn: app.BurnOptions{Duration: time.Hour, Window: 5 * time.Minute, OpTimeout: 5 * time.Minute}, burnSize: "256M", sizeFlag: "burn-size"}
}

func newRun(g *globals) *cobra.Command {
	o := defaultRun()
	cmd := &cobra.Command{
		Use:   "run",
		Short: "The main job: discover, check, benchmark, analyse NCCL's logs, judge; write the dossier",
		Example: `  gdrcheck run --out dossier                         # quick: about a minute on an 8-GPU node
  gdrcheck run --profile standard --expect site.yaml --strict --out /shared/dossier/$(hostname)
  gdrcheck run --include /shared/job1 --out dossier  # fold a multi-node bench nccl job in
  gdrcheck run --root testdata/demo/hgx-h200-8gpu-10nic.tgz --out /tmp/demo   # a snapshot: checks only`,
		Long: `run commissions the node: it discovers it (PCI tree, GPUs, NICs, NVLink, the GPU→NIC
pairing), runs every readiness check, then the benchmarks that apply here (device, host and
GPU-to-GPU copies; every NCCL collective, with NCCL's own debug log captured), reads NCCL's logs
(versions, the transport of every channel, GPU Direct RDMA), states every measurement against
the model of the node as it should be, and gives one node verdict (READY, DEGRADED or NOT
READY); see check --help for the rule and --strict. On a snapshot (--root) or a node without
GPUs the benchmarks do not apply, and the report says so.

--profile sets how much is measured: quick (every collective up to 64 MiB, about a minute on an
8-GPU node), standard (up to 1 GiB, and bench rdma's loopback through every GPU–NIC pair: GPU memory in
every registration mode and the host-memory control), full (every power of two up to 4 GiB,
pageable copies too, and the loopback), burnin (quick's pass and the loopback, then the burn-in
for --duration in windows of --window, every error counter attributed to the link and window
that moved it; the same as gdrcheck burn, see burn --help and docs/burn.md).

--out DIR writes the dossier: report.json (schema gdrcheck.report/v1, docs/schema), report.md,
junit.xml, metrics.prom, the raw NCCL logs and tool outputs under raw/, and SHA256SUMS last.
It is rewritten after every phase, so Ctrl-C or a failure leaves a valid report marked
incomplete. --out is checked before anything runs: a new folder (under one this process can
write) or an empty one; a folder that holds a dossier or other files only with --force. See
docs/dossier.md.

--include DIR (repeatable) brings a job of several nodes into this node's dossier: rank 0's
--out folder (or its results.json) of a multi-rank bench nccl. The job's rows (judged for that
many nodes), its NCCL log analysis and its verdicts join the dossier, and the GPUs whose ranks
ran here get their fabric hop measured, naming the peer nodes and the transport NCCL used (GPU
Direct RDMA or staged through host memory). A job none of whose ranks ran here is an error.

The text output opens with the checks' verdict on one line and ends with the node verdict over
checks and benchmarks; --format json, md, junit or html print the dossier's report.json, report.md,
junit.xml or report.html instead. Phases go to stderr (a progress bar for the NCCL pass on a terminal).
Exit code 0 when nothing fails, 1 when a check or benchmark fails or broke (with --strict also
when a result is unknown), 2 when the tool itself could not run, 130 when interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("bench-size") {
				o.benchSize = ""
			}
			if o.profile != string(app.ProfileBurnin) {
				for _, name := range []string{"duration", "window", "burn-size"} {
					if cmd.Flags().Changed(name) {
						return toolError(fmt.Errorf("--%s applies to --profile burnin only", name))
					}
				}
			}
			return runMain(cmd.Context(), g, o)
		},
	}
	o.format = addFormat(cmd.Flags(), map[report.Format]string{report.JSON: "report.json", report.Markdown: "report.md", report.JUnit: "junit.xml", report.HTML: "report.html"}, runFormats...)
	cmd.Flags().StringVar(&o.profile, "profile", string(app.ProfileQuick), "how much to measure: quick, standard, full, or burnin (quick's pass and the loopback, then the burn-in: --duration, --window)")
	cmd.Flags().DurationVar(&o.burn.Duration, "duration", o.burn.Duration, "with --profile burnin: how long the burn-in's workload runs")
	cmd.Flags().DurationVar(&o.burn.Window, "window", o.burn.Window, "with --profile burnin: one window between two counter samples")
	cmd.Flags().StringVar(&o.burnSize, "burn-size", o.burnSize, "with --profile burnin: bytes per copy of the burn-in (NCCL's collectives at most 256M)")
	cmd.Flags().BoolVar(&o.bench, "bench", false, "require the benchmarks: exit 2 when they cannot run (they run by default wherever they apply)")
	cmd.Flags().BoolVar(&o.noBench, "no-bench", false, "skip the benchmarks: discovery and checks only")
	cmd.Flags().StringVar(&o.benchSize, "bench-size", "", "largest collective and copy size (default: the profile's: quick 64M, standard 1G, full 4G)")
	cmd.Flags().StringVar(&o.out, "out", "", "directory for the dossier: report.json, report.html, report.md, junit.xml, metrics.prom, raw/, SHA256SUMS")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print the node verdict only")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "log what happens to stderr (log/slog)")
	cmd.Flags().BoolVar(&o.force, "force", false, "write the dossier into an --out folder that already holds one (or other files)")
	cmd.Flags().StringArrayVar(&o.include, "include", nil, "a multi-rank bench nccl job's --out folder (or results.json) to fold into the dossier (repeatable)")
	o.checks.flags(cmd)
	return cmd
}

// minBenchSize is the smallest --bench-size: the pass's collectives start
// at 8 bytes.
const minBenchSize = 8

// runFormats are run's output formats: text is the inventory, the
// topology, the checks' table and the benchmarks as they run.
var runFormats = []report.Format{report.Text, report.JSON, report.Markdown, report.JUnit, report.HTML}

func runMain(ctx context.Context, g *globals, o runOptions) error {
	f := o.format.Format()
	if err := o.checks.validate(); err != nil {
		return err
	}
	prof, err := app.ParseProfile(o.profile)
	if err != nil {
		return toolError(err)
	}
	if o.bench && o.noBench {
		return toolError(fmt.Errorf("--bench and --no-bench contradict each other"))
	}
	ro := app.RunOptions{Node: g.node(), Checks: o.checks.options(), Out: o.out, Bench: o.bench, AutoBench: !o.noBench, Profile: prof, Include: o.include, Force: o.force}
	if prof == app.ProfileBurnin {
		ro.Burn = o.burn
		if ro.Burn.Bytes, err = collective.ParseSize(o.burnSize); err != nil {
			return toolError(fmt.Errorf("--%s: %v", o.sizeFlag, err))
		}
		ro.Burn.NCCL = !o.noNCCL
		ro.Burn.RDMA = !o.noRDMA
		ro.Burn.Strict = o.checks.strict
		ro.Burn.Warn = g.errOut
		if !o.quiet && !o.verbose {
			ro.Burn.Progress = g.errOut
		}
	}
	if o.benchSize != "" {
		if ro.BenchSize, err = collective.ParseSize(o.benchSize); err != nil {
			return toolError(fmt.Errorf("--bench-size: %v", err))
		}
		if ro.BenchSize < minBenchSize {
			return toolError(fmt.Errorf("--bench-size %s: at least %d bytes (the smallest collective size)", o.benchSize, minBenchSize))
		}
	}
	log := slog.New(slog.DiscardHandler)
	if o.verbose {
		log = slog.New(slog.NewTextHandler(g.errOut, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	log.Debug("run", "profile", prof, "root", g.root, "out", o.out, "format", f)
	nr, err := g.session.Run(ctx, ro)
	if err != nil {
		return err
	}
	defer nr.Close()
	if nr.BenchErr != nil && o.bench {
		// --bench: the benchmarks were required.
		return nr.BenchErr
	}
	text := f == report.Text && !o.quiet
	if text {
		writeVerdict(g, f, nr.Checks.Verdict)
		if err := nr.Summary.WriteInventory(g.out); err != nil {
			return err
		}
		fmt.Fprintln(g.out)
		if err := writeTopoText(g.out, nr.Summary, useColor("auto", g.out)); err != nil {
			return err
		}
		fmt.Fprintln(g.out, "\nReadiness checks:")
		rep := nr.Checks
		if err := report.WriteTable(g.out, rep.Results, time.Duration(rep.DurationMS*float64(time.Millisecond))); err != nil {
			return err
		}
	}
	p := newProgress(g.errOut, o.quiet || o.verbose, log)
	do := app.DossierOptions{Warn: g.errOut, OnPhase: p.phase, OnRow: p.row, Files: app.DossierFiles()}
	if text {
		do.Text = &sectioned{w: g.out}
	}
	rep, derr := nr.Dossier(ctx, do)
	p.close()
	if rep == nil {
		return derr
	}
	switch {
	case o.quiet:
		fmt.Fprintln(g.out, printable.Line(rep.Verdict.Line()))
	case text:
		writeEnd(g.out, rep, o.out)
	case f == report.JSON:
		err = rep.WriteJSON(g.out)
	case f == report.Markdown:
		err = dossier.WriteMarkdown(g.out, rep)
	case f == report.JUnit:
		err = dossier.WriteJUnit(g.out, rep)
	case f == report.HTML:
		err = html.Render(g.out, rep)
	}
	if err != nil {
		return err
	}
	log.Debug("done", "verdict", rep.Verdict.Status, "complete", rep.Complete, "results", len(rep.Results))
	// The report is printed whole even when --out could not be written;
	// then the run fails for it.
	if derr != nil {
		return benchError(derr)
	}
	if nr.OutErr != nil {
		return nr.OutErr
	}
	if result.Count(rep.Results).Failed() || rep.Verdict.NotReady() {
		return &exitError{code: ExitFailed, err: fmt.Errorf("%s", report.CountsLine(result.Count(rep.Results)))}
	}
	return nil
}

// sectioned puts a blank line and a heading before the benchmark pass's
// text the first time it writes.
type sectioned struct {
	w       io.Writer
	started bool
}

func (s *sectioned) Write(b []byte) (int, error) {
	if !s.started {
		s.started = true
		fmt.Fprintln(s.w, "\nBenchmarks:")
	}
	return s.w.Write(b)
}

// writeEnd closes the text output: the phases that did not run and why,
// the node verdict over everything, and where the dossier is.
func writeEnd(w io.Writer, r *dossier.Report, out string) {
	l := printable.Line
	var b strings.Builder
	b.WriteString("\nPhases:\n")
	for _, p := range r.Phases {
		fmt.Fprintf(&b, "  %-11s %s", p.Name, p.Status)
		if p.Reason != "" {
			fmt.Fprintf(&b, ": %s", l(p.Reason))
		}
		b.WriteString("\n")
	}
	if len(r.Jobs) > 0 {
		// What the jobs (included, or the bench.rdma phase) moved from here.
		b.WriteString("\nJobs:\n")
		for _, j := range r.Jobs {
			fmt.Fprintf(&b, "  %s (%s, %s): %s\n", l(j.Name), j.Command, l(j.Path), j.Status)
			for _, x := range j.Ranks {
				gpu := "a GPU not on this node"
				if x.GPU >= 0 {
					gpu = fmt.Sprintf("GPU%d", x.GPU)
				}
				fmt.Fprintf(&b, "    rank %d on %s reached %s over %s: GPU memory %s\n", x.Rank, gpu, l(strings.Join(x.Peers, ", ")),
					l(cmp.Or(strings.Join(x.Transports, ", "), "the network")), l(strings.TrimSpace(x.GDR+" "+x.Registration)))
			}
			for _, x := range j.Pairs {
				fmt.Fprintf(&b, "    GPU%d-%s:%d %s: %s\n", x.GPU, l(x.NIC), x.Port, l(cmp.Or(x.Peer, "loopback")), l(strings.Join(x.Memory, ", ")))
			}
		}
	}
	if r.Burn != nil {
		writeBurnSection(&b, r)
	}
	if !r.Complete {
		fmt.Fprintf(&b, "\nINCOMPLETE: %s\n", l(r.Interrupted))
	}
	fmt.Fprintf(&b, "\nNode verdict (checks and benchmarks): %s\n", l(r.Verdict.Line()))
	if out != "" {
		fmt.Fprintf(&b, "Dossier: %s (report.json, report.html, report.md, junit.xml, metrics.prom, raw/, SHA256SUMS)\n", l(out))
	}
	io.WriteString(w, b.String())
}

// progress reports the phases on stderr: a bar with ETA for the NCCL
// pass on a terminal, plain lines otherwise; nothing with -q, and with -v
// the log (log/slog) instead.
type progress struct {
	w     io.Writer
	quiet bool
	tty   bool
	log   *slog.Logger
	bar   *progressbar.ProgressBar
	last  collective.Collective
}

func newProgress(w io.Writer, quiet bool, log *slog.Logger) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, quiet: quiet, log: log, tty: ok && term.IsTerminal(int(f.Fd()))}
}

func (p *progress) phase(ph dossier.Phase, done bool) {
	p.closeBar()
	if !done {
		p.log.Info("phase started", "phase", ph.Name)
		if !p.quiet && (strings.HasPrefix(ph.Name, "bench.") || ph.Name == app.PhaseBurn) {
			fmt.Fprintf(p.w, "gdrcheck: %s ...\n", ph.Name)
		}
		return
	}
	p.log.Info("phase ended", "phase", ph.Name, "status", ph.Status, "reason", ph.Reason, "ms", ph.DurationMS)
	if p.quiet {
		return
	}
	line := fmt.Sprintf("gdrcheck: %s %s (%.0f ms)", ph.Name, ph.Status, ph.DurationMS)
	if ph.Reason != "" {
		line += ": " + printable.Line(ph.Reason)
	}
	fmt.Fprintln(p.w, line)
}

func (p *progress) row(done, total int, c collective.Collective, bytes uint64) {
	p.log.Debug("nccl row", "collective", c, "bytes", bytes, "done", done, "total", total)
	if p.quiet {
		return
	}
	if !p.tty {
		if c != p.last {
			p.last = c
			fmt.Fprintf(p.w, "gdrcheck: bench.nccl %s (row %d of %d)\n", c, done, total)
		}
		return
	}
	if p.bar == nil {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription("NCCL"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
	}
	p.bar.Describe(fmt.Sprintf("NCCL %s %s", c, collective.FormatSize(bytes)))
	_ = p.bar.Set(done)
}

func (p *progress) closeBar() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}

func (p *progress) close() { p.closeBar() }
