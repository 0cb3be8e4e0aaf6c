package app

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

func TestSessionStampsEnvelopes(t *testing.T) {
	tick := time.Date(2026, 12, 3, 9, 0, 0, 0, time.FixedZone("CET", 3600))
	s := &Session{Tool: report.Tool{Version: "1.2", Commit: "abc"}, Host: "n1", Command: []string{"gdrcheck", "check"},
		Clock: func() time.Time { tick = tick.Add(time.Second); return tick }}
	started := s.Now()
	e := s.Envelope("check", started, []result.Result{{ID: "x", Status: result.Pass}}, nil)
	if e.Schema != "gdrcheck.check/v1" || e.Run.Host != "n1" || e.Run.Version != "1.2" || e.Duration() != time.Second || e.Run.EndedAt.Location() != time.UTC {
		t.Errorf("envelope %+v", e)
	}
	if got := s.OutDir("", "bench-copy"); got != filepath.Join("gdrcheck-results", "bench-copy-20261203-080003") {
		t.Errorf("OutDir = %q", got)
	}
	if got := s.OutDir("/mine", "bench-copy"); got != "/mine" {
		t.Errorf("OutDir with --out = %q", got)
	}
	if _, err := json.Marshal(e); err != nil {
		t.Error(err)
	}
}

// An unknown kind is the tool's error; a file that cannot be read is
// reported and the others are still analysed.
func TestAnalyze(t *testing.T) {
	_, err := Analyze(t.Context(), []string{"x"}, AnalyzeOptions{Kind: "tea-leaves"})
	var te *ToolError
	if !errors.As(err, &te) {
		t.Errorf("unknown kind: %v", err)
	}
	a, err := Analyze(t.Context(), []string{"/nonexistent", "../analyze/perftest/testdata/k8s-cx6-ib-write-bw-host-all-sizes-98g.txt"}, AnalyzeOptions{})
	if err != nil || len(a.Unread) != 1 || len(a.Outputs) != 1 || len(a.Results) == 0 {
		t.Errorf("analyze: %v %+v", err, a)
	}
}
