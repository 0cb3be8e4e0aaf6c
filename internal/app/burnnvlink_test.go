package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

// nvlinkHost is burnHost with both GPUs on an NVSwitch board, 18 NVLinks
// each: their peer copies cross NVLink.
var nvlinkHost = strings.NewReplacer(`name="NVIDIA H200" sm_clock=1980`, `name="NVIDIA H200" nvswitch=18 sm_clock=1980`,
	`name="NVIDIA H200" sm_clock=1965`, `name="NVIDIA H200" nvswitch=18 sm_clock=1965`).Replace(burnHost)

// A burn-in on an NVSwitch node, its samples given NVLink counters
// afterwards (the fake NVML of the fixture has none) and replayed with
// `burn --replay`: the peer copies charged GPU0's 18 NVLinks, and the CRC
// counter planted on NVLink 0 at window 2's end is named with the GPU, the
// link and the window; clean, every NVLink passes and none is unmeasured.
func TestBurnReplayNVLinkCRC(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICES", "2")
	const gpu0 = "0000:18:00.0"
	link := burn.NVLinkLink(gpu0, 0)
	if nvlinkHost == burnHost {
		t.Fatal("nvlinkHost is burnHost")
	}
	for _, planted := range []bool{false, true} {
		spec, err := fakehost.Parse("nvlink", strings.NewReader(nvlinkHost))
		if err != nil {
			t.Fatal(err)
		}
		live := t.TempDir()
		if err := spec.Materialize(live); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "burn")
		o := BurnOptions{Duration: 400 * time.Millisecond, Window: 200 * time.Millisecond, Settle: 20 * time.Millisecond, Out: out,
			Bytes: 1 << 20, GPU: GPUOptions{CUDART: fakelib.CUDART(t)}, SensorEvery: 30 * time.Millisecond,
			Judge: burn.Options{SkipBandwidth: true}} // the fake runtime's rates mean nothing
		s := &Session{Clock: time.Now}
		env, _, err := s.Burn(t.Context(), NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live}, o)
		if env == nil || err != nil {
			t.Fatalf("burn: %v", err)
		}
		doc := env.Data.(*BurnDoc)

		// The workload charged GPU0's NVLinks, none measured live.
		for _, w := range doc.Schedule.Windows {
			var nv int
			for _, tr := range w.Traffic {
				if tr.Link.Kind == burn.NVLink && tr.Bytes > 0 {
					nv++
				}
			}
			if nv != 36 {
				t.Fatalf("planted %v: %d NVLinks carried traffic, want both GPUs' 18: %+v", planted, nv, w.Traffic)
			}
		}
		for _, r := range env.Results {
			if r.ID == burn.IDUnmeasured && r.Subject == link.String() && r.Status != result.Unknown {
				t.Errorf("live, without counters: %s %s", r.Status, r.Message)
			}
		}

		// The GPU readings: every NVLink's counters read; 1e9 KiB
		// received a window; 12 CRC errors on NVLink 0 by window 2's end
		// when planted.
		n := 0
		for _, name := range doc.Samples {
			if !strings.HasSuffix(name, "-gpu.json") {
				continue
			}
			p := filepath.Join(out, name)
			var gr burn.GPUReading
			b, err := os.ReadFile(p)
			if err != nil || json.Unmarshal(b, &gr) != nil || gr.Facts == nil {
				t.Fatalf("%s: %v", name, err)
			}
			window := max(0, n-1) // baseline-1, baseline-2, window-1, window-2
			if len(gr.Facts.GPUs) != 2 {
				t.Fatalf("%s: %d GPUs", name, len(gr.Facts.GPUs))
			}
			for i := range gr.Facts.GPUs {
				g := &gr.Facts.GPUs[i]
				if len(g.NVLinks) != 18 || g.NVLinkCounters != nil {
					t.Fatalf("%s: %d NVLinks, counters %v", name, len(g.NVLinks), g.NVLinkCounters)
				}
				for l := range 18 {
					crc := uint64(0)
					if planted && window >= 2 && g.BusID == gpu0 && l == 0 {
						crc = 12
					}
					g.NVLinkCounters = append(g.NVLinkCounters, gpu.NVLinkCounters{Link: l, Values: map[string]uint64{
						gpu.NVLinkCRCFlit: crc, gpu.NVLinkCRCData: 0, gpu.NVLinkReplay: 0, gpu.NVLinkRecovery: 0, gpu.NVLinkRxKiB: uint64(window) * 1e9, gpu.NVLinkTxKiB: uint64(window) * 1e9,
					}})
				}
			}
			writeJSON(t, p, gr)
			n++
		}
		if n != 4 {
			t.Fatalf("%d GPU readings, want 4", n)
		}

		renv, rerr := s.BurnReplay(t.Context(), NodeOptions{Root: live, Timeout: time.Minute}, out, BurnOptions{Judge: burn.Options{SkipBandwidth: true}})
		if renv == nil {
			t.Fatalf("replay: %v", rerr)
		}
		got := map[string]result.Result{}
		for _, r := range renv.Results {
			got[string(r.Status)+" "+r.ID+" "+r.Subject] = r
		}
		for k := range got {
			if strings.Contains(k, "burn.unmeasured nvlink:") {
				t.Errorf("planted %v: %s though its counters were read", planted, k)
			}
		}
		for _, dev := range []string{gpu0 + "#0", gpu0 + "#17", "0000:19:00.0#5"} {
			if _, ok := got["pass burn.fatal "+dev]; !ok {
				t.Errorf("planted %v: no fatal-counter pass for %s in %v", planted, dev, keys(got))
			}
		}
		if !planted {
			if _, ok := got["pass burn.nvlink-crc "+gpu0+"#0"]; !ok || rerr != nil {
				t.Errorf("clean: no CRC pass for NVLink 0 (%v) in %v", rerr, keys(got))
			}
			continue
		}
		r, ok := got["warn burn.nvlink-crc "+gpu0+"#0"]
		if !ok {
			t.Fatalf("planted: no CRC warning for NVLink 0 in %v", keys(got))
		}
		for _, want := range []string{"window 2 (", "0000:18:00.0 (GPU0) NVLink 0", "crc_flit_errors +12 (0 → 12)", "while it carried nvlink:0000:18:00.0#0 ("} {
			if !strings.Contains(r.Message, want) {
				t.Errorf("planted: %q lacks %q", r.Message, want)
			}
		}
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
