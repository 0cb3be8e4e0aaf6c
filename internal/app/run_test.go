package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

const h200Snapshot = "../../testdata/snapshots/h200x1-vm.tgz"

func testSession() *Session {
	return &Session{Tool: report.Tool{Version: "test"}, Host: "testhost",
		Clock: func() time.Time { return time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC) }}
}

// Run judges the node and makes the dossier's folder before any
// benchmark. On a snapshot the benchmarks do not apply (BenchSkip says
// why), and a run that requires them (--bench) is refused before anything
// is read or made: the one live-host rule (requireLive).
func TestRunOnSnapshot(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report")
	_, err := testSession().Run(t.Context(), RunOptions{Node: NodeOptions{Root: h200Snapshot, Timeout: time.Minute},
		Checks: CheckOptions{Timeout: 10 * time.Second}, Out: out, Bench: true, BenchSize: 1 << 20})
	var te *ToolError
	if !errors.As(err, &te) || te.Error() != "benchmarks run on the live host only (--root is "+h200Snapshot+")" {
		t.Errorf("Run --bench on a snapshot: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused run made --out (%v)", err)
	}
	nr, err := testSession().Run(t.Context(), RunOptions{Node: NodeOptions{Root: h200Snapshot, Timeout: time.Minute},
		Checks: CheckOptions{Timeout: 10 * time.Second}, Out: out, AutoBench: true, BenchSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	if nr.BenchSkip != te.Error() || nr.BenchErr != nil {
		t.Errorf("BenchSkip %q, BenchErr %v", nr.BenchSkip, nr.BenchErr)
	}
	if len(nr.Checks.Results) == 0 || nr.Summary.Root != h200Snapshot {
		t.Errorf("run: %d results, root %q", len(nr.Checks.Results), nr.Summary.Root)
	}
	// Run makes the folder; the dossier is written into it from the
	// first phase on (TestDossierWrittenAfterEveryPhase).
	if fi, err := os.Stat(out); err != nil || !fi.IsDir() {
		t.Fatalf("--out not made: %v", err)
	}
}

// The options are read before the node: a bad --only or profile is the
// tool's error whatever --root is.
func TestCheckOptionsFirst(t *testing.T) {
	for _, o := range []CheckOptions{{Only: []string{"pcie.nothing"}}, {Expect: "/nonexistent/site.yaml"}} {
		_, err := Check(t.Context(), NodeOptions{Root: "/nonexistent/root", Timeout: time.Minute}, o)
		var te *ToolError
		if !errors.As(err, &te) || strings.Contains(err.Error(), "/nonexistent/root") {
			t.Errorf("%+v: %v", o, err)
		}
	}
	j, err := Check(t.Context(), NodeOptions{Root: h200Snapshot, Timeout: time.Minute}, CheckOptions{Only: []string{"pcie."}})
	if err != nil || len(j.Checks.Results) == 0 || len(j.Host.GPUs) != 1 {
		t.Fatalf("check: %v", err)
	}
	for _, r := range j.Checks.Results {
		if !strings.HasPrefix(r.ID, "pcie.") {
			t.Errorf("--only pcie. ran %s", r.ID)
		}
	}
}

// With --bench on a host whose runtime sees no GPU, the checks still run
// and record the runtime the benchmarks loaded; the pass says why it
// cannot run.
func TestRunBenchWithoutGPU(t *testing.T) {
	t.Setenv("GDRCHECK_CUDART", fakelib.CUDART(t))
	t.Setenv("GDRCHECK_NCCL", fakelib.NCCL(t))
	t.Setenv("FAKECUDA_DEVICES", "0")
	for _, k := range (bench.NCCLDebug{}).Names() {
		t.Setenv(k, "")
	}
	// The live host is a fixture without GPUs (nothing reads this
	// machine's /sys).
	live := fakehost.Archive(t, "../checks/testdata/no-gpu.host")
	t.Chdir(t.TempDir())
	nr, err := testSession().Run(t.Context(), RunOptions{Node: NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live},
		Checks: CheckOptions{Only: []string{"inventory.versions"}}, Bench: true, BenchSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	if nr.BenchErr == nil || !strings.Contains(nr.BenchErr.Error(), "no usable GPU") {
		t.Errorf("BenchErr = %v", nr.BenchErr)
	}
	found := false
	for _, r := range nr.Checks.Results {
		if r.Subject == "cuda-runtime" {
			found = true
			if r.Status != result.Pass || !strings.Contains(r.Message, "13.0") {
				t.Errorf("cuda-runtime: %+v", r)
			}
		}
	}
	if !found {
		t.Errorf("no cuda-runtime result in %+v", nr.Checks.Results)
	}
}
