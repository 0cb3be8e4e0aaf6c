package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
	"github.com/gdrcheck/gdrcheck/internal/testutil/freeport"
)

// burnLiveHost is two GPUs on root ports with AER, standing for the live
// host of `gdrcheck burn` (internal/app's fixture of its burn-in tests).
var burnLiveHost = func() string {
	b, err := os.ReadFile(repo + "/internal/app/testdata/burn-2gpu.host")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// `gdrcheck burn` on the command line, with the fake CUDA runtime and
// NCCL: the dossier with its burn section and raw/burn, the text's burn-in
// summary and the dossier's place; then `burn --replay` of the dossier in
// JSON. The fake GPUs' rates fail the model (their copies are host
// memcpy), so the node is not ready: exit 1 both times, the burn-in's
// own windows complete.
func TestBurnCommand(t *testing.T) {
	t.Setenv("GDRCHECK_CUDART", fakelib.CUDART(t))
	t.Setenv("GDRCHECK_NCCL", fakelib.NCCL(t))
	t.Setenv("FAKECUDA_DEVICES", "2")
	for _, k := range (bench.NCCLDebug{}).Names() {
		t.Setenv(k, "")
	}
	spec, err := fakehost.Parse("fakelive", strings.NewReader(burnLiveHost))
	if err != nil {
		t.Fatal(err)
	}
	live := t.TempDir()
	if err := spec.Materialize(live); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "dossier")
	exec := func(args ...string) (string, string, int) {
		var o, e bytes.Buffer
		// The windows are timed: a running clock.
		s := &app.Session{Tool: report.Tool{Version: "test", Commit: "test"}, Host: "testhost", Command: append([]string{"gdrcheck"}, args...), Clock: time.Now}
		code := execute(args, &o, &e, s, live)
		return o.String(), e.String(), code
	}
	stdout, stderr, code := exec("burn", "--duration", "1200ms", "--window", "600ms", "--size", "64K", "--out", out)
	if code != ExitFailed {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"Burn-in 1.2s in windows of 600ms (complete), 2 window(s) sampled:", "NCCL collective(s) checked (0 wrong)",
		"its files: raw/burn/burn.json", "Dossier: " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "gdrcheck: burn window 2") || !strings.Contains(stderr, "(2 of 2, about 0s left)") {
		t.Errorf("stderr lacks the windows' progress:\n%s", stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, dossier.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := dossier.Decode(bytes.NewReader(b))
	if err != nil || rep.Burn == nil || !rep.Burn.Complete || len(rep.Burn.Windows) != 2 || rep.Profile != "burnin" {
		t.Fatalf("report.json: %v %+v", err, rep)
	}
	stdout, _, code = exec("burn", "--replay", out, "--format", "json")
	var env struct {
		Schema  string            `json:"schema"`
		Results []json.RawMessage `json:"results"`
	}
	if code != ExitFailed || json.Unmarshal([]byte(stdout), &env) != nil || env.Schema != "gdrcheck.burn/v1" || len(env.Results) == 0 {
		t.Errorf("replay: exit %d, %s", code, stdout)
	}
}

// burn --replay A B ...: captures of a node around a workload gdrcheck did
// not run; exit 1 for a fault, 0 clean, 2 for a capture it cannot read.
func TestBurnReplayCapturesCommand(t *testing.T) {
	capture := func(fatal int) string {
		text := strings.Replace(burnLiveHost, "  0000:00:02.0 rootport id=8086:2030 gen=5 aer=yes\n",
			"  0000:00:02.0 rootport id=8086:2030 gen=5 aer=yes aer.fatal.DLP="+string(rune('0'+fatal))+"\n", 1)
		spec, err := fakehost.Parse("capture", strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return fakehost.MaterializeArchive(t, spec)
	}
	clean, bad := capture(0), capture(1)
	if out, errs, code := run(t, "burn", "--replay", clean, bad); code != ExitFailed || !strings.Contains(out, "FAIL    burn.fatal") || !strings.Contains(out, "0000:00:02.0") {
		t.Errorf("a fault: exit %d\n%s\n%s", code, out, errs)
	}
	if out, errs, code := run(t, "burn", "--replay", clean, clean); code != ExitOK || !strings.Contains(out, "taken in the order given") {
		t.Errorf("clean: exit %d\n%s\n%s", code, out, errs)
	}
	if _, errs, code := run(t, "burn", "--replay", clean, filepath.Join(t.TempDir(), "gone.tgz")); code != ExitToolErr {
		t.Errorf("unreadable: exit %d %s", code, errs)
	}
	if _, errs, code := run(t, "burn", clean); code != ExitToolErr || !strings.Contains(errs, "captures follow --replay") {
		t.Errorf("arguments without --replay: exit %d %s", code, errs)
	}
}

// burn as one rank a node of a job of two (on loopback, each its own
// NCCL_HOSTID, the fake libraries): every window's NCCL pass also runs
// across the two, on all of each node's GPUs at once (4 ranks); both
// dossiers hold the job's rows, checked, nothing wrong. A second rank on one node is
// refused: one process drives all of a node's GPUs.
func TestBurnAcrossNodes(t *testing.T) {
	live := t.TempDir()
	spec, err := fakehost.Parse("fakelive", strings.NewReader(burnLiveHost))
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Materialize(live); err != nil {
		t.Fatal(err)
	}
	xdir, addr := t.TempDir(), freeport.Addr(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// One --out for the job, as srun gives every rank the same line.
	out := t.TempDir()
	outs := []string{filepath.Join(out, "rank-0"), filepath.Join(out, "rank-1")}
	var procs []*rankProc
	for r := range 2 {
		p := &rankProc{rank: r}
		p.cmd = exec.CommandContext(ctx, os.Args[0], "burn", "--rank", fmt.Sprint(r), "--world-size", "2", "--local-rank", "0", "--rendezvous", addr,
			"--duration", "2s", "--window", "1s", "--size", "64K", "--no-rdma", "--out", out)
		p.cmd.Env = append(cleanEnv(), reexecVar+"=1", "GDRCHECK_CUDART="+fakelib.CUDART(t), "GDRCHECK_NCCL="+fakelib.NCCL(t), "FAKECUDA_DEVICES=2",
			"FAKENCCL_EXCHANGE_DIR="+xdir, "GDRCHECK_SECRET="+jobSecret, fmt.Sprintf("NCCL_HOSTID=fakehost%d", r), liveRootVar+"="+live)
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
	}
	for r, p := range procs {
		// The fake GPUs' rates fail the model: not ready, exit 1.
		if p.code != ExitFailed {
			t.Fatalf("%s", p)
		}
		b, err := os.ReadFile(filepath.Join(outs[r], dossier.ReportJSON))
		if err != nil {
			t.Fatalf("rank %d: %v\n%s", r, err, p)
		}
		rep, err := dossier.Decode(bytes.NewReader(b))
		if err != nil || rep.Burn == nil || len(rep.Burn.Windows) != 2 {
			t.Fatalf("rank %d: %v %+v", r, err, rep)
		}
		for i, w := range rep.Burn.Windows {
			if len(w.Job) != 7 || len(w.Errors) != 0 {
				t.Errorf("rank %d window %d: job %+v, errors %v", r, i+1, w.Job, w.Errors)
			}
			for _, c := range w.Job {
				if c.Wrong != 0 || c.Error != "" {
					t.Errorf("rank %d window %d: %+v", r, i+1, c)
				}
			}
		}
		// Every GPU of the node at once, every window: 2 processes of 2 GPUs,
		// a job of 4 ranks.
		if r == 0 {
			for i := range 2 {
				jr := readJobReport(t, filepath.Join(outs[0], "raw", "burn", "job", fmt.Sprintf("window-%d", i+1), "results.json"))
				if jr.Job == nil || jr.Job.WorldSize != 4 || len(jr.Job.Ranks) != 4 || len(jr.Job.Processes) != 2 || jr.Measurements[0].Ranks != 4 {
					t.Errorf("window %d's job: %+v", i+1, jr.Job)
				}
			}
		}
		// Every GPU of the node at once, every window.
		for i, w := range rep.Burn.Windows {
			if g := w.Job[0].GPU; g != "GPU0,GPU1" {
				t.Errorf("rank %d window %d: the job ran on %q", r, i+1, g)
			}
		}
		if !strings.Contains(p.stdout.String(), "across the job's nodes") && !strings.Contains(string(b), "across the job's nodes") {
			t.Errorf("rank %d: burn.data does not say what ran across the nodes\n%s", r, p.stdout.String())
		}
	}
	if _, errs, code := run(t, "burn", "--rank", "1", "--world-size", "2", "--local-rank", "1", "--rendezvous", addr); code != ExitToolErr || !strings.Contains(errs, "one rank a node") {
		t.Errorf("two ranks on a node: exit %d %s", code, errs)
	}
}
