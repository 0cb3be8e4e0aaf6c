// Package cuda calls the CUDA runtime (libcudart.so.13, else .12) through a
// small cgo shim that dlopens it at run time. Every call runs on one
// dedicated OS thread (the runtime's current device is per thread) under a
// deadline: a call that does not return in time marks the runtime wedged
// and becomes an error, never a hang of the caller.
package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
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

	"github.com/gdrcheck/gdrcheck/internal/dl"
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

// Runtime is a loaded CUDA runtime.
type Runtime struct {
	Path    string // the file that was loaded
	lib     *dl.Library
	c       *C.gdr_cudart
	timeout time.Duration
	calls   chan func()
	mu      sync.Mutex
	wedged  string
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
		return nil, fmt.Errorf("%s: missing entry point %s (not a CUDA runtime?)", lib.Path, C.GoString(missing))
	}
	r := &Runtime{Path: lib.Resolved(), lib: lib, c: c, timeout: DefaultCallTimeout, calls: make(chan func())}
	for _, o := range opts {
		o(r)
	}
	go r.worker()
	return r, nil
}

// worker runs every call on one locked OS thread.
func (r *Runtime) worker() {
	runtime.LockOSThread()
	for f := range r.calls {
		f()
	}
}

// Do runs fn on the runtime's thread under the call deadline (or ctx's,
// whichever is sooner). name describes the call for errors.
func (r *Runtime) Do(ctx context.Context, name string, fn func() error) error {
	return r.DoTimeout(ctx, name, r.timeout, fn)
}

// DoTimeout is Do with an explicit deadline.
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
	case <-t.C:
	case <-ctx.Done():
	}
	r.mu.Lock()
	r.wedged = name
	r.mu.Unlock()
	if ctx.Err() != nil {
		return fmt.Errorf("%s: interrupted while the GPU was working: %w", name, ctx.Err())
	}
	return fmt.Errorf("%s: no answer within %s: %w", name, timeout, ErrHung)
}

// Wedged reports the call that hung, or "".
func (r *Runtime) Wedged() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wedged
}

// check turns a CUDA status into an error with the library's own words.
// It must run on the runtime's thread.
func (r *Runtime) check(call string, code C.gdr_cudaError) error {
	if code == 0 {
		return nil
	}
	e := &Error{Call: call, Code: int(code), Name: "cudaError", Msg: "unknown error"}
	if s := C.gdr_err_name(r.c, code); s != nil {
		e.Name = C.GoString(s)
	}
	if s := C.gdr_err_string(r.c, code); s != nil {
		e.Msg = C.GoString(s)
	}
	return e
}

// Version is "13.0" style.
func versionString(v int) string { return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10) }

// Versions returns the runtime's and the driver's CUDA versions.
func (r *Runtime) Versions(ctx context.Context) (runtimeVer, driverVer string, err error) {
	err = r.Do(ctx, "cudaRuntimeGetVersion", func() error {
		var rv, dv C.int
		if err := r.check("cudaRuntimeGetVersion", C.gdr_runtime_version(r.c, &rv)); err != nil {
			return err
		}
		runtimeVer = versionString(int(rv))
		if err := r.check("cudaDriverGetVersion", C.gdr_driver_version(r.c, &dv)); err != nil {
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
		return r.check("cudaGetDeviceCount", C.gdr_device_count(r.c, &n))
	})
	return int(n), err
}

// PCIBusID is the bus id of a device ("0000:00:06.0").
func (r *Runtime) PCIBusID(ctx context.Context, dev int) (string, error) {
	var out string
	err := r.Do(ctx, "cudaDeviceGetPCIBusId", func() error {
		buf := make([]byte, 64)
		if err := r.check("cudaDeviceGetPCIBusId", C.gdr_pci_bus_id(r.c, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)), C.int(dev))); err != nil {
			return err
		}
		out = C.GoString((*C.char)(unsafe.Pointer(&buf[0])))
		return nil
	})
	return out, err
}
