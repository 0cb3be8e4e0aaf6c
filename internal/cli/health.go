package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report/fleet"
	"github.com/gdrcheck/gdrcheck/internal/report/sched"
)

// The modes of gdrcheck health.
const (
	modePlain  = "plain"
	modeHealth = "slurm-health"
	modeProlog = "slurm-prolog"
)

func newHealth(g *globals) *cobra.Command {
	var o checkOptions
	var mode, node, nfd string
	var ttl time.Duration
	var dr drainFlags
	var resume bool
	var burnFor time.Duration
	var burnOut string
	cmd := &cobra.Command{
		Use:   "health",
		Short: "The readiness checks as one line and an exit code, for Slurm's HealthCheckProgram and prolog, and NFD labels",
		Example: `  gdrcheck health                                          # one line, exit 1 when a check fails
  gdrcheck health --mode slurm-health                      # Slurm's HealthCheckProgram: drain on failure, resume ours
  gdrcheck health --nfd /etc/kubernetes/node-feature-discovery/features.d/`,
		Long: `health runs the node's readiness checks (those of gdrcheck check; no benchmarks) and prints
exactly one line on standard output, fit for a Slurm drain reason and a log, at most 256 bytes:

  gdrcheck OK: READY (38 pass, 2 skip)
  gdrcheck DEGRADED: nic.port mlx5_3:1: ...; +1 more (gdr.kernel-module)
  gdrcheck FAIL: gdr.kernel-module: ...; +2 more (pcie.link)
  gdrcheck ERROR: <why gdrcheck could not run>

Exit status: 0 when the node is ready or degraded, 1 when a check fails (the node should be
drained), 2 when gdrcheck itself could not run. An unknown or error result (a check that could
not look, or broke) is DEGRADED and exits 0 unless --strict: a health check that drains on
"could not look" takes healthy nodes out of service the first time a read is refused.

--mode slurm-health (for HealthCheckProgram, whose exit status slurmd does not act on): the node
is drained by gdrcheck itself, with the line as the reason (--drain defaults to apply).
--mode slurm-prolog (for Prolog, where a non-zero exit drains the node and requeues the job): a
failure drains the node with the line as the reason when --drain apply, then exits 1; when
gdrcheck could not run it exits 0 (unless --strict), so that a broken install does not drain
every node a job lands on.
--mode plain (the default): the exit status alone; --drain defaults to none.

--drain print writes the scontrol command on standard error (standard output keeps its one
line); --drain apply runs it under --drain-timeout and reports a failure on standard error.
--resume (on by default with --mode slurm-health): when the node passes, read its state
(scontrol show node) and resume it (State=RESUME; printed with --drain print) only when it is
drained, not down, and its reason is one gdrcheck wrote ("gdrcheck FAIL: "): a node drained by
anyone else or for another reason is left as it is, said on standard error. Like LBNL NHC,
which onlines only the nodes whose note it set itself.
--nfd FILE writes a Kubernetes Node Feature Discovery features.d file (a folder: its gdrcheck
file) atomically, with labels under gdrcheck.feature.node.kubernetes.io/ and an expiry after
--nfd-ttl. docs/scheduler.md says more.
--burn DURATION (e.g. 1m, on the live host) runs, after checks that did not fail, a short
burn-in (gdrcheck burn's workload and judging in one window: copies and NCCL collectives,
every byte checked, every error counter attributed to the link that moved it): a fault it
finds fails the node as a failed check does ("gdrcheck FAIL: burn-in: ..."). Its burn.json
and samples go to --burn-out (default a new folder under the temporary directory), named on
standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := func() (*app.Health, error) {
				if err := o.validate(); err != nil {
					return nil, err
				}
				switch mode {
				case modePlain, modeHealth, modeProlog:
				default:
					return nil, toolError(fmt.Errorf("--mode %q: want plain, slurm-health or slurm-prolog", mode))
				}
				if dr.mode == "" {
					dr.mode = app.DrainNone
					if mode == modeHealth {
						dr.mode = app.DrainApply
					}
				}
				if !cmd.Flags().Changed("resume") {
					resume = mode == modeHealth && dr.mode != app.DrainNone
				} else if resume && mode == modeProlog {
					return nil, toolError(errors.New("--resume: not with --mode slurm-prolog (a prolog runs only on nodes that are not drained)"))
				}
				given := node != ""
				if !given {
					node = defaultNodeName()
				}
				ho := app.HealthOptions{
					Node: g.node(), Check: o.options(), NodeName: node, NodeGiven: given,
					Drain: dr.options(), Resume: resume, NFD: nfd, NFDTTL: ttl, Version: g.build.Version, Now: g.session.Now(),
				}
				if burnFor > 0 {
					if burnOut == "" {
						burnOut = filepath.Join(os.TempDir(), "gdrcheck-burn-"+g.session.Now().UTC().Format("20060102T150405Z"))
					}
					ho.Burn = app.BurnOptions{Duration: burnFor, Window: burnFor, Out: burnOut, Bytes: 256 << 20, OpTimeout: 5 * time.Minute, NCCL: true, Warn: g.errOut}
					ho.Session = g.session
				}
				return app.RunHealth(cmd.Context(), ho)
			}()
			if err != nil { // options refused: said on the one line too
				h = &app.Health{Err: err, Line: sched.ErrorLine(err)}
			}
			fmt.Fprintln(g.out, h.Line)
			if h.BurnDir != "" {
				fmt.Fprintln(g.errOut, "gdrcheck: burn-in:", printable.Line(h.BurnDir))
			}
			if errors.Is(h.Err, context.Canceled) {
				return h.Err
			}
			if h.Drain == nil && h.DrainErr != nil {
				fmt.Fprintln(g.errOut, "gdrcheck: drain refused:", printable.Line(h.DrainErr.Error()))
			}
			if h.Drain != nil {
				line := sched.ShellLine(h.Drain)
				switch {
				case dr.mode == app.DrainPrint:
					fmt.Fprintln(g.errOut, line)
				case h.DrainErr != nil:
					fmt.Fprintln(g.errOut, "gdrcheck: drain failed:", printable.Line(h.DrainErr.Error()))
				default:
					fmt.Fprintln(g.errOut, "gdrcheck: drained:", line)
				}
			}
			if r := h.Resume; r != nil {
				switch {
				case r.Argv != nil && r.Err != nil:
					fmt.Fprintln(g.errOut, "gdrcheck: resume failed:", printable.Line(r.Err.Error()))
				case r.Err != nil:
					fmt.Fprintln(g.errOut, "gdrcheck: not resuming:", printable.Line(r.Err.Error()))
				case r.Left != nil:
					fmt.Fprintln(g.errOut, "gdrcheck: not resuming:", printable.Line(r.Left.Error()))
				case r.Argv != nil && dr.mode == app.DrainPrint:
					fmt.Fprintln(g.errOut, sched.ShellLine(r.Argv))
				case r.Argv != nil:
					fmt.Fprintf(g.errOut, "gdrcheck: resumed: %s (gdrcheck drained it: %s)\n", sched.ShellLine(r.Argv), sched.Reason(r.Node.Reason))
				}
			}
			if h.NFDErr != nil {
				fmt.Fprintln(g.errOut, "gdrcheck:", printable.Line(h.NFDErr.Error()))
			}
			code := ExitOK
			switch {
			case h.NotReady:
				code = ExitFailed
			case h.Err != nil && mode == modeProlog && !o.strict:
				fmt.Fprintln(g.errOut, "gdrcheck: could not check the node; not failing the prolog (--strict would)")
			case h.Err != nil:
				code = ExitToolErr
			case h.NFDErr != nil && mode != modeProlog:
				code = ExitToolErr
			}
			if code == ExitOK {
				return nil
			}
			return &exitError{code: code, err: errFailedQuietly}
		},
	}
	o.flags(cmd)
	f := cmd.Flags()
	f.StringVar(&mode, "mode", modePlain, "plain, slurm-health (HealthCheckProgram: gdrcheck drains) or slurm-prolog (Prolog: exit 1 drains)")
	f.StringVar(&node, "node", "", "the node's Slurm name, drained on failure (default $SLURMD_NODENAME, else the short host name)")
	f.StringVar(&nfd, "nfd", "", "write NFD labels to this features.d file (or folder: FOLDER/gdrcheck), atomically")
	f.DurationVar(&ttl, "nfd-ttl", time.Hour, "how long the NFD labels hold (their # +expiry-time): longer than the interval between runs")
	f.DurationVar(&burnFor, "burn", 0, "after checks that did not fail, a short burn-in of this long (e.g. 1m; live host only): a fault it finds fails the node")
	f.StringVar(&burnOut, "burn-out", "", "folder for the burn-in's burn.json and samples (default: a new one under the temporary directory)")
	dr.flags(f, "drain", "", "none, print (the scontrol command on stderr) or apply (run it); default apply with --mode slurm-health, else none")
	f.BoolVar(&resume, "resume", false, "when the node passes and gdrcheck drained it (its reason starts \""+sched.OurDrainPrefix+"\", the node only drained), resume it as --drain says; default on with --mode slurm-health, off otherwise")
	return cmd
}

// defaultNodeName is slurmd's name for this node in a prolog (and in a
// HealthCheckProgram of recent Slurm releases), else the short host name.
func defaultNodeName() string {
	if n := os.Getenv("SLURMD_NODENAME"); n != "" {
		return n
	}
	h, _ := os.Hostname()
	short, _, _ := strings.Cut(h, ".")
	return short
}

// drainFlags are the flags of draining nodes: what to do, through which
// program, within what time.
type drainFlags struct {
	mode     string
	scontrol string
	timeout  time.Duration
}

type flagSet interface {
	StringVar(p *string, name, value, usage string)
	DurationVar(p *time.Duration, name string, value time.Duration, usage string)
}

// flags registers --scontrol and --drain-timeout, and the mode flag when
// modeFlag is not "".
func (d *drainFlags) flags(f flagSet, modeFlag, modeDefault, modeUsage string) {
	if modeFlag != "" {
		f.StringVar(&d.mode, modeFlag, modeDefault, modeUsage)
	}
	f.StringVar(&d.scontrol, "scontrol", sched.Scontrol, "the scontrol program (a path, or a name looked up on PATH)")
	f.DurationVar(&d.timeout, "drain-timeout", app.DefaultDrainTimeout, "deadline of each scontrol command")
}

func (d *drainFlags) options() app.DrainOptions {
	return app.DrainOptions{Mode: d.mode, Scontrol: d.scontrol, Timeout: d.timeout}
}

// fleetDrain is gdrcheck fleet --drain-commands and --apply: one scontrol
// command per node of the drain list on standard output (--apply: run
// each, and a line per node saying how it went); hosts that are not valid
// host names are refused on standard error. Exit 2 when an input could
// not be read, a host was refused or a command failed, else 1 when a node
// is to be drained, else 0.
func fleetDrain(ctx context.Context, g *globals, fl *fleet.Fleet, d drainFlags, apply bool) error {
	if d.timeout <= 0 {
		return toolError(fmt.Errorf("--drain-timeout %s: must be positive", d.timeout))
	}
	rs := app.FleetDrain(ctx, fl, d.scontrol, apply, d.timeout)
	bad := 0
	for _, r := range rs {
		switch {
		case r.Err != nil:
			bad++
			fmt.Fprintf(g.errOut, "gdrcheck: not draining %s: %s\n", printable.Line(r.Host), printable.Line(r.Err.Error()))
		case !apply:
			fmt.Fprintln(g.out, sched.ShellLine(r.Argv))
		case r.RunErr != nil:
			bad++
			fmt.Fprintf(g.out, "FAILED   %s: %s\n", r.Host, printable.Line(r.RunErr.Error()))
		default:
			fmt.Fprintf(g.out, "drained  %s: %s\n", r.Host, sched.ShellLine(r.Argv))
		}
	}
	if u := fl.Unreadable(); len(u) > 0 {
		return toolError(fmt.Errorf("%d input(s) could not be read and were skipped; first: %s", len(u), u[0].Error))
	}
	if bad > 0 {
		return toolError(fmt.Errorf("%d of %d node(s) to drain were refused or not drained", bad, len(rs)))
	}
	if len(rs) > 0 {
		return errFailedQuietly
	}
	return nil
}
