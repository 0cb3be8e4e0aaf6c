// Package nccl calls NCCL (libnccl.so.2) through a small cgo shim that
// dlopens it at run time, with our own prototypes.
package nccl

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gdrcheck/gdrcheck/internal/dl"
)

// LibrarySpec is how NCCL is found.
func LibrarySpec() dl.Spec {
	return dl.Spec{
		What:     "NCCL (libnccl.so.2)",
		Names:    []string{"libnccl.so.2"},
		EnvPath:  "GDRCHECK_NCCL",
		HomeVars: []string{"NCCL_HOME", "CUDA_HOME"},
		HomeSubs: []string{"lib", "lib64"},
		Dirs:     []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/local/lib", "/usr/local/nccl/lib", "/usr/local/cuda/lib64"},
	}
}

// Library is a loaded NCCL.
type Library struct {
	Path string
	lib  *dl.Library
	c    *C.gdr_nccl
}

// Open loads NCCL: path if given, else the usual search.
func Open(path string) (*Library, error) {
	lib, err := dl.Open(LibrarySpec(), path)
	if err != nil {
		return nil, err
	}
	c := (*C.gdr_nccl)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gdr_nccl{}))))
	if missing := C.gdr_nccl_bind(c, lib.Handle()); missing != nil {
		C.free(unsafe.Pointer(c))
		return nil, fmt.Errorf("%s: missing entry point %s (not NCCL?)", lib.Path, C.GoString(missing))
	}
	return &Library{Path: lib.Resolved(), lib: lib, c: c}, nil
}

// VersionString turns NCCL's version code into "2.28.3".
func VersionString(code int) string {
	if code >= 10000 { // NCCL >= 2.9: major*10000 + minor*100 + patch
		return fmt.Sprintf("%d.%d.%d", code/10000, (code%10000)/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, (code%1000)/100, code%100)
}

// Version asks the library for its version.
func (l *Library) Version() (string, int, error) {
	var v C.int
	if r := C.gdr_nccl_version(l.c, &v); r != 0 {
		return "", 0, l.err("ncclGetVersion", r)
	}
	return VersionString(int(v)), int(v), nil
}

// Error is an NCCL error with the library's own message.
type Error struct {
	Call string
	Code int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s (ncclResult %d)", e.Call, e.Msg, e.Code) }

func (l *Library) err(call string, r C.gdr_ncclResult) error {
	msg := "unknown error"
	if s := C.gdr_nccl_errstr(l.c, r); s != nil {
		msg = C.GoString(s)
	}
	return &Error{Call: call, Code: int(r), Msg: msg}
}
