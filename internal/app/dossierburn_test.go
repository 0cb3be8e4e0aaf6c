package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
	"github.com/gdrcheck/gdrcheck/internal/testutil/schematest"
)

// burnRun is `run --profile burnin` on the fixture standing for the live
// host, with the fake CUDA runtime and NCCL: quick's pass, then two
// windows of burn-in; progress gets the burn-in's line after each window.
func burnRun(t *testing.T, ctx context.Context, live, out string, progress io.Writer) (*dossier.Report, error) {
	t.Helper()
	t.Setenv("GDRCHECK_CUDART", fakelib.CUDART(t))
	t.Setenv("GDRCHECK_NCCL", fakelib.NCCL(t))
	t.Setenv("FAKECUDA_DEVICES", "2")
	for _, k := range (bench.NCCLDebug{}).Names() {
		t.Setenv(k, "")
	}
	s := dossierSession()
	s.Clock = time.Now // the windows are timed
	nr, err := s.Run(ctx, RunOptions{Node: NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live},
		Checks: CheckOptions{Timeout: 10 * time.Second}, Out: out, AutoBench: true, BenchSize: 1 << 20, Profile: ProfileBurnin,
		Burn: BurnOptions{Duration: 1200 * time.Millisecond, Window: 600 * time.Millisecond, Settle: 10 * time.Millisecond, Bytes: 64 << 10,
			SensorEvery: 30 * time.Millisecond, NCCL: true, Progress: progress}})
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	return nr.Dossier(ctx, DossierOptions{})
}

// The burnin profile: the dossier has its burn phase and section (both
// windows, their copies and NCCL pass, a timeline row per sampled device),
// the burn-in's verdicts among its results, a report.json the schema
// accepts, and burn/ that --replay judges to the same verdicts. An
// uncorrectable error planted on GPU1's root port after window 1 is drawn
// in that device's cell for window 2 and fails the node.
func TestDossierBurnin(t *testing.T) {
	sch := schematest.Compile(t, "report.schema.json")
	for _, planted := range []bool{false, true} {
		live := burnLive(t)
		out := filepath.Join(t.TempDir(), "dossier")
		// After window 1 is judged (its progress line), the dossier on
		// disk holds it and says the burn-in is under way; then an
		// uncorrectable error is planted, if this case plants one.
		rewritten := false
		prog := &onWrite{f: func() {
			b, err := os.ReadFile(filepath.Join(out, dossier.ReportJSON))
			if err != nil {
				t.Errorf("after window 1: %v", err)
				return
			}
			back, err := dossier.Decode(bytes.NewReader(b))
			if err != nil || back.Burn == nil || len(back.Burn.Windows) != 1 || back.Complete ||
				!strings.Contains(back.Interrupted, "burn under way (1 window(s) judged)") {
				t.Errorf("after window 1, report.json: %v %+v", err, back)
			}
			rewritten = true
			if !planted {
				return
			}
			plantFatalAER(t, live)
		}}
		rep, err := burnRun(t, t.Context(), live, out, prog)
		if err != nil {
			t.Fatalf("planted %v: %v", planted, err)
		}
		var phase *dossier.Phase
		for i := range rep.Phases {
			if rep.Phases[i].Name == PhaseBurn {
				phase = &rep.Phases[i]
			}
		}
		if phase == nil || phase.Status != dossier.PhaseDone {
			t.Fatalf("planted %v: burn phase %+v in %+v", planted, phase, rep.Phases)
		}
		b := rep.Burn
		if b == nil || !b.Complete || len(b.Windows) != 2 || b.Path != "raw/burn/burn.json" {
			t.Fatalf("planted %v: burn section %+v", planted, b)
		}
		for _, w := range b.Windows {
			if w.Passes == 0 || len(w.Copies) == 0 || len(w.NCCL) != 7 || w.Moved == 0 || w.End.Before(w.Start) || w.Start.IsZero() {
				t.Errorf("planted %v: window %+v", planted, w)
			}
			if !strings.HasPrefix(w.Copies[0].GPU, "GPU") {
				t.Errorf("copies named %q, want the node's GPU name", w.Copies[0].GPU)
			}
		}
		var rootPort *burn.TimelineRow
		for i := range b.Timeline {
			if b.Timeline[i].Device.Name == "0000:00:02.0" {
				rootPort = &b.Timeline[i]
			}
		}
		if rootPort == nil || len(rootPort.Cells) != 2 {
			t.Fatalf("planted %v: no root port row in %+v", planted, b.Timeline)
		}
		want := burn.CellClean
		if planted {
			want = burn.CellFatal
		}
		if rootPort.Cells[0].State != burn.CellClean || rootPort.Cells[1].State != want {
			t.Errorf("planted %v: root port cells %+v", planted, rootPort.Cells)
		}
		got := map[string]bool{}
		for _, r := range rep.Results {
			if r.Source == burn.Source {
				got[string(r.Status)+" "+r.ID+" "+r.Subject] = true
			}
		}
		if got["fail burn.fatal 0000:00:02.0"] != planted || !got["pass burn.data window 2"] {
			t.Errorf("planted %v: burn verdicts %v", planted, got)
		}
		// (The fixture's checks and the fake GPUs' rates fail on their own.)
		if failing := strings.Contains(rep.Verdict.Line(), "burn.fatal"); failing != planted || !rep.Verdict.NotReady() && planted {
			t.Errorf("planted %v: node verdict %s", planted, rep.Verdict.Line())
		}
		disk, err := os.ReadFile(filepath.Join(out, dossier.ReportJSON))
		if err != nil {
			t.Fatal(err)
		}
		if err := schematest.Validate(sch, disk); err != nil {
			t.Errorf("planted %v: report.json: %v", planted, err)
		}
		checkSums(t, out)
		// Every file of the dossier carries the burn-in.
		for file, wants := range map[string][]string{
			"report.md":    {"## Burn-in", "1.2s in windows of 600ms, 2 window(s) sampled, complete"},
			"metrics.prom": {"gdrcheck_burn_windows 2", `gdrcheck_burn_error_events{device="0000:00:02.0",class="fatal"}`},
			"report.html":  {`<section id="burn">`, "tl tl-clean"},
		} {
			fb, err := os.ReadFile(filepath.Join(out, file))
			if err != nil {
				t.Fatal(err)
			}
			if planted {
				wants = append(wants, "DLP +1")
			}
			for _, w := range wants {
				if file == "metrics.prom" && w == "DLP +1" {
					continue
				}
				if !strings.Contains(string(fb), w) {
					t.Errorf("planted %v: %s lacks %q", planted, file, w)
				}
			}
		}
		// Replayed from the dossier's burn folder: the same verdicts.
		renv, _ := (&Session{Clock: time.Now}).BurnReplay(t.Context(), NodeOptions{Root: live, Timeout: time.Minute}, filepath.Join(out, BurnDir), BurnOptions{})
		if renv == nil {
			t.Fatal("replay: no document")
		}
		replayed := map[string]bool{}
		for _, r := range renv.Results {
			replayed[string(r.Status)+" "+r.ID+" "+r.Subject] = true
		}
		for k := range got {
			if !replayed[k] {
				t.Errorf("planted %v: %q in the dossier, not replayed", planted, k)
			}
		}
		if len(replayed) != len(got) {
			t.Errorf("planted %v: replay %d verdict kinds, dossier %d", planted, len(replayed), len(got))
		}
		if !rewritten {
			t.Error("no progress line after window 1")
		}
		if p := prog.buf.String(); !strings.Contains(p, "(1 of 2, about ") || !strings.Contains(p, "(2 of 2, about 0s left)") {
			t.Errorf("progress without the windows left: %q", p)
		}
	}
}

// Interrupted after window 1 of a longer burn-in: the dossier is written,
// valid, marked incomplete, its burn phase interrupted, and the window
// done is in the burn section, judged.
func TestDossierBurninInterrupted(t *testing.T) {
	sch := schematest.Compile(t, "report.schema.json")
	live, out := burnLive(t), filepath.Join(t.TempDir(), "dossier")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rep, err := burnRun(t, ctx, live, out, &onWrite{f: cancel})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the interrupt", err)
	}
	if rep.Complete || rep.Burn == nil || rep.Burn.Complete || !strings.HasPrefix(rep.Burn.Stopped, "interrupted") || len(rep.Burn.Windows) == 0 {
		t.Fatalf("complete %v, burn %+v", rep.Complete, rep.Burn)
	}
	for _, p := range rep.Phases {
		if p.Name == PhaseBurn && p.Status != dossier.PhaseInterrupted {
			t.Errorf("burn phase %+v", p)
		}
	}
	back := readReport(t, sch, out)
	if back.Complete || back.Burn == nil || len(back.Burn.Windows) != len(rep.Burn.Windows) {
		t.Errorf("on disk: %+v", back)
	}
	judged := false
	for _, r := range back.Results {
		judged = judged || r.ID == "burn.data" && r.Subject == "window 1"
	}
	if !judged {
		t.Error("window 1 not judged in the dossier on disk")
	}
}

// TestBurnSectionJobGPUs: a window's pass across the nodes is labelled
// with every GPU it ran on; an earlier burn.json's one GPU (job_gpu) reads
// as before.
func TestBurnSectionJobGPUs(t *testing.T) {
	doc := &BurnDoc{GPUs: []BurnGPU{{Device: 0, Address: "0000:18:00.0", GPU: "GPU0"}, {Device: 1, Address: "0000:19:00.0", GPU: "GPU1"}},
		Series: &burn.Series{}, Schedule: burn.Schedule{Windows: make([]burn.Window, 3)},
		Work: []BurnWork{
			{Window: 0, Job: []BurnCollective{{Collective: "all_reduce"}}, JobGPUs: []string{"0000:18:00.0", "0000:19:00.0"}},
			{Window: 1, Job: []BurnCollective{{Collective: "all_reduce"}}, JobGPU: "0000:19:00.0"},
			{Window: 2, Job: []BurnCollective{{Collective: "all_reduce"}}, JobGPUs: []string{"0000:1a:00.0"}},
		}}
	b := BurnSection(doc, "burn.json")
	for i, want := range []string{"GPU0,GPU1", "GPU1", "0000:1a:00.0"} {
		if got := b.Windows[i].Job[0].GPU; got != want {
			t.Errorf("window %d: %q, want %q", i+1, got, want)
		}
	}
	if got := jobText(doc.Work[1]); got != " here and 1 across the job's nodes (on 0000:19:00.0)" {
		t.Errorf("jobText of an earlier document: %q", got)
	}
}
