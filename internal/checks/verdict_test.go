package checks_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

func TestJudge(t *testing.T) {
	at := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	r := func(id string, st result.Status) result.Result {
		return result.Result{ID: id, Status: st, Subject: "node"}
	}
	root := result.Result{ID: "pcie.acs", Status: result.Unknown, Subject: "0000:16:01.0", Reason: "NeedsRoot"}
	for _, c := range []struct {
		name     string
		rs       []result.Result
		strict   bool
		want     string
		failing  []string
		unknown  []string
		rootHint bool
	}{
		{"all pass", []result.Result{r("a", result.Pass), r("b", result.Skip)}, false, checks.Ready, nil, nil, false},
		{"a warn", []result.Result{r("a", result.Pass), r("b", result.Warn)}, false, checks.Degraded, nil, nil, false},
		{"a fail", []result.Result{r("b", result.Fail), r("a", result.Warn), r("b", result.Fail)}, false, checks.NotReady, []string{"b"}, nil, false},
		{"unknown degrades", []result.Result{r("a", result.Pass), root}, false, checks.Degraded, nil, []string{"pcie.acs"}, true},
		{"error degrades", []result.Result{r("a", result.Error)}, false, checks.Degraded, nil, []string{"a"}, false},
		{"strict: unknown fails", []result.Result{r("a", result.Pass), root}, true, checks.NotReady, []string{"pcie.acs"}, []string{"pcie.acs"}, true},
		{"strict: error fails", []result.Result{r("a", result.Error)}, true, checks.NotReady, []string{"a"}, []string{"a"}, false},
		{"strict: all pass", []result.Result{r("a", result.Pass)}, true, checks.Ready, nil, nil, false},
		{"snapshot lacked dmesg: not a root problem", []result.Result{{ID: "gpu.health", Status: result.Unknown, Subject: "GPU0-xid",
			Message: "not captured in this snapshot", Remedy: "run as root (dmesg_restrict) or capture dmesg in the snapshot"}}, false, checks.Degraded, nil, []string{"gpu.health"}, false},
		{"dmesg refused: a root problem", []result.Result{{ID: "gpu.health", Status: result.Unknown, Subject: "GPU0-xid",
			Message: "dmesg: read kernel buffer failed: Operation not permitted", Remedy: "run as root (dmesg_restrict)"}}, false, checks.Degraded, nil, []string{"gpu.health"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := checks.Judge(c.rs, "node1", at, c.strict)
			if v.Status != c.want || !slices.Equal(v.Failing, append([]string{}, c.failing...)) || !slices.Equal(v.Unknown, append([]string{}, c.unknown...)) {
				t.Errorf("got %s failing %q unknown %q, want %s failing %q unknown %q", v.Status, v.Failing, v.Unknown, c.want, c.failing, c.unknown)
			}
			if got := v.RootHint() != ""; got != c.rootHint {
				t.Errorf("root hint %q, want one: %v", v.RootHint(), c.rootHint)
			}
			line := v.Line()
			if !strings.HasPrefix(line, c.want+"  node1  2026-12-03T16:00:00Z") {
				t.Errorf("line %q", line)
			}
			for _, id := range c.failing {
				if !strings.Contains(line, id) {
					t.Errorf("line %q does not name %s", line, id)
				}
			}
		})
	}
}
