package cli

import (
	"fmt"
	"os"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
	"github.com/gdrcheck/gdrcheck/internal/testutil/scratch"
)

// liveHostSpec is the host the tests' live host (--root /, the default)
// reads: a node without GPUs, as the machine the tests once read was. The
// fake CUDA runtime and NCCL stand for GPUs; nothing reads this machine's
// /sys or /proc, so the tests give the same results on every machine and
// their results cache.
const liveHostSpec = repo + "/internal/checks/testdata/no-gpu.host"

// liveRootVar passes the test live host to the processes of a job
// (multirank_test.go), which run gdrcheck's command line in this binary.
const liveRootVar = "GDRCHECK_TEST_LIVE_ROOT"

// liveRoot is the test live host, written once for the test binary.
var liveRoot string

func TestMain(m *testing.M) {
	// A re-executed test binary is gdrcheck itself: one rank of a job
	// (multirank_test.go), on the test live host.
	if os.Getenv(reexecVar) == "1" {
		s := &app.Session{Tool: report.Tool{Version: "test", Commit: "test"}, Host: report.Hostname(), Command: append([]string{"gdrcheck"}, os.Args[1:]...)}
		os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr, s, os.Getenv(liveRootVar)))
	}
	scratch.OnTmpfs()
	os.Exit(runTests(m))
}

// runTests writes the test live host, runs the tests and removes it.
func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gdrcheck-cli-live-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(dir)
	s, err := fakehost.Load(liveHostSpec)
	if err == nil {
		err = s.Materialize(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "test live host:", err)
		return 2
	}
	liveRoot = dir
	return fakelib.RunTests(m)
}
