package cli

import (
	"context"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collect/libs"
	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// cudaState loads the CUDA runtime and asks its version.
func cudaState(ctx context.Context) LibraryState { return LibraryState(libs.CUDARuntime(ctx)) }

// ncclState loads NCCL and asks its version.
func ncclState() LibraryState { return LibraryState(libs.NCCL()) }

// collectFacts is the collection stage after discovery: the node facts
// read through r, and live, the libraries loaded into this process.
func collectFacts(ctx context.Context, r machine.Root, h *topology.Host) *sysinfo.Facts {
	f := sysinfo.Collect(ctx, r, h, sysinfo.Options{})
	if r.Live() {
		f.Libraries = libs.Probe(ctx)
	}
	return f
}

// checkEnv assembles what the checks judge: the host, its facts, and the
// time anchor (when a snapshot was taken, or now).
func checkEnv(ctx context.Context, r machine.Root, h *topology.Host, expect *checks.Expect, xidWindow time.Duration) *checks.Env {
	f := collectFacts(ctx, r, h)
	now := f.CapturedAt
	if now.IsZero() {
		now = time.Now()
	}
	return &checks.Env{Host: h, Facts: f, Expect: expect, XidWindow: xidWindow, Now: now}
}
