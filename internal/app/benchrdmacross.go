package app

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
	"github.com/gdrcheck/gdrcheck/internal/rendezvous"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// benchRDMACross runs this rank's side of a cross-node plan as one rank
// of a job (runJob): the ranks meet at the job's rendezvous (bench nccl's:
// the same address, port and secret; KeepGoing, so that one node pair's
// failure leaves the others running), ranks 2k and 2k+1 exchange their
// sides and run rail by rail (bench.RunRDMACross), and rank 0 gathers
// every rank's part, combines each pair's (rdma.Combine), judges, and
// writes results.json; the other ranks write their own part under rank-N/
// and print nothing.
func (s *Session) benchRDMACross(ctx context.Context, started time.Time, p *rdma.Plan, o RDMAOptions) (*report.Envelope, string, error) {
	jo := o.Job
	if jo == nil || jo.Job.Size < 2 {
		return nil, "", toolErr(fmt.Errorf("--mode %s runs as one rank of a job of 2 ranks or more, one per node (ranks 2k and 2k+1 a node pair): start it under srun, mpirun or torchrun, or give --rank, --world-size and --rendezvous", rdma.ModeCrossNode))
	}
	job := jo.Job
	if job.Size%2 != 0 {
		return nil, "", toolErr(fmt.Errorf("--mode %s: world size %d: node pairs need an even number of ranks (rank 2k with rank 2k+1)", rdma.ModeCrossNode, job.Size))
	}
	dir := RankDir(s.OutDir(o.Out, "bench-rdma"), job.Rank)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", toolErr(err)
	}
	timeout := cmp.Or(o.Timeout, 2*time.Minute)
	// Every rank runs about as many runs as rank 0; each is bounded by the
	// pair timeout on both sides.
	runs := 0
	for _, e := range p.Entries {
		runs += len(e.Runs)
	}
	doc := &RDMADoc{Plan: p, Out: dir, Job: &RDMAJob{Launcher: string(job.Launcher), WorldSize: job.Size, Rank: job.Rank, Rendezvous: job.Rendezvous}}
	var runErr, werr error
	var env *report.Envelope // a member's own document
	end, err := runJob(ctx, jobSpec[rdma.RankPart]{
		Config: rendezvous.Config{Addr: job.Rendezvous, Rank: job.Rank, Size: job.Size, Host: s.Host, Node: s.Host, Secret: jo.Secret,
			JoinTimeout: jo.JoinTimeout, Hosts: job.Hosts, Listen: jo.Listen, KeepGoing: true},
		ID:     make([]byte, rendezvous.IDSize), // no NCCL here: the id carries nothing
		Gather: jo.JoinTimeout + time.Duration(runs+1)*(timeout+5*time.Second),
		Run: func(ctx context.Context, peer rendezvous.Peer, _ []byte) (rdma.RankPart, error) {
			addr := cmp.Or(o.ServerAddr, peer.LocalIP(), s.Host)
			var part *rdma.RankPart
			part, runErr = bench.RunRDMACross(ctx, p, peer, bench.RDMACrossOptions{RDMAOptions: bench.RDMAOptions{PerftestDir: o.PerftestDir, Out: dir, Timeout: timeout},
				Rank: job.Rank, Host: s.Host, Addr: addr, Wait: jo.JoinTimeout})
			if part == nil {
				return rdma.RankPart{}, toolErr(runErr)
			}
			if runErr != nil {
				part.Error = runErr.Error()
			}
			if job.Rank != 0 {
				doc.Job.Ranks = []rdma.RankPart{*part}
				env = s.Envelope("bench-rdma", started, []result.Result{}, doc)
				werr = WriteAtomic(filepath.Join(dir, "results.json"), env)
			}
			return *part, nil
		},
	})
	switch {
	case err != nil:
		return nil, dir, err
	case job.Rank != 0:
		return env, dir, memberOutcome(job.Rank, doc.Job.Ranks[0], runErr, end.Err, werr)
	}
	doc.Job.Failures = end.Failures
	for _, rp := range end.Parts {
		if rp != nil {
			doc.Job.Ranks = append(doc.Job.Ranks, *rp)
		}
	}
	doc.Pairs = crossPairs(end)
	env, err = s.judgeRDMA(started, doc, dir, o.Judging, runErr)
	if err != nil {
		return env, dir, err
	}
	if end.Err != nil {
		return env, dir, jobFailure(end.Err)
	}
	return env, dir, nil
}

// crossPairs is every node pair's rails, ranks 2k and 2k+1 combined
// (rdma.Combine), a pair of which neither rank reported a rail one
// PeerMissing result.
func crossPairs(end jobEnd[rdma.RankPart]) []rdma.PairResult {
	lost := map[int]string{}
	for _, f := range end.Failures {
		lost[f.Rank] = f.Reason
	}
	hosts := end.Hosts
	var out []rdma.PairResult
	for k := 0; k+1 < len(end.Parts); k += 2 {
		prs := rdma.Combine(end.Parts[k], end.Parts[k+1], k, hosts, lost, rankRel)
		if len(prs) == 0 {
			prs = []rdma.PairResult{{Entry: rdma.Entry{GPU: -1, NIC: "-", Level: "-", Mode: rdma.ModeCrossNode, Host: hosts[k],
				Peer: &rdma.Peer{Rank: k + 1, Host: hosts[k+1], GPU: -1, NIC: "-", Level: "-"}}, Cause: rdma.CausePeerMissing,
				Detail: fmt.Sprintf("neither rank %d nor rank %d reported a rail: %s", k, k+1, cmp.Or(lost[k+1], lost[k], "no part delivered"))}}
		}
		out = append(out, prs...)
	}
	return out
}

// memberOutcome is how a cross-node rank other than 0 ends: its run's
// error, the job's, its document's, or a rail of its side that failed.
func memberOutcome(rank int, part rdma.RankPart, runErr, endErr, werr error) error {
	switch {
	case runErr != nil:
		return jobFailure(runErr)
	case endErr != nil:
		return jobFailure(endErr)
	case werr != nil:
		return toolErr(werr)
	case part.Error != "":
		return failure("rank %d: %s", rank, part.Error)
	}
	for _, so := range part.Outcomes {
		if so.Cause != "" {
			return failure("rank %d: rail %d %s (%s): %s: %s", rank, so.Rail, so.Memory, so.Role, so.Cause, so.Detail)
		}
	}
	return nil
}

// rankRel is rank r's folder relative to the job's (RankDir's layout).
func rankRel(r int) string {
	if r == 0 {
		return ""
	}
	return filepath.Base(RankDir("", r))
}

// RDMAMember reports a cross-node rank other than 0: it prints nothing on
// stdout (rank 0 prints the job's table).
func RDMAMember(env *report.Envelope) bool {
	doc, _ := env.Data.(*RDMADoc)
	return doc != nil && doc.Job != nil && doc.Job.Rank != 0
}
