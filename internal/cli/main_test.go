package cli

import (
	"os"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
	"github.com/gdrcheck/gdrcheck/internal/testutil/scratch"
)

func TestMain(m *testing.M) {
	// A re-executed test binary is gdrcheck itself: one rank of a job
	// (multirank_test.go).
	if os.Getenv(reexecVar) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr, BuildInfo{Version: "test", Commit: "test"}))
	}
	scratch.OnTmpfs()
	os.Exit(fakelib.RunTests(m))
}
