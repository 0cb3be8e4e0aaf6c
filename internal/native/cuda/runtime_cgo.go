//go:build cgo

package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include <string.h>
#include "shim.h"

static const char *gdr_err_name(gdr_cudart *l, gdr_cudaError e) { return l->GetErrorName(e); }
static const char *gdr_err_string(gdr_cudart *l, gdr_cudaError e) { return l->GetErrorString(e); }
static gdr_cudaError gdr_runtime_version(gdr_cudart *l, int *v) { return l->RuntimeGetVersion(v); }
static gdr_cudaError gdr_driver_version(gdr_cudart *l, int *v) { return l->DriverGetVersion(v); }
static gdr_cudaError gdr_device_count(gdr_cudart *l, int *n) { return l->GetDeviceCount(n); }
static gdr_cudaError gdr_pci_bus_id(gdr_cudart *l, char *b, int n, int d) { return l->DeviceGetPCIBusId(b, n, d); }
static gdr_cudaError gdr_meminfo(gdr_cudart *l, int d, size_t *f, size_t *t) {
	gdr_cudaError e = l->SetDevice(d); if (e) return e; return l->MemGetInfo(f, t);
}
static gdr_cudaError gdr_malloc(gdr_cudart *l, int d, void **p, size_t n) {
	gdr_cudaError e = l->SetDevice(d); if (e) return e; return l->Malloc(p, n);
}
static gdr_cudaError gdr_free(gdr_cudart *l, int d, void *p) {
	gdr_cudaError e = l->SetDevice(d); if (e) return e; return l->Free(p);
}
static gdr_cudaError gdr_hostalloc(gdr_cudart *l, int d, void **p, size_t n) {
	gdr_cudaError e = l->SetDevice(d); if (e) return e; return l->HostAlloc(p, n, GDR_cudaHostAllocPortable);
}
static gdr_cudaError gdr_freehost(gdr_cudart *l, void *p) { return l->FreeHost(p); }
static gdr_cudaError gdr_memcpy(gdr_cudart *l, int d, void *dst, const void *src, size_t n, int kind) {
	gdr_cudaError e = l->SetDevice(d); if (e) return e; return l->Memcpy(dst, src, n, kind);
}
static gdr_cudaError gdr_memset(gdr_cudart *l, int d, void *p, int v, size_t n) {
	gdr_cudaError e = l->SetDevice(d); if (e) return e;
	e = l->Memset(p, v, n); if (e) return e; return l->DeviceSynchronize();
}
static gdr_cudaError gdr_stream_create(gdr_cudart *l, int d, gdr_stream *s) {
	gdr_cudaError e = l->SetDevice(d); if (e) return e; return l->StreamCreateWithFlags(s, GDR_cudaStreamNonBlocking);
}
static gdr_cudaError gdr_stream_destroy(gdr_cudart *l, int d, gdr_stream s) {
	gdr_cudaError e = l->SetDevice(d); if (e) return e; return l->StreamDestroy(s);
}
static gdr_cudaError gdr_can_peer(gdr_cudart *l, int *v, int a, int b) { return l->DeviceCanAccessPeer(v, a, b); }
static gdr_cudaError gdr_enable_peer(gdr_cudart *l, int d, int peer) {
	gdr_cudaError e = l->SetDevice(d); if (e) return e;
	e = l->DeviceEnablePeerAccess(peer, 0);
	if (e == GDR_cudaErrorPeerAccessAlreadyEnabled) { l->GetLastError(); return 0; }
	return e;
}
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gdrcheck/gdrcheck/internal/native/cudadrv"
	"github.com/gdrcheck/gdrcheck/internal/native/dl"
	"github.com/gdrcheck/gdrcheck/internal/watchdog"
)

// Runtime is a loaded CUDA runtime.
type Runtime struct {
	Path     string // the file that was loaded
	lib      *dl.Library
	c        *C.gdr_cudart
	cancel   *C.int // raised (atomically) to stop a spinning wait
	timeout  time.Duration
	grace    time.Duration
	calls    chan func()
	quit     chan struct{} // closed by Close
	exited   chan struct{} // closed when the worker has returned
	quitOnce sync.Once
	// life is held for reading by every Do, for writing by the worker
	// while it frees the C memory: a Do may still lower the cancel flag
	// after its task ended.
	life     sync.RWMutex
	guard    *watchdog.Guard
	origCPUs unix.CPUSet // the worker thread's own
}

// Open loads the CUDA runtime: path if given, else the usual search. The
// caller must Close it.
func Open(path string, opts ...Option) (*Runtime, error) {
	lib, err := dl.OpenTable(LibrarySpec(), path, unsafe.Sizeof(C.gdr_cudart{}), func(t, h unsafe.Pointer) string {
		return C.GoString(C.gdr_cudart_bind((*C.gdr_cudart)(t), h))
	}, "not a CUDA runtime, or older than 11.0?")
	if err != nil {
		return nil, err
	}
	c := (*C.gdr_cudart)(lib.Table())
	r := &Runtime{Path: lib.Resolved(), lib: lib, c: c, timeout: DefaultCallTimeout, grace: DefaultGrace,
		cancel: (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0))))),
		calls:  make(chan func()), quit: make(chan struct{}), exited: make(chan struct{}), guard: watchdog.New(ErrHung)}
	for _, o := range opts {
		o(r)
	}
	go r.worker()
	return r, nil
}

// Close ends the runtime's thread and frees its C memory (libcudart stays
// loaded: see dl.Library.Release); it waits for a
// call in progress. A runtime whose thread is wedged in a call is not
// freed (that thread may still use it): Close then returns an error at
// once. Calls after Close return ErrClosed; a second Close does nothing.
func (r *Runtime) Close() error {
	r.quitOnce.Do(func() { close(r.quit) })
	select {
	case <-r.exited:
		return nil
	case <-r.guard.WedgedC():
		return fmt.Errorf("CUDA runtime kept: %s never returned: %w", r.guard.Wedged(), ErrHung)
	}
}

// CPtr is the shim's function table, for other cgo packages (NCCL's timed
// loops) that include shim.h. Use it only inside Do.
func (r *Runtime) CPtr() unsafe.Pointer { return unsafe.Pointer(r.c) }

// CancelPtr is the flag spinning waits watch (read it with gdr_flag); Do
// raises it when the caller's context ends. Use it only inside Do.
func (r *Runtime) CancelPtr() unsafe.Pointer { return unsafe.Pointer(r.cancel) }

// worker runs every call on one locked OS thread. It never unlocks it:
// when the worker returns, the thread (its CUDA state, its CPU binding) is
// discarded with it.
func (r *Runtime) worker() {
	runtime.LockOSThread()
	defer close(r.exited)
	_ = unix.SchedGetaffinity(0, &r.origCPUs)
	for {
		select {
		case f := <-r.calls:
			f()
		case <-r.quit:
			r.life.Lock()
			C.free(unsafe.Pointer(r.cancel))
			r.lib.Release() // the table r.c; libcudart stays loaded
			r.life.Unlock()
			return
		}
	}
}

// start hands a task to the worker.
func (r *Runtime) start(ctx context.Context, task func()) error {
	select {
	case <-r.quit:
		return ErrClosed
	default:
	}
	select {
	case r.calls <- task:
		return nil
	case <-r.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// interrupt raises the cancel flag for a spinning wait; the returned
// function lowers it once the call came back.
func (r *Runtime) interrupt() func() {
	flag := (*int32)(unsafe.Pointer(r.cancel))
	atomic.StoreInt32(flag, 1)
	return func() { atomic.StoreInt32(flag, 0) }
}

// Do runs fn on the runtime's thread under the call deadline (or ctx's,
// whichever is sooner). name describes the call for errors.
func (r *Runtime) Do(ctx context.Context, name string, fn func() error) error {
	return r.DoTimeout(ctx, name, r.timeout, fn)
}

// DoTimeout is Do with an explicit deadline. When ctx ends while fn runs,
// the cancel flag is raised so a spinning wait inside fn returns; fn that
// does not return within the grace, or overruns the deadline, wedges the
// runtime (ErrHung, now and for every later call).
func (r *Runtime) DoTimeout(ctx context.Context, name string, timeout time.Duration, fn func() error) error {
	r.life.RLock()
	defer r.life.RUnlock()
	if r.closed() {
		return fmt.Errorf("%s: %w", name, ErrClosed)
	}
	return r.guard.Do(ctx, watchdog.Call{Name: name, Timeout: timeout, Start: r.start, Interrupt: r.interrupt, Grace: r.grace}, fn)
}

// DoWait runs fn, a call that waits for GPU work with its own deadline
// (gdr_now() seconds, as fn receives it) wait from now, on the runtime's
// thread; the call itself may take the grace longer before it counts as
// hung.
func (r *Runtime) DoWait(ctx context.Context, name string, wait time.Duration, fn func(deadline float64) error) error {
	return r.DoTimeout(ctx, name, wait+r.grace, func() error {
		return fn(float64(C.gdr_now()) + wait.Seconds())
	})
}

func (r *Runtime) closed() bool {
	select {
	case <-r.quit:
		return true
	default:
		return false
	}
}

// Check turns a CUDA status into an error with the library's own words;
// -1 and -2 are gdr_stream_wait's timeout and cancel. Call it on the
// runtime's thread (inside Do).
func (r *Runtime) Check(call string, code int) error {
	switch code {
	case 0:
		return nil
	case -1:
		return fmt.Errorf("%s: %w", call, ErrTimeout)
	case -2:
		return fmt.Errorf("%s: %w", call, context.Canceled)
	}
	e := &Error{Call: call, Code: code, Name: "cudaError", Msg: "unknown error"}
	if s := C.gdr_err_name(r.c, C.gdr_cudaError(code)); s != nil {
		e.Name = C.GoString(s)
	}
	if s := C.gdr_err_string(r.c, C.gdr_cudaError(code)); s != nil {
		e.Msg = C.GoString(s)
	}
	return e
}

// Versions returns the runtime's and the driver's CUDA versions.
func (r *Runtime) Versions(ctx context.Context) (runtimeVer, driverVer string, err error) {
	err = r.Do(ctx, "cudaRuntimeGetVersion", func() error {
		var rv, dv C.int
		if err := r.Check("cudaRuntimeGetVersion", int(C.gdr_runtime_version(r.c, &rv))); err != nil {
			return err
		}
		runtimeVer = cudadrv.VersionString(int(rv))
		if err := r.Check("cudaDriverGetVersion", int(C.gdr_driver_version(r.c, &dv))); err != nil {
			return err
		}
		if dv == 0 {
			driverVer = "none (no driver)"
		} else {
			driverVer = cudadrv.VersionString(int(dv))
		}
		return nil
	})
	return
}

// DeviceCount is the number of visible CUDA devices.
func (r *Runtime) DeviceCount(ctx context.Context) (int, error) {
	var n C.int
	err := r.Do(ctx, "cudaGetDeviceCount", func() error {
		return r.Check("cudaGetDeviceCount", int(C.gdr_device_count(r.c, &n)))
	})
	return int(n), err
}

// PCIBusID is the bus id of a device ("0000:00:06.0").
func (r *Runtime) PCIBusID(ctx context.Context, dev int) (string, error) {
	var out string
	err := r.Do(ctx, "cudaDeviceGetPCIBusId", func() error {
		buf := (*C.char)(C.calloc(64, 1))
		defer C.free(unsafe.Pointer(buf))
		if err := r.Check("cudaDeviceGetPCIBusId", int(C.gdr_pci_bus_id(r.c, buf, 64, C.int(dev)))); err != nil {
			return err
		}
		out = C.GoString(buf)
		return nil
	})
	return out, err
}

// MemInfo is a device's free and total memory in bytes.
func (r *Runtime) MemInfo(ctx context.Context, dev int) (free, total uint64, err error) {
	err = r.Do(ctx, "cudaMemGetInfo", func() error {
		var f, t C.size_t
		if err := r.Check("cudaMemGetInfo", int(C.gdr_meminfo(r.c, C.int(dev), &f, &t))); err != nil {
			return err
		}
		free, total = uint64(f), uint64(t)
		return nil
	})
	return
}

// Malloc allocates device memory on dev.
func (r *Runtime) Malloc(ctx context.Context, dev int, bytes uint64) (DevPtr, error) {
	var p unsafe.Pointer
	err := r.Do(ctx, "cudaMalloc", func() error {
		return r.Check(fmt.Sprintf("cudaMalloc(%d bytes) on device %d", bytes, dev), int(C.gdr_malloc(r.c, C.int(dev), &p, C.size_t(bytes))))
	})
	if err != nil {
		return DevPtr{}, err
	}
	return DevPtr{p, bytes}, nil
}

// Free releases device memory.
func (r *Runtime) Free(ctx context.Context, dev int, p DevPtr) error {
	if p.Nil() {
		return nil
	}
	return r.Do(ctx, "cudaFree", func() error {
		return r.Check("cudaFree", int(C.gdr_free(r.c, C.int(dev), p.p)))
	})
}

// HostAlloc allocates pinned (page-locked) host memory. The pages are
// placed by the calling thread's NUMA policy: pin the thread first.
func (r *Runtime) HostAlloc(ctx context.Context, dev int, bytes uint64) (HostPtr, error) {
	var p unsafe.Pointer
	err := r.Do(ctx, "cudaHostAlloc", func() error {
		return r.Check(fmt.Sprintf("cudaHostAlloc(%d bytes)", bytes), int(C.gdr_hostalloc(r.c, C.int(dev), &p, C.size_t(bytes))))
	})
	if err != nil {
		return HostPtr{}, err
	}
	return HostPtr{p, bytes}, nil
}

// FreeHost releases pinned host memory.
func (r *Runtime) FreeHost(ctx context.Context, p HostPtr) error {
	if p.Nil() {
		return nil
	}
	return r.Do(ctx, "cudaFreeHost", func() error {
		return r.Check("cudaFreeHost", int(C.gdr_freehost(r.c, p.p)))
	})
}

// Memcpy copies synchronously (with dev current); the direction follows
// from the kinds of memory.
func (r *Runtime) Memcpy(ctx context.Context, dev int, dst, src Mem, bytes uint64) error {
	kind := kindOf(dst, src)
	call := fmt.Sprintf("cudaMemcpy(%d bytes, kind %d)", bytes, kind)
	if err := fits(call, bytes, dst, src); err != nil {
		return err
	}
	return r.Do(ctx, "cudaMemcpy", func() error {
		return r.Check(call, int(C.gdr_memcpy(r.c, C.int(dev), dst.base(), src.base(), C.size_t(bytes), C.int(kind))))
	})
}

// Memset fills device memory with a byte value and waits for it.
func (r *Runtime) Memset(ctx context.Context, dev int, p DevPtr, value byte, bytes uint64) error {
	if err := fits("cudaMemset", bytes, p); err != nil {
		return err
	}
	return r.Do(ctx, "cudaMemset", func() error {
		return r.Check("cudaMemset", int(C.gdr_memset(r.c, C.int(dev), p.p, C.int(value), C.size_t(bytes))))
	})
}

// StreamCreate makes a non-blocking stream on dev.
func (r *Runtime) StreamCreate(ctx context.Context, dev int) (Stream, error) {
	var s C.gdr_stream
	err := r.Do(ctx, "cudaStreamCreateWithFlags", func() error {
		return r.Check("cudaStreamCreateWithFlags", int(C.gdr_stream_create(r.c, C.int(dev), &s)))
	})
	return Stream{unsafe.Pointer(s)}, err
}

// StreamDestroy releases a stream.
func (r *Runtime) StreamDestroy(ctx context.Context, dev int, s Stream) error {
	return r.Do(ctx, "cudaStreamDestroy", func() error {
		return r.Check("cudaStreamDestroy", int(C.gdr_stream_destroy(r.c, C.int(dev), C.gdr_stream(s.h))))
	})
}

// CanAccessPeer reports whether dev can map peer's memory.
func (r *Runtime) CanAccessPeer(ctx context.Context, dev, peer int) (bool, error) {
	var v C.int
	err := r.Do(ctx, "cudaDeviceCanAccessPeer", func() error {
		return r.Check("cudaDeviceCanAccessPeer", int(C.gdr_can_peer(r.c, &v, C.int(dev), C.int(peer))))
	})
	return v != 0, err
}

// EnablePeer lets dev access peer's memory (already enabled is fine).
func (r *Runtime) EnablePeer(ctx context.Context, dev, peer int) error {
	return r.Do(ctx, "cudaDeviceEnablePeerAccess", func() error {
		return r.Check(fmt.Sprintf("cudaDeviceEnablePeerAccess(%d->%d)", dev, peer), int(C.gdr_enable_peer(r.c, C.int(dev), C.int(peer))))
	})
}

// CopyTimed enqueues the copies between two events and returns the
// milliseconds the GPU took for all of them.
func (r *Runtime) CopyTimed(ctx context.Context, s CopySpec) (float64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	var ms C.float
	err := r.DoWait(ctx, "timed copy", s.Timeout, func(deadline float64) error {
		return r.Check(fmt.Sprintf("timed copy (%d x %d bytes, kind %d)", s.Iters, s.Bytes, s.Kind), int(C.gdr_copy_timed(r.c, C.int(s.Dev),
			addr(s.Dst), addr(s.Src), C.size_t(s.Bytes), C.int(s.Kind), C.int(s.DstDev), C.int(s.SrcDev),
			C.gdr_stream(s.Stream.h), addr(s.RevDst), addr(s.RevSrc), C.gdr_stream(s.Stream2.h),
			C.int(s.Iters), C.double(deadline), r.cancel, &ms)))
	})
	return float64(ms), err
}

// PageableAlloc allocates ordinary (pageable) host memory and touches every
// page from the runtime's thread, so the pages land on that thread's NUMA
// node (pin it first with PinThread).
func (r *Runtime) PageableAlloc(ctx context.Context, bytes uint64) (HostPtr, error) {
	var p unsafe.Pointer
	err := r.Do(ctx, "malloc", func() error {
		// Page-aligned, as allocators for large buffers give it.
		if C.posix_memalign(&p, 4096, C.size_t(bytes)) != 0 || p == nil {
			return fmt.Errorf("malloc(%d bytes): out of host memory", bytes)
		}
		C.memset(p, 0, C.size_t(bytes))
		return nil
	})
	if err != nil {
		return HostPtr{}, err
	}
	return HostPtr{p, bytes}, nil
}

// PageableFree releases memory from PageableAlloc.
func (r *Runtime) PageableFree(p HostPtr) {
	if !p.Nil() {
		C.free(p.p)
	}
}

// PinThread binds the runtime's thread to CPUs (the GPU's local ones, so
// host buffers and the copy engine's host side stay on its NUMA node).
// An empty set restores the affinity the thread started with.
func (r *Runtime) PinThread(ctx context.Context, cpus []int) error {
	return r.Do(ctx, "sched_setaffinity", func() error {
		set := r.origCPUs
		if len(cpus) > 0 {
			set.Zero()
			for _, c := range cpus {
				set.Set(c)
			}
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("sched_setaffinity(%v): %w", cpus, err)
		}
		return nil
	})
}

// kindOf is the cudaMemcpyKind of a copy between these kinds of memory.
func kindOf(dst, src Mem) int {
	switch {
	case dst.device() && src.device():
		return DeviceToDevice
	case dst.device():
		return HostToDevice
	case src.device():
		return DeviceToHost
	}
	return hostToHost
}

const hostToHost = 0 // cudaMemcpyHostToHost

// fits checks that bytes lie inside every one of mems.
func fits(call string, bytes uint64, mems ...Mem) error {
	for _, m := range mems {
		if m != nil && bytes > m.size() {
			return fmt.Errorf("%s: %d bytes do not fit a %d-byte buffer", call, bytes, m.size())
		}
	}
	return nil
}

// check catches a copy whose buffers are too small or whose kind does
// not match its kinds of memory.
func (s CopySpec) check() error {
	call := fmt.Sprintf("timed copy (%d bytes, kind %d)", s.Bytes, s.Kind)
	if s.Dst == nil || s.Src == nil || (s.RevDst == nil) != (s.RevSrc == nil) {
		return fmt.Errorf("%s: a buffer is missing", call)
	}
	want := kindOf(s.Dst, s.Src)
	if s.Kind == PeerToPeer && want == DeviceToDevice {
		want = PeerToPeer
	}
	if s.Kind != want || (s.RevDst != nil && kindOf(s.RevDst, s.RevSrc) != kindOf(s.Src, s.Dst)) {
		return fmt.Errorf("%s: the buffers' kinds of memory do not match", call)
	}
	return fits(call, s.Bytes, s.Dst, s.Src, s.RevDst, s.RevSrc)
}

// addr is a Mem's address, NULL for none.
func addr(m Mem) unsafe.Pointer {
	if m == nil {
		return nil
	}
	return m.base()
}
