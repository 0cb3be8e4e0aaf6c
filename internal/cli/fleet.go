package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/fleet"
	"github.com/gdrcheck/gdrcheck/internal/report/html"
)

func newFleet(g *globals) *cobra.Command {
	var expect, out string
	var format *formatValue
	var drain drainFlags
	var drainCommands, apply bool
	opts := fleet.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "fleet REPORT...|DIR...",
		Short: "Roll many node reports up into one cluster report and rank the nodes to drain",
		Example: `  gdrcheck fleet dossiers/*/report.json                  # classes, versions, outliers, who to drain
  gdrcheck fleet --expect site.yaml --out fleet dossiers/*/report.json
  gdrcheck fleet --drain-commands dossiers/*/report.json # the scontrol lines, not run`,
		Long: `fleet reads node reports written by gdrcheck run --out DIR (each a report.json, a dossier
folder, or a folder holding dossiers: every report.json below it), one at a time, keeping only a
small summary of each, and writes one cluster report: a line per node with its verdict; the
consistency of driver, CUDA, NCCL, kernel, NIC firmware and rdma-core, and of the settings the
nodes' checks recorded (NCCL_* variables, memlock, IOMMU mode and command line, nvidia_peermem,
dma-buf, ACS, MaxReadReq), within each hardware class (GPU model, GPU count, fastest NIC port
rate) against the --expect profile where it pins them (versions, memlock_kb, gdr.mode), else the
class majority; missing GPUs or NICs; ports at a lower rate, or another MTU, than the class's (or
the profile's); measurements (NCCL bus bandwidth per collective, size and ranks; copy GB/s) far
below their class's median by robust z, 0.6745·(x−median)/MAD < −--z; and the nodes to drain,
ranked: failing checks first, then missing hardware, ports, outliers by how far off, version
drift, setting drift. A report that cannot be decoded, or a second report of one host, is named
and skipped. docs/fleet.md says more.

--format html prints fleet.html, one self-contained page (no script, nothing loaded from the
network) with the findings and, per measurement with outliers, a plot of every node's value in
its class (a histogram in a large class) with the median, the band |z| <= --z and the outliers
named. --out DIR writes fleet.json, fleet.md and fleet.html there, each atomically.

Exit status: 2 when an input cannot be read or decoded (the message names it; the others are
still rolled up and reported) or --out cannot be written, else 1 when a node is to be drained,
else 0.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := format.Format()
			started := g.session.Now()
			fl, err := app.Fleet(cmd.Context(), app.FleetOptions{Inputs: args, Expect: expect, Fleet: opts})
			if err != nil {
				return err
			}
			env := g.envelope("fleet", started, nil, fl)
			if drainCommands || apply { // scheduler integration: health.go
				if out != "" {
					if err := app.WriteFleet(out, env, fl); err != nil {
						return toolError(err)
					}
				}
				return fleetDrain(cmd.Context(), g, fl, drain, apply)
			}
			switch f {
			case report.JSON:
				err = report.WriteJSON(g.out, env)
			case report.Markdown:
				err = fl.WriteMarkdown(g.out)
			case report.HTML:
				err = html.RenderFleet(g.out, fl, env.Run, app.ReportLinks(".")) // the page on stdout: links from here
			default:
				err = fl.WriteText(g.out)
			}
			if err != nil {
				return err
			}
			if out != "" { // after stdout, so that the report is shown even when --out cannot be written
				if err := app.WriteFleet(out, env, fl); err != nil {
					return toolError(err)
				}
			}
			if u := fl.Unreadable(); len(u) > 0 {
				return toolError(fmt.Errorf("%d input(s) could not be read and were skipped; first: %s", len(u), u[0].Error))
			}
			if fl.DrainAny() {
				return errFailedQuietly
			}
			return nil
		},
	}
	f := cmd.Flags()
	format = addFormat(f, nil, report.Text, report.JSON, report.Markdown, report.HTML)
	f.StringVar(&expect, "expect", "", "site profile (YAML): its versions, GPU and NIC counts, rate and MTU are the reference")
	f.StringVar(&out, "out", "", "also write fleet.json, fleet.md and fleet.html into this folder (each atomically)")
	f.Float64Var(&opts.Z, "z", opts.Z, "robust z below which a measurement is an outlier")
	f.Float64Var(&opts.MADFloor, "mad-floor", opts.MADFloor, "least MAD as a fraction of the median")
	f.IntVar(&opts.MinNodes, "min-nodes", opts.MinNodes, "fewest nodes of a class measuring a key for its outliers to be judged")
	f.BoolVar(&drainCommands, "drain-commands", false, "print, instead of the report, one scontrol command draining each node of the drain list (docs/scheduler.md)")
	f.BoolVar(&apply, "apply", false, "run those scontrol commands, each under --drain-timeout, and say how each went")
	drain.flags(f, "", "", "")
	cmd.AddCommand(newFleetPlan(g))
	return cmd
}
