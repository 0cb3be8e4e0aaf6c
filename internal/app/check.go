package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collect/libs"
	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/profile"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// NodeOptions say which node a command reads and how long discovery may
// take.
type NodeOptions struct {
	Root    string        // --root: "/" (this host), a host or snapshot directory, or a snapshot .tgz
	Timeout time.Duration // deadline of discovery and collection (--timeout)
	// LiveRoot is what the live host (a Root of "/" or "") is read from:
	// "" is this host's own "/". Tests name a fixture host (a directory or
	// a snapshot archive), so that what runs on the live host only (the
	// benchmarks, the probe of the libraries loaded into this process)
	// runs, and is tested, over the fixture and not over the machine
	// running the tests. See live.go.
	LiveRoot string
}

// openNode opens the root and discovers the host behind it; the root
// reads under the discovery deadline, and cleanup releases it.
func openNode(ctx context.Context, n NodeOptions) (machine.Root, func(), *topology.Host, error) {
	r, cleanup, err := snapshot.OpenContext(ctx, n.source())
	if err != nil {
		return machine.Root{}, nil, nil, toolErr(err)
	}
	r, stop, h, err := DiscoverWithin(ctx, r, n.Timeout)
	if err != nil {
		cleanup()
		return machine.Root{}, nil, nil, err
	}
	return r, func() { stop(); cleanup() }, h, nil
}

// CheckOptions choose and configure the readiness checks.
type CheckOptions struct {
	Expect    string        // --expect: a site profile ("" judges against the hardware itself)
	Only      []string      // --only: check IDs or prefixes ending in "."
	Timeout   time.Duration // deadline of each check
	XidWindow time.Duration // how far back kernel-log Xid events count
	// Strict (--strict) counts unknown and error results as failures.
	Strict bool
}

// checkPlan is a run of checks whose options were read and validated.
type checkPlan struct {
	o      CheckOptions
	expect *profile.Profile
}

// planChecks loads the site profile and validates --only, before anything
// reads the node.
func planChecks(o CheckOptions) (*checkPlan, error) {
	e, err := LoadProfile(o.Expect)
	if err != nil {
		return nil, err
	}
	p := &checkPlan{o: o, expect: e}
	for _, id := range o.Only {
		if !knownCheck(id) {
			return nil, toolErr(fmt.Errorf("--only %q: no such check (known: %s)", id, strings.Join(checks.IDs(), ", ")))
		}
	}
	return p, nil
}

// LoadProfile reads the site profile at path (--expect), nil for "": the
// one loading of check, run and the benchmarks. Its errors are ToolErrors
// naming the file, the line and the field.
func LoadProfile(path string) (*profile.Profile, error) {
	if path == "" {
		return nil, nil
	}
	e, err := profile.Load(path)
	if err != nil {
		return nil, toolErr(err)
	}
	return e, nil
}

func knownCheck(id string) bool {
	return slices.ContainsFunc(checks.IDs(), func(k string) bool {
		return k == id || strings.HasSuffix(id, ".") && strings.HasPrefix(k, id)
	})
}

// judge collects the node facts of h (live: r is the live host's, rt: the
// process's CUDA runtime when one is open) and runs the checks on them; it
// returns the report and the facts the checks judged.
func (p *checkPlan) judge(ctx context.Context, r machine.Root, h *topology.Host, live bool, rt *cuda.Runtime) (*checks.Report, *checks.Env) {
	env := checkEnv(ctx, r, h, live, rt, p.expect, p.o.XidWindow)
	return checks.Run(ctx, env, checks.All(), checks.Options{Timeout: p.o.Timeout, Only: p.o.Only, Strict: p.o.Strict}), env
}

// Judged is a node discovered and judged.
type Judged struct {
	Host   *topology.Host
	Checks *checks.Report
	// Env is what the checks judged: the host, its facts, the profile.
	Env *checks.Env
}

// Check is `gdrcheck check`: it discovers the node and runs the readiness
// checks on it. Its errors are ToolErrors; failed checks are in the
// report, not an error.
func Check(ctx context.Context, n NodeOptions, o CheckOptions) (*Judged, error) {
	p, err := planChecks(o)
	if err != nil {
		return nil, err
	}
	r, cleanup, h, err := openNode(ctx, n)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	rep, env := p.judge(ctx, r, h, isLive(n.Root), nil)
	return &Judged{Host: h, Checks: rep, Env: env}, nil
}

// collectFacts is the collection stage after discovery: the node facts
// read through r, and when r is the live host's, the libraries loaded into
// this process (rt: the CUDA runtime already open, nil: the probe loads
// it).
func collectFacts(ctx context.Context, r machine.Root, h *topology.Host, live bool, rt *cuda.Runtime) *node.Facts {
	f := sysinfo.Collect(ctx, r, h, sysinfo.Options{})
	if live {
		f.Libraries = libs.Probe(ctx, rt)
	}
	return f
}

// checkEnv assembles what the checks judge: the host, its facts, and the
// time anchor (when a snapshot was taken, or now).
func checkEnv(ctx context.Context, r machine.Root, h *topology.Host, live bool, rt *cuda.Runtime, expect *profile.Profile, xidWindow time.Duration) *checks.Env {
	f := collectFacts(ctx, r, h, live, rt)
	now := f.CapturedAt
	if now.IsZero() {
		now = time.Now()
	}
	return &checks.Env{Host: h, Facts: f, Expect: expect, XidWindow: xidWindow, Now: now}
}
