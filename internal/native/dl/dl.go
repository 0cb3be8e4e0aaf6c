// Package dl finds and opens vendor shared libraries (libcudart, libnccl) at
// run time with dlopen, so the binary needs no CUDA headers or libraries to
// build, and reports exactly where it looked when a library is missing.
package dl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"
)

// Library is an opened shared library.
type Library struct {
	Path   string // what dlopen was given
	handle unsafe.Pointer
	table  unsafe.Pointer // C memory: the entry points OpenTable resolved
}

// Table is the C table of entry points OpenTable filled (nil after Open).
func (l *Library) Table() unsafe.Pointer { return l.table }

// Bind fills a C table of entry points from a dlopen handle; it returns
// the name of the first required entry point missing, or "".
type Bind func(table, handle unsafe.Pointer) string

// NotFoundError lists every place a library was looked for.
type NotFoundError struct {
	What     string
	Searched []string // "path: reason"
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s not found; searched:\n  %s", e.What, strings.Join(e.Searched, "\n  "))
}

// ErrNotFound is matched by errors.Is for any NotFoundError.
var ErrNotFound = errors.New("library not found")

func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// Spec says how to find a library.
type Spec struct {
	What     string   // "CUDA runtime", for messages
	Names    []string // sonames in preference order: libcudart.so.13, libcudart.so.12
	EnvPath  string   // variable naming an explicit file (GDRCHECK_CUDART)
	HomeVars []string // CUDA_HOME, NCCL_HOME...
	HomeSubs []string // subdirectories of a home: lib64, lib, targets/x86_64-linux/lib
	Dirs     []string // usual install places
}

// Candidates lists what Open searches when no path is named, in order:
// each soname through the loader's own search (LD_LIBRARY_PATH,
// ld.so.cache), then each soname under the homes and the usual places.
func (s Spec) Candidates() []string {
	out := append([]string(nil), s.Names...)
	var dirs []string
	for _, hv := range s.HomeVars {
		if h := os.Getenv(hv); h != "" {
			for _, sub := range s.HomeSubs {
				dirs = append(dirs, filepath.Join(h, sub))
			}
		}
	}
	dirs = append(dirs, s.Dirs...)
	seen := map[string]bool{}
	for _, n := range s.Names {
		for _, d := range dirs {
			p := filepath.Join(d, n)
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// Resolved is the file the loader actually mapped for a library (following
// sonames and symlinks), best effort.
func (l *Library) Resolved() string {
	if strings.Contains(l.Path, "/") {
		if r, err := filepath.EvalSymlinks(l.Path); err == nil {
			return r
		}
		return l.Path
	}
	return mappedPath(l.Path)
}

// mappedPath finds a soname in /proc/self/maps.
func mappedPath(soname string) string {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return soname
	}
	base := strings.SplitN(soname, ".so", 2)[0]
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.Contains(filepath.Base(f[5]), base+".so") {
			return f[5]
		}
	}
	return soname
}

// ErrNoEngine is the error of every native call in a build without cgo
// (CGO_ENABLED=0): such a gdrcheck reads snapshots, logs and reports but
// cannot load the vendor libraries, so it has no GPU engine.
var ErrNoEngine = errors.New("this gdrcheck was built without cgo (CGO_ENABLED=0) and has no GPU engine: it cannot load CUDA or NCCL; use a build with cgo for benchmarks")
