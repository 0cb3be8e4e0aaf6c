package cli

import (
	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/diff"
)

func newDiff(g *globals) *cobra.Command {
	var format *formatValue
	noise := diff.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "What changed between two runs or two nodes (report.json or dossier folders), and whether it got worse",
		Example: `  gdrcheck diff dossiers/node07-monday dossiers/node07-friday   # what got worse since Monday
  gdrcheck diff node07/report.json node08/report.json          # two nodes of one kind`,
		Long: `diff compares two commissioning dossiers written by gdrcheck run --out DIR (each given as its
report.json or its folder): versions (kernel, driver, CUDA, NCCL, NIC firmware), settings (profile,
site profile, the environment the checks read), topology (GPUs and NICs added or lost by bus id,
PCIe link width and speed, NVLinks, NIC port state and rate, the GDR state of each GPU's pairing),
check results (status changes, new and vanished failures) and measurements (bus bandwidth per
collective, size and ranks; copy GB/s per test and GPU) that moved beyond their noise.

Noise: a measurement moved when new/old lies outside ×(1+f) either way, f being --floor for
bandwidth-bound measurements, --host-floor for pinned one-direction host copies, --noisy-floor
for pageable or bidirectional host copies, --latency-floor for latency-bound collectives (the
model says so, or the row took under --latency-us), or --jitter-us over the row's time when that
is larger (a short row moves by a few µs whatever its size), widened to the spread between a row's
in-place and out-of-place runs when that is larger. docs/diff.md says why.

Exit status: 1 when something got worse (a check went from pass to warn or fail, a new failure,
a measurement dropped beyond its noise, a GPU, NIC, port, NVLink, link width or GDR lost), 2 when
an input cannot be read (the message names the file, line and field), else 0.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := format.Format()
			started := g.session.Now()
			d, err := app.Diff(cmd.Context(), app.DiffOptions{Old: args[0], New: args[1], Noise: noise, Warn: g.errOut})
			if err != nil {
				return err
			}
			switch f {
			case report.JSON:
				err = report.WriteJSON(g.out, g.envelope("diff", started, nil, d))
			case report.Markdown:
				err = d.WriteMarkdown(g.out)
			default:
				err = d.WriteText(g.out)
			}
			if err != nil {
				return err
			}
			if d.Worse() {
				return errFailedQuietly
			}
			return nil
		},
	}
	fl := cmd.Flags()
	format = addFormat(fl, nil, report.Text, report.JSON, report.Markdown)
	fl.Float64Var(&noise.Floor, "floor", noise.Floor, "relative move a bandwidth-bound measurement may make unnoticed")
	fl.Float64Var(&noise.HostFloor, "host-floor", noise.HostFloor, "relative move a pinned one-direction host copy may make unnoticed")
	fl.Float64Var(&noise.NoisyFloor, "noisy-floor", noise.NoisyFloor, "relative move a pageable or bidirectional host copy may make unnoticed")
	fl.Float64Var(&noise.LatencyFloor, "latency-floor", noise.LatencyFloor, "relative move a latency-bound collective may make unnoticed (1: a factor of 2 either way)")
	fl.Float64Var(&noise.LatencyUS, "latency-us", noise.LatencyUS, "a collective row faster than this (µs) is latency-bound")
	fl.Float64Var(&noise.JitterUS, "jitter-us", noise.JitterUS, "time (µs) a collective row may gain or lose whatever its size: a row of t µs may move by jitter/t")
	return cmd
}
