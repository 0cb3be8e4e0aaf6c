// Package fakelib builds fake vendor libraries (a CUDA runtime whose device
// memory is host memory, an NCCL) with gcc, so the real cgo shims and
// benchmark code run in tests on machines without a GPU.
package fakelib

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

//go:embed csrc/fakecudart.c
var cudartSrc string

//go:embed csrc/fakenccl.c
var ncclSrc string

// build compiles src into dir/name as a shared library.
func build(t testing.TB, name, src string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found: cannot build fake libraries")
	}
	dir := t.TempDir()
	c := filepath.Join(dir, "src.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("gcc", "-shared", "-fPIC", "-O1", "-o", out, c, "-lpthread")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", name, err, b)
	}
	return out
}

// CUDART builds a fake libcudart.so.13 and returns its path.
func CUDART(t testing.TB) string { return build(t, "libcudart.so.13", cudartSrc) }

// NCCL builds a fake libnccl.so.2 and returns its path.
func NCCL(t testing.TB) string { return build(t, "libnccl.so.2", ncclSrc) }
