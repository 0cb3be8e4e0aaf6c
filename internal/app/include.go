package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gdrcheck/gdrcheck/internal/bench"
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

// includeSchema is the schema an included results.json must have.
var includeSchema = report.Schema("bench-nccl")

// includedJob is one job's results.json as read.
type includedJob struct {
	path, sum string
	run       report.Run
	results   []result.Result
	rep       bench.NCCLReport
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
	if head.Schema != includeSchema {
		return nil, fmt.Errorf("--include %s: schema %q: want %s, rank 0's results.json of a multi-rank bench nccl job", file, head.Schema, includeSchema)
	}
	j := &includedJob{path: file, run: head.Run, results: head.Results}
	if err := textio.UnmarshalJSON(file, b, &j.rep); err != nil {
		return nil, fmt.Errorf("--include: %w", err)
	}
	if j.rep.Job == nil {
		return nil, fmt.Errorf("--include %s: a bench nccl run of one process, not a job of several: run measures this node's own collectives itself", file)
	}
	if len(j.rep.Job.Ranks) == 0 {
		return nil, fmt.Errorf("--include %s: job.ranks is empty: rank 0 gathered no rank (not the job's results.json, or rank 0 failed before the end)", file)
	}
	s := sha256.Sum256(b)
	j.sum = hex.EncodeToString(s[:])
	return j, nil
}

// input is the job as the dossier takes it, named name.
func (j *includedJob) input(name string) dossier.JobInput {
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
