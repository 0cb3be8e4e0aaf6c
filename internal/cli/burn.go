package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

func newBurn(g *globals) *cobra.Command {
	var o app.BurnOptions
	var size, cudart, devices string
	var noNCCL bool
	var replay string
	var format *formatValue
	cmd := &cobra.Command{
		Use:   "burn",
		Short: "Burn-in: sustained traffic in windows, every error counter attributed to the link that carried it",
		Example: `  gdrcheck burn --duration 1h --window 5m --out /var/lib/gdrcheck/burn   # the default workload for an hour
  gdrcheck burn --duration 1m --window 20s                                # a one-minute smoke run
  gdrcheck burn --replay /var/lib/gdrcheck/burn --root node17.tgz --strict  # judge a burn-in again, for sign-off`,
		Long: `burn runs a workload for --duration in windows of --window on the live host: on every
GPU, copies between the GPU and pinned host memory in both directions at once (its PCIe link
to the host) and within its memory, and between every pair of GPUs both ways (their PCIe path
or NVLink), every byte checked; and once per window every NCCL collective at --size on all the
GPUs, its data checked (--no-nccl leaves it out; NCCL's own traffic is not charged to links). Before the workload it samples the
error counters twice (what moves between those samples moves without the workload) and again
at the end of every window: the RDMA ports' counters/ and hw_counters/, and the AER statistics of
every GPU, NIC and bridge above them; with them, each GPU's own counters from the driver
(uncorrectable ECC, row remapping, retired pages, clock events, PCIe replays) and the kernel
log's Xid lines; and every 2 s while the workload runs, each GPU's SM clock, power and
temperature. Each window's deltas are attributed to the links that
carried its traffic and judged (docs/burn.md): a fatal counter (link_downed, an uncorrectable
AER error, a buffer overrun) fails naming the device, link and window; correctable errors are
judged per bit moved, with a Poisson bound, against the medium's error-rate ceiling (too few
bits moved to tell is unknown, never a pass); a GPU's new uncorrectable ECC error, failed or
pending row remap, Xid or hardware slowdown fails naming the window, PCIe replays and a thermal
slowdown warn; a hardware slowdown under load fails and a GPU clocked more than 10% below its
peers warns; wrong data fails the window. Counters that moved
before the workload are reported, never failed.

burn.json (the schedule, the work, the deltas and the verdicts) and the samples are written
after every window, so an interrupted run leaves a valid report of the windows done.
Not yet in the workload: RDMA loopback, a rank of a multi-node job; not yet read:
NVLink counters (docs/burn.md says what comes next).

Exit status: 0 nothing failed, 1 a verdict failed or data came back wrong (with --strict also
when a verdict is unknown), 2 the tool could not run, 130 interrupted (the windows done are
judged and kept).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := collective.ParseSize(size)
			if err != nil {
				return toolError(fmt.Errorf("--size: %v", err))
			}
			o.Bytes = n
			if _, err := app.ParseDevices(devices); devices != "" && err != nil {
				return toolError(fmt.Errorf("--devices: %v", err))
			}
			o.GPU = app.GPUOptions{CUDART: cudart, Devices: devices}
			o.NCCL = !noNCCL
			o.Warn = g.errOut
			if format.Format() == report.Text {
				o.Progress = g.errOut
			}
			var env *report.Envelope
			var dir string
			if replay != "" {
				env, err = g.session.BurnReplay(cmd.Context(), g.node(), replay, o)
				dir = replay
			} else {
				env, dir, err = g.session.Burn(cmd.Context(), g.node(), o)
			}
			if env != nil {
				if format.Format() == report.JSON {
					if werr := report.WriteJSON(g.out, env); werr != nil {
						return werr
					}
				} else {
					writeBurnText(g.out, env, dir)
				}
			}
			return benchError(err)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Duration, "duration", time.Hour, "how long the workload runs")
	f.DurationVar(&o.Window, "window", 5*time.Minute, "one window between two counter samples")
	f.StringVar(&o.Out, "out", "", "directory for burn.json and the counter samples (default gdrcheck-results/burn-<time>)")
	f.StringVar(&size, "size", "256M", "bytes per copy, or with a binary unit K, M, G")
	f.DurationVar(&o.OpTimeout, "op-timeout", 5*time.Minute, "deadline of every wait for GPU work")
	f.StringVar(&cudart, "cudart", "", "path of libcudart.so (default: search the loader path, CUDA_HOME, /usr/local/cuda)")
	f.StringVar(&devices, "devices", "", "CUDA devices to use, e.g. 0,2 (default: all)")
	f.BoolVar(&o.Force, "force", false, "write into a --out directory that is not empty (an earlier burn-in's samples are removed)")
	f.BoolVar(&o.Strict, "strict", false, "for sign-off: an unknown verdict (counters that could not be read, too few bits to prove an error rate) fails too (exit 1)")
	f.StringVar(&replay, "replay", "", "judge a burn-in directory again (its burn.json and samples) with this release's judging, writing nothing; --root names the node it ran on (a snapshot of it, or the live host)")
	f.BoolVar(&noNCCL, "no-nccl", false, "leave NCCL's collectives out of the workload (copies only)")
	f.StringVar(&o.NCCLLib, "nccl", "", "path of libnccl.so.2 (default: search the loader path)")
	format = addFormat(f, nil, report.Text, report.JSON)
	return cmd
}

// writeBurnText prints the windows and the verdicts that are not a pass.
func writeBurnText(w io.Writer, env *report.Envelope, dir string) {
	doc, _ := env.Data.(*app.BurnDoc)
	if doc == nil {
		return
	}
	state := "complete"
	if !doc.Complete {
		state = "stopped: " + printable.Line(doc.Stopped)
	}
	fmt.Fprintf(w, "Burn-in %s in windows of %s (%s), %d window(s) sampled\n", doc.Duration, doc.Window, state, len(doc.Schedule.Windows))
	for _, g := range doc.GPUs {
		fmt.Fprintf(w, "  CUDA device %d = %s %s\n", g.Device, printable.Line(g.Address), printable.Line(g.GPU))
	}
	for i, wk := range doc.Work {
		var moved uint64
		if i < len(doc.Schedule.Windows) {
			for _, t := range doc.Schedule.Windows[i].Traffic {
				moved += t.Bytes
			}
		}
		var wrong int64
		for _, c := range wk.NCCL {
			wrong += c.Wrong
		}
		nccl := ""
		if len(wk.NCCL) > 0 {
			nccl = fmt.Sprintf(", %d NCCL collective(s) checked (%d wrong)", len(wk.NCCL), wrong)
		}
		fmt.Fprintf(w, "  %s: %d pass(es) of copies, %.1f GiB over the links, %d wrong byte(s)%s\n", doc.Schedule.Name(i), wk.Passes, float64(moved)/(1<<30), wk.Wrong, nccl)
	}
	for _, n := range doc.Notes {
		fmt.Fprintf(w, "Note: %s\n", printable.Line(n))
	}
	counts := map[result.Status]int{}
	for _, r := range env.Results {
		counts[r.Status]++
		if r.Status == result.Pass || r.Status == result.Skip {
			continue
		}
		fmt.Fprintf(w, "%-7s %-16s %-24s %s\n", strings.ToUpper(string(r.Status)), r.ID, printable.Line(r.Subject), printable.Line(r.Message))
	}
	fmt.Fprintf(w, "Verdict: %s (%d pass, %d skip, %d unknown, %d warn, %d fail)\n", strings.ToUpper(string(result.Worst(env.Results))),
		counts[result.Pass], counts[result.Skip], counts[result.Unknown], counts[result.Warn], counts[result.Fail]+counts[result.Error])
	fmt.Fprintf(w, "Report: %s\n", printable.Line(dir+"/burn.json"))
}
