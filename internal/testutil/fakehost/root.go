package fakehost

import (
	"archive/tar"
	"os"
	"path/filepath"
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
// directory of the test, for what must read a real directory (the CLI on a
// host directory, a benchmark of the system calls).
func Dir(t testing.TB, path string) string {
	t.Helper()
	dir := t.TempDir()
	if err := load(t, path).Materialize(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Archive loads a host description and writes it as a snapshot archive
// (.tar) in a temporary directory of the test, for a --root flag: one file
// instead of a tree, read back into memory by snapshot.Open.
func Archive(t testing.TB, path string) string {
	t.Helper()
	return MaterializeArchive(t, load(t, path))
}

// MaterializeArchive writes a parsed description as a snapshot archive
// (.tar) in a temporary directory of the test and returns its path.
func MaterializeArchive(t testing.TB, s *Spec) string {
	t.Helper()
	fsys, err := s.FS()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), filepath.Base(s.Name)+".tar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	err = tw.AddFS(fsys)
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t testing.TB, path string) *Spec {
	t.Helper()
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
