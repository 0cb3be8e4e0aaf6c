package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// CopyReport is results.json of `gdrcheck bench copy`.
type CopyReport struct {
	Tool        string             `json:"tool"`
	StartedAt   time.Time          `json:"started_at"`
	Complete    bool               `json:"complete"`
	Error       string             `json:"error,omitempty"`
	CUDARuntime string             `json:"cuda_runtime"`
	CUDADriver  string             `json:"cuda_driver"`
	Devices     []BenchDevice      `json:"devices"`
	Results     []bench.CopyResult `json:"results"`
	Judgements  []result.Result    `json:"judgements,omitempty"`
}

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
					ok := false
					for _, a := range all {
						ok = ok || a == t
					}
					if !ok {
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
	e, err := openBench(ctx, g, o, "bench-copy", ngpus)
	if err != nil {
		return err
	}
	defer e.rt.Close()
	cfg.Devices = e.devices
	cfg.LocalCPUs = e.localCPUs
	rep := &CopyReport{Tool: "gdrcheck " + g.build.Version, StartedAt: time.Now().UTC(), CUDARuntime: e.runtime, CUDADriver: e.driver}
	for _, d := range e.devices {
		rep.Devices = append(rep.Devices, BenchDevice{CUDA: d, BusID: e.busIDs[d], Name: e.gpuName(d)})
	}
	res, runErr := bench.RunCopy(ctx, e.rt, cfg)
	rep.Results = res
	rep.Complete = runErr == nil
	if runErr != nil {
		rep.Error = runErr.Error()
	}
	if !o.noJudge {
		rep.Judgements = judgeCopies(e, res, o.margin)
	}
	path := filepath.Join(e.outDir, "results.json")
	if err := writeAtomic(path, rep); err != nil {
		fmt.Fprintf(g.errOut, "gdrcheck: writing %s: %v\n", path, err)
	}
	if o.format == "json" {
		if err := writeJSON(g.out, rep); err != nil {
			return err
		}
	} else {
		writeCopyText(g, e, cfg, rep)
		fmt.Fprintf(g.out, "Results: %s\n", path)
	}
	if runErr != nil {
		return benchExit(runErr, nil, nil)
	}
	for _, r := range res {
		if r.Error != "" || !r.Valid {
			return failed("%s on GPU %d: %s", r.Test, r.Dev, firstNonEmpty(r.Error, fmt.Sprintf("%d bytes wrong", r.Wrong)))
		}
	}
	return benchExit(nil, nil, rep.Judgements)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var copyModel = map[string]model.CopyTest{
	bench.CopyD2D: model.CopyDeviceLocal, bench.CopyH2DPinned: model.CopyH2DPinned, bench.CopyD2HPinned: model.CopyD2HPinned,
	bench.CopyBidirPinned: model.CopyBidirPinned, bench.CopyH2DPageable: model.CopyH2DPageable, bench.CopyD2HPageable: model.CopyD2HPageable,
}

// measuredForModel is the number the model's expectation is stated in.
func measuredForModel(r bench.CopyResult) float64 {
	switch r.Test {
	case bench.CopyD2D:
		return r.ReadWriteGBps
	case bench.CopyBidirPinned:
		return r.GBps / 2 // the model states each direction
	}
	return r.GBps
}

func judgeCopies(e *benchEnv, res []bench.CopyResult, pass float64) []result.Result {
	s, err := e.system()
	if err != nil {
		return []result.Result{{ID: "bench.copy", Status: result.Unknown, Subject: "node", Reason: "NoModel", Message: "no expected performance: " + err.Error()}}
	}
	m := model.DefaultMargin()
	m.Pass = pass
	var out []result.Result
	for _, r := range res {
		t, ok := copyModel[r.Test]
		if r.Test == bench.CopyP2P || r.Test == bench.CopyP2PBidir {
			t, ok = model.CopyP2PNVLink, true
			if r.Test == bench.CopyP2PBidir {
				t = model.CopyP2PNVLinkBidir
			}
			if a, b := e.gpus[r.Dev], e.gpus[r.Peer]; a != nil && b != nil && topology.NVLinksBetween(a, b) <= 0 {
				t = model.CopyP2PPCIe
			}
		}
		if !ok || r.Error != "" {
			continue
		}
		x, err := model.ExpectCopy(s, t)
		if err != nil {
			continue
		}
		got := measuredForModel(r)
		st, ratio := x.Judge(got, m)
		subject := fmt.Sprintf("%s GPU%d", r.Test, r.Dev)
		if r.Peer >= 0 {
			subject = fmt.Sprintf("%s GPU%d->GPU%d", r.Test, r.Dev, r.Peer)
		}
		msg := fmt.Sprintf("%s: %.1f GB/s, expected %.1f GB/s (%s, limited by %s): %.0f%% of expected", subject, got, x.GBps, x.Description, x.Bottleneck, 100*ratio)
		ev := []result.Evidence{{Source: "model", Value: x.Formula}}
		if x.PeakGBps > 0 {
			msg += fmt.Sprintf(", %.0f%% of the hardware limit", 100*got/x.PeakGBps)
			ev = append(ev, result.Evidence{Source: "hardware limit", Value: x.Limit})
		}
		out = append(out, result.Result{ID: "bench.copy", Status: st, Subject: subject, Reason: "MeasuredVsExpected", Message: msg, Evidence: ev})
	}
	return out
}

func writeCopyText(g *globals, e *benchEnv, cfg bench.CopyConfig, rep *CopyReport) {
	w := g.out
	fmt.Fprintf(w, "gdrcheck bench copy: CUDA runtime %s, %d bytes per copy, %d timed after %d warm-up, every copy validated\n", e.runtime, cfg.Bytes, cfg.Iters, cfg.Warmup)
	for _, d := range rep.Devices {
		fmt.Fprintf(w, "  device %d [%s] %s\n", d.CUDA, d.BusID, d.Name)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTEST\tGPU\tPEER\tBYTES\tTIME(us)\tGB/s\tREAD+WRITE GB/s\tVALID\tNUMA-LOCAL\tNOTE")
	for _, r := range rep.Results {
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
	writePeerMatrix(w, rep.Results, bench.CopyP2P, "GPU->GPU copy bandwidth, one way (GB/s)")
	writePeerMatrix(w, rep.Results, bench.CopyP2PBidir, "GPU<->GPU copy bandwidth, both ways at once, summed (GB/s)")
	writePeerMatrix(w, rep.Results, bench.CopyLatency, "GPU->GPU small-copy latency (us)")
	for _, j := range rep.Judgements {
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
