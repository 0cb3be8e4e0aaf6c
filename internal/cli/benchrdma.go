package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
)

func newBenchRDMA(g *globals) *cobra.Command {
	var o app.RDMAOptions
	var pairs, size, rails, expect string
	var format *formatValue
	var jf jobFlags
	cmd := &cobra.Command{
		Use:   "rdma",
		Short: "GPU-memory RDMA per GPU–NIC pair with perftest (ib_write_bw --use_cuda), against host memory and the line rate",
		Example: `  gdrcheck bench rdma                              # loopback through every GPU–NIC pair
  gdrcheck bench rdma --dry-run --root node.tgz    # what would run, planned from a snapshot
  srun -N2 --ntasks-per-node=1 gdrcheck bench rdma --mode cross-node --out /shared/rdma1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := format.Format()
			var err error
			if pairs != "" {
				if o.Plan.Pairs, err = rdma.ParsePairs(pairs); err != nil {
					return toolError(err)
				}
			}
			if size != "" {
				n, err := collective.ParseSize(size)
				if err != nil {
					return toolError(fmt.Errorf("-s %s: %v", size, err))
				}
				o.Plan.Size = int64(n)
			}
			if o.Timeout <= 0 {
				return toolError(fmt.Errorf("--pair-timeout %s: must be positive", o.Timeout))
			}
			if !(o.Judging.Pass > 0 && o.Judging.Pass <= 1) {
				return toolError(fmt.Errorf("--pass-ratio %g: want a fraction of expected in (0, 1]", o.Judging.Pass))
			}
			o.Judging.GPUvsHost = rdma.DefaultJudging.GPUvsHost
			if o.Plan.Rails, err = rdma.ParseRails(rails); err != nil {
				return toolError(err)
			}
			if cmd.Flags().Changed("rails") && o.Plan.Rails == nil && o.Plan.Mode != rdma.ModeCrossNode {
				return toolError(fmt.Errorf("--rails is for --mode %s", rdma.ModeCrossNode))
			}
			if o.Plan.Mode != rdma.ModeCrossNode {
				for _, name := range []string{"rank", "world-size", "local-rank", "rendezvous", "rendezvous-listen", "secret-file", "join-timeout", "server-addr"} {
					if cmd.Flags().Changed(name) {
						return toolError(fmt.Errorf("--%s is for --mode %s (a loopback run is one process)", name, rdma.ModeCrossNode))
					}
				}
			}
			if o.Plan.Mode == rdma.ModeCrossNode && !o.DryRun {
				job, err := jf.launcher(cmd)
				if err != nil {
					return err
				}
				if job.Multi() {
					jo, err := jf.options(g, job)
					if err != nil {
						return err
					}
					o.Job = &jo
				}
			}
			if o.Profile, err = app.LoadProfile(expect); err != nil {
				return toolError(err)
			}
			env, dir, err := g.session.BenchRDMA(cmd.Context(), g.node(), o)
			if env != nil && app.RDMAMember(env) {
				// A rank other than 0: its part is in its results.json and
				// rank 0's table; errors go to stderr.
				return benchError(err)
			}
			if env != nil {
				if f == report.JSON {
					if werr := report.WriteJSON(g.out, env); werr != nil {
						return werr
					}
				} else if line := app.RDMANothing(env); line != "" {
					fmt.Fprintln(g.out, printable.Line(line))
				} else {
					doc := env.Data.(*app.RDMADoc)
					if o.DryRun || len(doc.Pairs) == 0 {
						if werr := doc.Plan.WriteText(g.out); werr != nil {
							return werr
						}
					} else {
						if werr := rdma.WriteTable(g.out, doc.Pairs, env.Results); werr != nil {
							return werr
						}
						if werr := report.WriteTable(g.out, env.Results, env.Duration()); werr != nil {
							return werr
						}
						fmt.Fprintf(g.out, "Raw outputs and results.json: %s\n", printable.Line(dir))
					}
				}
			}
			return benchError(err)
		},
	}
	fl := cmd.Flags()
	format = addFormat(fl, nil, report.Text, report.JSON)
	fl.StringVar(&expect, "expect", "", "site profile (YAML or JSON, as check --expect): with gdr.required: false, a node with nothing to test is not a failure")
	fl.BoolVar(&o.DryRun, "dry-run", false, "print the plan (pairs, commands, ports, expectations) and run nothing; works on any --root")
	fl.StringVar(&o.PerftestDir, "perftest-dir", "", "folder holding ib_write_bw and the other perftest binaries (default: search PATH)")
	fl.StringVar(&o.Out, "out", "", "folder for the raw perftest outputs and results.json (default gdrcheck-results/bench-rdma-<time>)")
	fl.DurationVar(&o.Timeout, "pair-timeout", 2*time.Minute, "deadline of each server/client run of a pair (the global --timeout is discovery's)")
	fl.StringVar(&o.Plan.Test, "test", rdma.WriteBW, "perftest tool: ib_write_bw, ib_read_bw, ib_send_bw or ib_write_lat")
	fl.StringVar(&o.Plan.Mode, "mode", rdma.ModeLoopback, "loopback (server and client on this host) or cross-node (one rank per node under a launcher: rank 2k serves rail r, rank 2k+1 is its client)")
	fl.StringVar(&rails, "rails", "all", "cross-node: the rails to run, all or a list such as 0,1,4 (rail r is the r-th GPU–NIC pair of the pairing, or of --pairs)")
	fl.BoolVar(&o.Plan.Concurrent, "concurrent", false, "cross-node: run every rail at once (each on its own TCP port) to load the PCIe switches; default one rail at a time")
	fl.StringVar(&o.ServerAddr, "server-addr", "", "cross-node: the address the peer's perftest clients connect to for this rank's servers (default: this host's address on the network that reaches rank 0)")
	jf.addJob(cmd)
	fl.StringVar(&pairs, "pairs", "", "GPU:NIC pairs to test, e.g. 0:mlx5_3,1:mlx5_4 (default: the GPU→NIC pairing of topo); GPUs numbered in PCI bus order")
	fl.StringVarP(&size, "size", "s", "", "one message size, e.g. 1M (default: sweep all sizes, -a)")
	fl.IntVar(&o.Plan.TCPPort, "tcp-port", rdma.DefaultTCPPort, "first out-of-band TCP port (-p); each run takes the next")
	fl.IntVar(&o.Plan.GIDIndex, "gid-index", -1, "RoCE GID index (-x); default: the one NCCL would choose from the port's GID table, else perftest's")
	fl.IntVar(&o.Plan.MTU, "mtu", 0, "MTU (-m): 256..4096 (default: the port's active MTU)")
	fl.IntVar(&o.Plan.QPs, "qps", 0, "queue pairs (-q) (default: perftest's, 1)")
	fl.IntVarP(&o.Plan.Iters, "iters", "n", 0, "iterations per size (-n) (default: perftest's)")
	fl.IntVarP(&o.Plan.Duration, "duration", "D", 0, "seconds per size (-D) instead of iterations")
	fl.Float64Var(&o.Judging.Pass, "pass-ratio", rdma.DefaultJudging.Pass, "pass when measured/expected is at least this")
	return cmd
}
