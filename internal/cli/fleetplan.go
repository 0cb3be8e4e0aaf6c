package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/campaign"
	"github.com/gdrcheck/gdrcheck/internal/report"
)

func newFleetPlan(g *globals) *cobra.Command {
	var out, next, rails, strategy string
	var format *formatValue
	var o app.FleetPlanOptions
	cfg := campaign.DefaultConfig(nil)
	cmd := &cobra.Command{
		Use:   "plan --nodes LIST|--hostfile FILE --out DIR | --next DIR",
		Short: "Plan a multi-node test campaign round by round and name the bad node, NIC or link",
		Example: `  gdrcheck fleet plan --hostfile nodes.txt --out camp     # round 1: the steps to run
  gdrcheck fleet plan --next camp                        # judge round 1's results, plan round 2`,
		Long: `fleet plan lays out a campaign of gdrcheck bench nccl runs over N nodes (a Slurm node list or
an MPI hostfile) and reads its results round by round. Round 1 tests every node in disjoint
pairs (node i with node i+N/2), each pair as a node (NCCL all_reduce over every GPU and NIC)
and, with --rails, on each rail alone (NCCL_IB_HCA==<nic>); --strategy bisect instead tests all
nodes as one group (and, with --rails, one group per rail) and halves a failing group at the
level it failed each round. Each member of a failing pair is then
tested with a partner that passed: a node or rail is accused when it fails with 2 different
partners (--confirm), one of them known good, and cleared when it passes. A node whose every
rail fails, or which fails while its rails pass, is the node; otherwise each failing rail is a
link. A step fails when its bus bandwidth is below --min-busbw (--min-rail-busbw for a rail),
or, without them, when its robust z against every step of its kind is below --z.

  gdrcheck fleet plan --nodes 'gpu[0001-1024]' --rails mlx5_0,mlx5_3 --out camp
      writes camp/campaign.json and camp/round-01/ (steps.sh for srun inside one allocation,
      mpirun.sh and hostfile-* for Open MPI); run one of them, then
  gdrcheck fleet plan --next camp
      reads round-01/results/, and writes round-02/ or, when nothing is left to resolve,
      camp/findings.json and the findings.

Exit status: 0 no fault found (or a round written), 1 a node or link accused (or a failure
left unresolved), 2 bad input or results missing (--allow-missing plans those steps again).
docs/fleet-plan.md says more.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := format.Format()
			started := g.session.Now()
			switch {
			case next != "" && out != "":
				return toolError(fmt.Errorf("--out starts a campaign and --next continues one: give one"))
			case next != "":
				for _, name := range []string{"nodes", "hostfile", "rails", "strategy", "min-busbw", "min-rail-busbw", "confirm", "max-rounds", "gpus-per-node", "size", "iters", "z", "mad-floor"} {
					if cmd.Flags().Changed(name) {
						return toolError(fmt.Errorf("--%s: the campaign in %s was set when it began (its campaign.json); --next takes only --allow-missing and --format", name, next))
					}
				}
				o.Dir, o.Next = next, true
			case out != "":
				if o.AllowMissing {
					return toolError(fmt.Errorf("--allow-missing is for --next"))
				}
				o.Dir = out
			default:
				return toolError(fmt.Errorf("give --out DIR to start a campaign, or --next DIR to continue one"))
			}
			cfg.Strategy = campaign.Strategy(strategy)
			if rails != "" {
				cfg.Rails = strings.Split(rails, ",")
			}
			o.Config = cfg
			o.Stamp = func(fd *campaign.Findings) any { return g.envelope("fleet-plan", started, nil, fd) }
			res, err := app.FleetPlan(cmd.Context(), o)
			if err != nil {
				return err
			}
			switch {
			case f == report.JSON:
				err = report.WriteJSON(g.out, g.envelope("fleet-plan", started, nil, res))
			case res.Findings != nil && f == report.Markdown:
				err = res.Findings.WriteMarkdown(g.out)
			case res.Findings != nil:
				err = res.Findings.WriteText(g.out)
			default:
				err = res.Round.WriteText(g.out, res.Dir, f == report.Markdown)
			}
			if err != nil {
				return err
			}
			if res.Findings != nil && res.Findings.Faulty() {
				return errFailedQuietly
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Nodes, "nodes", "", "the nodes, a Slurm node list: gpu[001-128],login1")
	fl.StringVar(&o.Hostfile, "hostfile", "", "the nodes, one host a line (slots= and comments ignored)")
	fl.StringVar(&rails, "rails", "", "NICs to test one at a time, comma-separated NCCL_IB_HCA names (mlx5_0,mlx5_3:1); none: node-level tests only")
	fl.StringVar(&strategy, "strategy", string(campaign.Pairs), "pairs (every node in round 1) or bisect (all nodes as one group, and one per rail, halved where they fail)")
	fl.Float64Var(&cfg.MinBusBW, "min-busbw", 0, "least bus bandwidth (GB/s) of a node-level step (default: judged against the other steps)")
	fl.Float64Var(&cfg.MinRailBusBW, "min-rail-busbw", 0, "least bus bandwidth (GB/s) of a per-rail step (default: judged against the rail's other steps)")
	fl.IntVar(&cfg.Confirm, "confirm", cfg.Confirm, "failing steps with different partners, one known good, that accuse a node or link")
	fl.IntVar(&cfg.MaxRounds, "max-rounds", cfg.MaxRounds, "rounds after which what is unresolved is reported as such")
	fl.IntVar(&cfg.Bench.GPUsPerNode, "gpus-per-node", cfg.Bench.GPUsPerNode, "ranks per node, one per GPU")
	fl.StringVar(&cfg.Bench.Size, "size", cfg.Bench.Size, "message size every step measures (bench nccl -b and -e)")
	fl.IntVar(&cfg.Bench.Iters, "iters", cfg.Bench.Iters, "timed iterations of every step (bench nccl -n)")
	fl.Float64Var(&cfg.Robust.Z, "z", cfg.Robust.Z, "robust z below which a step fails (relative judging)")
	fl.Float64Var(&cfg.Robust.MADFloor, "mad-floor", cfg.Robust.MADFloor, "least MAD as a fraction of the median (relative judging)")
	fl.StringVar(&out, "out", "", "start a campaign in this folder")
	fl.StringVar(&next, "next", "", "continue the campaign in this folder: read the latest round's results, plan the next round or conclude")
	fl.BoolVar(&o.AllowMissing, "allow-missing", false, "with --next: record steps without an exit status (not run) as missing and plan them again")
	format = addFormat(fl, nil, report.Text, report.JSON, report.Markdown)
	return cmd
}
