package fakehost

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/machine"
)

// Root loads a host description and returns a root over it, built in
// memory.
func Root(t testing.TB, path string) machine.Root {
	t.Helper()
	return MaterializeRoot(t, load(t, path))
}

// MaterializeRoot returns a root over a parsed description, built in
// memory: no files are written, so a test may build as many as it likes.
func MaterializeRoot(t testing.TB, s *Spec) machine.Root {
	t.Helper()
	fsys, err := s.FS()
	if err != nil {
		t.Fatal(err)
	}
	return machine.NewRootFS(fsys, s.Name)
}

// Dir loads a host description and writes it under a fresh temporary
// directory of the test, for code that takes a directory (a --root flag).
func Dir(t testing.TB, path string) string {
	t.Helper()
	return MaterializeDir(t, load(t, path))
}

// MaterializeDir writes a parsed description under a fresh temporary
// directory of the test and returns the directory.
func MaterializeDir(t testing.TB, s *Spec) string {
	t.Helper()
	dir := t.TempDir()
	if err := s.Materialize(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func load(t testing.TB, path string) *Spec {
	t.Helper()
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
