// Package checks holds gdrcheck's readiness checks: every prerequisite of
// the GPU → PCIe → NIC → fabric data path (GPU Direct RDMA) and of NVLink,
// judged on the discovered host, each a small unit with a stable ID that
// returns one result per subject with evidence and a remedy.
//
// Checks are pure: they judge the discovered topology and the node facts
// collected beforehand (internal/collect/sysinfo) and never read the machine,
// run a command or load a library themselves, so they run the same live, on
// a snapshot and on facts built in memory. A check whose fact could not be
// read says unknown or skip, never pass.
package checks

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/profile"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
	"github.com/gdrcheck/gdrcheck/internal/watchdog"
)

// Check is one readiness check.
type Check interface {
	ID() string
	Title() string
	Run(ctx context.Context, env *Env) []result.Result
}

// Env is what checks judge.
type Env struct {
	Host *topology.Host
	// Facts are the node facts collected for Host: modules, driver, IOMMU,
	// limits, kernel log, the job environment, the libraries found, and how
	// paths are shown.
	Facts *node.Facts
	// Expect is the site profile (nil: judge against the hardware itself).
	Expect *profile.Profile
	// Now anchors time windows (Xid events).
	Now time.Time
	// XidWindow is how far back kernel-log Xid events count.
	XidWindow time.Duration
}

// Report is the outcome of a run of checks.
type Report struct {
	// Verdict is the node's one answer (Judge over Results).
	Verdict    Verdict         `json:"verdict"`
	Results    []result.Result `json:"results"`
	Counts     result.Counts   `json:"counts"`
	DurationMS float64         `json:"duration_ms"`
	Checks     []CheckRun      `json:"checks"`
}

// CheckRun is one check's own outcome: its worst status and duration.
type CheckRun struct {
	ID         string        `json:"id"`
	Title      string        `json:"title"`
	Status     result.Status `json:"status"`
	Subjects   int           `json:"subjects"`
	DurationMS float64       `json:"duration_ms"`
}

// Options for Run.
type Options struct {
	// Timeout bounds each check (default 10 s).
	Timeout time.Duration
	// Only restricts the run to these check IDs (or prefixes ending in ".").
	Only []string
	// Strict counts unknown and error results as failures (for sign-off).
	Strict bool
}

// All returns every check, in a stable order.
func All() []Check {
	return []Check{
		kernelModule{}, nicAffinity{}, pcieACS{}, pcieLink{}, pcieMRR{}, iommuMode{},
		memlock{}, pcieP2P{}, nicPort{}, nvlinkState{}, nvlinkIMEX{}, gpuHealth{}, ncclEnv{}, inventory{},
		discoveryProblems{}, gpuPresent{},
	}
}

func selected(id string, only []string) bool {
	if len(only) == 0 {
		return true
	}
	for _, o := range only {
		if o == id || strings.HasSuffix(o, ".") && strings.HasPrefix(id, o) {
			return true
		}
	}
	return false
}

// Run runs the checks concurrently, each under its own deadline. A check
// that panics or overruns its deadline yields an error result, never a
// pass, and never stops the others.
func Run(ctx context.Context, env *Env, checks []Check, o Options) *Report {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	start := time.Now()
	type out struct {
		rs  []result.Result
		dur time.Duration
	}
	var todo []Check
	for _, c := range checks {
		if selected(c.ID(), o.Only) {
			todo = append(todo, c)
		}
	}
	outs := make([]out, len(todo))
	var wg sync.WaitGroup
	for i, c := range todo {
		wg.Add(1)
		go func(i int, c Check) {
			defer wg.Done()
			t0 := time.Now()
			rs := runOne(ctx, env, c, o.Timeout)
			outs[i] = out{rs, time.Since(t0)}
		}(i, c)
	}
	wg.Wait()
	rep := &Report{}
	for i, c := range todo {
		rs := outs[i].rs
		ms := float64(outs[i].dur.Microseconds()) / 1000
		for k := range rs {
			rs[k].ID = c.ID()
			rs[k].Source = result.SourceCheck
			if rs[k].Title == "" {
				rs[k].Title = c.Title()
			}
			rs[k].DurationMS = ms
		}
		rep.Checks = append(rep.Checks, CheckRun{ID: c.ID(), Title: c.Title(), Status: result.Worst(rs), Subjects: len(rs), DurationMS: ms})
		rep.Results = append(rep.Results, rs...)
	}
	result.Sort(rep.Results)
	rep.Counts = result.Count(rep.Results)
	rep.Verdict = Judge(rep.Results, env.Host.Hostname, env.Now, o.Strict)
	rep.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	return rep
}

func runOne(ctx context.Context, env *Env, c Check, timeout time.Duration) []result.Result {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rs []result.Result // read only once the call has returned
	err := watchdog.New(nil).Do(ctx, watchdog.Call{Name: c.ID()}, func() error {
		rs = c.Run(ctx, env)
		return nil
	})
	var pe *watchdog.PanicError
	switch {
	case errors.As(err, &pe):
		return []result.Result{{Status: result.Error, Subject: "node", Reason: "CheckPanicked",
			Message: fmt.Sprintf("the check itself failed: %v", pe.Value), Evidence: []result.Evidence{{Source: "stack", Value: firstLines(string(pe.Stack), 8)}}}}
	case err != nil:
		return []result.Result{{Status: result.Error, Subject: "node", Reason: "Timeout",
			Message: fmt.Sprintf("the check did not finish within %s: %v", timeout, ctx.Err())}}
	case len(rs) == 0:
		return []result.Result{{Status: result.Error, Subject: "node", Reason: "NoResult", Message: "the check returned no result"}}
	}
	return rs
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// IDs lists the stable check IDs.
func IDs() []string {
	var out []string
	for _, c := range All() {
		out = append(out, c.ID())
	}
	sort.Strings(out)
	return out
}

// helpers shared by checks

func res(st result.Status, subject, reason, msg string, ev ...result.Evidence) result.Result {
	return result.Result{Status: st, Subject: subject, Reason: reason, Message: msg, Evidence: ev}
}

func ev(source, value string) result.Evidence { return result.Evidence{Source: source, Value: value} }

func evNote(source, value, note string) result.Evidence {
	return result.Evidence{Source: source, Value: value, Note: note}
}

func withRemedy(r result.Result, remedy string) result.Result {
	r.Remedy = remedy
	return r
}

// gpuLabel names a GPU as the matrix does.
func gpuLabel(g *topology.GPU) string { return fmt.Sprintf("GPU%d", g.Index) }

// display is a root-relative path as a person sees it.
func display(env *Env, rel string) string { return env.Facts.Paths.Display(rel) }

// sysPath is a device attribute's path as a person sees it.
func sysPath(env *Env, d *topology.Device, attr string) string {
	return display(env, d.SysPath+"/"+attr)
}
