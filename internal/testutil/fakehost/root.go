package fakehost

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/machine"
)

// Root loads a host description and materialises it under a fresh
// temporary directory of the test, returning the root to read it through.
func Root(t testing.TB, path string) machine.Root {
	t.Helper()
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return MaterializeRoot(t, s)
}

// MaterializeRoot materialises a parsed description for a test.
func MaterializeRoot(t testing.TB, s *Spec) machine.Root {
	t.Helper()
	dir := t.TempDir()
	if err := s.Materialize(dir); err != nil {
		t.Fatal(err)
	}
	return machine.NewRoot(dir)
}
