package analyze

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Job gathers the NCCL debug logs of the inputs given together, so that
// they are judged as one job (ncclog.Job): every input read as an NCCL log
// is also fed, as it is read, to the job. It holds one analysis; it is not
// safe for concurrent use (the inputs are read one at a time).
type Job struct {
	log *ncclog.Job
	// fed are the inputs the job read whole, without error.
	fed []string
}

// NewJob starts an empty job.
func NewJob() *Job { return &Job{log: ncclog.NewJob("job")} }

// jobReader is the reader that feeds one input to the job.
type jobReader struct{ j *Job }

func (r jobReader) Kind() string            { return ncclog.Kind }
func (r jobReader) Description() string     { return "the NCCL logs of one job, merged" }
func (r jobReader) Detect(head []byte) bool { return ncclog.Detect(head) }
func (r jobReader) Analyze(name string, in io.Reader) (Report, []result.Result, error) {
	if err := r.j.log.Add(name, in); err != nil {
		return nil, nil, err
	}
	r.j.fed = append(r.j.fed, name)
	return nil, nil, errFed
}

// errFed ends the job reader's Read: its output is the job's, given by
// Merge.
var errFed = fmt.Errorf("fed to the job")

// Files reads path as kind (every kind detected when kind is ""), as
// FileAll and File do; when job is not nil and the input is read as an
// NCCL log, the same bytes are also fed to the job.
func Files(ctx context.Context, path, kind string, job *Job) ([]*Output, error) {
	var extra Reader
	if job != nil {
		extra = jobReader{job}
	}
	if kind != "" {
		if _, ok := reader(kind); !ok {
			return nil, &KindError{path, fmt.Sprintf("unknown kind %q (want one of %s)", kind, strings.Join(Kinds(), ", "))}
		}
	}
	return analyzeFileJob(ctx, path, kind, kind == "", extra)
}

// duplicates reports whether a file was given twice: its lines would count
// twice in the job, so the logs are judged one by one instead.
func duplicates(files []string) bool {
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f] {
			return true
		}
		seen[f] = true
	}
	return false
}

// Merge gives outs with the job in place of its logs' own outputs: when
// at least two inputs were read as NCCL logs, their per-file nccl-log
// outputs are replaced by one output, the job's, at the place of the
// first, whose verdicts are decided once over every log. With fewer, with
// a file given twice, or when the inputs the job read are not exactly those
// with an nccl-log output (a log one reader refused and the other read),
// outs is returned as it is.
func (j *Job) Merge(outs []*Output) []*Output {
	var logs []string
	first := -1
	for i, o := range outs {
		if o.Kind == ncclog.Kind {
			logs = append(logs, o.File)
			if first < 0 {
				first = i
			}
		}
	}
	if len(logs) < 2 || !slices.Equal(logs, j.fed) || len(j.log.Files()) != len(j.fed) || duplicates(logs) {
		return outs
	}
	rep, vs := j.log.Report()
	if rep == nil {
		return outs
	}
	name := ncclog.JobName(logs)
	rep.File = name
	if vs == nil {
		vs = []result.Result{}
	}
	var merged []*Output
	for i, o := range outs {
		switch {
		case i == first:
			merged = append(merged, &Output{File: name, Kind: ncclog.Kind, Report: rep, Verdicts: vs})
		case o.Kind != ncclog.Kind:
			merged = append(merged, o)
		}
	}
	return merged
}
