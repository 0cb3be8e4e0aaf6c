package bench_test

import (
	"os"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
	"github.com/gdrcheck/gdrcheck/internal/testutil/scratch"
	"github.com/gdrcheck/gdrcheck/internal/testutil/waitbound"
)

func TestMain(m *testing.M) {
	scratch.OnTmpfs()
	// The parallel tests are the perftest stand-ins' cases, which wait on
	// shell scripts and their deadlines.
	waitbound.Parallel(6)
	os.Exit(fakelib.RunTests(m))
}
