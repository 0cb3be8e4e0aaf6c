// Package nccl calls NCCL (libnccl.so.2) through a small cgo shim that
// dlopens it at run time, with our own prototypes. Communicators and the
// timed loops run on the CUDA runtime's own thread (see package cuda), so
// "set device, then enqueue" never crosses threads; waits spin with a
// deadline and watch each communicator's asynchronous error. That thread
// also owns the abort: Abort raises a flag the loops check before each
// poll, and the thread that polls calls ncclCommAbort itself. Only when
// that thread is wedged does another thread abort, as a last resort, and
// the communicators are then never used (or freed) again.
package nccl

import (
	"errors"
	"fmt"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/native/dl"
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

// VersionString turns NCCL's version code into "2.28.3".
func VersionString(code int) string {
	if code >= 10000 { // NCCL >= 2.9: major*10000 + minor*100 + patch
		return fmt.Sprintf("%d.%d.%d", code/10000, (code%10000)/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, (code%1000)/100, code%100)
}

// Error is an NCCL error with the library's own message.
type Error struct {
	Call   string
	Code   int
	Msg    string
	Detail string // ncclGetLastError, when it says more
}

// Error names the call, NCCL's message and its ncclResult_t with the
// code's nccl.h name and meaning (collective.ExplainResult), then NCCL's
// last error: "ncclCommInitAll: remote process exited or there was a
// network error (ncclResult 6, ncclRemoteError: a call failed because of
// the network ...): detail".
func (e *Error) Error() string {
	code := fmt.Sprintf("ncclResult %d", e.Code)
	if rc, ok := e.Explain(); ok {
		code += ", " + rc.Name + ": " + rc.Meaning
	}
	s := fmt.Sprintf("%s: %s (%s)", e.Call, e.Msg, code)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Explain is the error's ncclResult_t explained, with a remedy where one
// fits; false for a code nccl.h does not define.
func (e *Error) Explain() (collective.ResultCode, bool) { return collective.ExplainResult(e.Code) }

// ErrAborted is returned once a communicator has been aborted.
var ErrAborted = errors.New("communicator aborted")

// Op is one collective as the timed loop enqueues it.
type Op struct {
	Coll           collective.Collective
	Count          uint64
	DType          int
	RedOp          int
	Root           int
	InPlace        bool
	SendInplaceOff uint64 // bytes per rank
	RecvInplaceOff uint64
	Elt            uint64
	TotalBytes     uint64 // max(send, recv) bytes
	MaxBytes       uint64 // buffer size
}

// UniqueIDSize is the size of NCCL's unique id (NCCL_UNIQUE_ID_BYTES in
// nccl.h; the shim's copy is checked against it at compile time).
const UniqueIDSize = 128
