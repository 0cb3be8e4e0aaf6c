package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
	"github.com/gdrcheck/gdrcheck/internal/profile"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/goldenfile"
)

// The plan of every HGX fixture and the odd ones (a NIC on the other
// socket, ports down), as text and JSON goldens (-update rewrites them):
// one entry per GPU–NIC pair with its bus id, CUDA index, NIC, port, path
// level, mode, commands and expectation.
func TestPlanRDMAGolden(t *testing.T) {
	// Planning only reads a host: each fixture is written once and its
	// cases share it.
	dirs := map[string]string{}
	for _, tc := range []struct {
		fixture string
		o       rdma.Options
		name    string
	}{
		{"hgx-h200-8gpu-10nic", rdma.Options{GIDIndex: -1}, ""},
		{"hgx-h100-8gpu-12nic-roce", rdma.Options{GIDIndex: -1}, ""},
		{"hgx-h100-8gpu-12nic-roce", rdma.Options{GIDIndex: 3, Test: rdma.WriteLat, Size: 8, MTU: 4096, QPs: 4, TCPPort: 20000}, "-lat-gid3"},
		{"hgx-h200-8gpu-10nic", rdma.Options{GIDIndex: -1, Pairs: []rdma.PairSpec{{GPU: 3, NIC: "mlx5_0"}, {GPU: 0, NIC: "mlx5_3"}}, Size: 1 << 20}, "-pairs"},
		{"pcie-l40s-remote-nic", rdma.Options{GIDIndex: -1}, ""},
		{"epyc-genoa-4gpu-pcie", rdma.Options{GIDIndex: -1}, ""},
		{"dell-h100-8gpu-12nic-pcie-only", rdma.Options{GIDIndex: -1, Test: rdma.ReadBW}, ""},
		// Cross-node: this node's side, both roles' commands, the peer's
		// address a placeholder.
		{"hgx-h200-8gpu-10nic", rdma.Options{GIDIndex: -1, Mode: rdma.ModeCrossNode}, "-cross"},
		{"hgx-h100-8gpu-12nic-roce", rdma.Options{GIDIndex: 3, Mode: rdma.ModeCrossNode, Concurrent: true, Rails: []int{0, 2, 4, 6}, Size: 1 << 20}, "-cross-concurrent"},
	} {
		if dirs[tc.fixture] == "" {
			dirs[tc.fixture] = fakehost.Dir(t, "../../testdata/hosts/"+tc.fixture+".host")
		}
		dir := dirs[tc.fixture]
		t.Run(tc.fixture+tc.name, func(t *testing.T) {
			p, err := PlanRDMA(context.Background(), NodeOptions{Root: dir, Timeout: time.Minute}, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Entries) == 0 {
				t.Fatalf("no pairs planned: %v", p.Notes)
			}
			for _, e := range p.Entries {
				if e.GPUBusID == "" || e.NIC == "" || e.Level == "" || e.Mode == "" || len(e.Runs) < 2 {
					t.Errorf("entry incomplete: %+v", e)
				}
				if last := e.Runs[len(e.Runs)-1]; last.Memory != rdma.MemHost || strings.Contains(last.Client.Line(), "use_cuda") {
					t.Errorf("%s: the last run is not the host control: %s", e.Subject(), last.Client.Line())
				}
			}
			// The registration's reasons name files under the fixture's
			// temporary folder.
			scrub := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(dir), []byte("$ROOT")) }
			var text bytes.Buffer
			if err := p.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			js, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", "rdma", tc.fixture+tc.name+".txt"), scrub(text.Bytes()), *update)
			goldenfile.Check(t, filepath.Join("testdata", "rdma", tc.fixture+tc.name+".json"), scrub(append(js, '\n')), *update)
		})
	}
}

// The H200 machine has no RDMA NIC: nothing to test. A real run fails (no
// GPU Direct RDMA path was measured: exit 1) unless the site profile says
// the node is not meant for GDR; a dry run only plans, and skips.
func TestBenchRDMANoNIC(t *testing.T) {
	s := &Session{Clock: func() time.Time { return time.Unix(0, 0) }}
	notRequired := &profile.Profile{GDR: &profile.GDR{Required: new(false)}}
	for _, c := range []struct {
		dry     bool
		profile *profile.Profile
		want    result.Status
	}{
		{true, nil, result.Skip},
		{false, nil, result.Fail},
		{false, notRequired, result.Skip},
		{false, &profile.Profile{GDR: &profile.GDR{Mode: "any"}}, result.Fail},
	} {
		env, dir, err := s.BenchRDMA(context.Background(), NodeOptions{Root: "../../testdata/snapshots/h200x1-vm.tgz", Timeout: time.Minute}, RDMAOptions{DryRun: c.dry, Profile: c.profile})
		var f *Failure
		if dir != "" || (c.want == result.Fail) != errors.As(err, &f) || c.want != result.Fail && err != nil {
			t.Fatalf("%+v: %v %q", c, err, dir)
		}
		if len(env.Results) != 1 || env.Results[0].Status != c.want || !strings.Contains(RDMANothing(env), "no RDMA NIC") {
			t.Errorf("%+v: %+v %q", c, env.Results, RDMANothing(env))
		}
	}
}

// A real run reads no snapshot: perftest runs here or nowhere.
func TestBenchRDMARefusesSnapshot(t *testing.T) {
	s := &Session{}
	dir := fakehost.Dir(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	_, _, err := s.BenchRDMA(context.Background(), NodeOptions{Root: dir, Timeout: time.Minute}, RDMAOptions{Plan: rdma.Options{GIDIndex: -1}, Timeout: time.Second})
	var te *ToolError
	if err == nil || !errors.As(err, &te) || !strings.Contains(err.Error(), "live host only") {
		t.Errorf("run on a snapshot: %v", err)
	}
}
