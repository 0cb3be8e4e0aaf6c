//go:build cgo

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
	"strings"
	"unsafe"
)

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
