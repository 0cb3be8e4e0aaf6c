package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/launch"
	"github.com/gdrcheck/gdrcheck/internal/printable"
)

// jobFlags are bench nccl's flags of a multi-process run; each overrides
// what the launcher's environment says.
type jobFlags struct {
	rank, world, local int
	rendezvous         string
	listen             string
	secretFile         string
	joinTimeout        time.Duration
	split              string
	hierarchical       bool
}

func (j *jobFlags) add(cmd *cobra.Command) {
	j.addJob(cmd)
	f := cmd.Flags()
	f.BoolVar(&j.hierarchical, "hierarchical", false, "also run the hierarchical all-reduce (reduce-scatter in the node, all-reduce per rail, all-gather in the node; ncclCommSplit) on the same data as the flat one, verified and timed beside it")
	f.StringVar(&j.split, "split", "all", "communicators of a job: all (every rank), intra (each node's ranks), rail (the same local GPU of every node; NCCL_TESTS_SPLIT's per-rail run)")
}

// addJob adds the flags of a job's rank and rendezvous (bench nccl's and
// bench rdma --mode cross-node's).
func (j *jobFlags) addJob(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&j.rank, "rank", -1, "this process's rank in a multi-process job (default: from the launcher: Slurm, Open MPI, PMI, torchrun, JOB_COMPLETION_INDEX)")
	f.IntVar(&j.world, "world-size", -1, "number of ranks of the job (default: from the launcher)")
	f.IntVar(&j.local, "local-rank", -1, "rank among this node's processes; picks the GPU (default: from the launcher)")
	f.StringVar(&j.rendezvous, "rendezvous", "", "rank 0's address HOST:PORT (default: GDRCHECK_RENDEZVOUS, the first Slurm host, MASTER_ADDR:MASTER_PORT+1, or 127.0.0.1 when every rank is on this node)")
	f.StringVar(&j.listen, "rendezvous-listen", "", "where rank 0 listens, HOST:PORT (default: the rendezvous address; never all interfaces unless given)")
	f.StringVar(&j.secretFile, "secret-file", "", "file holding the job's rendezvous secret (default: GDRCHECK_SECRET, else a weak one from the launcher's job id)")
	f.DurationVar(&j.joinTimeout, "join-timeout", 2*time.Minute, "how long every rank may take to reach the rendezvous")
}

// detect reads the launcher's environment and the flags; a Job whose
// Launcher is None means the single-process mode.
func (j *jobFlags) detect(cmd *cobra.Command) (launch.Job, error) {
	job, err := j.launcher(cmd)
	if err != nil {
		return job, err
	}
	if _, err := launch.ParseSplit(j.split); err != nil {
		return job, toolError(err)
	}
	if j.split != string(launch.SplitAll) && !(job.Multi() && job.Size > 1) {
		return job, toolError(fmt.Errorf("--split %s: only a job of several ranks splits", j.split))
	}
	if j.hierarchical && (j.split != string(launch.SplitAll) || !(job.Multi() && job.Size > 1)) {
		return job, toolError(fmt.Errorf("--hierarchical: a job of several ranks, unsplit (it makes its own node and rail communicators)"))
	}
	return job, nil
}

// launcher reads the launcher's environment and the rank flags.
func (j *jobFlags) launcher(cmd *cobra.Command) (launch.Job, error) {
	var f launch.Flags
	if cmd.Flags().Changed("rank") {
		f.Rank = &j.rank
	}
	if cmd.Flags().Changed("world-size") {
		f.WorldSize = &j.world
	}
	if cmd.Flags().Changed("local-rank") {
		f.LocalRank = &j.local
	}
	f.Rendezvous = j.rendezvous
	job, err := launch.Detect(launch.Environ(os.Environ()), f)
	if err != nil {
		return job, toolError(err)
	}
	if job.Multi() && j.joinTimeout <= 0 {
		return job, toolError(fmt.Errorf("--join-timeout %s: must be positive", j.joinTimeout))
	}
	return job, nil
}

// options are the job's rendezvous options, the secret read.
func (j *jobFlags) options(g *globals, job launch.Job) (app.JobOptions, error) {
	var file []byte
	if j.secretFile != "" {
		b, err := os.ReadFile(j.secretFile)
		if err != nil {
			return app.JobOptions{}, toolError(fmt.Errorf("--secret-file: %w", err))
		}
		file = b
	}
	secret, src, err := launch.Secret(launch.Environ(os.Environ()), file, job)
	if err != nil {
		return app.JobOptions{}, toolError(err)
	}
	if src == launch.SecretWeak && job.Rank == 0 {
		fmt.Fprintf(g.errOut, "gdrcheck: rendezvous secret derived from the %s job id %s (weak: set GDRCHECK_SECRET or --secret-file)\n", job.Launcher, printable.Line(job.JobID))
	}
	return app.JobOptions{Job: job, Secret: secret, JoinTimeout: j.joinTimeout, Listen: j.listen, Split: launch.Split(j.split), Hierarchical: j.hierarchical}, nil
}
