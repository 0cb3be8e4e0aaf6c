// Package dl finds and opens vendor shared libraries (libcudart, libnccl) at
// run time with dlopen, so the binary needs no CUDA headers or libraries to
// build, and reports exactly where it looked when a library is missing.
package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

static void *gdr_dlopen(const char *path, char **err) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		*err = dlerror();
	}
	return h;
}

static int gdr_dlclose(void *h) { return dlclose(h); }
*/
import "C"

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

// OpenTable opens a library as Open does, then resolves its entry points
// with bind into a zeroed C table of size bytes, which lives until Close.
// unbound says what a library that lacks one probably is.
func OpenTable(s Spec, explicit string, size uintptr, bind Bind, unbound string) (*Library, error) {
	l, err := Open(s, explicit)
	if err != nil {
		return nil, err
	}
	t := C.calloc(1, C.size_t(size))
	if missing := bind(t, l.handle); missing != "" {
		C.free(t)
		err := fmt.Errorf("%s: missing entry point %s (%s)", l.Path, missing, unbound)
		_ = l.Close()
		return nil, err
	}
	l.table = t
	return l, nil
}

// Release frees the table and forgets the handle but leaves the library
// loaded: vendor runtimes (libcudart, libnccl) register teardown that runs
// at process exit, and unloading such a library is known to crash then.
// Opening it again maps nothing new. A second Release does nothing.
func (l *Library) Release() {
	if l.table != nil {
		C.free(l.table)
		l.table = nil
	}
	l.handle = nil
}

// Close is Release, then unloads the library (dlclose): only for a
// library none of whose code has run (a failed bind).
func (l *Library) Close() error {
	h := l.handle
	l.Release()
	if h == nil {
		return nil
	}
	if C.gdr_dlclose(h) != 0 {
		return fmt.Errorf("dlclose %s failed", l.Path)
	}
	return nil
}

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

// Open opens the first candidate that loads. A path the user named (a
// flag, or the spec's environment variable) is the only one tried: a
// typo must not silently load some other copy of the library.
func Open(s Spec, explicit string) (*Library, error) {
	nf := &NotFoundError{What: s.What}
	if explicit == "" && s.EnvPath != "" {
		explicit = os.Getenv(s.EnvPath)
	}
	cands := s.Candidates()
	if explicit != "" {
		cands = []string{explicit}
	}
	for _, c := range cands {
		if strings.Contains(c, "/") {
			if _, err := os.Stat(c); err != nil {
				nf.Searched = append(nf.Searched, c+": no such file")
				continue
			}
		}
		l, err := OpenPath(c)
		if err != nil {
			nf.Searched = append(nf.Searched, c+": "+err.Error())
			continue
		}
		return l, nil
	}
	return nil, nf
}

// OpenPath dlopens exactly one path or soname.
func OpenPath(p string) (*Library, error) {
	cp := C.CString(p)
	defer C.free(unsafe.Pointer(cp))
	var cerr *C.char
	h := C.gdr_dlopen(cp, &cerr)
	if h == nil {
		msg := "dlopen failed"
		if cerr != nil {
			msg = C.GoString(cerr)
			// dlerror repeats the path; keep the reason.
			if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, p) {
				msg = msg[i+2:]
			}
		}
		return nil, errors.New(msg)
	}
	return &Library{Path: p, handle: h}, nil
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
