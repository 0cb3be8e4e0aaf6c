package checks

import (
	"context"
	"io/fs"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

type fakeCheck struct {
	id  string
	run func(ctx context.Context) []result.Result
}

func (f fakeCheck) ID() string    { return f.id }
func (f fakeCheck) Title() string { return "fake " + f.id }
func (f fakeCheck) Run(ctx context.Context, env *Env) []result.Result {
	return f.run(ctx)
}

func TestRunTurnsBrokenChecksIntoErrors(t *testing.T) {
	env := &Env{Host: &topology.Host{}}
	cs := []Check{
		fakeCheck{"a.panic", func(context.Context) []result.Result { panic("boom") }},
		fakeCheck{"b.hang", func(ctx context.Context) []result.Result { time.Sleep(5 * time.Second); return nil }},
		fakeCheck{"c.empty", func(context.Context) []result.Result { return nil }},
		fakeCheck{"d.ok", func(context.Context) []result.Result {
			return []result.Result{{Status: result.Pass, Subject: "node", Reason: "Fine"}}
		}},
	}
	start := time.Now()
	rep := Run(context.Background(), env, cs, Options{Timeout: 100 * time.Millisecond})
	if time.Since(start) > 2*time.Second {
		t.Fatalf("a hung check held the run for %s", time.Since(start))
	}
	want := map[string]string{"a.panic": "CheckPanicked", "b.hang": "Timeout", "c.empty": "NoResult", "d.ok": "Fine"}
	for _, r := range rep.Results {
		if want[r.ID] != r.Reason {
			t.Errorf("%s: reason %s, want %s", r.ID, r.Reason, want[r.ID])
		}
		if r.ID != "d.ok" && r.Status != result.Error {
			t.Errorf("%s: status %s, want error", r.ID, r.Status)
		}
		if r.Source != result.SourceCheck {
			t.Errorf("%s: source %q, want %q", r.ID, r.Source, result.SourceCheck)
		}
	}
	if !rep.Counts.Failed() || rep.Counts[result.Error] != 3 {
		t.Errorf("counts %v", rep.Counts)
	}
	if rep.Results[len(rep.Results)-1].ID != "d.ok" {
		t.Error("failures are not sorted first")
	}
	only := Run(context.Background(), env, cs, Options{Only: []string{"d."}})
	if len(only.Results) != 1 || only.Results[0].ID != "d.ok" {
		t.Errorf("--only d.: %+v", only.Results)
	}
}

// TestP2PCountsGPUs: pcie.p2p says NoGPU without a GPU, as every other
// check does, and SingleGPU with one.
func TestP2PCountsGPUs(t *testing.T) {
	for _, c := range []struct {
		gpus   int
		reason string
	}{{0, "NoGPU"}, {1, "SingleGPU"}} {
		h := &topology.Host{}
		for i := range c.gpus {
			h.GPUs = append(h.GPUs, &topology.GPU{Index: i})
		}
		rs := pcieP2P{}.Run(context.Background(), &Env{Host: h})
		if len(rs) != 1 || rs[0].Status != result.Skip || rs[0].Reason != c.reason || rs[0].Subject != "node" {
			t.Errorf("%d GPUs: %+v, want skip %s node", c.gpus, rs, c.reason)
		}
	}
}

func TestParseHCAList(t *testing.T) {
	e, ex, exact := parseHCAList("^=mlx5_0:1,mlx5_3")
	if !ex || !exact || len(e) != 2 || e[0] != (hcaEntry{"mlx5_0", "1"}) || e[1] != (hcaEntry{"mlx5_3", ""}) {
		t.Errorf("parsed %v %v %v", e, ex, exact)
	}
}

func TestKernelAtLeast(t *testing.T) {
	for _, c := range []struct {
		rel       string
		ok, known bool
	}{{"5.12.0", true, true}, {"6.18.44-fc-v973-gpu", true, true}, {"5.4.0-150-generic", false, true}, {"4.18.0-305.el8.ppc64le", false, true}, {"", false, false}} {
		ok, known := kernelAtLeast(c.rel, 5, 12)
		if ok != c.ok || known != c.known {
			t.Errorf("kernelAtLeast(%q) = %v %v", c.rel, ok, known)
		}
	}
}

func TestXidBus(t *testing.T) {
	if xidBus("0000:18:00.0") != "0000:18:00" {
		t.Error("xidBus")
	}
}

// TestTopoFile: live, NCCL_TOPO_FILE must name a file collection could
// read; a missing one fails; on a snapshot it is only reported.
func TestTopoFile(t *testing.T) {
	const file = "/etc/nccl/topo.xml"
	for _, c := range []struct {
		topo   node.TopoFile
		reason string
		status result.Status
	}{
		{node.TopoFile{Checked: true, Size: 10}, "TopoFileOverride", result.Warn},
		{node.TopoFile{Checked: true, Err: fs.ErrNotExist}, "TopoFileMissing", result.Fail},
		{node.TopoFile{}, "TopoFileOverride", result.Warn},
	} {
		env := &Env{Host: &topology.Host{}, Facts: &node.Facts{
			Environ:  node.Environ{Vars: map[string]string{"NCCL_TOPO_FILE": file}, Known: true},
			TopoFile: c.topo,
		}}
		rs := ncclEnv{}.Run(context.Background(), env)
		if len(rs) != 1 || rs[0].Reason != c.reason || rs[0].Status != c.status {
			t.Errorf("%+v: %+v, want %s %s", c.topo, rs, c.status, c.reason)
		}
	}
}
