package app

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// The burn-in of docs/device-runs.md (2026-12-05, one H100 VM, `gdrcheck
// burn --duration 3m --window 1m`), kept as it was written: its burn
// directory (burn.json and the counter and GPU samples), the snapshot of
// the node taken after it, and the burn verdicts the run's report.json
// held (verdicts.json). Replayed against the snapshot, the captures give
// the run's verdicts: status, check, subject and reason, every one.
func TestBurnReplayH100Run(t *testing.T) {
	const dir = "testdata/burn-h100-3m"
	b, err := os.ReadFile(dir + "/verdicts.json")
	if err != nil {
		t.Fatal(err)
	}
	type verdict struct{ Status, ID, Subject, Reason string }
	var want []verdict
	if err := json.Unmarshal(b, &want); err != nil || len(want) == 0 {
		t.Fatalf("verdicts.json: %v (%d)", err, len(want))
	}
	s := &Session{Clock: time.Now}
	env, err := s.BurnReplay(t.Context(), NodeOptions{Root: dir + "/node.tgz", Timeout: time.Minute}, dir+"/burn", BurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []verdict
	for _, r := range env.Results {
		got = append(got, verdict{string(r.Status), r.ID, r.Subject, r.Reason})
	}
	cmpv := func(a, b verdict) int {
		return strings.Compare(a.Status+" "+a.ID+" "+a.Subject+" "+a.Reason, b.Status+" "+b.ID+" "+b.Subject+" "+b.Reason)
	}
	slices.SortFunc(got, cmpv)
	got = slices.Compact(got)
	slices.SortFunc(want, cmpv)
	if !slices.Equal(got, want) {
		t.Errorf("replay:\n%v\nthe run:\n%v", got, want)
	}
	// Nothing failed on the hardware, and what could not be proven is
	// unknown: the GPU's PCIe link had no readable counters in the VM, and
	// three minutes are too short to bound the corrected ECC rate.
	for _, r := range env.Results {
		if r.Status == result.Fail || (r.Status == result.Pass && (r.ID == "burn.unmeasured" || r.ID == "burn.ecc")) {
			t.Errorf("%s %s %s: %s", r.Status, r.ID, r.Subject, r.Message)
		}
	}
}
