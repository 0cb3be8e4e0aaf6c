package ncclog

import (
	"errors"
	"io"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Job reads the NCCL debug logs of one job (one file per rank, per node,
// or any split of the job's output) into one analysis: the ranks, hosts,
// communicators and channels of every log are merged as they are read,
// so that a channel printed by rank 0 to rank 8 is placed on rank 8's host
// even when rank 8's lines are in another file, and the job's verdicts
// are decided once, over everything.
//
// The logs are read one after another by one analyzer, as if they were
// one log made of the files in the order given: merging the finished
// reports instead could not be right, since a report keeps a capped
// summary (the first few offenders, per-host counts), not the records the
// verdicts are decided from. The result of a job is therefore the result
// of one log holding the same lines; only the order of lines differs,
// which matters only to what the caps keep as evidence.
type Job struct {
	a *analyzer
}

// JobFile is one log of a job: its name, the job line number of its first
// line and its number of lines.
type JobFile struct {
	Name      string `json:"name"`
	FirstLine int64  `json:"first_line"`
	Lines     int64  `json:"lines"`
}

// NewJob starts a job named name (the name its report and verdicts carry
// as their file).
func NewJob(name string) *Job {
	return &Job{a: newAnalyzer(name)}
}

// Add reads one more log of the job. Its error is Analyze's for this log
// alone (a *textio.ParseError naming the file and its own line); the lines
// read before the error stay in the job.
func (j *Job) Add(name string, r io.Reader) error {
	a := j.a
	first := a.stats.lines
	job := a.name
	a.name = name
	err := a.run(r)
	a.name = job
	a.files = append(a.files, JobFile{Name: name, FirstLine: first + 1, Lines: a.stats.lines - first})
	var pe *textio.ParseError
	if errors.As(err, &pe) && int64(pe.Line) > first {
		pe.Line -= int(first)
	}
	return err
}

// Files are the logs read so far.
func (j *Job) Files() []JobFile { return append([]JobFile(nil), j.a.files...) }

// Report gives the job's report and verdicts, decided over every log read.
// A job of no log has no report.
func (j *Job) Report() (*Report, []result.Result) {
	if len(j.a.files) == 0 {
		return nil, nil
	}
	rep, vs := j.a.report()
	rep.Files = j.Files()
	result.SetSource(vs, Kind)
	return rep, vs
}

// JobName is the name of a job made of files: their names joined.
func JobName(files []string) string {
	return strings.Join(files, " + ")
}

// where maps a line number of the analysis to the file that holds it and
// the line within that file: the log itself for one log, one of the logs
// read for a job.
func (a *analyzer) where(line int64) (string, int64) {
	if len(a.files) == 0 {
		return a.name, line
	}
	i := sort.Search(len(a.files), func(i int) bool { return a.files[i].FirstLine > line }) - 1
	if i < 0 {
		return a.name, line
	}
	return a.files[i].Name, line - a.files[i].FirstLine + 1
}
