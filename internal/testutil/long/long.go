// Package long is the switch for tests that take minutes: they run only
// when GDRCHECK_LONG=1 (.ci/run sets it in a step of its own), so the
// default `go test ./...` stays fast.
package long

import (
	"os"
	"testing"
)

// Enabled says whether long tests run.
func Enabled() bool { return os.Getenv("GDRCHECK_LONG") == "1" }

// Skip skips t unless long tests run.
func Skip(t testing.TB) {
	t.Helper()
	if !Enabled() {
		t.Skip("a long test: GDRCHECK_LONG=1 runs it")
	}
}
