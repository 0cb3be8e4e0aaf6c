package cli

import (
	"context"
	"os"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// liveLibraries loads the CUDA runtime and NCCL to record their versions.
func liveLibraries(ctx context.Context) map[string]string {
	m := map[string]string{}
	for key, l := range map[string]LibraryState{"cudart": cudaState(ctx), "nccl": ncclState()} {
		if l.Path != "" {
			m[key+"_path"] = l.Path
		}
		if l.Error != "" {
			m[key+"_error"] = l.Error
		} else {
			m[key] = l.Version
		}
	}
	return m
}

// cudaState loads the CUDA runtime and asks its version.
func cudaState(ctx context.Context) LibraryState {
	rt, err := cuda.Open("")
	if err != nil {
		return LibraryState{Error: err.Error()}
	}
	defer rt.Close()
	l := LibraryState{Loaded: true, Path: rt.Path}
	if rv, dv, err := rt.Versions(ctx); err != nil {
		l.Error = err.Error()
	} else {
		l.Version, l.Detail = rv, "driver supports CUDA "+dv
	}
	return l
}

// ncclState loads NCCL and asks its version.
func ncclState() LibraryState {
	lib, err := nccl.Open("")
	if err != nil {
		return LibraryState{Error: err.Error()}
	}
	defer lib.Close()
	l := LibraryState{Loaded: true, Path: lib.Path}
	if v, _, err := lib.Version(); err != nil {
		l.Error = err.Error()
	} else {
		l.Version = v
	}
	return l
}

// checkEnv assembles what the checks judge: live facts on "/", the
// snapshot's captured ones otherwise.
func checkEnv(ctx context.Context, r machine.Root, h *topology.Host, expect *checks.Expect, xidWindow time.Duration) *checks.Env {
	env := &checks.Env{Root: r, Host: h, Expect: expect, XidWindow: xidWindow, Now: time.Now()}
	if r.Live() {
		env.Environ = checks.FilterEnviron(os.Environ())
		env.EnvironKnown = true
		env.Libraries = liveLibraries(ctx)
		env.Privileged = os.Geteuid() == 0
		return env
	}
	env.LoadCaptured()
	return env
}
