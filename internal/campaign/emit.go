package campaign

import (
	"fmt"
	"strings"
)

// File is one file of a round's folder.
type File struct {
	Name string
	Data []byte
	Mode uint32
}

// RoundDir is round n's folder in the campaign's: round-01, round-02, ...
func RoundDir(n int) string { return fmt.Sprintf("round-%02d", n) }

// Files are round r's scripts and hostfiles: steps.sh (Slurm job steps, to
// run inside one allocation holding the nodes), mpirun.sh (the same under
// Open MPI) and hostfile-CHAIN for each chain of steps.
func (c *Campaign) Files(r *Round) []File {
	chains := chainsOf(r)
	files := []File{
		{Name: "steps.sh", Data: c.script(r, chains, false), Mode: 0o755},
		{Name: "mpirun.sh", Data: c.script(r, chains, true), Mode: 0o755},
	}
	for _, ch := range chains {
		var b strings.Builder
		for _, n := range ch[0].Nodes {
			fmt.Fprintf(&b, "%s slots=%d\n", n, c.Bench.GPUsPerNode)
		}
		files = append(files, File{Name: "hostfile-" + ch[0].Chain, Data: []byte(b.String()), Mode: 0o644})
	}
	return files
}

// chainsOf groups a round's steps by chain, in order.
func chainsOf(r *Round) [][]*Step {
	var out [][]*Step
	at := map[string]int{}
	for _, s := range r.Steps {
		i, ok := at[s.Chain]
		if !ok {
			i = len(out)
			at[s.Chain] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], s)
	}
	return out
}

// quote is s in single quotes for bash. Host and rail names are checked
// (ValidHost, validRail) and need none; quoting them anyway keeps a script
// safe should that ever change.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (c *Campaign) script(r *Round, chains [][]*Step, mpi bool) []byte {
	var b strings.Builder
	nodes := 0
	for _, ch := range chains {
		nodes += len(ch[0].Nodes)
	}
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("#!/usr/bin/env bash\n")
	p("# gdrcheck fleet plan: round %d of a campaign over %d nodes (%s strategy).\n", r.N, len(c.Nodes), c.Strategy)
	p("# %d steps in %d chains on %d nodes: the chains run side by side (no node is in two),\n", len(r.Steps), len(chains), nodes)
	p("# the steps of a chain (on the same nodes, node-level first, then rail by rail) one after another.\n")
	if mpi {
		p("# Open MPI: each step an mpirun over its hostfile-CHAIN; rank 0 is the chain's first host,\n")
		p("# which serves the rendezvous (GDRCHECK_RENDEZVOUS).\n")
	} else {
		p("# Slurm: run inside one allocation holding these nodes, e.g.\n")
		p("#   (in the campaign folder) sbatch -N %d --exclusive --wrap \"bash %s/steps.sh\"\n", nodes, RoundDir(r.N))
		p("# each step an srun of its nodes; rank 0 is the step's first node, which serves the rendezvous.\n")
	}
	p("# Then: gdrcheck fleet plan --next <campaign folder>\n")
	p("# Results: results/STEP.json (rank 0's bench nccl JSON), results/STEP.rc (exit status),\n")
	p("# results/STEP.err; bench nccl's own folder out/STEP.\n")
	p("set -u\n")
	p("cd \"$(dirname \"$0\")\" || exit 2\n")
	p("mkdir -p %s out || exit 2\n", ResultsDir)
	p("GDRCHECK=${GDRCHECK:-gdrcheck}\n")
	p("# One secret for the round's rendezvous (bench nccl derives a weak one from the job id otherwise).\n")
	p("GDRCHECK_SECRET=${GDRCHECK_SECRET:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n')}\n")
	p("export GDRCHECK_SECRET\n")
	p("BENCH=(bench nccl --op all_reduce -b %s -e %s -n %d --no-judge --format json)\n", quote(c.Bench.Size), quote(c.Bench.Size), c.Bench.Iters)
	g := c.Bench.GPUsPerNode
	p("# A rail's step sets NCCL_IB_HCA to that NIC alone; a node-level step leaves the environment as it is.\n")
	if mpi {
		p("step() {\n")
		p("  local id=$1 hca=$2 chain=$3 first=$4 np=$5 v\n")
		p("  rm -f \"%s/$id.rc\" # a step run again: no earlier exit status beside its new result\n", ResultsDir)
		p("  if [ -n \"$hca\" ]; then local -x NCCL_IB_HCA=$hca; fi\n")
		p("  local -x GDRCHECK_RENDEZVOUS=$first\n")
		p("  local -a x=()\n")
		p("  for v in GDRCHECK_SECRET GDRCHECK_RENDEZVOUS NCCL_IB_HCA PATH LD_LIBRARY_PATH; do\n")
		p("    if [ -n \"${!v+set}\" ]; then x+=(-x \"$v\"); fi\n")
		p("  done\n")
		p("  # shellcheck disable=SC2086 # MPIRUN_FLAGS: the site's own flags, split into words\n")
		p("  mpirun -np \"$np\" --hostfile \"hostfile-$chain\" --map-by ppr:%d:node --bind-to none \"${x[@]}\" ${MPIRUN_FLAGS:-} \\\n", g)
		p("    \"$GDRCHECK\" \"${BENCH[@]}\" --out \"out/$id\" >\"%s/$id.json\" 2>\"%s/$id.err\"\n", ResultsDir, ResultsDir)
		p("  echo $? >\"%s/$id.rc\"\n", ResultsDir)
		p("}\n")
	} else {
		p("step() {\n")
		p("  local id=$1 hca=$2 nodes=$3 n=$4\n")
		p("  rm -f \"%s/$id.rc\" # a step run again: no earlier exit status beside its new result\n", ResultsDir)
		p("  if [ -n \"$hca\" ]; then local -x NCCL_IB_HCA=$hca; fi\n")
		p("  # shellcheck disable=SC2086 # SRUN_FLAGS: the site's own flags, split into words\n")
		p("  srun --nodes=\"$n\" --ntasks=$((n * %d)) --ntasks-per-node=%d --gpus-per-node=%d \\\n", g, g, g)
		p("    --nodelist=\"$nodes\" --exclusive --kill-on-bad-exit=1 ${SRUN_FLAGS:-} \\\n")
		p("    \"$GDRCHECK\" \"${BENCH[@]}\" --out \"out/$id\" >\"%s/$id.json\" 2>\"%s/$id.err\"\n", ResultsDir, ResultsDir)
		p("  echo $? >\"%s/$id.rc\"\n", ResultsDir)
		p("}\n")
	}
	p("# PARALLEL=K runs at most K chains at once (default: every chain at once); SRUN_FLAGS and\n")
	p("# MPIRUN_FLAGS add the site's own flags (e.g. SRUN_FLAGS=\"--mpi=pmix --cpu-bind=none\").\n")
	p("throttle() { if [ \"${PARALLEL:-0}\" -gt 0 ]; then while [ \"$(jobs -rp | wc -l)\" -ge \"$PARALLEL\" ]; do wait -n; done; fi; }\n")
	p("\n")
	for _, ch := range chains {
		p("throttle\n")
		p("(\n")
		for _, s := range ch {
			hca := "" // every NIC
			if s.Rail >= 0 {
				hca = "=" + c.Rails[s.Rail]
			}
			if mpi {
				p("  step %s %s %s %s %d\n", s.ID, quote(hca), s.Chain, quote(s.Nodes[0]), len(s.Nodes)*g)
			} else {
				p("  step %s %s %s %d\n", s.ID, quote(hca), quote(strings.Join(s.Nodes, ",")), len(s.Nodes))
			}
		}
		p(") &\n")
	}
	p("wait\n")
	return []byte(b.String())
}
