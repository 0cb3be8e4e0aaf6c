package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

type runOptions struct {
	format string
	checks checkOptions
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
	var expect *checks.Expect
	if o.checks.expect != "" {
		e, err := checks.LoadExpect(o.checks.expect)
		if err != nil {
			return &exitError{code: ExitToolErr, err: err}
		}
		expect = e
	}
	r, cleanup, err := g.openRoot()
	if err != nil {
		return err
	}
	defer cleanup()
	h, err := g.discover(ctx, r)
	if err != nil {
		return err
	}
	s := h.Summarize()
	s.Root = g.root
	env := checkEnv(ctx, r, h, expect, o.checks.xidWindow)
	rep := checks.Run(ctx, env, checks.All(), checks.Options{Timeout: o.checks.timeout, Only: o.checks.only})
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
	if rep.Counts.Failed() {
		return &exitError{code: ExitFailed, err: fmt.Errorf("%s", rep.CountsLine())}
	}
	return nil
}
