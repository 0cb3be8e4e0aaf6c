package checks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/checks"
)

// TestGPUResultsCarryBusID: every result about a GPU (GPUn, GPUn-xid,
// GPUn-fabric) names the GPU's bus id in its evidence, so results compare
// across runs where the index renumbered; results about other subjects
// do not get it.
func TestGPUResultsCarryBusID(t *testing.T) {
	env := fixture{}.env(t)
	bus := map[string]string{"GPU0": "0000:18:00.0", "GPU1": "0000:3a:00.0"}
	rep := checks.Run(context.Background(), env, checks.All(), checks.Options{Only: []string{"gpu.health", "nvlink.state"}})
	seen := 0
	for _, r := range rep.Results {
		gpu, _, _ := strings.Cut(r.Subject, "-")
		want, ok := bus[gpu]
		has := false
		for _, e := range r.Evidence {
			if e.Source == "pci" && strings.HasPrefix(e.Value, gpu+" is "+want) {
				has = true
			}
		}
		if ok != has {
			t.Errorf("%s %s: bus id evidence %v, want %v: %+v", r.ID, r.Subject, has, ok, r.Evidence)
		}
		if has {
			seen++
		}
	}
	if seen < 4 {
		t.Errorf("%d GPU results with a bus id, want at least 4 (health and Xid for two GPUs)", seen)
	}
}
