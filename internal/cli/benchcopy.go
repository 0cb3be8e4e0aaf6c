package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
)

func newBenchCopy(g *globals) *cobra.Command {
	var o benchOptions
	var size, tests string
	var iters, warm, ngpus int
	var corrupt bool
	cmd := &cobra.Command{
		Use:   "copy",
		Short: "Copy bandwidths: device, host pinned and pageable, GPU to GPU (one way, both ways), latency",
		Example: `  gdrcheck bench copy                                  # every copy on every GPU, 1 GiB each
  gdrcheck bench copy --devices 0,1 --size 4G          # two GPUs, 4 GiB copies
  gdrcheck bench copy --tests p2p,p2p_bidir --out p2p  # GPU to GPU only`,
		Long: `bench copy measures, per GPU, device-to-device copy bandwidth (also counted as bytes
read plus written), host-to-device and device-to-host with pinned and with pageable host
memory allocated on the GPU's NUMA node, both directions at once, and for every GPU pair the
peer copy bandwidth one way and both ways and the small-copy latency. Every copy is
validated against the pattern written to its source.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(ngpus, iters, warm); err != nil {
				return err
			}
			n, err := collective.ParseSize(size)
			if err != nil {
				return toolError(fmt.Errorf("--size: %v", err))
			}
			cfg := bench.CopyConfig{Bytes: n, Iters: iters, Warmup: warm, Timeout: o.opTimeout, Corrupt: corrupt}
			all := []string{bench.CopyD2D, bench.CopyH2DPinned, bench.CopyD2HPinned, bench.CopyBidirPinned, bench.CopyH2DPageable, bench.CopyD2HPageable, bench.CopyP2P, bench.CopyP2PBidir, bench.CopyLatency}
			if tests == "all" {
				cfg.Tests = all
			} else {
				for _, t := range strings.Split(tests, ",") {
					t = strings.TrimSpace(t)
					if !slices.Contains(all, t) {
						return toolError(fmt.Errorf("--tests: %q is not one of %s", t, strings.Join(all, ", ")))
					}
					cfg.Tests = append(cfg.Tests, t)
				}
			}
			return withGPUs(cmd.Context(), g, o, ngpus, func(gpus *app.GPUs, f report.Format) error {
				return benchCopy(cmd.Context(), g, gpus, f, o, cfg)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&size, "size", "1G", "bytes per copy, or with a binary unit K, M, G or T (1G, 1GiB)")
	f.IntVarP(&iters, "iters", "n", 20, "timed copies")
	f.IntVarP(&warm, "warmup_iters", "w", 3, "warm-up copies")
	f.IntVarP(&ngpus, "ngpus", "g", 0, "number of GPUs (default: all)")
	f.StringVar(&tests, "tests", "all", "comma-separated: d2d, h2d_pinned, d2h_pinned, bidir_pinned, h2d_pageable, d2h_pageable, p2p, p2p_bidir, latency")
	f.BoolVar(&corrupt, "inject-corruption", false, "damage each destination before validation (proves the validation)")
	_ = f.MarkHidden("inject-corruption")
	o.flags(cmd)
	return cmd
}

// benchCopy runs the copies on GPUs already open.
func benchCopy(ctx context.Context, g *globals, gpus *app.GPUs, f report.Format, o benchOptions, cfg bench.CopyConfig) error {
	env, dir, err := g.session.BenchCopy(ctx, gpus, app.CopyOptions{Out: o.out, Config: cfg, Judge: o.judge, Warn: g.errOut})
	if env != nil {
		if f == report.JSON {
			if werr := report.WriteJSON(g.out, env); werr != nil {
				return werr
			}
		} else {
			bench.WriteCopyText(g.out, env.Data.(*bench.CopyReport), cfg, env.Results)
			fmt.Fprintf(g.out, "Results: %s\n", printable.Line(dir+"/results.json"))
		}
	}
	return benchError(err)
}
