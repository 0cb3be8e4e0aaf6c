package app

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// `run --include` brings a job of several nodes into the node's dossier:
// rank 0's results.json of a multi-rank `bench nccl` (its --out folder or
// the file). The job's rows, its NCCL log analysis and its verdicts join
// the dossier, and the ranks that ran on this node make the fabric hop of
// their GPUs measured (dossier.NewJob).

// The schemas an included results.json may have.
var (
	includeNCCL = report.Schema("bench-nccl")
	includeRDMA = report.Schema("bench-rdma")
)

// includedJob is one job's results.json as read.
type includedJob struct {
	path, sum string
	run       report.Run
	results   []result.Result
	// rep is a bench nccl job's document, rdma a bench rdma's (nil for a
	// bench nccl).
	rep  bench.NCCLReport
	rdma *RDMADoc
}

// readIncluded reads the job at path (a folder holding results.json, or
// the file): a bench nccl document of a multi-rank job. Anything else is
// an error naming the file and what is wrong.
func readIncluded(ctx context.Context, path string) (*includedJob, error) {
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = filepath.Join(path, "results.json")
	}
	b, err := readInput(ctx, file, MaxReportBytes, nil)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--include %s: no results.json of a bench nccl job there", path)
		}
		return nil, fmt.Errorf("--include %s: %w", path, err)
	}
	var head struct {
		Schema  string          `json:"schema"`
		Run     report.Run      `json:"run"`
		Results []result.Result `json:"results"`
	}
	if err := textio.UnmarshalJSON(file, b, &head); err != nil {
		return nil, fmt.Errorf("--include: %w", err)
	}
	j := &includedJob{path: file, run: head.Run, results: head.Results}
	s := sha256.Sum256(b)
	j.sum = hex.EncodeToString(s[:])
	switch head.Schema {
	case includeNCCL:
	case includeRDMA:
		j.rdma = &RDMADoc{}
		if err := textio.UnmarshalJSON(file, b, j.rdma); err != nil {
			return nil, fmt.Errorf("--include: %w", err)
		}
		if j.rdma.Job != nil && j.rdma.Job.Rank != 0 {
			return nil, fmt.Errorf("--include %s: rank %d's part of a cross-node bench rdma: include rank 0's results.json, which has every rail", file, j.rdma.Job.Rank)
		}
		if len(j.rdma.Pairs) == 0 {
			return nil, fmt.Errorf("--include %s: a bench rdma that measured no pair (a dry run, or nothing to test)", file)
		}
		return j, nil
	default:
		return nil, fmt.Errorf("--include %s: schema %q: want %s (rank 0's results.json of a multi-rank bench nccl job) or %s (bench rdma)", file, head.Schema, includeNCCL, includeRDMA)
	}
	if err := textio.UnmarshalJSON(file, b, &j.rep); err != nil {
		return nil, fmt.Errorf("--include: %w", err)
	}
	if j.rep.Job == nil {
		return nil, fmt.Errorf("--include %s: a bench nccl run of one process, not a job of several: run measures this node's own collectives itself", file)
	}
	if len(j.rep.Job.Ranks) == 0 {
		return nil, fmt.Errorf("--include %s: job.ranks is empty: rank 0 gathered no rank (not the job's results.json, or rank 0 failed before the end)", file)
	}
	return j, nil
}

// input is the job as the dossier takes it, named name.
func (j *includedJob) input(name string) dossier.JobInput {
	if j.rdma != nil {
		return j.rdmaInput(name)
	}
	in := dossier.JobInput{Name: name, Path: j.path, SHA256: j.sum, Command: "bench-nccl", Host: j.run.Host, StartedAt: j.run.StartedAt,
		Complete: j.rep.Complete, Error: j.rep.Error, WorldSize: j.rep.Job.WorldSize, Split: j.rep.Job.Split, Results: j.results}
	for _, r := range j.rep.Job.Ranks {
		in.Ranks = append(in.Ranks, dossier.JobInputRank{Rank: r.Rank, Host: r.Host, HostID: r.NCCLHostID, BusID: r.Device.BusID, Error: r.Error})
	}
	if l := j.rep.Job.NCCLLogs; l != nil {
		in.Logs = l.Report
	}
	check, _ := j.rep.Config["check"].(float64)
	in.Checked = check > 0
	for _, m := range j.rep.Measurements {
		for _, row := range m.Rows {
			if row.OutOfPlace == nil {
				continue
			}
			in.Rows++
			in.Wrong += wrong(row.OutOfPlace) + wrong(row.InPlace)
		}
	}
	return in
}

// nodes is how many nodes the job's ranks ran on, as NCCL counts them.
func (j *includedJob) nodes() int {
	seen := map[string]bool{}
	for _, r := range j.rep.Job.Ranks {
		seen[r.NodeKey()] = true
	}
	return len(seen)
}

// rdmaInput is a bench rdma as the dossier takes it: each pair seen from
// its ends (a loopback's one, a cross-node rail's two).
func (j *includedJob) rdmaInput(name string) dossier.JobInput {
	in := dossier.JobInput{Name: name, Path: j.path, SHA256: j.sum, Command: "bench-rdma", Host: j.run.Host, StartedAt: j.run.StartedAt,
		Complete: true, Results: j.results}
	if d := j.rdma; d.Job != nil {
		in.WorldSize = d.Job.WorldSize
		for _, f := range d.Job.Failures {
			in.Complete = false
			in.Error = strings.TrimSpace(in.Error + "; " + f.String())
		}
	}
	for _, pr := range j.rdma.Pairs {
		var mem []string
		for _, o := range pr.Outcomes {
			if o.Cause == "" && !slices.Contains(mem, o.Memory) {
				mem = append(mem, o.Memory)
			}
		}
		for _, end := range pairEnds(pr, j.run.Host) {
			end.Memory = mem
			in.Pairs = append(in.Pairs, end)
		}
	}
	return in
}

// pairEnds are pr's ends as the dossier takes them: a loopback's one, on
// host (the machine the run's document names) unless the entry names its
// own; a cross-node rail's two, each naming the other ("HOST GPUn-NIC").
// Memory is left to the caller.
func pairEnds(pr rdma.PairResult, host string) []dossier.JobInputPair {
	e := pr.Entry
	end := dossier.JobInputPair{Host: cmp.Or(e.Host, host), BusID: e.GPUBusID, NIC: e.NIC, Port: e.Port, Subject: e.Subject()}
	q := e.Peer
	if q == nil {
		return []dossier.JobInputPair{end}
	}
	end.Peer = fmt.Sprintf("%s GPU%d-%s", q.Host, q.GPU, q.NIC)
	return []dossier.JobInputPair{end, {Host: q.Host, BusID: q.GPUBusID, NIC: q.NIC, Port: q.Port, Subject: end.Subject,
		Peer: fmt.Sprintf("%s GPU%d-%s", e.Host, e.GPU, e.NIC)}}
}
