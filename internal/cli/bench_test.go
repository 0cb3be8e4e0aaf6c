package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

func fakeGPUs(t *testing.T, n string) {
	t.Helper()
	t.Setenv("GDRCHECK_CUDART", fakelib.CUDART(t))
	t.Setenv("GDRCHECK_NCCL", fakelib.NCCL(t))
	t.Setenv("FAKECUDA_DEVICES", n)
	for _, k := range []string{"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "NCCL_TOPO_DUMP_FILE", "NCCL_GRAPH_DUMP_FILE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestBenchNCCLCommand(t *testing.T) {
	fakeGPUs(t, "2")
	out := t.TempDir()
	stdout, errs, code := run(t, "bench", "nccl", "-b", "1K", "-e", "64K", "-f", "4", "-w", "1", "-n", "2", "--op", "all", "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s\n%s", code, errs, stdout)
	}
	for _, want := range []string{"# Collective all_reduce", "#       size         count      type   redop    root     time   algbw   busbw  #wrong", "# Out of bounds values : 0 OK", "# Collective sendrecv", "Rank  1 Group  0", "# device buffers from ncclMemAlloc"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	var rep NCCLReport
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("results.json: %v", err)
	}
	if !rep.Complete || len(rep.Results) != 7 || rep.NCCL != "2.28.3" || len(rep.Devices) != 2 || rep.Evidence == nil || rep.Evidence.Debug != "INFO" {
		t.Errorf("report: complete %v, %d results, nccl %q, %d devices, evidence %+v", rep.Complete, len(rep.Results), rep.NCCL, len(rep.Devices), rep.Evidence)
	}
	if rep.Config["buffers"] != "ncclMemAlloc" {
		t.Errorf("config.buffers = %v", rep.Config["buffers"])
	}
	if os.Getenv("NCCL_DEBUG_FILE") != filepath.Join(out, "nccl-debug.%h.%p.log") {
		t.Errorf("NCCL_DEBUG_FILE = %q", os.Getenv("NCCL_DEBUG_FILE"))
	}
}

func TestBenchNCCLFailures(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{"wrong data", nil, []string{"--inject-corruption"}, ExitFailed, "wrong elements"},
		{"hung GPU", map[string]string{"FAKECUDA_HANG": "1"}, []string{"--op-timeout", "300ms"}, ExitFailed, "watchdog"},
		{"no GPU", map[string]string{"FAKECUDA_DEVICES": "0"}, nil, ExitToolErr, "no usable GPU"},
		{"busy GPU", map[string]string{"FAKECUDA_BUSY": "1"}, nil, ExitToolErr, "busy or unavailable"},
		{"out of memory", map[string]string{"FAKECUDA_OOM": "1"}, nil, ExitToolErr, "out of memory"},
		{"no NCCL", map[string]string{"GDRCHECK_NCCL": "/nonexistent/libnccl.so.2"}, []string{"--nccl", "/nonexistent/libnccl.so.2"}, ExitToolErr, "NCCL (libnccl.so.2) not found"},
		{"bad size", nil, []string{"-b", "lots"}, ExitToolErr, "-b: size"},
		{"ncclMemAlloc from an NCCL without it", map[string]string{"GDRCHECK_NCCL": fakelib.NCCLOld(t)}, []string{"--buffers", "nccl"}, ExitToolErr, "--buffers \"nccl\": NCCL 2.18.5"},
		{"bad buffers", nil, []string{"--buffers", "managed"}, ExitToolErr, "want auto, nccl or cuda"},
		{"bad collective", nil, []string{"--op", "allreduce,gossip"}, ExitToolErr, "--op: collective \"gossip\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fakeGPUs(t, "1")
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			args := append([]string{"bench", "nccl", "-b", "1K", "-e", "4K", "-n", "2", "-w", "1", "--out", t.TempDir()}, c.args...)
			stdout, errs, code := run(t, args...)
			if code != c.code || !strings.Contains(errs+stdout, c.msg) {
				t.Errorf("exit %d (want %d), output lacks %q:\n%s\n%s", code, c.code, c.msg, errs, stdout)
			}
		})
	}
}

func TestBenchCopyCommand(t *testing.T) {
	fakeGPUs(t, "2")
	out := t.TempDir()
	stdout, errs, code := run(t, "bench", "copy", "--size", "2M", "-n", "2", "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s\n%s", code, errs, stdout)
	}
	for _, want := range []string{"d2d", "h2d_pinned", "bidir_pinned", "GPU->GPU copy bandwidth, one way", "GPU->GPU small-copy latency"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	_, errs, code = run(t, "bench", "copy", "--size", "2M", "-n", "2", "--tests", "d2d", "--inject-corruption", "--out", t.TempDir())
	if code != ExitFailed || !strings.Contains(errs, "bytes wrong") {
		t.Errorf("corrupted copy: exit %d %s", code, errs)
	}
	_, errs, code = run(t, "bench", "copy", "--root", "../../testdata/snapshots/h200x1-vm.tgz")
	if code != ExitToolErr || !strings.Contains(errs, "live host only") {
		t.Errorf("bench on a snapshot: exit %d %s", code, errs)
	}
}

func TestRunWithBench(t *testing.T) {
	fakeGPUs(t, "2")
	t.Setenv("FAKECUDA_MEM", "4294967296")
	out := t.TempDir()
	stdout, errs, code := run(t, "run", "--bench", "--bench-size", "1M", "--out", out)
	// The checks of this (GPU-less) machine pass or skip; the fake GPUs run.
	if !strings.Contains(stdout, "Readiness checks:") || !strings.Contains(stdout, "# Collective alltoall") || !strings.Contains(stdout, "GPU->GPU copy bandwidth") {
		t.Fatalf("exit %d %s\n%s", code, errs, stdout)
	}
	for _, f := range []string{"run.json", "nccl/results.json", "copy/results.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestJudgeCopies: copies on the captured H200 node are judged against the
// model and stated as a fraction of the hardware limit (HBM peak, PCIe
// Gen5 x16 per direction), with the limit named in the evidence.
func TestJudgeCopies(t *testing.T) {
	r, cleanup, err := snapshot.Open(repo + "/testdata/snapshots/h200x1-vm.tgz")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	h, err := topology.Discover(context.Background(), topology.WithRoot(r))
	if err != nil || len(h.GPUs) != 1 {
		t.Fatalf("discover: %v", err)
	}
	e := &benchEnv{devices: []int{0}, host: h, gpus: map[int]*topology.GPU{0: h.GPUs[0]}}
	res := []bench.CopyResult{
		{Test: bench.CopyD2D, Dev: 0, Peer: -1, GBps: 2137.9, ReadWriteGBps: 4275.8, Valid: true},
		{Test: bench.CopyH2DPinned, Dev: 0, Peer: -1, GBps: 55.3, Valid: true},
		{Test: bench.CopyBidirPinned, Dev: 0, Peer: -1, GBps: 99.2, Valid: true},
		{Test: bench.CopyH2DPinned, Dev: 0, Peer: -1, GBps: 20, Valid: true},
	}
	got := judgeCopies(e, res, 0.85)
	want := []struct {
		status result.Status
		msg    string
		limit  string
	}{
		{result.Pass, "4275.8 GB/s, expected 4176.0 GB/s", "memory peak 4800 GB/s"},
		{result.Pass, "55.3 GB/s, expected 54.2 GB/s", "PCIe Gen5 x16, 63.0 GB/s per direction"},
		{result.Pass, "49.6 GB/s, expected 39.6 GB/s", "PCIe Gen5 x16, 63.0 GB/s per direction"},
		{result.Fail, "20.0 GB/s, expected 54.2 GB/s", "PCIe Gen5 x16, 63.0 GB/s per direction"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d judgements: %+v", len(got), got)
	}
	fractions := []string{"89% of the hardware limit", "88% of the hardware limit", "79% of the hardware limit", "32% of the hardware limit"}
	for i, w := range want {
		g := got[i]
		if g.Status != w.status || !strings.Contains(g.Message, w.msg) || !strings.Contains(g.Message, fractions[i]) {
			t.Errorf("%d: %s %s", i, g.Status, g.Message)
		}
		if len(g.Evidence) != 2 || g.Evidence[1].Source != "hardware limit" || g.Evidence[1].Value != w.limit {
			t.Errorf("%d: evidence %+v", i, g.Evidence)
		}
	}
}
