package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

func TestReadRankLogsCapped(t *testing.T) {
	dir := t.TempDir()
	line := "host:1:2 [0] NCCL INFO something happened\n"
	big := strings.Repeat(line, rankLogCap/len(line)+10)
	for name, body := range map[string]string{"nccl-debug.a.1.log": "small\n", "nccl-debug.b.2.log": big, "nccl-topo.xml": "<system/>"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ev := &NCCLEvidence{Dir: dir}
	ev.Collect()
	logs := ReadRankLogs(ev)
	if len(logs) != 2 {
		t.Fatalf("%d logs, want the two debug logs", len(logs))
	}
	if logs[0].Truncated || string(logs[0].Content) != "small\n" {
		t.Errorf("small log: %+v", logs[0])
	}
	b := logs[1]
	if !b.Truncated || len(b.Content) > rankLogCap || !bytes.HasSuffix(b.Content, []byte("\n")) || !bytes.HasPrefix(b.Content, []byte(line)) {
		t.Errorf("big log: truncated %v, %d bytes", b.Truncated, len(b.Content))
	}
}

// TestJudgeJobLogs: the logs of the ranks are read as one job, each named
// by its rank.
func TestJudgeJobLogs(t *testing.T) {
	b, err := os.ReadFile("../analyze/ncclog/testdata/synthetic-2node-socket-fallback.txt")
	if err != nil {
		t.Fatal(err)
	}
	// Split the job's log in two halves, as if two ranks had written it.
	lines := strings.SplitAfter(string(b), "\n")
	half := len(lines) / 2
	ranks := []RankResult{
		{Rank: 0, Logs: []RankLog{{Name: "nccl-debug.h0.1.log", Content: []byte(strings.Join(lines[:half], ""))}}},
		{Rank: 1, Logs: []RankLog{{Name: "nccl-debug.h1.2.log", Content: []byte(strings.Join(lines[half:], "")), Truncated: true}}},
	}
	jl := JudgeJobLogs(ranks)
	if jl == nil || jl.Report == nil || len(jl.Report.Files) != 2 || jl.Report.Files[1].Name != "rank-1/nccl-debug.h1.2.log" {
		t.Fatalf("job logs: %+v", jl)
	}
	if len(jl.Truncated) != 1 || jl.Truncated[0] != "rank-1/nccl-debug.h1.2.log" {
		t.Errorf("truncated: %v", jl.Truncated)
	}
	// Where a process drives several GPUs, its log is named by its
	// folder (its rank at the rendezvous), not by its first NCCL rank.
	ranks[1].Rank, ranks[1].Process = 2, new(1)
	if byProcess := JudgeJobLogs(ranks); byProcess.Report.Files[1].Name != "rank-1/nccl-debug.h1.2.log" {
		t.Errorf("a process's log named %q", byProcess.Report.Files[1].Name)
	}
	// The whole log read as one file decides the same verdicts.
	whole := JudgeJobLogs([]RankResult{{Rank: 0, Logs: []RankLog{{Name: "all.log", Content: b}}}})
	status := func(vs []result.Result) map[string]result.Status {
		m := map[string]result.Status{}
		for _, v := range vs {
			m[v.ID+" "+v.Subject] = v.Status
		}
		return m
	}
	got, want := status(jl.Verdicts), status(whole.Verdicts)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("verdicts %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if JudgeJobLogs([]RankResult{{Rank: 0}}) != nil {
		t.Error("no log: want nil")
	}
}
