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
	for _, l := range []struct {
		name, src string
		defs      []string
	}{
		{"libcudart.so.13", cudartSrc, nil},
		{"libnccl.so.2", ncclSrc, nil},
		{filepath.Join("nccl-2.18", "libnccl.so.2"), ncclSrc, []string{"-DFAKENCCL_OLD"}},
	} {
		out := filepath.Join(dir, l.name)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			built.err = err
			return
		}
		c := out + ".c"
		if err := os.WriteFile(c, []byte(l.src), 0o644); err != nil {
			built.err = err
			return
		}
		args := append([]string{"-shared", "-fPIC", "-O1", "-Wall"}, l.defs...)
		cmd := exec.Command("gcc", append(args, "-o", out, c, "-lpthread", "-lm")...)
		if b, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("gcc %s: %v\n%s", l.name, err, b)
			return
		}
		built.libs[l.name] = out
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

// NCCL returns the path of the fake libnccl.so.2, an NCCL 2.28 (with
// ncclAlltoAll and ncclMemAlloc).
func NCCL(t testing.TB) string { return get(t, "libnccl.so.2") }

// NCCLOld returns the path of a fake NCCL 2.18 (no ncclAlltoAll, no
// ncclMemAlloc).
func NCCLOld(t testing.TB) string { return get(t, filepath.Join("nccl-2.18", "libnccl.so.2")) }

// RunTests runs a package's tests and removes the built libraries.
func RunTests(m *testing.M) int {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	return code
}
