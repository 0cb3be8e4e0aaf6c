//go:build cgo

package nccl

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"

static gdr_ncclResult gdr_nccl_version(gdr_nccl *l, int *v) { return l->GetVersion(v); }
static const char *gdr_nccl_errstr(gdr_nccl *l, gdr_ncclResult r) { return l->GetErrorString(r); }
static const char *gdr_nccl_lasterr(gdr_nccl *l, gdr_ncclComm c) { return l->GetLastError ? l->GetLastError(c) : 0; }
static gdr_ncclResult gdr_nccl_init_all(gdr_nccl *l, gdr_ncclComm *comms, int n, const int *devs) { return l->CommInitAll(comms, n, devs); }
static gdr_ncclResult gdr_nccl_unique_id(gdr_nccl *l, gdr_ncclUniqueId *id) { return l->GetUniqueId(id); }
static gdr_ncclResult gdr_nccl_destroy(gdr_nccl *l, gdr_ncclComm c) { return l->CommDestroy(c); }
static gdr_ncclResult gdr_nccl_abort(gdr_nccl *l, gdr_ncclComm c) { return l->CommAbort(c); }
static gdr_ncclResult gdr_nccl_rank(gdr_nccl *l, gdr_ncclComm c, int *r) { return l->CommUserRank(c, r); }
static int gdr_nccl_has_memalloc(gdr_nccl *l) { return l->MemAlloc != 0; }
static int gdr_nccl_has_split(gdr_nccl *l) { return l->CommSplit != 0; }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/dl"
	"github.com/gdrcheck/gdrcheck/internal/watchdog"
)

// Library is a loaded NCCL.
type Library struct {
	Path string
	lib  *dl.Library
	c    *C.gdr_nccl
	// kept is set when a wedged CUDA thread may still call into the
	// library (a Comms it served was kept): Close then releases nothing.
	kept atomic.Bool
}

// Open loads NCCL: path if given, else the usual search.
func Open(path string) (*Library, error) {
	lib, err := dl.OpenTable(LibrarySpec(), path, unsafe.Sizeof(C.gdr_nccl{}), func(t, h unsafe.Pointer) string {
		return C.GoString(C.gdr_nccl_bind((*C.gdr_nccl)(t), h))
	}, "not NCCL, or older than 2.7?")
	if err != nil {
		return nil, err
	}
	return &Library{Path: lib.Resolved(), lib: lib, c: (*C.gdr_nccl)(lib.Table())}, nil
}

// Close frees the entry-point table; libnccl stays loaded (see
// dl.Library.Release). Call it
// once every Comms is destroyed or aborted; a second Close does nothing.
func (l *Library) Close() error {
	if l.c == nil {
		return nil
	}
	if l.kept.Load() {
		return fmt.Errorf("%s kept loaded: a wedged CUDA thread may still be inside it: %w", l.Path, cuda.ErrHung)
	}
	l.c = nil
	l.lib.Release() // the table l.c; libnccl stays loaded
	return nil
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
func (l *Library) MemAlloc(ctx context.Context, rt *cuda.Runtime, dev int, bytes uint64) (cuda.DevPtr, error) {
	if !l.HasMemAlloc() {
		return cuda.DevPtr{}, fmt.Errorf("%s has no ncclMemAlloc (NCCL 2.19 or later has it)", l.Path)
	}
	var p unsafe.Pointer
	call := fmt.Sprintf("ncclMemAlloc(%d bytes) on device %d", bytes, dev)
	err := rt.Do(ctx, "ncclMemAlloc", func() error {
		return l.status(rt, call, int(C.gdr_nccl_mem_alloc(l.c, (*C.gdr_cudart)(rt.CPtr()), C.int(dev), &p, C.size_t(bytes))))
	})
	if err != nil {
		return cuda.DevPtr{}, err
	}
	return cuda.DevPtrOf(p, bytes), nil
}

// MemFree releases memory from MemAlloc.
func (l *Library) MemFree(ctx context.Context, rt *cuda.Runtime, dev int, p cuda.DevPtr) error {
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

// Comms are the communicators of the GPUs this process drives, one rank
// each, with a stream per rank.
type Comms struct {
	lib   *Library
	rt    *cuda.Runtime
	devs  []int // local rank -> CUDA device
	ranks []int // local rank -> global rank
	world int   // ranks in the communicator, in every process
	// mu is held for reading by every call that hands cs to the CUDA
	// thread, and for writing by Abort and Destroy.
	mu     sync.RWMutex
	closed bool
	kept   bool // another thread may still use cs: never free it
	// csMu guards cs's lifetime for Abort, which raises the flag before it
	// takes mu (a wait holding mu for reading must see the flag to end).
	csMu sync.Mutex
	cs   *C.gdr_comms // C memory the CUDA thread reads; nil once freed
}

// InitAll makes one communicator per local device in one process
// (ncclCommInitAll), under a deadline.
func (l *Library) InitAll(ctx context.Context, rt *cuda.Runtime, devs []int, timeout time.Duration) (*Comms, error) {
	if len(devs) == 0 {
		return nil, fmt.Errorf("ncclCommInitAll: no device")
	}
	n := len(devs)
	c := newComms(l, rt, devs, n)
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
		rks := c.view()
		for i, comm := range unsafe.Slice(comms, n) {
			rks[i].dev = C.int(devs[i])
			rks[i].comm = comm
		}
		for i, comm := range unsafe.Slice(comms, n) {
			var rank C.int
			if r := C.gdr_nccl_rank(l.c, comm, &rank); r != 0 {
				return l.err("ncclCommUserRank", int(r), comm)
			}
			rks[i].rank = rank
			c.ranks[i] = int(rank)
		}
		return nil
	})
	return c.started(ctx, err)
}

// newComms allocates the C side of the communicators of devs, in a world
// of world ranks.
func newComms(l *Library, rt *cuda.Runtime, devs []int, world int) *Comms {
	n := len(devs)
	c := &Comms{lib: l, rt: rt, devs: slices.Clone(devs), ranks: make([]int, n), world: world}
	c.cs = (*C.gdr_comms)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gdr_comms{}))))
	c.cs.n = C.int(n)
	c.cs.ranks = (*C.gdr_rank)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.gdr_rank{}))))
	return c
}

// started ends an initialisation: on its error the communicators are
// aborted (and kept if the CUDA thread hung), else every local rank gets
// its stream.
func (c *Comms) started(ctx context.Context, err error) (*Comms, error) {
	if err != nil {
		if errors.Is(err, cuda.ErrHung) {
			c.keep() // the CUDA thread may still write into cs
		}
		c.Abort()
		return nil, err
	}
	for i, d := range c.devs {
		rt := c.rt
		s, err := rt.StreamCreate(ctx, d)
		if err != nil {
			c.Abort()
			return nil, err
		}
		c.view()[i].stream = C.gdr_stream(s.Raw())
	}
	return c, nil
}

// UniqueIDSize is the shim's NCCL_UNIQUE_ID_BYTES: these two arrays fail
// to compile if ever the two differ.
var (
	_ [UniqueIDSize - C.GDR_NCCL_UNIQUE_ID_BYTES]struct{}
	_ [C.GDR_NCCL_UNIQUE_ID_BYTES - UniqueIDSize]struct{}
)

// UniqueID makes the id of a new communicator (ncclGetUniqueId): rank 0
// makes it and hands it to every other rank, which pass it to InitRank.
// NCCL starts its bootstrap listener here (on NCCL_SOCKET_IFNAME's
// interface), so it runs on the CUDA thread under the call deadline.
func (l *Library) UniqueID(ctx context.Context, rt *cuda.Runtime) ([]byte, error) {
	var id C.gdr_ncclUniqueId
	err := rt.Do(ctx, "ncclGetUniqueId", func() error {
		if r := C.gdr_nccl_unique_id(l.c, &id); r != 0 {
			return l.err("ncclGetUniqueId", int(r), nil)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return C.GoBytes(unsafe.Pointer(&id.internal[0]), UniqueIDSize), nil
}

// InitRank joins this process's one GPU, dev, to a communicator of world
// ranks as rank (ncclCommInitRank, the device set in the same C call),
// under a deadline: it returns once every rank has joined, or fails. The
// id is rank 0's UniqueID.
func (l *Library) InitRank(ctx context.Context, rt *cuda.Runtime, dev int, id []byte, rank, world int, timeout time.Duration) (*Comms, error) {
	switch {
	case len(id) != UniqueIDSize:
		return nil, fmt.Errorf("ncclCommInitRank: unique id of %d bytes, want %d", len(id), UniqueIDSize)
	case world < 1 || rank < 0 || rank >= world:
		return nil, fmt.Errorf("ncclCommInitRank: rank %d of %d", rank, world)
	}
	c := newComms(l, rt, []int{dev}, world)
	c.ranks[0] = rank
	err := rt.DoTimeout(ctx, "ncclCommInitRank", timeout, func() error {
		var cid C.gdr_ncclUniqueId
		for i, b := range id {
			cid.internal[i] = C.char(b)
		}
		var comm C.gdr_ncclComm
		code := int(C.gdr_nccl_init_rank(l.c, (*C.gdr_cudart)(rt.CPtr()), C.int(dev), &comm, C.int(world), &cid, C.int(rank)))
		if code != 0 {
			return l.status(rt, fmt.Sprintf("ncclCommInitRank(rank %d of %d, device %d)", rank, world, dev), code)
		}
		rk := &c.view()[0]
		rk.dev = C.int(dev)
		rk.rank = C.int(rank)
		rk.comm = comm
		return nil
	})
	return c.started(ctx, err)
}

// InitRanks joins this process's GPUs, devs, to a communicator of world
// ranks as ranks first..first+len(devs)-1, in one group (ncclGroupStart,
// then per device: set it, ncclCommInitRank; ncclGroupEnd), in one call
// on the CUDA thread, under a deadline: one process driving several GPUs
// of a multi-process job, as nccl-tests does with -g under MPI. It
// returns once every rank of every process has joined, or fails. One
// device is InitRank.
func (l *Library) InitRanks(ctx context.Context, rt *cuda.Runtime, devs []int, id []byte, first, world int, timeout time.Duration) (*Comms, error) {
	n := len(devs)
	switch {
	case n == 1:
		return l.InitRank(ctx, rt, devs[0], id, first, world, timeout)
	case n == 0:
		return nil, fmt.Errorf("ncclCommInitRank: no device")
	case len(id) != UniqueIDSize:
		return nil, fmt.Errorf("ncclCommInitRank: unique id of %d bytes, want %d", len(id), UniqueIDSize)
	case world < 1 || first < 0 || first+n > world:
		return nil, fmt.Errorf("ncclCommInitRank: ranks %d..%d of %d", first, first+n-1, world)
	}
	for i, d := range devs {
		if slices.Contains(devs[:i], d) {
			return nil, fmt.Errorf("ncclCommInitRank: device %d given twice: NCCL refuses two ranks of one communicator on one GPU", d)
		}
	}
	c := newComms(l, rt, devs, world)
	for i := range devs {
		c.ranks[i] = first + i
	}
	err := rt.DoTimeout(ctx, "ncclCommInitRank", timeout, func() error {
		var cid C.gdr_ncclUniqueId
		for i, b := range id {
			cid.internal[i] = C.char(b)
		}
		comms := (*C.gdr_ncclComm)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.gdr_ncclComm(nil)))))
		defer C.free(unsafe.Pointer(comms))
		cdevs := (*C.int)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.int(0)))))
		defer C.free(unsafe.Pointer(cdevs))
		for i, d := range devs {
			unsafe.Slice(cdevs, n)[i] = C.int(d)
		}
		code := int(C.gdr_nccl_init_ranks(l.c, (*C.gdr_cudart)(rt.CPtr()), C.int(n), cdevs, comms, C.int(world), &cid, C.int(first)))
		// Every communicator made, even by a group that failed, is the
		// Comms' to abort.
		rks := c.view()
		for i, comm := range unsafe.Slice(comms, n) {
			rks[i].dev, rks[i].rank, rks[i].comm = C.int(devs[i]), C.int(first+i), comm
		}
		if code != 0 {
			return l.status(rt, fmt.Sprintf("ncclCommInitRank(ranks %d..%d of %d, devices %s)", first, first+n-1, world, intList(devs)), code)
		}
		return nil
	})
	return c.started(ctx, err)
}

// intList is "0,1,2".
func intList(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// HasSplit reports ncclCommSplit (NCCL 2.18+).
func (l *Library) HasSplit() bool { return C.gdr_nccl_has_split(l.c) != 0 }

// Split makes the sub-communicator of this process's one rank
// (ncclCommSplit with the parent's configuration): the ranks that give
// the same color form one, ordered by key. Every rank of the parent must
// call it (collectively), under the deadline.
func (c *Comms) Split(ctx context.Context, color, key int, timeout time.Duration) (*Comms, error) {
	if !c.lib.HasSplit() {
		return nil, fmt.Errorf("%s has no ncclCommSplit (NCCL 2.18 or later has it)", c.lib.Path)
	}
	if len(c.devs) != 1 {
		return nil, fmt.Errorf("ncclCommSplit: %d local ranks; one process, one rank", len(c.devs))
	}
	if color < 0 {
		return nil, fmt.Errorf("ncclCommSplit: color %d: want 0 or more", color)
	}
	dev := c.devs[0]
	var sub *Comms
	err := c.use(func() error {
		return c.rt.DoTimeout(ctx, "ncclCommSplit", timeout, func() error {
			parent := C.gdr_ncclComm(atomicLoadPointer(&c.view()[0].comm))
			if parent == nil {
				return ErrAborted
			}
			var comm C.gdr_ncclComm
			var rank, size C.int
			code := int(C.gdr_nccl_split(c.lib.c, (*C.gdr_cudart)(c.rt.CPtr()), C.int(dev), parent, C.int(color), C.int(key), &comm, &rank, &size))
			if code != 0 {
				return c.lib.status(c.rt, fmt.Sprintf("ncclCommSplit(color %d, key %d)", color, key), code)
			}
			sub = newComms(c.lib, c.rt, []int{dev}, int(size))
			sub.ranks[0] = int(rank)
			rk := &sub.view()[0]
			rk.dev, rk.rank, rk.comm = C.int(dev), rank, comm
			return nil
		})
	})
	if sub == nil {
		return nil, err
	}
	return sub.started(ctx, err)
}

// view is the C array of ranks as a Go slice: every index is checked.
func (c *Comms) view() []C.gdr_rank { return unsafe.Slice(c.cs.ranks, len(c.devs)) }

// Size is the number of local ranks: the GPUs this process drives.
func (c *Comms) Size() int { return len(c.devs) }

// World is the number of ranks of the communicator, in every process
// (Size for ncclCommInitAll).
func (c *Comms) World() int { return c.world }

// Device of local rank i.
func (c *Comms) Device(i int) int { return c.devs[i] }

// Rank is local rank i's global rank.
func (c *Comms) Rank(i int) int { return c.ranks[i] }

// SetBuffers gives local rank i its send and receive buffers.
func (c *Comms) SetBuffers(i int, send, recv cuda.DevPtr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrAborted
	}
	if i < 0 || i >= len(c.devs) {
		return fmt.Errorf("SetBuffers: local rank %d of %d", i, len(c.devs))
	}
	rk := &c.view()[i]
	rk.send = (*C.char)(send.Raw())
	rk.recv = (*C.char)(recv.Raw())
	return nil
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
	o.nranks = C.int(c.world)
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

// result turns a shim return code into an error. Call it on the
// runtime's thread.
func (c *Comms) result(call string, code int, bad int) error {
	switch {
	case code == 0:
		return nil
	case code == -1:
		return fmt.Errorf("%s: %w", call, cuda.ErrTimeout)
	case code == -2:
		return fmt.Errorf("%s: %w", call, context.Canceled)
	case code == C.GDR_ABORTED:
		return fmt.Errorf("%s: %w", call, ErrAborted)
	case code >= 1000 && bad >= 0 && bad < len(c.devs):
		comm := C.gdr_ncclComm(atomicLoadPointer(&c.view()[bad].comm))
		return c.lib.err(fmt.Sprintf("%s (GPU %d)", call, c.devs[bad]), code-1000, comm)
	}
	return c.lib.status(c.rt, call, code)
}

// atomicLoadPointer reads a pointer the C side exchanges atomically.
func atomicLoadPointer(p *C.gdr_ncclComm) unsafe.Pointer {
	return atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(p)))
}

// use runs fn, which hands cs to the CUDA thread, unless the
// communicators are closed; Abort and Destroy wait for it.
func (c *Comms) use(fn func() error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return ErrAborted
	}
	return fn()
}

// Enqueue launches iters operations on every local rank, iterations
// first..first+iters-1 (which pick the buffer shift), in one call to the
// CUDA thread, without waiting for them.
func (c *Comms) Enqueue(ctx context.Context, op Op, first, iters int) error {
	return c.use(func() error {
		o := c.cop(op)
		defer C.free(unsafe.Pointer(o))
		return c.rt.Do(ctx, "NCCL enqueue", func() error {
			code := C.gdr_nccl_enqueue(c.lib.c, o, c.cs, C.int(first), C.int(iters), (*C.int)(c.rt.CancelPtr()))
			return c.result("NCCL enqueue", int(code), -1)
		})
	})
}

// Wait waits until every local stream is idle, at most timeout.
func (c *Comms) Wait(ctx context.Context, timeout time.Duration) error {
	return c.use(func() error {
		return c.rt.DoWait(ctx, "NCCL wait", timeout, func(deadline float64) error {
			var bad C.int
			code := C.gdr_nccl_wait(c.lib.c, (*C.gdr_cudart)(c.rt.CPtr()), c.cs, C.double(deadline), (*C.int)(c.rt.CancelPtr()), &bad)
			return c.result("NCCL wait", int(code), int(bad))
		})
	})
}

// Timed enqueues iters operations and waits for all of them, returning
// the host-clock seconds from the first enqueue to the end (nccl-tests'
// timing).
func (c *Comms) Timed(ctx context.Context, op Op, iters int, timeout time.Duration) (float64, error) {
	var sec C.double
	err := c.use(func() error {
		o := c.cop(op)
		defer C.free(unsafe.Pointer(o))
		return c.rt.DoWait(ctx, "NCCL timed loop", timeout, func(deadline float64) error {
			var bad C.int
			code := C.gdr_nccl_timed(c.lib.c, (*C.gdr_cudart)(c.rt.CPtr()), o, c.cs, C.int(iters), C.double(deadline), (*C.int)(c.rt.CancelPtr()), &sec, &bad)
			return c.result("NCCL timed loop", int(code), int(bad))
		})
	})
	return float64(sec), err
}

// Abort aborts every communicator (ncclCommAbort) and frees the C memory.
// The CUDA thread does it: Abort raises the abort flag, which a wait in
// progress there sees before its next poll (it aborts and returns
// ErrAborted), then waits for the calls in progress and runs the abort on
// that thread. Only when the thread is wedged does Abort, as a last
// resort, call ncclCommAbort from a goroutine of its own, under a
// deadline; the C memory is then kept, since the wedged thread may still
// read it. Safe to call more than once; the Comms are unusable afterwards.
func (c *Comms) Abort() error {
	c.csMu.Lock()
	if c.cs != nil {
		atomic.StoreInt32((*int32)(unsafe.Pointer(&c.cs.abort)), 1)
	}
	c.csMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	ctx := context.Background()
	var code C.int
	err := c.rt.Do(ctx, "ncclCommAbort", func() error {
		code = C.gdr_nccl_abort_all(c.lib.c, c.cs)
		if code == 0 {
			code = c.cs.abort_result
		}
		return nil
	})
	if err == nil {
		if code != 0 {
			err = c.lib.err("ncclCommAbort", int(code)-1000, nil)
		}
		c.free()
		return err
	}
	c.keep()
	// Last resort: the CUDA thread is stuck. If it still polls, it sees
	// the flag and aborts by itself; give it that chance first.
	for t := time.Now(); time.Since(t) < lastResortWait; time.Sleep(10 * time.Millisecond) {
		if atomic.LoadInt32((*int32)(unsafe.Pointer(&c.cs.aborted))) != 0 {
			return err
		}
	}
	last := watchdog.New(cuda.ErrHung).Do(ctx, watchdog.Call{Name: "ncclCommAbort from another thread", Timeout: cuda.DefaultCallTimeout}, func() error {
		if r := C.gdr_nccl_abort_all(c.lib.c, c.cs); r != 0 {
			return c.lib.err("ncclCommAbort", int(r)-1000, nil)
		}
		return nil
	})
	return errors.Join(err, last)
}

// keep marks the C memory (and the library) as possibly still in use by
// a wedged CUDA thread: neither is ever freed.
func (c *Comms) keep() {
	c.kept = true
	c.lib.kept.Store(true)
}

// free releases the C memory unless another thread may still use it.
func (c *Comms) free() {
	c.csMu.Lock()
	defer c.csMu.Unlock()
	if c.kept || c.cs == nil {
		return
	}
	C.free(unsafe.Pointer(c.cs.ranks))
	C.free(unsafe.Pointer(c.cs))
	c.cs = nil
}

// Destroy releases the communicators and streams cleanly, and the C
// memory unless the CUDA thread hung on the way.
func (c *Comms) Destroy(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for i, d := range c.devs {
		err := c.rt.Do(ctx, "ncclCommDestroy", func() error {
			rk := &c.view()[i]
			comm := C.gdr_ncclComm(atomic.SwapPointer((*unsafe.Pointer)(unsafe.Pointer(&rk.comm)), nil))
			if comm != nil {
				if r := C.gdr_nccl_destroy(c.lib.c, comm); r != 0 {
					return c.lib.err("ncclCommDestroy", int(r), nil)
				}
			}
			return nil
		})
		errs = append(errs, err)
		if errors.Is(err, cuda.ErrHung) {
			c.keep()
			break
		}
		if s := c.view()[i].stream; s != nil {
			errs = append(errs, c.rt.StreamDestroy(ctx, d, cuda.StreamOf(unsafe.Pointer(s))))
			c.view()[i].stream = nil
		}
	}
	c.free()
	return errors.Join(errs...)
}

// lastResortWait is how long Abort lets a CUDA thread that counts as
// wedged, but may still be polling, answer the abort flag itself before
// another thread aborts.
const lastResortWait = time.Second
