package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
	"github.com/gdrcheck/gdrcheck/internal/report/diff"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/report/fleet"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/freeport"
	"github.com/gdrcheck/gdrcheck/internal/testutil/schematest"
)

// The one-GPU machine as captured, and a job of two ranks on its GPU, each
// its own NCCL_HOSTID, joined over NET/Socket (made with the fake CUDA and
// NCCL libraries, then its host and bus id set to the snapshot's: see
// testdata/jobs/README.md).
const (
	h200LiveSnapshot = "../../testdata/snapshots/h200x1-live-gdrcheck.tgz"
	socketJob        = "testdata/jobs/fake-socket-2ranks.json"
)

// includeRun runs the dossier of the one-GPU snapshot with the jobs
// included, against the site profile expect ("" none).
func includeRun(t *testing.T, expect string, include ...string) (*dossier.Report, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "d")
	nr, err := dossierSession().Run(t.Context(), RunOptions{Node: NodeOptions{Root: h200LiveSnapshot, Timeout: time.Minute},
		Checks: CheckOptions{Timeout: 10 * time.Second, Expect: expect}, Out: out, AutoBench: true, Include: include})
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	rep, err := nr.Dossier(t.Context(), DossierOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rep, out
}

// A multi-rank job folded into the dossier of a node without an RDMA NIC:
// the GPU's fabric hop is measured and names the peer and the transport,
// the job's rows are there for its two nodes, and the node is not signed
// off for GPU Direct RDMA: its traffic was measured host-staged.
func TestRunIncludesJob(t *testing.T) {
	rep, out := includeRun(t, "", socketJob)
	if len(rep.Jobs) != 1 || len(rep.Jobs[0].Ranks) != 2 {
		t.Fatalf("jobs: %+v", rep.Jobs)
	}
	dp := rep.Topology.DataPaths[0]
	if dp.GDR != dossier.GDRNoNIC || dp.GDRUsed != dossier.GDRUsedHostStaged || !strings.Contains(dp.GDRWhy, "measured: its traffic to other nodes was staged through host memory") {
		t.Errorf("data path: %s %s %q", dp.GDR, dp.GDRUsed, dp.GDRWhy)
	}
	f := dp.Hops[len(dp.Hops)-1]
	if f.Kind != dossier.HopFabric || f.Proof != result.ProofMeasured || f.Name != "NET/Socket to host-65cf06c2 (NCCL_HOSTID fakehost0), host-65cf06c2 (NCCL_HOSTID fakehost1)" ||
		!strings.Contains(f.Detail, "job1 rank 0 to host-65cf06c2 (NCCL_HOSTID fakehost1) over NET/Socket from lo") {
		t.Errorf("fabric hop: %+v", f)
	}
	v := rep.Verdict
	if v.Status != "NOT READY" || v.Proof != result.ProofFailed ||
		!slices.ContainsFunc(v.NotMeasured, func(s string) bool {
			return strings.HasPrefix(s, "GPU0 GPU Direct RDMA path: no RDMA NIC on this host; measured") && strings.HasSuffix(s, "(failed)")
		}) || !slices.Contains(v.Failing, dossier.JobGDRID) {
		t.Errorf("verdict: %+v", v)
	}
	var rows int
	for _, m := range rep.Measurements.Collectives {
		if m.Run == "job1" {
			rows++
			if m.Nodes != 2 || m.Ranks != 2 || !strings.HasPrefix(m.ID, "job1.nccl.") || !strings.HasSuffix(m.Key(), "(2 ranks, 2 nodes)") {
				t.Errorf("job row %+v (%s)", m, m.Key())
			}
		}
	}
	if rows == 0 || !slices.ContainsFunc(rep.NCCL, func(r dossier.NCCLRun) bool { return r.Name == "job1" }) {
		t.Errorf("%d job rows; NCCL runs %+v", rows, rep.NCCL)
	}
	if !slices.ContainsFunc(rep.Phases, func(p dossier.Phase) bool { return p.Name == PhaseJobs && p.Status == dossier.PhaseDone }) {
		t.Errorf("phases %+v", rep.Phases)
	}
	b, err := os.ReadFile(filepath.Join(out, dossier.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := schematest.Validate(schematest.Compile(t, "report.schema.json"), b); err != nil {
		t.Errorf("report.json: %v", err)
	}
	page, _ := os.ReadFile(filepath.Join(out, "report.html"))
	for _, w := range []string{"Jobs included", "measured across the fabric: <strong>host-staged</strong>", "NET/Socket to host-65cf06c2"} {
		if !strings.Contains(string(page), w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	for _, w := range []string{"## Jobs included", "NET/Socket to host-65cf06c2", "host-staged"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
}

// A node not meant for GPU Direct RDMA (gdr.required: false): the
// host-staged traffic is a skip and the GDR segments are left out.
func TestRunIncludesJobNoGDR(t *testing.T) {
	p := filepath.Join(t.TempDir(), "site.yaml")
	if err := os.WriteFile(p, []byte("gdr:\n  required: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, _ := includeRun(t, p, socketJob)
	for _, r := range rep.Results {
		if r.ID == dossier.JobGDRID && r.Status != result.Skip {
			t.Errorf("%s", r.Ref())
		}
	}
	if slices.ContainsFunc(rep.Verdict.NotMeasured, func(s string) bool { return strings.Contains(s, "GPU Direct RDMA") }) {
		t.Errorf("not measured: %q", rep.Verdict.NotMeasured)
	}
}

// What --include refuses, before anything runs, naming the file and why.
func TestIncludeRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	job, err := os.ReadFile(socketJob)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := write("elsewhere.json", strings.ReplaceAll(string(job), "host-65cf06c2", "node-b"))
	for _, c := range []struct {
		name, path, want string
	}{
		{"no such folder", filepath.Join(dir, "nothing"), "no results.json of a bench nccl job there"},
		{"a dossier", write("report.json", `{"schema":"gdrcheck.report/v1","run":{},"results":[]}`), `schema "gdrcheck.report/v1": want gdrcheck.bench-nccl/v1`},
		{"one process", write("one.json", `{"schema":"gdrcheck.bench-nccl/v1","run":{},"results":[],"complete":true,"measurements":[]}`), "a bench nccl run of one process"},
		{"bad JSON", write("bad.json", "{\"schema\":\n  \"gdrcheck.bench-nccl/v1\",\n  \"job\": 7}"), "bad.json"},
		{"another node's job", elsewhere, "none of its 2 ranks ran on this node (host-65cf06c2): they ran on node-b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "d")
			_, err := dossierSession().Run(t.Context(), RunOptions{Node: NodeOptions{Root: h200LiveSnapshot, Timeout: time.Minute},
				Checks: CheckOptions{Timeout: 10 * time.Second}, Out: out, Include: []string{c.path}})
			var te *ToolError
			if !errors.As(err, &te) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want a tool error with %q", err, c.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a refused run made --out (%v)", err)
			}
		})
	}
}

// A cross-node bench rdma between two HGX nodes (the stand-in perftest),
// rank 0's results.json folded into the first node's dossier: each rail's
// GPU has its registration, port and fabric hops measured, the fabric
// naming the other node's GPU and NIC.
func TestRunIncludesRDMACross(t *testing.T) {
	root := fakehost.Dir(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	p, err := PlanRDMA(t.Context(), NodeOptions{Root: root, Timeout: time.Minute}, rdma.Options{Mode: rdma.ModeCrossNode, GIDIndex: -1, Rails: []int{0, 1}, Concurrent: true})
	if err != nil {
		t.Fatal(err)
	}
	perf, out, addr := perftestStandIn(t), t.TempDir(), freeport.Addr(t)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			s := &Session{Host: fmt.Sprintf("hgx-h200-0%d", r+1), Clock: func() time.Time { return time.Unix(0, 0) }}
			plan := *p
			_, _, errs[r] = s.benchRDMACross(t.Context(), s.Now(), &plan, RDMAOptions{PerftestDir: perf, Out: out, Timeout: 20 * time.Second,
				Job: rdmaJob(r, 2, addr, 5*time.Second)})
		})
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("ranks: %v, %v", errs[0], errs[1])
	}
	d := filepath.Join(t.TempDir(), "d")
	nr, err := dossierSession().Run(t.Context(), RunOptions{Node: NodeOptions{Root: root, Timeout: time.Minute},
		Checks: CheckOptions{Timeout: 10 * time.Second}, Out: d, Include: []string{out}})
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	rep, err := nr.Dossier(t.Context(), DossierOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Jobs) != 1 || rep.Jobs[0].Command != "bench-rdma" || len(rep.Jobs[0].Pairs) != 2 {
		t.Fatalf("jobs %+v", rep.Jobs)
	}
	for _, jp := range rep.Jobs[0].Pairs {
		if jp.GPU < 0 || !strings.HasPrefix(jp.Peer, "hgx-h200-02 GPU") || len(jp.Results) == 0 {
			t.Fatalf("pair %+v", jp)
		}
		dp := rep.Topology.DataPaths[jp.GPU]
		for _, kind := range []string{dossier.HopRegistration, dossier.HopNIC, dossier.HopPort, dossier.HopFabric} {
			h := hopOf(dp, kind)
			if h.Proof != result.ProofMeasured {
				t.Errorf("GPU%d %s: %+v", jp.GPU, kind, h)
			}
		}
		if f := hopOf(dp, dossier.HopFabric); !strings.Contains(f.Detail, "job1: bench rdma "+jp.NIC) || !strings.Contains(f.Detail, jp.Peer) {
			t.Errorf("GPU%d fabric: %q", jp.GPU, f.Detail)
		}
	}
	// Every run of this node's ends is a measurement the fleet and diff
	// compare by pair, memory and loopback or cross-node.
	var keys []string
	for _, m := range rep.Measurements.RDMA {
		if m.Job != "job1" || m.Peer == "" || !(m.Gbps > 0) || m.Status != result.Pass {
			t.Errorf("rdma row %+v", m)
		}
		keys = append(keys, m.Key())
	}
	if len(keys) != 4 || !strings.HasSuffix(keys[0], " cross-node") {
		t.Errorf("rdma keys %q", keys)
	}
	b, err := os.ReadFile(filepath.Join(d, dossier.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := schematest.Validate(schematest.Compile(t, "report.schema.json"), b); err != nil {
		t.Errorf("report.json: %v", err)
	}
	n, err := fleet.Summarize(b, "report.json")
	if err != nil {
		t.Fatal(err)
	}
	var fk []string
	for _, m := range n.Measurements {
		if m.Unit == dossier.UnitRDMA {
			fk = append(fk, m.Key)
		}
	}
	if !slices.Equal(fk, keys) {
		t.Errorf("fleet's rdma keys %q, want %q", fk, keys)
	}
	// A second dossier whose rail 0 reached half the rate: diff says so.
	slow := *rep
	slow.Measurements.RDMA = slices.Clone(rep.Measurements.RDMA)
	slow.Measurements.RDMA[0].Gbps /= 2
	df := diff.Compare(rep, &slow, "a", "b", diff.DefaultOptions())
	if !slices.ContainsFunc(df.Changes, func(c diff.Change) bool { return c.Subject == keys[0] && c.Effect == diff.Worse }) {
		t.Errorf("diff: %+v", df.Changes)
	}
}

func hopOf(dp dossier.DataPath, kind string) dossier.Hop {
	for _, h := range dp.Hops {
		if h.Kind == kind {
			return h
		}
	}
	return dossier.Hop{}
}

// run --profile standard loops GPU memory through every rail NIC (bench
// rdma's loopback, the stand-in perftest here): its pairs join the
// dossier's jobs as bench.rdma and measure their registration and NIC
// hops, never the fabric.
func TestRunLoopsBackThroughEachNIC(t *testing.T) {
	hgx := fakehost.Dir(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	t.Setenv("PATH", perftestStandIn(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out := filepath.Join(t.TempDir(), "d")
	nr, err := dossierSession().Run(t.Context(), RunOptions{Node: NodeOptions{LiveRoot: hgx, Timeout: time.Minute},
		Checks: CheckOptions{Timeout: 10 * time.Second}, Out: out, Profile: ProfileStandard})
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	// The GPU benchmarks have no GPU here: only bench rdma runs.
	nr.BenchSkip, nr.BenchErr = "", nil
	d := &dossierRun{nr: nr}
	status, why := d.benchRDMA(t.Context())
	if status != dossier.PhaseDone || len(d.rep.Jobs) != 1 || d.rep.Jobs[0].Name != RDMAJobName {
		t.Fatalf("bench.rdma: %s %s; jobs %+v", status, why, d.rep.Jobs)
	}
	pairs := d.rep.Jobs[0].Pairs
	if len(pairs) == 0 || pairs[0].GPU != 0 || pairs[0].Peer != "" || !slices.Contains(pairs[0].Memory, dossier.MemHost) {
		t.Fatalf("pairs %+v", pairs)
	}
	d.finish(t.Context())
	dp := d.rep.Topology.DataPaths[0]
	if h := hopOf(dp, dossier.HopNIC); h.Proof != result.ProofMeasured {
		t.Errorf("NIC hop %+v", h)
	}
	if h := hopOf(dp, dossier.HopFabric); h.Proof != result.ProofNotExercised {
		t.Errorf("a loopback reached the fabric: %+v", h)
	}
	if _, err := os.Stat(filepath.Join(out, "raw", "rdma", "results.json")); err != nil {
		t.Errorf("raw/rdma: %v", err)
	}
}

// The bench.rdma phase is standard's and full's, not quick's.
func TestRDMAPhaseByProfile(t *testing.T) {
	for prof, want := range map[Profile]bool{ProfileQuick: false, ProfileStandard: true, ProfileFull: true} {
		nr, err := dossierSession().Run(t.Context(), RunOptions{Node: NodeOptions{Root: h200LiveSnapshot, Timeout: time.Minute},
			Checks: CheckOptions{Timeout: 10 * time.Second}, Profile: prof})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := nr.Dossier(t.Context(), DossierOptions{})
		nr.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.ContainsFunc(rep.Phases, func(p dossier.Phase) bool { return p.Name == PhaseRDMA }); got != want {
			t.Errorf("%s: bench.rdma phase %v, want %v (%+v)", prof, got, want, rep.Phases)
		}
	}
}
