package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

func fakeGPUs(t *testing.T, n string) {
	t.Helper()
	t.Setenv("GDRCHECK_CUDART", fakelib.CUDART(t))
	t.Setenv("GDRCHECK_NCCL", fakelib.NCCL(t))
	t.Setenv("FAKECUDA_DEVICES", n)
	for _, k := range (bench.NCCLDebug{}).Names() {
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
	var rep bench.NCCLReport
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("results.json: %v", err)
	}
	var env struct {
		Schema  string          `json:"schema"`
		Run     report.Run      `json:"run"`
		Results []result.Result `json:"results"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Schema != "gdrcheck.bench-nccl/v1" || env.Run.Version != "test" || env.Run.Command[1] != "bench" || len(env.Results) == 0 {
		t.Errorf("results.json envelope: %v %+v", err, env)
	}
	if !rep.Complete || len(rep.Measurements) != 7 || rep.NCCL != "2.28.3" || len(rep.Devices) != 2 || rep.Evidence == nil || rep.Evidence.Debug != "INFO" {
		t.Errorf("report: complete %v, %d results, nccl %q, %d devices, evidence %+v", rep.Complete, len(rep.Measurements), rep.NCCL, len(rep.Devices), rep.Evidence)
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
		{"NCCL error explained", map[string]string{"FAKECUDA_HANG": "1", "FAKENCCL_ASYNCERR": "6"}, nil, ExitToolErr, "(ncclResult 6, ncclRemoteError: a call failed because of the network"},
		{"NCCL error's remedy", map[string]string{"FAKECUDA_HANG": "1", "FAKENCCL_ASYNCERR": "6"}, nil, ExitToolErr, "→ check the NICs' ports and links"},
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

// Without CUDA, a benchmark leaves no output folder behind: the folder is
// made only after the libraries load.
func TestBenchWithoutCUDALeavesNoFolder(t *testing.T) {
	fakeGPUs(t, "1")
	t.Setenv("GDRCHECK_CUDART", "/nonexistent/libcudart.so")
	t.Chdir(t.TempDir())
	for _, args := range [][]string{{"bench", "nccl", "--cudart", "/nonexistent/libcudart.so"}, {"bench", "copy", "--cudart", "/nonexistent/libcudart.so"}, {"run", "--bench"}} {
		_, errs, code := run(t, args...)
		if code != ExitToolErr {
			t.Errorf("%v: exit %d (want %d): %s", args, code, ExitToolErr, errs)
		}
		if _, err := os.Stat("gdrcheck-results"); !os.IsNotExist(err) {
			t.Fatalf("%v left gdrcheck-results behind (%v)", args, err)
		}
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
	for _, f := range []string{"report.json", "raw/nccl/results.json", "raw/copy/results.json"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		var env struct {
			Schema string `json:"schema"`
		}
		if err != nil || json.Unmarshal(b, &env) != nil || !strings.HasPrefix(env.Schema, "gdrcheck.") {
			t.Errorf("%s: %v, schema %q", f, err, env.Schema)
		}
	}
	// The NCCL settings were applied before the checks loaded NCCL, and
	// point into the run's folder.
	if got := os.Getenv("NCCL_DEBUG_FILE"); got != filepath.Join(out, "raw", "nccl", "nccl-debug.%h.%p.log") {
		t.Errorf("NCCL_DEBUG_FILE = %q", got)
	}
	// The dossier holds the measurements beside the model's expectations,
	// and its manifest covers the raw outputs.
	r := readDossier(t, out)
	if !r.Complete || len(r.Measurements.Collectives) == 0 || len(r.Measurements.Copies) == 0 {
		t.Errorf("report.json: complete %v, %d collectives, %d copies; phases %+v", r.Complete, len(r.Measurements.Collectives), len(r.Measurements.Copies), r.Phases)
	}
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil || !strings.Contains(string(sums), "  raw/nccl/nccl-tests.txt\n") || !strings.Contains(string(sums), "  raw/copy/results.json\n") {
		t.Errorf("SHA256SUMS: %v\n%s", err, sums)
	}
}

// TestBenchExpectFlag: bench nccl and bench copy read --expect as check
// does, before anything loads: a bad profile is refused naming its file,
// line and field, and leaves no output folder; --expect with --no-judge is
// refused; a good one runs.
func TestBenchExpectFlag(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(bad, []byte("gpus: {count: 8, modle: H200}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte("gpus: {count: 2, model: H200}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"bench", "nccl", "-b", "1K", "-e", "4K", "-n", "1", "-w", "1"}, {"bench", "copy", "--size", "1M", "-n", "1", "--tests", "d2d"}} {
		fakeGPUs(t, "2")
		t.Chdir(t.TempDir())
		_, errs, code := run(t, append(cmd, "--expect", bad)...)
		if code != ExitToolErr || !strings.Contains(errs, bad) || !strings.Contains(errs, "line 1") || !strings.Contains(errs, "modle") {
			t.Errorf("%v --expect bad: exit %d: %s", cmd, code, errs)
		}
		if _, err := os.Stat("gdrcheck-results"); !os.IsNotExist(err) {
			t.Errorf("%v --expect bad left gdrcheck-results behind (%v)", cmd, err)
		}
		_, errs, code = run(t, append(cmd, "--expect", good, "--no-judge")...)
		if code != ExitToolErr || !strings.Contains(errs, "--no-judge judges nothing") {
			t.Errorf("%v --expect --no-judge: exit %d: %s", cmd, code, errs)
		}
		out, errs, code := run(t, append(cmd, "--expect", good, "--out", t.TempDir())...)
		if code != ExitOK {
			t.Errorf("%v --expect good: exit %d: %s\n%s", cmd, code, errs, out)
		}
	}
}

// A benchmark that fails mid-run leaves a valid dossier marked
// incomplete: the phase says it failed and why, what ran before it (the
// copies, here failing too) is kept with its errors, and the run exits 1.
func TestRunBenchFailureLeavesIncompleteDossier(t *testing.T) {
	fakeGPUs(t, "2")
	t.Setenv("FAKECUDA_OOM", "1") // every allocation fails
	out := t.TempDir()
	_, errs, code := run(t, "run", "--bench", "--bench-size", "1M", "--out", out)
	if code != ExitFailed {
		t.Errorf("exit %d, want %d: %s", code, ExitFailed, errs)
	}
	r := readDossier(t, out)
	var nccl dossier.Phase
	for _, p := range r.Phases {
		if p.Name == app.PhaseNCCL {
			nccl = p
		}
	}
	if r.Complete || nccl.Status != dossier.PhaseFailed || !strings.Contains(nccl.Reason, "out of memory") {
		t.Errorf("complete %v, bench.nccl %+v", r.Complete, nccl)
	}
	if len(r.Measurements.Copies) == 0 || r.Measurements.Copies[0].Status != result.Error {
		t.Errorf("copies %+v", r.Measurements.Copies)
	}
	if !strings.Contains(errs, "gdrcheck: bench.nccl failed") {
		t.Errorf("stderr does not say the phase failed:\n%s", errs)
	}
}

// readDossier decodes the report.json of the run folder out.
func readDossier(t *testing.T, out string) *dossier.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := dossier.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
