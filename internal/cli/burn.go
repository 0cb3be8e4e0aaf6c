package cli

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

func newBurn(g *globals) *cobra.Command {
	o := defaultRun()
	o.profile = string(app.ProfileBurnin)
	o.bench = true // refused off the live host, before anything runs
	o.sizeFlag = "size"
	var replay string
	var jf jobFlags
	cmd := &cobra.Command{
		Use:   "burn",
		Short: "Burn-in: sustained traffic in windows, every error counter attributed to the link that carried it",
		Example: `  gdrcheck burn --duration 1h --window 5m --out /var/lib/gdrcheck/burn   # the default workload for an hour
  gdrcheck burn --duration 1m --window 20s                                # a one-minute smoke run
  gdrcheck burn --replay /var/lib/gdrcheck/burn --root node17.tgz --strict  # judge a burn-in again, for sign-off
  gdrcheck burn --replay before.tgz after.tgz                            # two snapshots around your own job`,
		Long: `burn is run --profile burnin: it discovers and checks the node, measures it at rest
(quick's pass of copies and NCCL collectives up to --size or 64M, whichever is smaller, and the
GPU–NIC loopback where the node has RDMA NICs), then runs the burn-in on the live host for
--duration in windows of --window. The workload: on every GPU, copies between the GPU and
pinned host memory both ways at once (its PCIe link to the host) and within its memory, and
between every pair of GPUs both ways (their PCIe path or NVLink), every byte checked; once per
window every NCCL collective at --size (at most 256M) on all the GPUs, its data checked
(--no-nccl leaves it out; NCCL's own traffic is not charged to links); and where the node has
RDMA NICs, every GPU–NIC pair looping GPU memory through its NIC (ib_write_bw from PATH, every
registration mode the node offers) beside the copies (--no-rdma leaves it out).

The counters are sampled twice before the workload (what moves between those samples moves
without it) and at the end of every window: the RDMA ports' counters/ and hw_counters/, the AER
statistics of every GPU, NIC and bridge above them, every NVLink's error counters, each GPU's
own counters (uncorrectable and corrected ECC, row remapping, retired pages, clock events, PCIe
replays) and the kernel log's Xid lines, the NICs' temperatures and their optical modules
(ethtool -m); every 2 s under load, each GPU's SM clock, power and temperature. Each window's
deltas are attributed to the links that carried its traffic and judged (docs/burn.md): a fatal
counter (link_downed, an uncorrectable AER error, an NVLink replay or recovery) fails naming the
device, link and window; correctable errors are judged per bit moved with a Poisson bound
against the medium's error-rate ceiling (too few bits to tell is unknown, never a pass); a GPU's
new uncorrectable ECC error, row remap, Xid or hardware slowdown fails; corrected ECC is judged
as a rate; a GPU's clock or power far below its peers', a window's bandwidth below the first
windows' or the model's, a module running hot or losing light warn or fail, and so does an
alarm, loss of signal or Tx fault the module itself raised (its own latched flags); wrong data
fails the window. Counters that moved before the workload are reported, never failed.

--out DIR is the dossier (report.json with its burn section, report.html with the timeline and
the plots, report.md, junit.xml, metrics.prom), rewritten after every window, so an interrupted
run leaves a valid dossier of the windows done, marked incomplete; the burn-in's own files are
under raw/burn/. --replay DIR judges them again (DIR the dossier or its raw/burn), writing
nothing; --replay A.tgz B.tgz ... judges snapshots of one node taken around a workload gdrcheck
did not run (gdrcheck snapshot holds the counters).

Under a launcher (srun -N4 --ntasks-per-node=1 gdrcheck burn ..., mpirun, torchrun, or --rank,
--world-size, --rendezvous), each node's burn-in is one rank of a job: one process a node drives
all of its GPUs, and after its own NCCL pass each window runs every collective across the nodes
on one of its GPUs, the next one each window, so the fabric and every GPU's NIC path carry
traffic in turn (checked: wrong elements or a failed pass fail the window). Each rank writes its
node's dossier to --out/rank-N.

Exit status: 0 nothing failed, 1 a verdict failed or data came back wrong (with --strict also
when a verdict is unknown), 2 the tool could not run, 130 interrupted (the windows done are
judged and kept).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && replay == "" {
				return fmt.Errorf("unexpected arguments %q: captures follow --replay", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if replay != "" {
				return burnReplay(cmd, g, append([]string{replay}, args...), o)
			}
			job, err := jf.launcher(cmd)
			if err != nil {
				return err
			}
			if job.Multi() && job.Size > 1 {
				// One rank a node, driving all of its GPUs; each window's
				// NCCL pass also runs across the nodes.
				if job.LocalRank > 0 {
					return toolError(fmt.Errorf("burn under a launcher: rank %d is local rank %d: one rank a node drives all of the node's GPUs (srun --ntasks-per-node=1, mpirun --map-by ppr:1:node)", job.Rank, job.LocalRank))
				}
				if o.noNCCL {
					return toolError(fmt.Errorf("--no-nccl: a burn-in across nodes runs NCCL between them"))
				}
				jo, err := jf.options(g, job)
				if err != nil {
					return err
				}
				o.burn.Job = &jo
			}
			if o.out == "" {
				o.out = g.session.OutDir("", "burn")
			}
			if o.burn.Job != nil {
				// Every rank gets the same command line: each node's
				// dossier in a folder of its own under --out.
				o.out = filepath.Join(o.out, fmt.Sprintf("rank-%d", job.Rank))
			}
			// The pass at rest goes up to the burn-in's copy size, at most
			// quick's largest (a smoke run at 64K measures at 64K).
			if n, err := collective.ParseSize(o.burnSize); err == nil && n < app.ProfileQuick.MaxBytes() {
				o.benchSize = o.burnSize
			}
			return runMain(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.burn.Duration, "duration", o.burn.Duration, "how long the workload runs")
	f.DurationVar(&o.burn.Window, "window", o.burn.Window, "one window between two counter samples")
	f.StringVar(&o.out, "out", "", "directory for the dossier, with the burn-in's burn.json and counter samples under raw/burn (default gdrcheck-results/burn-<time>)")
	f.StringVar(&o.burnSize, "size", o.burnSize, "bytes per copy, or with a binary unit K, M, G")
	f.DurationVar(&o.burn.OpTimeout, "op-timeout", o.burn.OpTimeout, "deadline of every wait for GPU work")
	f.BoolVar(&o.force, "force", false, "write into a --out directory that already holds a dossier or other files")
	f.BoolVar(&o.checks.strict, "strict", false, "for sign-off: an unknown verdict (counters that could not be read, too few bits to prove an error rate) fails too (exit 1)")
	f.StringVar(&o.checks.expect, "expect", "", "site profile (YAML or JSON) the node is judged against")
	f.StringVar(&replay, "replay", "", "judge a burn-in again (a dossier, or its raw/burn with burn.json and samples) with this release's judging, writing nothing; --root names the node it ran on (a snapshot of it, or the live host). With more captures after it (--replay A.tgz B.tgz ...): the counters of a series of snapshots of one node, taken around a workload gdrcheck did not run")
	f.BoolVar(&o.noNCCL, "no-nccl", false, "leave NCCL's collectives out of the workload (copies only)")
	f.BoolVar(&o.noRDMA, "no-rdma", false, "leave the GPU-memory loopbacks through the GPU–NIC pairs (ib_write_bw) out of the workload")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print the node verdict only")
	jf.addJob(cmd)
	o.format = addFormat(f, nil, report.Text, report.JSON)
	return cmd
}

// burnReplay is burn --replay: a burn-in's directory (or its dossier)
// judged again, or a series of captures of a node.
func burnReplay(cmd *cobra.Command, g *globals, paths []string, o runOptions) error {
	dir := paths[0]
	if fi, err := os.Stat(filepath.Join(dir, app.BurnDir, "burn.json")); err == nil && fi.Mode().IsRegular() {
		dir = filepath.Join(dir, app.BurnDir) // a dossier
	}
	var env *report.Envelope
	var err error
	what := filepath.Join(dir, "burn.json")
	if _, serr := os.Stat(what); len(paths) == 1 && serr == nil {
		env, err = g.session.BurnReplay(cmd.Context(), g.node(), dir, app.BurnOptions{Strict: o.checks.strict})
	} else {
		// Captures of a node (snapshots), the first the state before.
		what = strings.Join(paths, ", ")
		env, err = g.session.BurnReplayCaptures(cmd.Context(), paths, app.BurnOptions{Strict: o.checks.strict})
	}
	if env != nil {
		if o.format.Format() == report.JSON {
			if werr := report.WriteJSON(g.out, env); werr != nil {
				return werr
			}
		} else if doc, ok := env.Data.(*app.BurnDoc); ok {
			var b strings.Builder
			writeBurn(&b, app.BurnSection(doc, what), env.Results)
			io.WriteString(g.out, b.String())
		}
	}
	return benchError(err)
}

// writeBurnSection prints the dossier's burn-in: its windows and its
// verdicts that are not a pass.
func writeBurnSection(w io.Writer, r *dossier.Report) {
	var rs []result.Result
	for _, x := range r.Results {
		if x.Source == burn.Source {
			rs = append(rs, x)
		}
	}
	writeBurn(w, r.Burn, rs)
}

// writeBurn prints a burn-in's windows and the verdicts that are not a
// pass.
func writeBurn(w io.Writer, b *dossier.Burn, rs []result.Result) {
	l := printable.Line
	state := "complete"
	if !b.Complete {
		state = "stopped: " + l(cmp.Or(b.Stopped, "not finished"))
	}
	fmt.Fprintf(w, "\nBurn-in %s in windows of %s (%s), %d window(s) sampled:\n", b.Duration, b.Window, state, len(b.Windows))
	for _, wk := range b.Windows {
		var wrong int64
		for _, c := range wk.NCCL {
			wrong += c.Wrong
		}
		nccl := ""
		if len(wk.NCCL) > 0 {
			nccl = fmt.Sprintf(", %d NCCL collective(s) checked (%d wrong)", len(wk.NCCL), wrong)
		}
		fmt.Fprintf(w, "  %s: %d pass(es) of copies, %.1f GiB over the links, %d wrong byte(s)%s\n", l(wk.Name), wk.Passes, float64(wk.Moved)/(1<<30), wk.Wrong, nccl)
	}
	for _, n := range b.Notes {
		fmt.Fprintf(w, "  Note: %s\n", l(n))
	}
	counts := map[result.Status]int{}
	for _, r := range rs {
		counts[r.Status]++
		if r.Status == result.Pass || r.Status == result.Skip {
			continue
		}
		fmt.Fprintf(w, "  %-7s %-16s %-24s %s\n", strings.ToUpper(string(r.Status)), r.ID, l(r.Subject), l(r.Message))
	}
	fmt.Fprintf(w, "  Burn-in: %s (%d pass, %d skip, %d unknown, %d warn, %d fail); its files: %s\n", strings.ToUpper(string(result.Worst(rs))),
		counts[result.Pass], counts[result.Skip], counts[result.Unknown], counts[result.Warn], counts[result.Fail]+counts[result.Error], l(b.Path))
}
