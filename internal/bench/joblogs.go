package bench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// RankLog is one of a rank's NCCL debug logs as it travels to rank 0: its
// head, up to a cap, cut at a line end (NCCL prints what the job is judged
// on — versions, transports, channels, rings — while it initialises).
type RankLog struct {
	Name      string `json:"name"`
	Content   []byte `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Caps of the logs a rank sends to rank 0: one frame carries them with
// the rank's rows (rendezvous.DefaultMaxMessage is 4 MiB; JSON's base64
// adds a third).
const (
	rankLogCap   = 1 << 20
	rankLogsCap  = 2 << 20
	rankLogsName = "nccl-debug."
)

// ReadRankLogs reads the NCCL debug logs of ev's folder for rank 0, capped.
func ReadRankLogs(ev *NCCLEvidence) []RankLog {
	if ev == nil {
		return nil
	}
	var out []RankLog
	left := rankLogsCap
	for _, f := range ev.Files {
		if !strings.HasPrefix(f, rankLogsName) || left <= 0 {
			continue
		}
		fh, err := os.Open(filepath.Join(ev.Dir, f))
		if err != nil {
			continue
		}
		limit := min(rankLogCap, left)
		b, _ := io.ReadAll(io.LimitReader(fh, int64(limit)+1))
		fh.Close()
		l := RankLog{Name: f}
		if len(b) > limit {
			b = b[:limit]
			if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
				b = b[:i+1]
			}
			l.Truncated = true
		}
		l.Content = b
		left -= len(b)
		out = append(out, l)
	}
	return out
}

// JobLogs is what NCCL's logs of every rank say, read as one job.
type JobLogs struct {
	Report   *ncclog.Report  `json:"report,omitempty"`
	Verdicts []result.Result `json:"verdicts,omitempty"`
	// Truncated names the logs that reached rank 0 in part.
	Truncated []string `json:"truncated,omitempty"`
	Errors    []string `json:"errors,omitempty"`
}

// JudgeJobLogs reads every rank's NCCL logs as one job (ncclog.Job): the
// ranks, hosts and channels of all of them merged, so a channel rank 0
// printed towards rank 5 is placed on rank 5's host. Each log is named
// rank-N/<file>; nil when no rank sent a log.
func JudgeJobLogs(ranks []RankResult) *JobLogs {
	j := ncclog.NewJob("job")
	out := &JobLogs{}
	n := 0
	for _, r := range ranks {
		for _, l := range r.Logs {
			dir := r.Rank
			if r.Process != nil {
				dir = *r.Process // its process's folder
			}
			name := fmt.Sprintf("rank-%d/%s", dir, l.Name)
			if l.Truncated {
				out.Truncated = append(out.Truncated, name)
			}
			if err := j.Add(name, bytes.NewReader(l.Content)); err != nil {
				out.Errors = append(out.Errors, err.Error())
			}
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out.Report, out.Verdicts = j.Report()
	return out
}
