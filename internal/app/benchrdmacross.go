package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
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

// benchRDMACross runs this rank's side of a cross-node plan: the ranks
// meet at the job's rendezvous (bench nccl's: the same address, port and
// secret; KeepGoing, so that one node pair's failure leaves the others
// running), ranks 2k and 2k+1 exchange their sides and run rail by rail
// (bench.RunRDMACross), and rank 0 gathers every rank's part, combines
// each pair's (rdma.Combine), judges, and writes results.json; the other
// ranks write their own part under rank-N/ and print nothing.
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
	rc := rendezvous.Config{Addr: job.Rendezvous, Rank: job.Rank, Size: job.Size, Host: s.Host, Node: s.Host, Secret: jo.Secret,
		JoinTimeout: jo.JoinTimeout, Hosts: job.Hosts, Listen: jo.Listen, KeepGoing: true}
	var coord *rendezvous.Coordinator
	var member *rendezvous.Member
	var ch bench.RDMAChannel
	addr := o.ServerAddr
	var err error
	if job.Rank == 0 {
		// No NCCL here: the rendezvous's id carries nothing.
		if coord, err = rendezvous.Serve(ctx, rc, make([]byte, rendezvous.IDSize)); err != nil {
			return nil, dir, jobFailure(err)
		}
		defer coord.Close()
		ch, addr = coord, cmp.Or(addr, coord.LocalIP())
	} else {
		if member, _, err = rendezvous.Join(ctx, rc); err != nil {
			return nil, dir, jobFailure(err)
		}
		defer member.Close()
		ch, addr = member, cmp.Or(addr, member.LocalIP())
	}
	addr = cmp.Or(addr, s.Host)
	timeout := cmp.Or(o.Timeout, 2*time.Minute)
	part, runErr := bench.RunRDMACross(ctx, p, ch, bench.RDMACrossOptions{RDMAOptions: bench.RDMAOptions{PerftestDir: o.PerftestDir, Out: dir, Timeout: timeout},
		Rank: job.Rank, Host: s.Host, Addr: addr, Wait: jo.JoinTimeout})
	if part == nil {
		return nil, dir, toolErr(runErr)
	}
	if runErr != nil {
		part.Error = runErr.Error()
	}
	doc := &RDMADoc{Plan: p, Out: dir, Job: &RDMAJob{Launcher: string(job.Launcher), WorldSize: job.Size, Rank: job.Rank, Rendezvous: job.Rendezvous}}
	mine, _ := json.Marshal(part)
	// Every rank runs about as many runs as rank 0; each is bounded by the
	// pair timeout on both sides.
	runs := 0
	for _, e := range p.Entries {
		runs += len(e.Runs)
	}
	gather := jo.JoinTimeout + time.Duration(runs+1)*(timeout+5*time.Second)
	if member != nil {
		doc.Job.Ranks = []rdma.RankPart{*part}
		env := s.Envelope("bench-rdma", started, []result.Result{}, doc)
		werr := WriteAtomic(filepath.Join(dir, "results.json"), env)
		derr := member.Deliver(ctx, mine, gather)
		switch {
		case runErr != nil:
			return env, dir, jobFailure(runErr)
		case derr != nil:
			return env, dir, jobFailure(derr)
		case werr != nil:
			return env, dir, toolErr(werr)
		case part.Error != "":
			return env, dir, failure("rank %d: %s", job.Rank, part.Error)
		}
		for _, so := range part.Outcomes {
			if so.Cause != "" {
				return env, dir, failure("rank %d: rail %d %s (%s): %s: %s", job.Rank, so.Rail, so.Memory, so.Role, so.Cause, so.Detail)
			}
		}
		return env, dir, nil
	}
	raw, gerr := coord.Gather(ctx, mine, gather)
	lost := map[int]string{}
	var je *rendezvous.JobError
	if errors.As(gerr, &je) {
		doc.Job.Failures = je.Failures
		for _, f := range je.Failures {
			lost[f.Rank] = f.Reason
		}
	}
	parts := make([]*rdma.RankPart, job.Size)
	for r, b := range raw {
		var rp rdma.RankPart
		if b == nil || json.Unmarshal(b, &rp) != nil || rp.Rank != r {
			continue
		}
		parts[r] = &rp
		doc.Job.Ranks = append(doc.Job.Ranks, rp)
	}
	hosts := coord.Hosts()
	for k := 0; k+1 < job.Size; k += 2 {
		prs := rdma.Combine(parts[k], parts[k+1], k, hosts, lost, rankRel)
		if len(prs) == 0 {
			prs = []rdma.PairResult{{Entry: rdma.Entry{GPU: -1, NIC: "-", Level: "-", Mode: rdma.ModeCrossNode, Host: hosts[k],
				Peer: &rdma.Peer{Rank: k + 1, Host: hosts[k+1], GPU: -1, NIC: "-", Level: "-"}}, Cause: rdma.CausePeerMissing,
				Detail: fmt.Sprintf("neither rank %d nor rank %d reported a rail: %s", k, k+1, cmp.Or(lost[k+1], lost[k], "no part delivered"))}}
		}
		doc.Pairs = append(doc.Pairs, prs...)
	}
	env, err := s.judgeRDMA(started, doc, dir, o.Judging, runErr)
	if err != nil {
		return env, dir, err
	}
	if gerr != nil {
		return env, dir, jobFailure(gerr)
	}
	return env, dir, nil
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
