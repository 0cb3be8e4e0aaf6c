// Package fakelib builds fake vendor libraries (a CUDA runtime whose device
// memory is host memory, an NCCL whose collectives really compute, a CUDA
// driver library with the multicast calls) with
// gcc, so the real cgo shims and benchmark code run in tests on machines
// without a GPU. The libraries are built once per machine: into a folder of
// the user's cache named by a hash of their sources, the compiler and its
// flags, so every test binary (and every later run) that finds the folder
// loads what is there instead of compiling again. A package that uses them
// calls RunTests from its TestMain.
package fakelib

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
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

//go:embed csrc/fakecuda.c
var cudaSrc string

// lib is one fake library: its path in the build folder, its source and
// its compiler flags.
type lib struct {
	name, src string
	flags     []string
}

var libs = []lib{
	{"libcudart.so.13", cudartSrc, nil},
	{"libnccl.so.2", ncclSrc, nil},
	{filepath.Join("nccl-2.18", "libnccl.so.2"), ncclSrc, []string{"-DFAKENCCL_OLD"}},
	{"libcuda.so.1", cudaSrc, nil},
	{filepath.Join("cuda-12.0", "libcuda.so.1"), cudaSrc, []string{"-DFAKECU_OLD"}},
}

// cflags are every library's compiler flags before its own.
var cflags = []string{"-shared", "-fPIC", "-O1", "-Wall"}

// built caches the libraries of this test process.
var built struct {
	once sync.Once
	dir  string
	// temp is set when dir is this process's own (no user cache folder):
	// RunTests removes it.
	temp bool
	err  error
}

// CacheEnv, when set, is the folder the libraries are cached in instead of
// the user's cache folder (os.UserCacheDir).
const CacheEnv = "GDRCHECK_FAKELIB_CACHE"

func buildAll() {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		built.err = fmt.Errorf("gcc not found: cannot build fake libraries")
		return
	}
	version, err := exec.Command(gcc, "--version").Output()
	if err != nil {
		built.err = fmt.Errorf("gcc --version: %v", err)
		return
	}
	root := os.Getenv(CacheEnv)
	if root == "" {
		if c, err := os.UserCacheDir(); err == nil {
			root = filepath.Join(c, "gdrcheck-fakelib")
		}
	}
	if root == "" || os.MkdirAll(root, 0o755) != nil {
		// No cache folder: build for this process only.
		dir, err := os.MkdirTemp("", "gdrcheck-fakelib-")
		if err != nil {
			built.err = err
			return
		}
		built.dir, built.temp = dir, true
		built.err = compile(gcc, dir)
		return
	}
	built.dir, built.err = cached(root, key(gcc, version), func(dir string) error { return compile(gcc, dir) })
}

// key names a build: the compiler (path and version), the flags and every
// library's name, flags and source.
func key(gcc string, version []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "gcc %s\n%s\nflags %q\n", gcc, version, cflags)
	for _, l := range libs {
		fmt.Fprintf(h, "lib %s %q %d\n%s\n", l.name, l.flags, len(l.src), l.src)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// cached returns root/key, building it with build first when it is not
// there. The build goes into a fresh folder beside it, renamed into place
// when whole: test binaries that build at once each rename a complete
// folder, the first one wins and the others use it, and a folder that is
// there is complete.
func cached(root, key string, build func(dir string) error) (string, error) {
	final := filepath.Join(root, key)
	if fi, err := os.Stat(final); err == nil && fi.IsDir() {
		return final, nil
	}
	tmp, err := os.MkdirTemp(root, key+".tmp-")
	if err != nil {
		return "", err
	}
	if err := build(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		// Another process renamed its build into place first.
		if fi, serr := os.Stat(final); serr == nil && fi.IsDir() {
			return final, nil
		}
		return "", err
	}
	return final, nil
}

// compile builds every library into dir.
func compile(gcc, dir string) error {
	for _, l := range libs {
		out := filepath.Join(dir, l.name)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		c := out + ".c"
		if err := os.WriteFile(c, []byte(l.src), 0o644); err != nil {
			return err
		}
		args := append(append([]string{}, cflags...), l.flags...)
		cmd := exec.Command(gcc, append(args, "-o", out, c, "-lpthread", "-lm")...)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("gcc %s: %v\n%s", l.name, err, b)
		}
	}
	return nil
}

func get(t testing.TB, name string) string {
	t.Helper()
	built.once.Do(buildAll)
	if built.err != nil {
		t.Fatal(built.err)
	}
	p := filepath.Join(built.dir, name)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("fake library %s missing from %s (remove the folder to rebuild it)", name, built.dir)
	}
	return p
}

// CUDART returns the path of the fake libcudart.so.13.
func CUDART(t testing.TB) string { return get(t, "libcudart.so.13") }

// NCCL returns the path of the fake libnccl.so.2, an NCCL 2.28 (with
// ncclAlltoAll and ncclMemAlloc).
func NCCL(t testing.TB) string { return get(t, "libnccl.so.2") }

// NCCLOld returns the path of a fake NCCL 2.18 (no ncclAlltoAll, no
// ncclMemAlloc).
func NCCLOld(t testing.TB) string { return get(t, filepath.Join("nccl-2.18", "libnccl.so.2")) }

// CUDADriver returns the path of the fake CUDA driver library
// (libcuda.so.1) with the multicast entry points (CUDA 12.1 and later).
func CUDADriver(t testing.TB) string { return get(t, "libcuda.so.1") }

// CUDADriverEnv sets the variables that steer the fake CUDA driver
// library for the test (FAKECU_DEVICES, FAKECU_MULTICAST, FAKECU_FAIL,
// FAKECU_HANG, FAKECU_LOG): each to env's value, "" where env has none, so
// nothing leaks from the test before.
func CUDADriverEnv(t testing.TB, env map[string]string) {
	for _, k := range []string{"FAKECU_DEVICES", "FAKECU_MULTICAST", "FAKECU_FAIL", "FAKECU_HANG", "FAKECU_LOG"} {
		t.Setenv(k, env[k])
	}
}

// CUDADriverOld returns the path of a fake CUDA driver library of CUDA
// 12.0: no multicast entry points.
func CUDADriverOld(t testing.TB) string { return get(t, filepath.Join("cuda-12.0", "libcuda.so.1")) }

// RunTests runs a package's tests and removes the libraries if they were
// built for this process alone (the cached ones stay for the next run).
func RunTests(m *testing.M) int {
	code := m.Run()
	if built.temp {
		os.RemoveAll(built.dir)
	}
	return code
}
