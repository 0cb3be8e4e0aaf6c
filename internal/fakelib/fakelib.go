// Package fakelib builds fake vendor libraries (a CUDA runtime whose device
// memory is host memory, an NCCL whose collectives really compute) with
// gcc, so the real cgo shims and benchmark code run in tests on machines
// without a GPU. The libraries are built once per test process; a package
// that uses them calls RunTests from its TestMain so the build directory is
// removed at the end.
package fakelib

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

//go:embed csrc/fakecudart.c
var cudartSrc string

//go:embed csrc/fakenccl.c
var ncclSrc string

// built caches the libraries of this test process.
var built struct {
	once sync.Once
	dir  string
	libs map[string]string
	err  error
}

func buildAll() {
	if _, err := exec.LookPath("gcc"); err != nil {
		built.err = fmt.Errorf("gcc not found: cannot build fake libraries")
		return
	}
	dir, err := os.MkdirTemp("", "gdrcheck-fakelib-")
	if err != nil {
		built.err = err
		return
	}
	built.dir = dir
	built.libs = map[string]string{}
	for name, src := range map[string]string{"libcudart.so.13": cudartSrc, "libnccl.so.2": ncclSrc} {
		c := filepath.Join(dir, name+".c")
		if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
			built.err = err
			return
		}
		out := filepath.Join(dir, name)
		cmd := exec.Command("gcc", "-shared", "-fPIC", "-O1", "-Wall", "-o", out, c, "-lpthread", "-lm")
		if b, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("gcc %s: %v\n%s", name, err, b)
			return
		}
		built.libs[name] = out
	}
}

func get(t testing.TB, name string) string {
	t.Helper()
	built.once.Do(buildAll)
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.libs[name]
}

// CUDART returns the path of the fake libcudart.so.13.
func CUDART(t testing.TB) string { return get(t, "libcudart.so.13") }

// NCCL returns the path of the fake libnccl.so.2.
func NCCL(t testing.TB) string { return get(t, "libnccl.so.2") }

// RunTests runs a package's tests and removes the built libraries.
func RunTests(m *testing.M) int {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	return code
}
