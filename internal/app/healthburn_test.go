package app

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

// health --burn: after checks that did not fail, a short burn-in; data
// that comes back wrong under it fails the node with a line naming the
// burn-in's verdict, a clean one leaves the checks' line; off the live
// host it is refused before anything is read.
func TestHealthBurn(t *testing.T) {
	for _, k := range (bench.NCCLDebug{}).Names() {
		t.Setenv(k, "")
	}
	t.Setenv("FAKECUDA_DEVICES", "2")
	for _, c := range []struct {
		name     string
		corrupt  bool
		notReady bool
		line     string
	}{
		{"clean", false, false, ""},
		{"NCCL's data comes back wrong", true, true, "gdrcheck FAIL: burn-in: burn.data window 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.corrupt {
				t.Setenv("FAKENCCL_CORRUPT", "1")
			}
			live := burnLive(t)
			out := filepath.Join(t.TempDir(), "burn")
			h, err := RunHealth(t.Context(), HealthOptions{
				Node: NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live}, Check: CheckOptions{Only: []string{"inventory.versions"}, Timeout: 10 * time.Second},
				NodeName: "n1", Drain: DrainOptions{Mode: DrainNone}, Session: &Session{Clock: time.Now},
				Burn: BurnOptions{Duration: 400 * time.Millisecond, Window: 400 * time.Millisecond, Settle: 10 * time.Millisecond, Out: out, Bytes: 64 << 10,
					GPU: GPUOptions{CUDART: fakelib.CUDART(t)}, NCCL: true, NCCLLib: fakelib.NCCL(t),
					Judge: burn.Options{SkipBandwidth: true}}, // the fake runtime's rates mean nothing
			})
			if err != nil {
				t.Fatal(err)
			}
			if h.Err != nil || h.Burned == nil || h.BurnDir != out {
				t.Fatalf("err %v, burned %v, dir %q; line %q", h.Err, h.Burned != nil, h.BurnDir, h.Line)
			}
			if h.NotReady != c.notReady || c.line != "" && !strings.HasPrefix(h.Line, c.line) || c.line == "" && strings.Contains(h.Line, "FAIL") {
				t.Errorf("not ready %v, line %q", h.NotReady, h.Line)
			}
		})
	}
	_, err := RunHealth(t.Context(), HealthOptions{Node: NodeOptions{Root: h200Snapshot}, Drain: DrainOptions{Mode: DrainNone}, Session: &Session{Clock: time.Now},
		Burn: BurnOptions{Duration: time.Minute, Window: time.Minute, Bytes: 1 << 20}})
	if err == nil || !strings.Contains(err.Error(), "--burn") {
		t.Errorf("on a snapshot: %v", err)
	}
}
