// Package cuda calls the CUDA runtime (libcudart.so.13, else .12) through a
// small cgo shim that dlopens it at run time with our own prototypes. Every
// call runs on one dedicated OS thread (the runtime's current device is per
// thread, so "set device, then work" always happens inside one C call on
// that thread) under a deadline (package watchdog): a call that does not
// return in time marks the runtime wedged and becomes an error, never a
// hang of the caller. Close ends the thread and frees the C memory.
//
// Device and host memory have distinct types: DevPtr and HostPtr. Only a
// HostPtr can be seen as a Go slice, and both carry the length of their
// allocation, so offsets and copies past the end are caught in Go.
package cuda

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

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

// ErrClosed is returned by calls on a closed Runtime.
var ErrClosed = errors.New("CUDA runtime closed")

// DefaultGrace is how long a call may overrun the deadline of its own GPU
// wait, or ignore a cancel, before its thread counts as wedged.
const DefaultGrace = 10 * time.Second

// Option configures Open.
type Option func(*Runtime)

// WithCallTimeout sets the deadline of each call.
func WithCallTimeout(d time.Duration) Option { return func(r *Runtime) { r.timeout = d } }

// WithGrace sets how long a GPU wait may overrun its own deadline, or a
// call ignore a cancel, before the runtime counts as wedged (DefaultGrace).
func WithGrace(d time.Duration) Option { return func(r *Runtime) { r.grace = d } }

// DevPtr is an address in device memory and the bytes from there to the
// end of its allocation. It cannot be seen from Go.
type DevPtr struct {
	p unsafe.Pointer
	n uint64
}

// HostPtr is an address in host memory that CUDA allocated or that
// PageableAlloc gave (never Go memory), and the bytes from there to the
// end of its allocation.
type HostPtr struct {
	p unsafe.Pointer
	n uint64
}

// Mem is memory a copy reads or writes: a DevPtr or a HostPtr.
type Mem interface {
	base() unsafe.Pointer
	size() uint64
	device() bool
}

func (p DevPtr) base() unsafe.Pointer  { return p.p }
func (p DevPtr) size() uint64          { return p.n }
func (p DevPtr) device() bool          { return true }
func (p HostPtr) base() unsafe.Pointer { return p.p }
func (p HostPtr) size() uint64         { return p.n }
func (p HostPtr) device() bool         { return false }

// offset is p+off with the bytes left; past the end is a bug of the caller.
func offset(p unsafe.Pointer, n, off uint64) (unsafe.Pointer, uint64) {
	if off > n {
		panic(fmt.Sprintf("cuda: offset %d past the end of a %d-byte allocation", off, n))
	}
	return unsafe.Add(p, uintptr(off)), n - off
}

// Add offsets a pointer; it panics past the end of the allocation.
func (p DevPtr) Add(off uint64) DevPtr { q, n := offset(p.p, p.n, off); return DevPtr{q, n} }

// Add offsets a pointer; it panics past the end of the allocation.
func (p HostPtr) Add(off uint64) HostPtr { q, n := offset(p.p, p.n, off); return HostPtr{q, n} }

// Nil reports a null pointer.
func (p DevPtr) Nil() bool { return p.p == nil }

// Nil reports a null pointer.
func (p HostPtr) Nil() bool { return p.p == nil }

// Len is the number of bytes from p to the end of its allocation.
func (p DevPtr) Len() uint64 { return p.n }

// Len is the number of bytes from p to the end of its allocation.
func (p HostPtr) Len() uint64 { return p.n }

// Bytes views the memory from p to the end of its allocation as a Go
// slice (nil for a null pointer). It is valid until the memory is freed.
func (p HostPtr) Bytes() []byte {
	if p.p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(p.p), p.n)
}

// Raw is the address for other cgo packages.
func (p DevPtr) Raw() unsafe.Pointer { return p.p }

// DevPtrOf wraps n bytes of device memory another cgo package got from C
// (ncclMemAlloc).
func DevPtrOf(p unsafe.Pointer, n uint64) DevPtr { return DevPtr{p, n} }

// Copy kinds (cudaMemcpyKind).
const (
	HostToDevice   = 1
	DeviceToHost   = 2
	DeviceToDevice = 3
	PeerToPeer     = -1 // gdrcheck's own: cudaMemcpyPeerAsync
)

// Stream is a CUDA stream handle.
type Stream struct{ h unsafe.Pointer }

// Raw is the handle for other cgo packages.
func (s Stream) Raw() unsafe.Pointer { return s.h }

// CopySpec is one timed copy loop.
type CopySpec struct {
	Dev      int // current device for the loop (and its stream)
	Dst, Src Mem
	Bytes    uint64
	Kind     int // HostToDevice, DeviceToHost, DeviceToDevice or PeerToPeer
	DstDev   int // for PeerToPeer
	SrcDev   int
	Stream   Stream
	// RevDst/RevSrc/Stream2 run the opposite direction at the same time
	// (bidirectional); nil for one-way.
	RevDst, RevSrc Mem
	Stream2        Stream
	Iters          int
	Timeout        time.Duration
}

// StreamOf wraps a stream handle another cgo package holds.
func StreamOf(h unsafe.Pointer) Stream { return Stream{h} }
