//go:build !cgo

package nccl

import (
	"context"
	"fmt"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/dl"
)

// Library stands for a loaded NCCL; a build without cgo can load none
// (Open fails), so its methods are never reached on a real one.
type Library struct{ Path string }

// Comms stands for NCCL communicators, which a build without cgo never has.
type Comms struct{}

// errNoEngine names the library that a build without cgo cannot load.
var errNoEngine = fmt.Errorf("%s: %w", LibrarySpec().What, dl.ErrNoEngine)

// Open: no GPU engine in a build without cgo.
func Open(path string) (*Library, error) { return nil, errNoEngine }

// Close: no GPU engine in a build without cgo.
func (l *Library) Close() error { return errNoEngine }

// Version: no GPU engine in a build without cgo.
func (l *Library) Version() (string, int, error) { return "", 0, errNoEngine }

// HasMemAlloc: no GPU engine in a build without cgo.
func (l *Library) HasMemAlloc() bool { return false }

// MemAlloc: no GPU engine in a build without cgo.
func (l *Library) MemAlloc(ctx context.Context, rt *cuda.Runtime, dev int, bytes uint64) (cuda.DevPtr, error) {
	return cuda.DevPtr{}, errNoEngine
}

// MemFree: no GPU engine in a build without cgo.
func (l *Library) MemFree(ctx context.Context, rt *cuda.Runtime, dev int, p cuda.DevPtr) error {
	return errNoEngine
}

// InitAll: no GPU engine in a build without cgo.
func (l *Library) InitAll(ctx context.Context, rt *cuda.Runtime, devs []int, timeout time.Duration) (*Comms, error) {
	return nil, errNoEngine
}

// UniqueID: no GPU engine in a build without cgo.
func (l *Library) UniqueID(ctx context.Context, rt *cuda.Runtime) ([]byte, error) {
	return nil, errNoEngine
}

// InitRank: no GPU engine in a build without cgo.
func (l *Library) InitRank(ctx context.Context, rt *cuda.Runtime, dev int, id []byte, rank, world int, timeout time.Duration) (*Comms, error) {
	return nil, errNoEngine
}

// InitRanks: no GPU engine in a build without cgo.
func (l *Library) InitRanks(ctx context.Context, rt *cuda.Runtime, devs []int, id []byte, first, world int, timeout time.Duration) (*Comms, error) {
	return nil, errNoEngine
}

// HasSplit: no GPU engine in a build without cgo.
func (l *Library) HasSplit() bool { return false }

// Split: no GPU engine in a build without cgo.
func (c *Comms) Split(ctx context.Context, color, key int, timeout time.Duration) (*Comms, error) {
	return nil, errNoEngine
}

// Size: no GPU engine in a build without cgo.
func (c *Comms) Size() int { return 0 }

// World: no GPU engine in a build without cgo.
func (c *Comms) World() int { return 0 }

// Device: no GPU engine in a build without cgo.
func (c *Comms) Device(i int) int { return 0 }

// Rank: no GPU engine in a build without cgo.
func (c *Comms) Rank(i int) int { return 0 }

// SetBuffers: no GPU engine in a build without cgo.
func (c *Comms) SetBuffers(i int, send, recv cuda.DevPtr) error { return errNoEngine }

// CollNumber: no GPU engine in a build without cgo.
func CollNumber(c collective.Collective) (int, bool) { return -1, false }

// Enqueue: no GPU engine in a build without cgo.
func (c *Comms) Enqueue(ctx context.Context, op Op, first, iters int) error { return errNoEngine }

// Wait: no GPU engine in a build without cgo.
func (c *Comms) Wait(ctx context.Context, timeout time.Duration) error { return errNoEngine }

// Timed: no GPU engine in a build without cgo.
func (c *Comms) Timed(ctx context.Context, op Op, iters int, timeout time.Duration) (float64, error) {
	return 0, errNoEngine
}

// Abort: no GPU engine in a build without cgo.
func (c *Comms) Abort() error { return errNoEngine }

// Destroy: no GPU engine in a build without cgo.
func (c *Comms) Destroy(ctx context.Context) error { return errNoEngine }
