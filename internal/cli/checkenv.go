package cli

import (
	"context"
	"os"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/cuda"
	"github.com/gdrcheck/gdrcheck/internal/host"
	"github.com/gdrcheck/gdrcheck/internal/nccl"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// liveLibraries loads the CUDA runtime and NCCL to record their versions.
func liveLibraries(ctx context.Context) map[string]string {
	m := map[string]string{}
	if rt, err := cuda.Open(""); err != nil {
		m["cudart_error"] = err.Error()
	} else {
		m["cudart_path"] = rt.Path
		if v, _, err := rt.Versions(ctx); err != nil {
			m["cudart_error"] = err.Error()
		} else {
			m["cudart"] = v
		}
	}
	if l, err := nccl.Open(""); err != nil {
		m["nccl_error"] = err.Error()
	} else {
		m["nccl_path"] = l.Path
		if v, _, err := l.Version(); err != nil {
			m["nccl_error"] = err.Error()
		} else {
			m["nccl"] = v
		}
	}
	return m
}

// checkEnv assembles what the checks judge: live facts on "/", the
// snapshot's captured ones otherwise.
func checkEnv(ctx context.Context, r host.Root, h *topology.Host, expect *checks.Expect, xidWindow time.Duration) *checks.Env {
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
