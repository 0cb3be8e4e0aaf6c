// Package nccl calls NCCL (libnccl.so.2) through a small cgo shim that
// dlopens it at run time, with our own prototypes. Communicators and the
// timed loops run on the CUDA runtime's own thread (see package cuda), so
// "set device, then enqueue" never crosses threads; waits spin with a
// deadline and watch each communicator's asynchronous error, and a
// communicator that overruns is aborted (ncclCommAbort) from the caller's
// thread.
package nccl

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"

static gdr_ncclResult gdr_nccl_version(gdr_nccl *l, int *v) { return l->GetVersion(v); }
static const char *gdr_nccl_errstr(gdr_nccl *l, gdr_ncclResult r) { return l->GetErrorString(r); }
static const char *gdr_nccl_lasterr(gdr_nccl *l, gdr_ncclComm c) { return l->GetLastError ? l->GetLastError(c) : 0; }
static gdr_ncclResult gdr_nccl_init_all(gdr_nccl *l, gdr_ncclComm *comms, int n, const int *devs) { return l->CommInitAll(comms, n, devs); }
static gdr_ncclResult gdr_nccl_destroy(gdr_nccl *l, gdr_ncclComm c) { return l->CommDestroy(c); }
static gdr_ncclResult gdr_nccl_abort(gdr_nccl *l, gdr_ncclComm c) { return l->CommAbort(c); }
static gdr_ncclResult gdr_nccl_rank(gdr_nccl *l, gdr_ncclComm c, int *r) { return l->CommUserRank(c, r); }
static gdr_rank *gdr_rank_at(gdr_rank *r, int i) { return &r[i]; }
static int gdr_nccl_has_memalloc(gdr_nccl *l) { return l->MemAlloc != 0; }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
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
		return nil, fmt.Errorf("%s: missing entry point %s (not NCCL, or older than 2.7?)", lib.Path, C.GoString(missing))
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
		return "", 0, l.err("ncclGetVersion", int(r), nil)
	}
	return VersionString(int(v)), int(v), nil
}

// HasMemAlloc reports ncclMemAlloc and ncclMemFree (NCCL 2.19+).
func (l *Library) HasMemAlloc() bool { return C.gdr_nccl_has_memalloc(l.c) != 0 }

// MemAlloc allocates device memory on dev with ncclMemAlloc: cuMem memory
// with the granularity and access NCCL wants for buffers it may register
// (nccl-tests allocates its buffers this way). The library must have it
// (HasMemAlloc).
func (l *Library) MemAlloc(ctx context.Context, rt *cuda.Runtime, dev int, bytes uint64) (cuda.Ptr, error) {
	if !l.HasMemAlloc() {
		return cuda.Ptr{}, fmt.Errorf("%s has no ncclMemAlloc (NCCL 2.19 or later has it)", l.Path)
	}
	var p unsafe.Pointer
	call := fmt.Sprintf("ncclMemAlloc(%d bytes) on device %d", bytes, dev)
	err := rt.Do(ctx, "ncclMemAlloc", func() error {
		return l.status(rt, call, int(C.gdr_nccl_mem_alloc(l.c, (*C.gdr_cudart)(rt.CPtr()), C.int(dev), &p, C.size_t(bytes))))
	})
	return cuda.PtrOf(p), err
}

// MemFree releases memory from MemAlloc.
func (l *Library) MemFree(ctx context.Context, rt *cuda.Runtime, dev int, p cuda.Ptr) error {
	if p.Nil() {
		return nil
	}
	return rt.Do(ctx, "ncclMemFree", func() error {
		return l.status(rt, "ncclMemFree", int(C.gdr_nccl_mem_free(l.c, (*C.gdr_cudart)(rt.CPtr()), C.int(dev), p.Raw())))
	})
}

// status turns a shim code that is not about a communicator into an error:
// 1000 + an ncclResult, or a CUDA error. Call it on the runtime's thread.
func (l *Library) status(rt *cuda.Runtime, call string, code int) error {
	if code >= 1000 {
		return l.err(call, code-1000, nil)
	}
	return rt.Check(call, code)
}

// Error is an NCCL error with the library's own message.
type Error struct {
	Call   string
	Code   int
	Msg    string
	Detail string // ncclGetLastError, when it says more
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (ncclResult %d)", e.Call, e.Msg, e.Code)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (l *Library) err(call string, r int, comm C.gdr_ncclComm) error {
	msg := "unknown error"
	if s := C.gdr_nccl_errstr(l.c, C.gdr_ncclResult(r)); s != nil {
		msg = C.GoString(s)
	}
	e := &Error{Call: call, Code: r, Msg: msg}
	if s := C.gdr_nccl_lasterr(l.c, comm); s != nil {
		e.Detail = strings.TrimSpace(C.GoString(s))
	}
	return e
}

// ErrAborted is returned once a communicator has been aborted.
var ErrAborted = errors.New("communicator aborted")

// Comms are the communicators of the GPUs this process drives, one rank
// each, with a stream per rank.
type Comms struct {
	lib    *Library
	rt     *cuda.Runtime
	ranks  *C.gdr_rank // C array of n
	n      int         // local ranks: in one process, also the world
	devs   []int
	mu     sync.Mutex
	closed bool
}

// InitAll makes one communicator per local device in one process
// (ncclCommInitAll), under a deadline.
func (l *Library) InitAll(ctx context.Context, rt *cuda.Runtime, devs []int, timeout time.Duration) (*Comms, error) {
	if len(devs) == 0 {
		return nil, fmt.Errorf("ncclCommInitAll: no device")
	}
	n := len(devs)
	c := &Comms{lib: l, rt: rt, n: n, devs: append([]int(nil), devs...)}
	c.ranks = (*C.gdr_rank)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.gdr_rank{}))))
	err := rt.DoTimeout(ctx, "ncclCommInitAll", timeout, func() error {
		comms := (*C.gdr_ncclComm)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.gdr_ncclComm(nil)))))
		defer C.free(unsafe.Pointer(comms))
		cdevs := (*C.int)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.int(0)))))
		defer C.free(unsafe.Pointer(cdevs))
		ds := unsafe.Slice(cdevs, n)
		for i, d := range devs {
			ds[i] = C.int(d)
		}
		if r := C.gdr_nccl_init_all(l.c, comms, C.int(n), cdevs); r != 0 {
			return l.err(fmt.Sprintf("ncclCommInitAll(%d devices)", n), int(r), nil)
		}
		cs := unsafe.Slice(comms, n)
		for i := range devs {
			rk := C.gdr_rank_at(c.ranks, C.int(i))
			rk.dev = C.int(devs[i])
			rk.comm = cs[i]
			var rank C.int
			if r := C.gdr_nccl_rank(l.c, cs[i], &rank); r != 0 {
				return l.err("ncclCommUserRank", int(r), cs[i])
			}
			rk.rank = rank
		}
		return nil
	})
	if err != nil {
		C.free(unsafe.Pointer(c.ranks))
		return nil, err
	}
	for i, d := range devs {
		s, err := rt.StreamCreate(ctx, d)
		if err != nil {
			c.Abort()
			return nil, err
		}
		C.gdr_rank_at(c.ranks, C.int(i)).stream = C.gdr_stream(s.Raw())
	}
	return c, nil
}

// Local is the number of local ranks; World the communicator size (the
// same: every rank is in this process).
func (c *Comms) Local() int { return c.n }
func (c *Comms) World() int { return c.n }

// Device of local rank i.
func (c *Comms) Device(i int) int { return c.devs[i] }

// Rank is local rank i's global rank.
func (c *Comms) Rank(i int) int { return int(C.gdr_rank_at(c.ranks, C.int(i)).rank) }

// SetBuffers gives local rank i its send and receive buffers.
func (c *Comms) SetBuffers(i int, send, recv cuda.Ptr) {
	rk := C.gdr_rank_at(c.ranks, C.int(i))
	rk.send = (*C.char)(send.Raw())
	rk.recv = (*C.char)(recv.Raw())
}

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

// CollNumber is the shim's number of a collective (gdr_op.coll), false
// for one the shim does not run. The numbers are shim.h's enum as cgo reads
// it, so Go and C cannot disagree; a test checks that each enum name is the
// collective it is returned for and that shim.c runs it.
func CollNumber(c collective.Collective) (int, bool) {
	switch c {
	case collective.AllReduce:
		return C.GDR_ALL_REDUCE, true
	case collective.AllGather:
		return C.GDR_ALL_GATHER, true
	case collective.ReduceScatter:
		return C.GDR_REDUCE_SCATTER, true
	case collective.Broadcast:
		return C.GDR_BROADCAST, true
	case collective.Reduce:
		return C.GDR_REDUCE, true
	case collective.AllToAll:
		return C.GDR_ALLTOALL, true
	case collective.SendRecv:
		return C.GDR_SENDRECV, true
	}
	return -1, false
}

func (c *Comms) cop(op Op) *C.gdr_op {
	o := (*C.gdr_op)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gdr_op{}))))
	// An unknown collective stays -1: the shim answers ncclInvalidArgument.
	coll, _ := CollNumber(op.Coll)
	o.coll = C.int(coll)
	o.count = C.size_t(op.Count)
	o.dtype = C.int(op.DType)
	o.redop = C.int(op.RedOp)
	o.root = C.int(op.Root)
	o.nranks = C.int(c.n)
	if op.InPlace {
		o.inplace = 1
	}
	o.send_inplace_off = C.size_t(op.SendInplaceOff)
	o.recv_inplace_off = C.size_t(op.RecvInplaceOff)
	o.elt = C.size_t(op.Elt)
	o.total_bytes = C.size_t(op.TotalBytes)
	o.max_bytes = C.size_t(op.MaxBytes)
	return o
}

// result turns a shim return code into an error.
func (c *Comms) result(call string, code int, bad int) error {
	switch {
	case code == 0:
		return nil
	case code == -1:
		return fmt.Errorf("%s: %w", call, cuda.ErrTimeout)
	case code == -2:
		return fmt.Errorf("%s: %w", call, context.Canceled)
	case code >= 1000 && bad >= 0 && bad < c.n:
		comm := C.gdr_rank_at(c.ranks, C.int(bad)).comm
		return c.lib.err(fmt.Sprintf("%s (GPU %d)", call, c.devs[bad]), code-1000, comm)
	}
	return c.lib.status(c.rt, call, code)
}

func (c *Comms) check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrAborted
	}
	return nil
}

// Enqueue launches iters operations on every local rank, iterations
// first..first+iters-1 (which pick the buffer shift), in one call to the
// CUDA thread, without waiting for them.
func (c *Comms) Enqueue(ctx context.Context, op Op, first, iters int) error {
	if err := c.check(); err != nil {
		return err
	}
	o := c.cop(op)
	defer C.free(unsafe.Pointer(o))
	return c.rt.Do(ctx, "NCCL enqueue", func() error {
		code := C.gdr_nccl_enqueue(c.lib.c, o, c.ranks, C.int(c.n), C.int(first), C.int(iters), (*C.int)(c.rt.CancelPtr()))
		return c.result("NCCL enqueue", int(code), -1)
	})
}

// Wait waits until every local stream is idle, at most timeout.
func (c *Comms) Wait(ctx context.Context, timeout time.Duration) error {
	if err := c.check(); err != nil {
		return err
	}
	return c.rt.DoTimeout(ctx, "NCCL wait", timeout+10*time.Second, func() error {
		var bad C.int
		deadline := float64(C.gdr_now()) + timeout.Seconds()
		code := C.gdr_nccl_wait(c.lib.c, (*C.gdr_cudart)(c.rt.CPtr()), c.ranks, C.int(c.n), C.double(deadline), (*C.int)(c.rt.CancelPtr()), &bad)
		return c.result("NCCL wait", int(code), int(bad))
	})
}

// Timed enqueues iters operations and waits for all of them, returning
// the host-clock seconds from the first enqueue to the end (nccl-tests'
// timing).
func (c *Comms) Timed(ctx context.Context, op Op, iters int, timeout time.Duration) (float64, error) {
	if err := c.check(); err != nil {
		return 0, err
	}
	o := c.cop(op)
	defer C.free(unsafe.Pointer(o))
	var sec C.double
	err := c.rt.DoTimeout(ctx, "NCCL timed loop", timeout+10*time.Second, func() error {
		var bad C.int
		deadline := float64(C.gdr_now()) + timeout.Seconds()
		code := C.gdr_nccl_timed(c.lib.c, (*C.gdr_cudart)(c.rt.CPtr()), o, c.ranks, C.int(c.n), C.int(iters), C.double(deadline), (*C.int)(c.rt.CancelPtr()), &sec, &bad)
		return c.result("NCCL timed loop", int(code), int(bad))
	})
	return float64(sec), err
}

// close marks the communicators closed; false when they already were.
func (c *Comms) close() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	was := c.closed
	c.closed = true
	return !was
}

// Abort aborts every communicator (ncclCommAbort), from the caller's own
// thread so it works even when the CUDA thread is stuck in NCCL. Safe to
// call more than once.
func (c *Comms) Abort() []error {
	if !c.close() {
		return nil
	}
	var errs []error
	for i := 0; i < c.n; i++ {
		rk := C.gdr_rank_at(c.ranks, C.int(i))
		if rk.comm == nil {
			continue
		}
		if r := C.gdr_nccl_abort(c.lib.c, rk.comm); r != 0 {
			errs = append(errs, c.lib.err("ncclCommAbort", int(r), nil))
		}
		rk.comm = nil
	}
	return errs
}

// Destroy releases the communicators and streams cleanly.
func (c *Comms) Destroy(ctx context.Context) error {
	if !c.close() {
		return nil
	}
	var first error
	for i := 0; i < c.n; i++ {
		rk := C.gdr_rank_at(c.ranks, C.int(i))
		if rk.comm != nil {
			err := c.rt.Do(ctx, "ncclCommDestroy", func() error {
				if r := C.gdr_nccl_destroy(c.lib.c, rk.comm); r != 0 {
					return c.lib.err("ncclCommDestroy", int(r), nil)
				}
				return nil
			})
			if err != nil && first == nil {
				first = err
			}
			rk.comm = nil
		}
		if rk.stream != nil {
			_ = c.rt.StreamDestroy(ctx, c.devs[i], cuda.StreamOf(unsafe.Pointer(rk.stream)))
			rk.stream = nil
		}
	}
	return first
}
