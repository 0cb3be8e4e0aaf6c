package checks

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/memtest"
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

func TestParseExpect(t *testing.T) {
	good := "gpus:\n  count: 8\n  model: H100\n  nvlinks: 18\nnics:\n  count: 8\n  rate_gbps: 400\n  link_layer: InfiniBand\nversions:\n  driver: \"570.*\"\ngdr: {required: true, mode: dmabuf}\nmemlock_kb: unlimited\n"
	e, err := ParseExpect("site.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if e.GPUs.Count != 8 || e.NICs.RateGbps != 400 || !versionMatches("570.133.20", e.Versions.Driver) || versionMatches("550.1", e.Versions.Driver) {
		t.Errorf("parsed %+v", e)
	}
	if _, err := ParseExpect("site.json", []byte(`{"gpus": {"count": 4}}`)); err != nil {
		t.Errorf("JSON profile: %v", err)
	}
	for _, c := range []struct{ in, want string }{
		{"gpus:\n  count: 8\n  modle: H100\n", "site.yaml: line 3: field modle not found (gpus)"},
		{"nics:\n  rate_gbps: fast\n", "site.yaml: line 2: cannot unmarshal !!str `fast`"},
		{"nics: {link_layer: Ethernett}\n", "site.yaml: line 1: nics.link_layer: \"Ethernett\""},
		{"gdr: {mode: magic}\n", "site.yaml: line 1: gdr.mode"},
		{"memlock_kb: lots\n", "site.yaml: line 1: memlock_kb"},
		{"gpus:\n  count: 8\n  pcie_gen: 9\n", "site.yaml: line 3: gpus.pcie_gen: must be a PCIe generation"},
		{"nics:\n  count: -1\n", "site.yaml: line 2: nics.count: must not be negative"},
		{"nics:\n  rate_gbps: 400\n  mtu: -9000\n", "site.yaml: line 3: nics.mtu"},
		{"gpus: {count: 8}\nfoo: 1\n", "site.yaml: line 2: field foo not found"},
		{`{"gdr": {"mode": "magic"}}`, "site.yaml: line 1: gdr.mode"},
		{"", "empty site profile"},
		{"gpus: [1, 2\n", "site.yaml: line"},
	} {
		_, err := ParseExpect("site.yaml", []byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseExpect(%q) = %v, want %q", c.in, err, c.want)
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
		topo   sysinfo.TopoFile
		reason string
		status result.Status
	}{
		{sysinfo.TopoFile{Checked: true, Size: 10}, "TopoFileOverride", result.Warn},
		{sysinfo.TopoFile{Checked: true, Err: fs.ErrNotExist}, "TopoFileMissing", result.Fail},
		{sysinfo.TopoFile{}, "TopoFileOverride", result.Warn},
	} {
		env := &Env{Host: &topology.Host{}, Facts: &sysinfo.Facts{
			Environ:  sysinfo.Environ{Vars: map[string]string{"NCCL_TOPO_FILE": file}, Known: true},
			TopoFile: c.topo,
		}}
		rs := ncclEnv{}.Run(context.Background(), env)
		if len(rs) != 1 || rs[0].Reason != c.reason || rs[0].Status != c.status {
			t.Errorf("%+v: %+v, want %s %s", c.topo, rs, c.status, c.reason)
		}
	}
}

// The review's D14: --expect /dev/zero grew by 0.5 GB a second until the
// process was killed. A device is refused before any read, and anything
// else is read to at most MaxExpectBytes.
func TestLoadExpectBounded(t *testing.T) {
	var err error
	n := memtest.Allocated(func() { _, err = LoadExpect("/dev/zero") })
	if err == nil || !strings.Contains(err.Error(), "not a file") || n > 4*MaxExpectBytes {
		t.Errorf("/dev/zero: %v, %d bytes allocated", err, n)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, []byte("gpus: {count: 8}\n"+strings.Repeat("# padding\n", MaxExpectBytes/10+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadExpect(big); err == nil {
		t.Error("a profile over MaxExpectBytes accepted")
	}
	ok := filepath.Join(t.TempDir(), "site.yaml")
	if err := os.WriteFile(ok, []byte("gpus: {count: 8}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if e, err := LoadExpect(ok); err != nil || e.GPUs.Count != 8 {
		t.Errorf("small profile: %v", err)
	}
}

// An alias bomb (each level doubling the one before, a billion nodes at
// the end) is refused without being expanded: the profile's fields are
// scalars in structs of known names, so the decoder never descends into
// an alias's sequence.
func TestParseExpectAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x]\n")
	for i := 1; i < 30; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d]\n", i, i, i-1, i-1)
	}
	b.WriteString("gpus: {model: *a29}\n")
	var err error
	n := memtest.Allocated(func() { _, err = ParseExpect("bomb.yaml", []byte(b.String())) })
	if err == nil || !strings.Contains(err.Error(), "cannot unmarshal !!seq") || n > 1<<20 {
		t.Errorf("alias bomb: %v, %d bytes allocated", err, n)
	}
}
