package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

// burnHost is liveHost with AER statistics on both GPUs and their root
// ports: the links the burn-in's copies cross.
var burnHost = mustRead("testdata/burn-2gpu.host")

// mustRead is a fixture's text (a test binary that cannot read its own
// testdata cannot test anything).
func mustRead(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// burnLive writes burnHost into a fresh directory standing for the live
// host (its AER files can be changed while a burn-in runs).
func burnLive(t *testing.T) string {
	t.Helper()
	spec, err := fakehost.Parse("fakelive", strings.NewReader(burnHost))
	if err != nil {
		t.Fatal(err)
	}
	live := t.TempDir()
	if err := spec.Materialize(live); err != nil {
		t.Fatal(err)
	}
	return live
}

// plantFatalAER writes an uncorrectable AER error (DLP) into GPU1's root
// port's statistics under live.
func plantFatalAER(t *testing.T, live string) {
	t.Helper()
	p := filepath.Join(live, "sys/devices/pci0000:00/0000:00:02.0/aer_dev_fatal")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("DLP 0\n"), []byte("DLP 1\n"), 1)
	b = bytes.Replace(b, []byte("TOTAL_ERR_FATAL 0\n"), []byte("TOTAL_ERR_FATAL 1\n"), 1)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// onWrite calls f on the first line written (after window 1 is judged).
type onWrite struct {
	f    func()
	done bool
	buf  bytes.Buffer
}

func (w *onWrite) Write(p []byte) (int, error) {
	if !w.done {
		w.done = true
		w.f()
	}
	return w.buf.Write(p)
}

// A burn-in on the fixture standing for the live host, with the fake CUDA
// runtime: two windows of copies on both GPUs, the AER counters sampled
// around them. Healthy, its GPU links' fatal counters pass and their
// error rates are unknown (a fraction of a second moves far too few bits
// to prove 1e-12); an uncorrectable error planted on GPU1's root port
// after window 1 fails window 2, naming the device and the link.
func TestBurnWindows(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICES", "2")
	for _, planted := range []bool{false, true} {
		live := burnLive(t)
		out := filepath.Join(t.TempDir(), "burn")
		o := BurnOptions{Duration: 600 * time.Millisecond, Window: 300 * time.Millisecond, Settle: 20 * time.Millisecond, Out: out,
			Bytes: 1 << 20, GPU: GPUOptions{CUDART: fakelib.CUDART(t)}, Judge: fakeRates, SensorEvery: 30 * time.Millisecond}
		w := &onWrite{f: func() {
			if !planted {
				return
			}
			plantFatalAER(t, live)
		}}
		o.Progress = w
		s := &Session{Clock: time.Now}
		env, dir, err := s.Burn(t.Context(), NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live}, o)
		if env == nil || dir != out {
			t.Fatalf("planted %v: env %v dir %q err %v", planted, env, dir, err)
		}
		doc := env.Data.(*BurnDoc)
		if !doc.Complete || len(doc.Schedule.Windows) != 2 || len(doc.Samples) != 8 || len(doc.GPUs) != 2 || doc.GPUs[1].GPU != "GPU1" {
			t.Fatalf("planted %v: complete %v, %d windows, samples %v, GPUs %+v, notes %v", planted, doc.Complete, len(doc.Schedule.Windows), doc.Samples, doc.GPUs, doc.Notes)
		}
		for _, w := range doc.Schedule.Windows {
			// Each GPU's path to the host, and the PCIe path between the
			// two (root ports of one host bridge: no NVLink), both ways.
			if len(w.Traffic) != 3 || w.Traffic[0].Link != burn.GPUHostLink("0000:18:00.0") || w.Traffic[0].Bytes == 0 ||
				w.Traffic[2].Link != burn.GPUPeerLink("0000:19:00.0", "0000:18:00.0") || w.Traffic[2].Bytes != 2*w.Traffic[0].Bytes {
				t.Errorf("planted %v: traffic %+v", planted, w.Traffic)
			}
		}
		got := map[string]result.Result{}
		for _, r := range env.Results {
			got[string(r.Status)+" "+r.ID+" "+r.Subject] = r
		}
		want := []string{"pass burn.data window 1", "pass burn.data window 2", "pass burn.gpu 0000:18:00.0", "pass burn.gpu 0000:19:00.0", "pass burn.clocks 0000:19:00.0",
			// Power alike on both GPUs; a fraction of a second cannot prove a
			// corrected-ECC rate.
			"pass burn.power 0000:19:00.0", "unknown burn.ecc 0000:18:00.0"}
		if planted {
			want = append(want, "fail burn.fatal 0000:00:02.0")
			if err == nil {
				t.Error("a planted fatal error, and Burn returned no error")
			}
		} else if err != nil {
			t.Errorf("healthy: %v", err)
		}
		// Under --strict the error rates a fraction of a second cannot
		// prove fail the run.
		if !planted {
			live2 := burnLive(t)
			o2 := o
			o2.Strict, o2.Out, o2.Progress, o2.Duration = true, filepath.Join(t.TempDir(), "strict"), nil, o.Window
			_, _, err := s.Burn(t.Context(), NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live2}, o2)
			var f *Failure
			if !errors.As(err, &f) || !strings.Contains(err.Error(), "--strict: burn.error-rate") {
				t.Errorf("--strict: %v", err)
			}
		}
		for _, k := range want {
			if _, ok := got[k]; !ok {
				t.Errorf("planted %v: no %q in %v", planted, k, keys(got))
			}
		}
		for k, r := range got {
			if r.ID == burn.IDErrorRate && r.Status == result.Pass {
				t.Errorf("an error rate passed on a fraction of a second's bits: %s %s", k, r.Message)
			}
			if planted && r.ID == burn.IDFatal && r.Status == result.Fail && !strings.Contains(r.Message, "window 2") {
				t.Errorf("the fatal error is not in window 2: %s", r.Message)
			}
		}
		// Replayed from its directory, the burn-in is judged the same.
		renv, rerr := s.BurnReplay(t.Context(), NodeOptions{Root: live, Timeout: time.Minute}, out, BurnOptions{Judge: fakeRates})
		if renv == nil || (rerr != nil) != planted {
			t.Fatalf("replay: %v", rerr)
		}
		replayed := map[string]bool{}
		for _, r := range renv.Results {
			replayed[string(r.Status)+" "+r.ID+" "+r.Subject] = true
		}
		for k := range got {
			if !replayed[k] {
				t.Errorf("planted %v: %q judged live, not replayed (%v)", planted, k, keys(got))
			}
		}
		if len(replayed) != len(got) {
			t.Errorf("planted %v: replay %d verdict kinds, live %d", planted, len(replayed), len(got))
		}
		// The same directory again is refused before anything runs.
		if _, _, err := s.Burn(t.Context(), NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live}, o); err == nil || !strings.Contains(err.Error(), "is not empty") {
			t.Errorf("a second run into %s: %v", out, err)
		}
		// burn.json on disk is the same document, and valid JSON.
		b, err := os.ReadFile(filepath.Join(out, "burn.json"))
		var on struct {
			Schema   string `json:"schema"`
			Complete bool   `json:"complete"`
			Windows  int
			Schedule struct {
				Windows []json.RawMessage `json:"windows"`
			} `json:"schedule"`
		}
		if err != nil || json.Unmarshal(b, &on) != nil || on.Schema != "gdrcheck.burn/v1" || !on.Complete || len(on.Schedule.Windows) != 2 {
			t.Errorf("burn.json: %v %+v", err, on)
		}
	}
}

// fakeRates leaves the bandwidths unjudged: the fake runtime's copies are
// host memcpy, their rates nothing the model or a slowdown could speak of.
var fakeRates = burn.Options{SkipBandwidth: true}

func keys(m map[string]result.Result) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Interrupted after window 1: the window done is judged and kept, the
// document says it stopped, and burn.json on disk is valid.
func TestBurnInterrupted(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICES", "1")
	live, out := burnLive(t), filepath.Join(t.TempDir(), "burn")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	o := BurnOptions{Duration: 3 * time.Second, Window: 300 * time.Millisecond, Settle: 10 * time.Millisecond, Out: out,
		Bytes: 1 << 20, GPU: GPUOptions{CUDART: fakelib.CUDART(t)}, Judge: fakeRates, Progress: &onWrite{f: cancel}}
	env, _, err := (&Session{Clock: time.Now}).Burn(ctx, NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live}, o)
	if !errors.Is(err, context.Canceled) || env == nil {
		t.Fatalf("err %v env %v", err, env)
	}
	doc := env.Data.(*BurnDoc)
	if doc.Complete || !strings.HasPrefix(doc.Stopped, "interrupted") || len(doc.Work) < 1 || doc.Series == nil {
		t.Errorf("complete %v stopped %q work %d series %v", doc.Complete, doc.Stopped, len(doc.Work), doc.Series != nil)
	}
	// A copy cut short by the interruption is not corrupted data (the H200
	// run of 2026-12-05 failed window 2 so, before this was fixed).
	for _, r := range env.Results {
		if r.ID == "burn.data" && r.Status == result.Fail {
			t.Errorf("the interruption judged as bad data: %s", r.Message)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "burn.json"))
	if err != nil || !json.Valid(b) || !bytes.Contains(b, []byte(`"stopped": "interrupted`)) {
		t.Errorf("burn.json: %v\n%.300s", err, b)
	}
}

// A copy between two GPUs of an NVSwitch board crosses NVLink, not PCIe:
// its bytes are shared among the first GPU's active links to the
// switches (reported as unmeasured until NVLink counters are read).
func TestBurnPeerLinks(t *testing.T) {
	r := fakehost.Root(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	h, err := discover.Discover(t.Context(), discover.WithRoot(r))
	if err != nil {
		t.Fatal(err)
	}
	g := &GPUs{BusIDs: map[int]string{0: "0000:18:00.0", 1: "0000:3a:00.0", 2: "0000:99:00.0"}}
	ls := peerLinks(h, g, 0, 1)
	if len(ls) != 18 || ls[0].link != burn.NVLinkLink("0000:18:00.0", 0) || ls[0].share != 18 {
		t.Errorf("NVSwitch pair: %+v", ls)
	}
	if ls := peerLinks(h, g, 0, 2); ls != nil {
		t.Errorf("a device discovery does not know: %+v", ls)
	}
	pcie := fakehost.Root(t, "../../testdata/hosts/pcie-l40s-remote-nic.host")
	hp, err := discover.Discover(t.Context(), discover.WithRoot(pcie))
	if err != nil {
		t.Fatal(err)
	}
	gp := &GPUs{BusIDs: map[int]string{0: hp.GPUs[0].Address, 1: hp.GPUs[1].Address}}
	if ls := peerLinks(hp, gp, 1, 0); len(ls) != 1 || ls[0].link != burn.GPUPeerLink(hp.GPUs[0].Address, hp.GPUs[1].Address) || ls[0].share != 1 {
		t.Errorf("PCIe pair: %+v", ls)
	}
}

// With NCCL: every collective once per window, its data checked, beside
// the copies; NCCL's debug log goes under the burn's directory.
func TestBurnNCCL(t *testing.T) {
	for _, k := range (bench.NCCLDebug{}).Names() {
		t.Setenv(k, "")
	}
	t.Setenv("FAKECUDA_DEVICES", "2")
	live, out := burnLive(t), filepath.Join(t.TempDir(), "burn")
	o := BurnOptions{Duration: 400 * time.Millisecond, Window: 400 * time.Millisecond, Settle: 10 * time.Millisecond, Out: out,
		Bytes: 64 << 10, GPU: GPUOptions{CUDART: fakelib.CUDART(t)}, Judge: fakeRates, NCCL: true, NCCLLib: fakelib.NCCL(t)}
	env, _, err := (&Session{Clock: time.Now}).Burn(t.Context(), NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live}, o)
	if err != nil || env == nil {
		t.Fatalf("err %v", err)
	}
	doc := env.Data.(*BurnDoc)
	if len(doc.Work) != 1 || len(doc.Work[0].NCCL) != len(collective.All()) || doc.Work[0].NCCL[0].Wrong != 0 {
		t.Fatalf("work %+v", doc.Work)
	}
	if _, err := os.Stat(filepath.Join(out, "nccl", "results.json")); err != nil {
		t.Error(err)
	}
	// A window whose time NCCL's pass took whole still did checked work
	// (on the GPU machine 1 GiB collectives filled a 10 s window).
	doc.Work[0].Passes, doc.Work[0].Copies = 0, nil
	if rs := workResults(doc); len(rs) != 1 || rs[0].Status != result.Pass {
		t.Errorf("NCCL only: %+v", rs)
	}
	for _, r := range env.Results {
		if r.ID == "burn.data" && (r.Status != result.Pass || !strings.Contains(r.Message, "7 NCCL collective(s)")) {
			t.Errorf("%+v", r)
		}
	}
}

func TestBurnReplayRefusals(t *testing.T) {
	s := &Session{Clock: time.Now}
	dir := t.TempDir()
	if _, err := s.BurnReplay(t.Context(), NodeOptions{Root: "/", Timeout: time.Minute}, dir, BurnOptions{}); err == nil || !strings.Contains(err.Error(), "burn.json") {
		t.Errorf("no burn.json: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "burn.json"), []byte(`{"schema": "gdrcheck.bench-copy/v1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BurnReplay(t.Context(), NodeOptions{Root: "/", Timeout: time.Minute}, dir, BurnOptions{}); err == nil || !strings.Contains(err.Error(), `want "gdrcheck.burn/v1"`) {
		t.Errorf("another schema: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "burn.json"), []byte("{\n \"schema\": \"gdrcheck.burn/v1\",\n \"samples\": [1]\n}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BurnReplay(t.Context(), NodeOptions{Root: "/", Timeout: time.Minute}, dir, BurnOptions{}); err == nil || !strings.Contains(err.Error(), "burn.json:3") {
		t.Errorf("bad field: %v", err)
	}
}

// A burn-in replayed with planted data (issue 28's judging of corrected
// ECC, power and bandwidth through the replay path): a fake run's
// directory whose work and GPU readings are rewritten — GPU0's
// bidir_pinned copies drop 20% in the last of four windows, GPU1 draws
// 30% less power than GPU0 and its corrected ECC count jumps by 40 in
// window 3 — names each of them, with its window, and leaves the rest
// as it was.
func TestBurnReplayPlanted(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICES", "2")
	live, out := burnLive(t), filepath.Join(t.TempDir(), "burn")
	o := BurnOptions{Duration: 4 * 250 * time.Millisecond, Window: 250 * time.Millisecond, Settle: 10 * time.Millisecond, Out: out,
		Bytes: 1 << 20, GPU: GPUOptions{CUDART: fakelib.CUDART(t)}, Judge: fakeRates, SensorEvery: 30 * time.Millisecond}
	s := &Session{Clock: time.Now}
	if _, _, err := s.Burn(t.Context(), NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live}, o); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, "burn.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	var work []BurnWork
	var gpus []BurnGPU
	if err := json.Unmarshal(b, &top); err != nil || json.Unmarshal(top["work"], &work) != nil || json.Unmarshal(top["gpus"], &gpus) != nil || len(work) != 4 || len(gpus) != 2 {
		t.Fatalf("burn.json: %v, %d windows, GPUs %+v", err, len(work), gpus)
	}
	a0, a1 := gpus[0].Address, gpus[1].Address
	for i := range work {
		w := &work[i]
		bidir0 := 100.0
		if i == 3 {
			bidir0 = 80 // the last window: 20% down
		}
		w.Passes = max(w.Passes, 1)
		w.Copies = []bench.CopyResult{
			{Test: bench.CopyBidirPinned, Dev: 0, Peer: -1, Bytes: 1 << 20, Iters: 10, GBps: bidir0, Valid: true},
			{Test: bench.CopyBidirPinned, Dev: 1, Peer: -1, Bytes: 1 << 20, Iters: 10, GBps: 100, Valid: true},
			{Test: bench.CopyD2D, Dev: 0, Peer: -1, Bytes: 1 << 20, Iters: 10, GBps: 2000, ReadWriteGBps: 4000, Valid: true},
			{Test: bench.CopyD2D, Dev: 1, Peer: -1, Bytes: 1 << 20, Iters: 10, GBps: 2000, ReadWriteGBps: 4000, Valid: true},
		}
		w.Sensors = []burn.GPUSensors{
			{Address: a0, Samples: 5, SMClockMHz: 1980, MinSMClockMHz: 1980, PowerW: 650, PowerSamples: 5, MaxPowerW: 660, PowerLimitW: 700, MaxTempC: 60},
			{Address: a1, Samples: 5, SMClockMHz: 1980, MinSMClockMHz: 1980, PowerW: 455, PowerSamples: 5, MaxPowerW: 460, PowerLimitW: 700, MaxTempC: 58},
		}
	}
	if top["work"], err = json.Marshal(work); err != nil {
		t.Fatal(err)
	}
	if b, err = json.Marshal(top); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"window-3", "window-4"} {
		p := filepath.Join(out, "samples", label+"-gpu.json")
		var gr burn.GPUReading
		b, err := os.ReadFile(p)
		if err != nil || json.Unmarshal(b, &gr) != nil || gr.Facts == nil {
			t.Fatalf("%s: %v", p, err)
		}
		for i := range gr.Facts.GPUs {
			if g := &gr.Facts.GPUs[i]; g.BusID == a1 {
				g.ECC.VolatileCorrected = new(uint64(40))
			}
		}
		if b, err = json.Marshal(gr); err != nil || os.WriteFile(p, b, 0o644) != nil {
			t.Fatal(err)
		}
	}
	env, _ := s.BurnReplay(t.Context(), NodeOptions{Root: live, Timeout: time.Minute}, out, BurnOptions{})
	if env == nil {
		t.Fatal("no replay")
	}
	got := map[string]result.Result{}
	for _, r := range env.Results {
		got[string(r.Status)+" "+r.ID+" "+r.Subject] = r
	}
	for k, contains := range map[string]string{
		"warn burn.bandwidth bidir_pinned " + a0: "window 4 (",
		"pass burn.bandwidth bidir_pinned " + a1: "every window within 10% of the first 2 window(s)' 100.0 GB/s",
		"pass burn.bandwidth d2d " + a0:          "2000.0–2000.0 GB/s over 4 window(s)",
		"pass burn.model d2d " + a1:              "4000.0 GB/s, expected",
		"warn burn.power " + a1:                  "board power 455 W against its peers' median 650 W (30% below)",
		"pass burn.power " + a0:                  "mean power 650–650 W over 4 window(s)",
		"warn burn.ecc " + a1:                    "window 3 (",
		"unknown burn.ecc " + a0:                 "0 corrected error(s)",
	} {
		r, ok := got[k]
		if !ok {
			t.Errorf("no %q in %v", k, keys(got))
			continue
		}
		if !strings.Contains(r.Message, contains) {
			t.Errorf("%s: %q lacks %q", k, r.Message, contains)
		}
	}
	if r := got["warn burn.bandwidth bidir_pinned "+a0]; !strings.Contains(r.Message, "80.0 GB/s against 100.0 GB/s in the first 2 window(s) (20% below)") {
		t.Errorf("the slowdown: %q", r.Message)
	}
}

// An NCCL collective's row is judged against the model as bench nccl
// judges it (bench.JudgeRows); its bus bandwidth is what the windows
// compare. A collective without its row (a burn.json written before the
// row was kept) has no model verdict, never a pass.
func TestBurnThroughputNCCL(t *testing.T) {
	h, err := discover.Discover(t.Context(), discover.WithRoot(fakehost.Root(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")))
	if err != nil {
		t.Fatal(err)
	}
	doc := &BurnDoc{}
	for i, g := range h.GPUs {
		doc.GPUs = append(doc.GPUs, BurnGPU{Device: i, Address: g.Address})
	}
	row := collective.Row{Bytes: 256 << 20, OutOfPlace: &collective.Measure{AlgBW: 180, BusBW: 315}}
	doc.Work = []BurnWork{{NCCL: []BurnCollective{{Collective: "all_reduce", BusBW: 315, Row: &row}, {Collective: "all_gather", BusBW: 300}}}}
	ws, nomodel := burnThroughput(h, doc)
	if len(nomodel) != 0 || len(ws) != 1 || len(ws[0]) != 2 {
		t.Fatalf("%+v %+v", ws, nomodel)
	}
	ar, ag := ws[0][0], ws[0][1]
	if ar.Test != "nccl all_reduce" || ar.GBps != 315 || !ar.Measured || ar.Model == nil || ar.Model.Measured != 180 || ar.Model.Expected <= 0 ||
		ar.Model.Ratio != 180/ar.Model.Expected || !strings.Contains(ar.Model.Basis, "algbw at 256M by ") {
		t.Errorf("all_reduce: %+v %+v", ar, ar.Model)
	}
	if ag.Model != nil || !ag.Measured || ag.GBps != 300 {
		t.Errorf("all_gather without its row: %+v", ag)
	}
}

// burn --replay with captures: snapshots of one node taken around a
// workload gdrcheck did not run. An uncorrectable AER error on GPU1's root
// port between the second and third capture fails window 2, naming the
// device; the clean window passes; the captures' manifests order them
// (given out of order here); a capture that cannot be read is the tool's
// error; one capture is not a series.
func TestBurnReplayCaptures(t *testing.T) {
	capture := func(fatal int, at string) string {
		text := strings.Replace(burnHost, "  0000:00:02.0 rootport id=8086:2030 gen=5 aer=yes\n",
			fmt.Sprintf("  0000:00:02.0 rootport id=8086:2030 gen=5 aer=yes aer.fatal.DLP=%d\n", fatal), 1)
		if at != "" {
			text += fmt.Sprintf("file snapshot.json %q\n", `{"format": 1, "created_at": "`+at+`", "tool": "gdrcheck test", "files": 1, "links": 0, "commands": []}`)
		}
		spec, err := fakehost.Parse("capture", strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return fakehost.MaterializeArchive(t, spec)
	}
	s := &Session{Clock: time.Now}
	a, b, c := capture(0, "2026-12-05T12:00:00Z"), capture(0, "2026-12-05T13:00:00Z"), capture(1, "2026-12-05T14:00:00Z")
	env, err := s.BurnReplayCaptures(t.Context(), []string{c, a, b}, BurnOptions{})
	var f *Failure
	if env == nil || !errors.As(err, &f) {
		t.Fatalf("a fatal error planted: %v", err)
	}
	doc := env.Data.(*BurnDoc)
	if len(doc.Schedule.Windows) != 2 || doc.Duration != "2h0m0s" || !doc.Schedule.Windows[0].Start.Before(doc.Schedule.Windows[1].Start) {
		t.Fatalf("windows %+v, duration %s", doc.Schedule.Windows, doc.Duration)
	}
	var fatal *result.Result
	for i, r := range env.Results {
		if r.ID == burn.IDFatal && r.Subject == "0000:00:02.0" {
			fatal = &env.Results[i]
		}
	}
	if fatal == nil || fatal.Status != result.Fail || !strings.Contains(fatal.Message, "window 2 (13:00:00–14:00:00)") {
		t.Errorf("the root port: %+v", fatal)
	}
	// Clean captures, without manifests: taken in the order given, said so.
	env, err = s.BurnReplayCaptures(t.Context(), []string{capture(0, ""), capture(0, "")}, BurnOptions{})
	if err != nil || env == nil || !strings.Contains(strings.Join(env.Data.(*BurnDoc).Notes, " "), "taken in the order given") {
		t.Errorf("clean, untimed: %v", err)
	}
	var te *ToolError
	if _, err := s.BurnReplayCaptures(t.Context(), []string{a, filepath.Join(t.TempDir(), "missing.tgz")}, BurnOptions{}); !errors.As(err, &te) {
		t.Errorf("an unreadable capture: %v", err)
	}
	if _, err := s.BurnReplayCaptures(t.Context(), []string{a}, BurnOptions{}); !errors.As(err, &te) {
		t.Errorf("one capture: %v", err)
	}
}

// A collective's window-to-window bandwidth is its out-of-place bus
// bandwidth at the measured size, not nccl-tests' mean over sizes and both
// halves: on the H100 of docs/device-runs.md a one-rank in-place broadcast
// took 0.3 µs, so that mean read 186,615, 316,990 and 50,065 GB/s in three
// windows whose out-of-place copy ran at 1,389 GB/s each time, and
// burn.bandwidth failed a steady node. A burn.json written with the mean
// in busbw_gbs is judged by its row too.
func TestBurnNCCLRateOutOfPlace(t *testing.T) {
	h, err := discover.Discover(t.Context(), discover.WithRoot(fakehost.Root(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")))
	if err != nil {
		t.Fatal(err)
	}
	doc := &BurnDoc{GPUs: []BurnGPU{{Device: 0, Address: h.GPUs[0].Address}}}
	var s burn.Schedule
	t0 := time.Date(2026, 12, 5, 16, 20, 8, 0, time.UTC)
	for i, avg := range []float64{186614.7, 316989.7, 50065.2} {
		oop := []float64{1389.4, 1389.2, 1388.9}[i]
		row := collective.Row{Bytes: 256 << 20, OutOfPlace: &collective.Measure{AlgBW: oop, BusBW: oop}, InPlace: &collective.Measure{AlgBW: 200445, BusBW: 200445}}
		doc.Work = append(doc.Work, BurnWork{NCCL: []BurnCollective{{Collective: "broadcast", BusBW: avg, Row: &row}}})
		s.Windows = append(s.Windows, burn.Window{Start: t0.Add(time.Duration(i) * time.Minute), End: t0.Add(time.Duration(i+1) * time.Minute)})
	}
	ws, _ := burnThroughput(h, doc)
	for i, w := range ws {
		if len(w) != 1 || w[0].GBps < 1388 || w[0].GBps > 1390 {
			t.Errorf("window %d: %+v, want the out-of-place 1389 GB/s", i+1, w)
		}
	}
	var got []string
	for _, r := range burn.JudgeBandwidth(s, ws) {
		if r.ID == burn.IDBandwidth {
			got = append(got, string(r.Status)+" "+r.Reason)
		}
	}
	if want := []string{"pass BandwidthSteady"}; !slices.Equal(got, want) {
		t.Errorf("burn.bandwidth: %v, want %v", got, want)
	}
	// What the burn-in records now: the row's out-of-place bus bandwidth.
	m := bench.NCCLResult{Collective: "broadcast", AvgBusBW: 50065.2, Rows: []collective.Row{*doc.Work[0].NCCL[0].Row}}
	if c := burnCollective(m); c.BusBW != 1389.4 || c.Row == nil {
		t.Errorf("burnCollective: %+v", c)
	}
}
