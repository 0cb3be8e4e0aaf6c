// Package cuda calls the CUDA runtime (libcudart.so.13, else .12) through a
// small cgo shim that dlopens it at run time with our own prototypes. Every
// call runs on one dedicated OS thread (the runtime's current device is per
// thread, so "set device, then work" always happens inside one C call on
// that thread) under a deadline: a call that does not return in time marks
// the runtime wedged and becomes an error, never a hang of the caller.
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
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gdrcheck/gdrcheck/internal/native/dl"
)

// LibrarySpec is how the CUDA runtime is found.
func LibrarySpec() dl.Spec {
	return dl.Spec{
		What:     "CUDA runtime (libcudart.so.13 or libcudart.so.12)",
		Names:    []string{"libcudart.so.13", "libcudart.so.12"},
		EnvPath:  "GDRCHECK_CUDART",
		HomeVars: []string{"CUDA_HOME", "CUDA_PATH"},
		HomeSubs: []string{"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"},
		Dirs: []string{"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/local/cuda/targets/sbsa-linux/lib",
			"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/local/lib"},
	}
}

// DefaultCallTimeout bounds one runtime call.
const DefaultCallTimeout = 60 * time.Second

// ErrHung is returned when a call did not come back before its deadline.
var ErrHung = errors.New("CUDA call did not return within its deadline")

// ErrTimeout is returned when GPU work did not finish before its deadline
// (the call itself came back: the runtime is still usable).
var ErrTimeout = errors.New("GPU work did not finish within its deadline")

// Error is a CUDA runtime error with the library's own name and message.
type Error struct {
	Call string
	Code int
	Name string
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d): %s", e.Call, e.Name, e.Code, e.Msg)
}

// Well-known error codes callers test for.
const (
	ErrCodeMemoryAllocation = 2
	ErrCodeNoDevice         = 100
	ErrCodeInvalidDevice    = 101
	ErrCodeDevicesBusy      = 46 // cudaErrorDevicesUnavailable (exclusive-process GPU in use)
)

// IsCode reports whether err is a CUDA error with that code.
func IsCode(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Runtime is a loaded CUDA runtime.
type Runtime struct {
	Path     string // the file that was loaded
	lib      *dl.Library
	c        *C.gdr_cudart
	cancel   *C.int // set to 1 to stop a spinning wait
	timeout  time.Duration
	calls    chan func()
	mu       sync.Mutex
	wedged   string
	origCPUs unix.CPUSet
}

// Option configures Open.
type Option func(*Runtime)

// WithCallTimeout sets the deadline of each call.
func WithCallTimeout(d time.Duration) Option { return func(r *Runtime) { r.timeout = d } }

// Open loads the CUDA runtime: path if given, else the usual search.
func Open(path string, opts ...Option) (*Runtime, error) {
	lib, err := dl.Open(LibrarySpec(), path)
	if err != nil {
		return nil, err
	}
	c := (*C.gdr_cudart)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gdr_cudart{}))))
	if missing := C.gdr_cudart_bind(c, lib.Handle()); missing != nil {
		C.free(unsafe.Pointer(c))
		return nil, fmt.Errorf("%s: missing entry point %s (not a CUDA runtime, or older than 11.0?)", lib.Path, C.GoString(missing))
	}
	r := &Runtime{Path: lib.Resolved(), lib: lib, c: c, timeout: DefaultCallTimeout, calls: make(chan func()),
		cancel: (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0)))))}
	for _, o := range opts {
		o(r)
	}
	go r.worker()
	return r, nil
}

// CPtr is the shim's function table, for other cgo packages (NCCL's timed
// loops) that include shim.h. Use it only inside Do.
func (r *Runtime) CPtr() unsafe.Pointer { return unsafe.Pointer(r.c) }

// CancelPtr is the flag spinning waits watch; Do sets it when the caller's
// context ends.
func (r *Runtime) CancelPtr() unsafe.Pointer { return unsafe.Pointer(r.cancel) }

// worker runs every call on one locked OS thread.
func (r *Runtime) worker() {
	runtime.LockOSThread()
	_ = unix.SchedGetaffinity(0, &r.origCPUs)
	for f := range r.calls {
		f()
	}
}

// Do runs fn on the runtime's thread under the call deadline (or ctx's,
// whichever is sooner). name describes the call for errors.
func (r *Runtime) Do(ctx context.Context, name string, fn func() error) error {
	return r.DoTimeout(ctx, name, r.timeout, fn)
}

// DoTimeout is Do with an explicit deadline. While fn runs, the end of ctx
// raises the cancel flag so a spinning wait inside fn returns.
func (r *Runtime) DoTimeout(ctx context.Context, name string, timeout time.Duration, fn func() error) error {
	r.mu.Lock()
	w := r.wedged
	r.mu.Unlock()
	if w != "" {
		return fmt.Errorf("%s not attempted: %s did not return earlier: %w", name, w, ErrHung)
	}
	done := make(chan error, 1)
	task := func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("%s: panicked: %v", name, p)
			}
		}()
		done <- fn()
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r.calls <- task:
	case <-t.C:
		return fmt.Errorf("%s: the CUDA thread is busy (no answer within %s): %w", name, timeout, ErrHung)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", name, ctx.Err())
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// Ask a spinning wait to give up, then give it a moment.
		*r.cancel = 1
		select {
		case err := <-done:
			*r.cancel = 0
			if err == nil {
				err = ctx.Err()
			}
			return err
		case <-time.After(5 * time.Second):
		}
	case <-t.C:
	}
	r.mu.Lock()
	r.wedged = name
	r.mu.Unlock()
	if ctx.Err() != nil {
		return fmt.Errorf("%s: interrupted while the GPU was working: %w", name, ctx.Err())
	}
	return fmt.Errorf("%s: no answer within %s: %w", name, timeout, ErrHung)
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

func versionString(v int) string { return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10) }

// Versions returns the runtime's and the driver's CUDA versions.
func (r *Runtime) Versions(ctx context.Context) (runtimeVer, driverVer string, err error) {
	err = r.Do(ctx, "cudaRuntimeGetVersion", func() error {
		var rv, dv C.int
		if err := r.Check("cudaRuntimeGetVersion", int(C.gdr_runtime_version(r.c, &rv))); err != nil {
			return err
		}
		runtimeVer = versionString(int(rv))
		if err := r.Check("cudaDriverGetVersion", int(C.gdr_driver_version(r.c, &dv))); err != nil {
			return err
		}
		if dv == 0 {
			driverVer = "none (no driver)"
		} else {
			driverVer = versionString(int(dv))
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

// Ptr is an address in device or pinned host memory (never Go memory).
type Ptr struct{ p unsafe.Pointer }

// Add offsets a pointer.
func (p Ptr) Add(off uint64) Ptr { return Ptr{unsafe.Add(p.p, uintptr(off))} }

// Nil reports a null pointer.
func (p Ptr) Nil() bool { return p.p == nil }

// Raw is the address for other cgo packages.
func (p Ptr) Raw() unsafe.Pointer { return p.p }

// PtrOf wraps an address another cgo package got from C (ncclMemAlloc).
func PtrOf(p unsafe.Pointer) Ptr { return Ptr{p} }

// Malloc allocates device memory on dev.
func (r *Runtime) Malloc(ctx context.Context, dev int, bytes uint64) (Ptr, error) {
	var p unsafe.Pointer
	err := r.Do(ctx, "cudaMalloc", func() error {
		return r.Check(fmt.Sprintf("cudaMalloc(%d bytes) on device %d", bytes, dev), int(C.gdr_malloc(r.c, C.int(dev), &p, C.size_t(bytes))))
	})
	return Ptr{p}, err
}

// Free releases device memory.
func (r *Runtime) Free(ctx context.Context, dev int, p Ptr) error {
	if p.Nil() {
		return nil
	}
	return r.Do(ctx, "cudaFree", func() error {
		return r.Check("cudaFree", int(C.gdr_free(r.c, C.int(dev), p.p)))
	})
}

// HostAlloc allocates pinned (page-locked) host memory. The pages are
// placed by the calling thread's NUMA policy: pin the thread first.
func (r *Runtime) HostAlloc(ctx context.Context, dev int, bytes uint64) (Ptr, error) {
	var p unsafe.Pointer
	err := r.Do(ctx, "cudaHostAlloc", func() error {
		return r.Check(fmt.Sprintf("cudaHostAlloc(%d bytes)", bytes), int(C.gdr_hostalloc(r.c, C.int(dev), &p, C.size_t(bytes))))
	})
	return Ptr{p}, err
}

// FreeHost releases pinned host memory.
func (r *Runtime) FreeHost(ctx context.Context, p Ptr) error {
	if p.Nil() {
		return nil
	}
	return r.Do(ctx, "cudaFreeHost", func() error {
		return r.Check("cudaFreeHost", int(C.gdr_freehost(r.c, p.p)))
	})
}

// Copy kinds (cudaMemcpyKind).
const (
	HostToDevice   = 1
	DeviceToHost   = 2
	DeviceToDevice = 3
	Default        = 4
	PeerToPeer     = -1 // gdrcheck's own: cudaMemcpyPeerAsync
)

// Memcpy copies synchronously (with dev current).
func (r *Runtime) Memcpy(ctx context.Context, dev int, dst, src Ptr, bytes uint64, kind int) error {
	return r.Do(ctx, "cudaMemcpy", func() error {
		return r.Check(fmt.Sprintf("cudaMemcpy(%d bytes, kind %d)", bytes, kind), int(C.gdr_memcpy(r.c, C.int(dev), dst.p, src.p, C.size_t(bytes), C.int(kind))))
	})
}

// Memset fills device memory with a byte value and waits for it.
func (r *Runtime) Memset(ctx context.Context, dev int, p Ptr, value byte, bytes uint64) error {
	return r.Do(ctx, "cudaMemset", func() error {
		return r.Check("cudaMemset", int(C.gdr_memset(r.c, C.int(dev), p.p, C.int(value), C.size_t(bytes))))
	})
}

// Stream is a CUDA stream handle.
type Stream struct{ h unsafe.Pointer }

// Raw is the handle for other cgo packages.
func (s Stream) Raw() unsafe.Pointer { return s.h }

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

// CopySpec is one timed copy loop.
type CopySpec struct {
	Dev      int // current device for the loop (and its stream)
	Dst, Src Ptr
	Bytes    uint64
	Kind     int // HostToDevice, DeviceToHost, DeviceToDevice or PeerToPeer
	DstDev   int // for PeerToPeer
	SrcDev   int
	Stream   Stream
	// RevDst/RevSrc/Stream2 run the opposite direction at the same time
	// (bidirectional); nil for one-way.
	RevDst, RevSrc Ptr
	Stream2        Stream
	Iters          int
	Timeout        time.Duration
}

// CopyTimed enqueues the copies between two events and returns the
// milliseconds the GPU took for all of them.
func (r *Runtime) CopyTimed(ctx context.Context, s CopySpec) (float64, error) {
	var ms C.float
	err := r.DoTimeout(ctx, "timed copy", s.Timeout+10*time.Second, func() error {
		deadline := float64(C.gdr_now()) + s.Timeout.Seconds()
		return r.Check(fmt.Sprintf("timed copy (%d x %d bytes, kind %d)", s.Iters, s.Bytes, s.Kind), int(C.gdr_copy_timed(r.c, C.int(s.Dev),
			s.Dst.p, s.Src.p, C.size_t(s.Bytes), C.int(s.Kind), C.int(s.DstDev), C.int(s.SrcDev),
			C.gdr_stream(s.Stream.h), s.RevDst.p, s.RevSrc.p, C.gdr_stream(s.Stream2.h),
			C.int(s.Iters), C.double(deadline), (*C.int)(r.cancel), &ms)))
	})
	return float64(ms), err
}

// Bytes views pinned host memory as a Go slice (never device memory).
func Bytes(p Ptr, n uint64) []byte {
	return unsafe.Slice((*byte)(p.p), n)
}

// StreamOf wraps a stream handle another cgo package holds.
func StreamOf(h unsafe.Pointer) Stream { return Stream{h} }

// PageableAlloc allocates ordinary (pageable) host memory and touches every
// page from the runtime's thread, so the pages land on that thread's NUMA
// node (pin it first with PinThread).
func (r *Runtime) PageableAlloc(ctx context.Context, bytes uint64) (Ptr, error) {
	var p unsafe.Pointer
	err := r.Do(ctx, "malloc", func() error {
		// Page-aligned, as allocators for large buffers give it.
		if C.posix_memalign(&p, 4096, C.size_t(bytes)) != 0 || p == nil {
			return fmt.Errorf("malloc(%d bytes): out of host memory", bytes)
		}
		C.memset(p, 0, C.size_t(bytes))
		return nil
	})
	return Ptr{p}, err
}

// PageableFree releases memory from PageableAlloc.
func (r *Runtime) PageableFree(p Ptr) {
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
