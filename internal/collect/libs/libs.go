// Package libs finds the user-space vendor libraries a job loads (the CUDA
// runtime and NCCL) by loading them into this process and asking their
// versions. It is the native half of collection; facts/node holds the
// types, internal/collect/sysinfo reads them back from snapshots. In a
// build without cgo every library reads as not loaded, with that reason.
package libs

import (
	"context"

	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
)

// Probe records the versions of the CUDA runtime and NCCL, or why they
// could not be loaded. rt is the CUDA runtime the process already opened
// (one runtime per process); nil: Probe loads it.
func Probe(ctx context.Context, rt *cuda.Runtime) *node.Libraries {
	l := &node.Libraries{}
	if rt != nil {
		l.CUDARuntime = Runtime(ctx, rt)
	} else {
		l.CUDARuntime = CUDARuntime(ctx)
	}
	l.NCCL = NCCL()
	return l
}

// CUDARuntime loads the CUDA runtime and asks its version.
func CUDARuntime(ctx context.Context) node.Library {
	rt, err := cuda.Open("")
	if err != nil {
		return node.Library{Error: err.Error()}
	}
	defer rt.Close()
	return Runtime(ctx, rt)
}

// Runtime asks an open CUDA runtime its version and where it was loaded
// from.
func Runtime(ctx context.Context, rt *cuda.Runtime) node.Library {
	l := node.Library{Loaded: true, Path: rt.Path}
	if rv, dv, err := rt.Versions(ctx); err != nil {
		l.Error = err.Error()
	} else {
		l.Version, l.Detail = rv, "driver supports CUDA "+dv
	}
	return l
}

// NCCL loads NCCL and asks its version.
func NCCL() node.Library {
	lib, err := nccl.Open("")
	if err != nil {
		return node.Library{Error: err.Error()}
	}
	defer lib.Close()
	l := node.Library{Loaded: true, Path: lib.Path}
	if v, _, err := lib.Version(); err != nil {
		l.Error = err.Error()
	} else {
		l.Version = v
	}
	return l
}
