//go:build !cgo

package cuda

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/gdrcheck/gdrcheck/internal/native/dl"
)

// Runtime stands for a loaded CUDA runtime; a build without cgo can load
// none (Open fails), so its methods are never reached on a real one.
type Runtime struct {
	Path           string
	timeout, grace time.Duration
}

// errNoEngine names the library that a build without cgo cannot load.
var errNoEngine = fmt.Errorf("%s: %w", LibrarySpec().What, dl.ErrNoEngine)

// Open: no GPU engine in a build without cgo.
func Open(path string, opts ...Option) (*Runtime, error) { return nil, errNoEngine }

// Close: no GPU engine in a build without cgo.
func (r *Runtime) Close() error { return errNoEngine }

// CPtr: no GPU engine in a build without cgo.
func (r *Runtime) CPtr() unsafe.Pointer { return nil }

// CancelPtr: no GPU engine in a build without cgo.
func (r *Runtime) CancelPtr() unsafe.Pointer { return nil }

// Do: no GPU engine in a build without cgo.
func (r *Runtime) Do(ctx context.Context, name string, fn func() error) error { return errNoEngine }

// DoTimeout: no GPU engine in a build without cgo.
func (r *Runtime) DoTimeout(ctx context.Context, name string, timeout time.Duration, fn func() error) error {
	return errNoEngine
}

// DoWait: no GPU engine in a build without cgo.
func (r *Runtime) DoWait(ctx context.Context, name string, wait time.Duration, fn func(deadline float64) error) error {
	return errNoEngine
}

// Check: no GPU engine in a build without cgo.
func (r *Runtime) Check(call string, code int) error { return errNoEngine }

// Versions: no GPU engine in a build without cgo.
func (r *Runtime) Versions(ctx context.Context) (runtimeVer, driverVer string, err error) {
	err = errNoEngine
	return
}

// DeviceCount: no GPU engine in a build without cgo.
func (r *Runtime) DeviceCount(ctx context.Context) (int, error) { return 0, errNoEngine }

// PCIBusID: no GPU engine in a build without cgo.
func (r *Runtime) PCIBusID(ctx context.Context, dev int) (string, error) { return "", errNoEngine }

// MemInfo: no GPU engine in a build without cgo.
func (r *Runtime) MemInfo(ctx context.Context, dev int) (free, total uint64, err error) {
	err = errNoEngine
	return
}

// Malloc: no GPU engine in a build without cgo.
func (r *Runtime) Malloc(ctx context.Context, dev int, bytes uint64) (DevPtr, error) {
	return DevPtr{}, errNoEngine
}

// Free: no GPU engine in a build without cgo.
func (r *Runtime) Free(ctx context.Context, dev int, p DevPtr) error { return errNoEngine }

// HostAlloc: no GPU engine in a build without cgo.
func (r *Runtime) HostAlloc(ctx context.Context, dev int, bytes uint64) (HostPtr, error) {
	return HostPtr{}, errNoEngine
}

// FreeHost: no GPU engine in a build without cgo.
func (r *Runtime) FreeHost(ctx context.Context, p HostPtr) error { return errNoEngine }

// Memcpy: no GPU engine in a build without cgo.
func (r *Runtime) Memcpy(ctx context.Context, dev int, dst, src Mem, bytes uint64) error {
	return errNoEngine
}

// Memset: no GPU engine in a build without cgo.
func (r *Runtime) Memset(ctx context.Context, dev int, p DevPtr, value byte, bytes uint64) error {
	return errNoEngine
}

// StreamCreate: no GPU engine in a build without cgo.
func (r *Runtime) StreamCreate(ctx context.Context, dev int) (Stream, error) {
	return Stream{}, errNoEngine
}

// StreamDestroy: no GPU engine in a build without cgo.
func (r *Runtime) StreamDestroy(ctx context.Context, dev int, s Stream) error { return errNoEngine }

// CanAccessPeer: no GPU engine in a build without cgo.
func (r *Runtime) CanAccessPeer(ctx context.Context, dev, peer int) (bool, error) {
	return false, errNoEngine
}

// EnablePeer: no GPU engine in a build without cgo.
func (r *Runtime) EnablePeer(ctx context.Context, dev, peer int) error { return errNoEngine }

// CopyTimed: no GPU engine in a build without cgo.
func (r *Runtime) CopyTimed(ctx context.Context, s CopySpec) (float64, error) { return 0, errNoEngine }

// PageableAlloc: no GPU engine in a build without cgo.
func (r *Runtime) PageableAlloc(ctx context.Context, bytes uint64) (HostPtr, error) {
	return HostPtr{}, errNoEngine
}

// PageableFree: no GPU engine in a build without cgo.
func (r *Runtime) PageableFree(p HostPtr) {}

// PinThread: no GPU engine in a build without cgo.
func (r *Runtime) PinThread(ctx context.Context, cpus []int) error { return errNoEngine }
