package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

type runOptions struct {
	format string
}

func newRun(g *globals) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run",
		Short: "The main job: discover the node and report what was found",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMain(cmd.Context(), g, o)
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	return cmd
}

func runMain(ctx context.Context, g *globals, o runOptions) error {
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
	switch o.format {
	case "json":
		return writeJSON(g.out, s)
	case "text":
	default:
		return &exitError{code: ExitToolErr, err: fmt.Errorf("--format %q: want text or json", o.format)}
	}
	if err := s.WriteInventory(g.out); err != nil {
		return err
	}
	fmt.Fprintln(g.out)
	return writeTopoText(g.out, s, useColor("auto", g.out))
}
