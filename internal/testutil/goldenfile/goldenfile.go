// Package goldenfile compares a test's output with its golden file, or rewrites
// the file when the test runs with -update. Each test package keeps its own
// -update flag and passes its value: a flag defined here would clash with
// theirs.
package goldenfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Check compares got with the file at path byte for byte and reports a
// difference as the test's error, with a diff (-golden +got). With update
// it writes got to path instead, making its folder if need be.
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the output (-golden +got; go test -update accepts it after checking):\n%s", path, cmp.Diff(string(want), string(got)))
	}
}
