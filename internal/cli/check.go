package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
)

type checkOptions struct {
	expect    string
	only      []string
	timeout   time.Duration
	xidWindow time.Duration
	strict    bool
}

func (o *checkOptions) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.expect, "expect", "", "site profile (YAML or JSON): expected GPUs, NICs, link gen/width, versions")
	cmd.Flags().StringSliceVar(&o.only, "only", nil, "run only these check IDs (or prefixes like pcie.)")
	cmd.Flags().DurationVar(&o.timeout, "check-timeout", 10*time.Second, "deadline of each check")
	cmd.Flags().DurationVar(&o.xidWindow, "xid-window", 24*time.Hour, "how far back kernel-log Xid events count")
	cmd.Flags().BoolVar(&o.strict, "strict", false, "for sign-off: count unknown and error results as failures (NOT READY, exit 1); "+
		"the default counts them as DEGRADED, because a check that could not look (no root, not captured) says nothing is wrong")
}

// validate refuses check options that cannot mean anything.
func (o *checkOptions) validate() error {
	if o.timeout <= 0 {
		return toolError(fmt.Errorf("--check-timeout %s: must be positive (the deadline of each check)", o.timeout))
	}
	if o.xidWindow <= 0 {
		return toolError(fmt.Errorf("--xid-window %s: must be positive (how far back Xid events count)", o.xidWindow))
	}
	return nil
}

func newCheck(g *globals) *cobra.Command {
	var o checkOptions
	var all, quiet bool
	var format *formatValue
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check every GPU Direct RDMA and NVLink prerequisite; exit 1 when something fails",
		Example: `  gdrcheck check                         # this host: what is not a pass, then the passes counted
  gdrcheck check --root node07.tgz --all # a snapshot, every result
  gdrcheck check --expect site.yaml --strict --format junit > checks.xml`,
		Long: `check judges the data path's prerequisites on this host (or a snapshot): the GDR
registration path (nvidia_peermem or dma-buf), GPU–NIC PCIe affinity, ACS, link training,
MaxReadReq, IOMMU, memlock, P2P, RDMA ports, NVLink, GPU health, NCCL variables and versions.

Each result has a status (pass, warn, fail, skip, unknown, error), a Reason, a message, the
evidence and a remedy. skip and unknown never count as passing. Check IDs:
  ` + strings.Join(checks.IDs(), "\n  ") + `

The output opens with the node verdict on one line: READY, DEGRADED or NOT READY, the
host, the time it was read and the failing check IDs (JSON: the "verdict" member). A fail
makes the node NOT READY, a warn DEGRADED. An unknown or error result (a check that could
not look, e.g. without root, or broke) is DEGRADED by default, since it shows nothing wrong
and a partial run (no root, an old snapshot) should still say what it saw; --strict, for
sign-off, makes it NOT READY, since a node must not be signed off on what nobody saw.

The text view lists what is not a pass, worst first, the same finding on several subjects on
one line ("GPU0-xid (+7)"), then counts the passes by check; --all (or --format table) lists
every result; on a terminal lines are cut to its width.

Exit code 0 when nothing fails, 1 when something fails or a check broke (with --strict
also when a result is unknown), 2 when the tool itself could not run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := format.Format()
			if f == report.Text && all { // every row: the table
				f = report.Table
			}
			if err := o.validate(); err != nil {
				return err
			}
			started := g.session.Now()
			j, err := app.Check(cmd.Context(), g.node(), o.options())
			if err != nil {
				return err
			}
			rep := j.Checks
			if quiet && (f == report.Text || f == report.Table) {
				fmt.Fprintln(g.out, printable.Line(rep.Verdict.Line()))
			} else {
				writeVerdict(g, f, rep.Verdict)
			}
			env := g.envelope("check", started, rep.Results, rep)
			switch {
			case quiet && (f == report.Text || f == report.Table):
				// The verdict line alone.
			case f == report.Text:
				err = report.WriteCondensed(g.out, rep.Results, env.Duration(), report.CondensedOptions{Width: termWidth(g.out)})
			default:
				err = report.Write(g.out, f, env)
			}
			if err != nil {
				return err
			}
			if notReady(rep) {
				return &exitError{code: ExitFailed, err: fmt.Errorf("%s", report.CountsLine(rep.Counts))}
			}
			return nil
		},
	}
	o.flags(cmd)
	format = addFormat(cmd.Flags(), map[report.Format]string{report.Text: "what is not a pass, the same finding on several GPUs or NICs on one line, the passes counted", report.Table: "every result"}, checkFormats...)
	cmd.Flags().BoolVar(&all, "all", false, "text: list every result, passes too (the table)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "text: print the node verdict only")
	return cmd
}

// checkFormats are check's output formats.
var checkFormats = []report.Format{report.Text, report.Table, report.JSON, report.Markdown, report.JUnit}

// options are the use-case's options from the flags.
func (o *checkOptions) options() app.CheckOptions {
	return app.CheckOptions{Expect: o.expect, Only: o.only, Timeout: o.timeout, XidWindow: o.xidWindow, Strict: o.strict}
}

// writeVerdict opens a page for people (table, text, Markdown) with the
// node verdict, and the results a run without root could not read; JSON
// carries the verdict as a member, JUnit as its test cases.
func writeVerdict(g *globals, f report.Format, v checks.Verdict) {
	switch f {
	case report.Table, report.Text, report.Markdown:
	default:
		return
	}
	line := printable.Line(v.Line())
	if f == report.Markdown {
		line = "**" + printable.Cell(v.Line()) + "**"
	}
	fmt.Fprintln(g.out, line)
	if h := v.RootHint(); h != "" {
		fmt.Fprintln(g.out, printable.Line(h))
	}
	fmt.Fprintln(g.out)
}

// notReady is whether a run of checks exits 1: a failure, a broken check,
// or with --strict an unknown result.
func notReady(rep *checks.Report) bool { return rep.Counts.Failed() || rep.Verdict.NotReady() }

// node is the node every command reads: --root, discovered under --timeout.
func (g *globals) node() app.NodeOptions {
	return app.NodeOptions{Root: g.root, Timeout: g.timeout, LiveRoot: g.liveRoot}
}
