// Package long gates the long forms of tests: the full seed sweeps, the
// tables docs record, the multi-process failure cases that other
// packages' tests cover in-process, the browser test. `go test ./...`
// runs the short forms; CI (.ci/run) sets GDRCHECK_LONG=1 in a step of its
// own and runs the long ones too.
package long

import (
	"os"
	"testing"
)

// Var is the environment variable that turns the long forms on.
const Var = "GDRCHECK_LONG"

// Enabled reports whether the long forms run (GDRCHECK_LONG=1).
func Enabled() bool { return os.Getenv(Var) == "1" }

// Skip skips t unless the long forms run, saying how to run it.
func Skip(t testing.TB) {
	t.Helper()
	if !Enabled() {
		t.Skip("a long test: run with " + Var + "=1 (CI does)")
	}
}
