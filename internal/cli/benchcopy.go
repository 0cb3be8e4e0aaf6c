package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/bench"
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
		Long: `bench copy measures, per GPU, device-to-device copy bandwidth (also counted as bytes
read plus written), host-to-device and device-to-host with pinned and with pageable host
memory allocated on the GPU's NUMA node, both directions at once, and for every GPU pair the
peer copy bandwidth one way and both ways and the small-copy latency. Every copy is
validated against the pattern written to its source.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := bench.ParseSize(size)
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
			return runBenchCopy(cmd.Context(), g, o, cfg, ngpus)
		},
	}
	f := cmd.Flags()
	f.StringVar(&size, "size", "1G", "bytes per copy (K, M, G)")
	f.IntVarP(&iters, "iters", "n", 20, "timed copies")
	f.IntVarP(&warm, "warmup_iters", "w", 3, "warm-up copies")
	f.IntVarP(&ngpus, "ngpus", "g", 0, "number of GPUs (default: all)")
	f.StringVar(&tests, "tests", "all", "comma-separated: d2d, h2d_pinned, d2h_pinned, bidir_pinned, h2d_pageable, d2h_pageable, p2p, p2p_bidir, latency")
	f.BoolVar(&corrupt, "inject-corruption", false, "damage each destination before validation (proves the validation)")
	_ = f.MarkHidden("inject-corruption")
	o.flags(cmd)
	return cmd
}

func runBenchCopy(ctx context.Context, g *globals, o benchOptions, cfg bench.CopyConfig, ngpus int) error {
	f, gpus, err := openGPUs(ctx, g, o, ngpus, nil)
	if err != nil {
		return err
	}
	defer gpus.Close()
	return benchCopy(ctx, g, gpus, f, o, cfg)
}

// benchCopy runs the copies on GPUs already open.
func benchCopy(ctx context.Context, g *globals, gpus *app.GPUs, f report.Format, o benchOptions, cfg bench.CopyConfig) error {
	env, dir, err := g.session.BenchCopy(ctx, gpus, app.CopyOptions{Out: o.out, Config: cfg, Judge: o.judging(), Warn: g.errOut})
	if env != nil {
		if f == report.JSON {
			if werr := report.WriteJSON(g.out, env); werr != nil {
				return werr
			}
		} else {
			writeCopyText(g.out, gpus, cfg, env)
			fmt.Fprintf(g.out, "Results: %s\n", dir+"/results.json")
		}
	}
	return benchError(err)
}

// writeCopyText is bench copy's own text view: a table of every copy, the
// peer matrices and the judgements.
func writeCopyText(w io.Writer, gpus *app.GPUs, cfg bench.CopyConfig, env *report.Envelope) {
	rep := env.Data.(*bench.CopyReport)
	fmt.Fprintf(w, "gdrcheck bench copy: CUDA runtime %s, %d bytes per copy, %d timed after %d warm-up, every copy validated\n", gpus.Runtime, cfg.Bytes, cfg.Iters, cfg.Warmup)
	for _, d := range rep.Devices {
		fmt.Fprintf(w, "  device %d [%s] %s\n", d.CUDA, d.BusID, d.Name)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTEST\tGPU\tPEER\tBYTES\tTIME(us)\tGB/s\tREAD+WRITE GB/s\tVALID\tNUMA-LOCAL\tNOTE")
	for _, r := range rep.Measurements {
		peer := "-"
		if r.Peer >= 0 {
			peer = fmt.Sprint(r.Peer)
		}
		gb, rw := fmt.Sprintf("%.1f", r.GBps), "-"
		if r.ReadWriteGBps > 0 {
			rw = fmt.Sprintf("%.1f", r.ReadWriteGBps)
		}
		if r.Test == bench.CopyLatency {
			gb = "-"
		}
		valid := "yes"
		if !r.Valid {
			valid = fmt.Sprintf("NO (%d bytes wrong)", r.Wrong)
		}
		note := r.Note
		if r.Error != "" {
			valid, note = "ERROR", r.Error
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%.2f\t%s\t%s\t%s\t%s\t%s\n", r.Test, r.Dev, peer, r.Bytes, r.US, gb, rw, valid, yesno(r.NUMABound), note)
	}
	tw.Flush()
	writePeerMatrix(w, rep.Measurements, bench.CopyP2P, "GPU->GPU copy bandwidth, one way (GB/s)")
	writePeerMatrix(w, rep.Measurements, bench.CopyP2PBidir, "GPU<->GPU copy bandwidth, both ways at once, summed (GB/s)")
	writePeerMatrix(w, rep.Measurements, bench.CopyLatency, "GPU->GPU small-copy latency (us)")
	for _, j := range env.Results {
		fmt.Fprintf(w, "%-7s %s\n", strings.ToUpper(string(j.Status)), j.Message)
	}
}

func yesno(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func writePeerMatrix(w io.Writer, rs []bench.CopyResult, test, title string) {
	cells := map[[2]int]bench.CopyResult{}
	var devs []int
	seen := map[int]bool{}
	for _, r := range rs {
		if r.Test == test && r.Peer >= 0 {
			cells[[2]int{r.Dev, r.Peer}] = r
			for _, d := range []int{r.Dev, r.Peer} {
				if !seen[d] {
					seen[d] = true
					devs = append(devs, d)
				}
			}
		}
	}
	if len(cells) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\n%s\n", title)
	hdr := "src\\dst\t"
	for _, d := range devs {
		hdr += fmt.Sprintf("%d\t", d)
	}
	fmt.Fprintln(tw, hdr)
	for _, a := range devs {
		line := fmt.Sprintf("%d\t", a)
		for _, b := range devs {
			c, ok := cells[[2]int{a, b}]
			switch {
			case a == b || !ok:
				line += "-\t"
			case test == bench.CopyLatency:
				line += fmt.Sprintf("%.2f\t", c.US)
			default:
				line += fmt.Sprintf("%.1f\t", c.GBps)
			}
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}
