package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

// burnNICHost is a GPU and an InfiniBand NIC under one PCIe switch, with
// nvidia-peermem loaded: one GPU–NIC pair to loop GPU memory through.
const burnNICHost = `hostname fakelive
numa 0 0-15
module nvidia
module nvidia_peermem
hostbridge pci0000:15 numa=0
  0000:15:01.0 rootport aer=yes
    0000:16:00.0 usp aer=yes
      0000:17:00.0 dsp aer=yes
        0000:18:00.0 gpu id=10de:2335 aer=yes
      0000:17:01.0 dsp aer=yes
        0000:19:00.0 nic aer=yes
rdma mlx5_0 0000:19:00.0 rate=400 layer=InfiniBand port_rcv_data=0 port_xmit_data=0
nvml driver=580.95.05 cuda=13.0
nvml-gpu 0000:18:00.0 name="NVIDIA H200" sm_clock=1980 power=650.5 temp=61
command dmesg.txt ""
`

// With an RDMA NIC, the burn-in loops GPU memory through the GPU–NIC pair
// beside the copies: the window's schedule charges the pair's PCIe path
// and the port, burn.rdma passes saying the bytes were moved, not
// verified; a loopback that fails under load fails the window, naming the
// pair; --no-rdma leaves it out, saying so.
func TestBurnRDMALoopback(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICES", "1")
	spec, err := fakehost.Parse("fakelive", strings.NewReader(burnNICHost))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		rdma    bool
		broken  bool
		missing bool
	}{{"loopback", true, false, false}, {"loopback fails", true, true, false}, {"--no-rdma", false, false, false}, {"perftest missing", true, false, true}} {
		t.Run(c.name, func(t *testing.T) {
			live := t.TempDir()
			if err := spec.Materialize(live); err != nil {
				t.Fatal(err)
			}
			perf := perftestStandIn(t)
			if c.missing {
				perf = t.TempDir() // no ib_write_bw in it
			}
			if c.broken {
				// The client fails as perftest does when it cannot register
				// GPU memory.
				script := "#!/bin/sh\necho ' Couldn'\"'\"'t allocate MR' >&2\nexit 1\n"
				if err := os.WriteFile(filepath.Join(perf, rdma.WriteBW), []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(t.TempDir(), "burn")
			o := BurnOptions{Duration: 4 * time.Second, Window: 4 * time.Second, Settle: 10 * time.Millisecond, Out: out,
				Bytes: 64 << 10, GPU: GPUOptions{CUDART: fakelib.CUDART(t)}, RDMA: c.rdma, PerftestDir: perf}
			env, _, err := (&Session{Clock: time.Now}).Burn(t.Context(), NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live}, o)
			if env == nil {
				t.Fatalf("no document: %v", err)
			}
			doc := env.Data.(*BurnDoc)
			w := doc.Work[0]
			var rdmaRes []result.Result
			for _, r := range env.Results {
				if r.ID == "burn.rdma" {
					rdmaRes = append(rdmaRes, r)
				}
			}
			traffic := map[burn.Link]uint64{}
			for _, x := range doc.Schedule.Windows[0].Traffic {
				traffic[x.Link] = x.Bytes
			}
			pair, port := burn.GPUNICLink("0000:18:00.0", "mlx5_0"), burn.PortLink("mlx5_0", 1)
			switch {
			case !c.rdma:
				if len(w.RDMA) != 0 || len(rdmaRes) != 0 || !strings.Contains(strings.Join(doc.Notes, " "), "--no-rdma") {
					t.Errorf("rdma %+v, results %+v, notes %v", w.RDMA, rdmaRes, doc.Notes)
				}
			case c.missing:
				// Not the path's fault: unknown, once (no spinning), nothing charged.
				if len(w.RDMA) != 1 || w.RDMA[0].Cause != rdma.CauseMissingBinary || traffic[pair] != 0 {
					t.Errorf("rdma %+v, traffic %v", w.RDMA, traffic)
				}
				if len(rdmaRes) != 1 || rdmaRes[0].Status != result.Unknown || !strings.Contains(rdmaRes[0].Remedy, "install perftest") {
					t.Errorf("results %+v", rdmaRes)
				}
			case c.broken:
				if len(w.RDMA) == 0 || w.RDMA[0].Error == "" || traffic[pair] != 0 {
					t.Errorf("rdma %+v, traffic %v", w.RDMA, traffic)
				}
				if len(rdmaRes) != 1 || rdmaRes[0].Status != result.Fail || !strings.Contains(rdmaRes[0].Message, "0000:18:00.0–mlx5_0 port 1 (cuda)") {
					t.Errorf("results %+v", rdmaRes)
				}
			default:
				if len(w.RDMA) == 0 || w.RDMA[0].Error != "" || w.RDMA[0].Gbps <= 0 || w.RDMA[0].Memory != rdma.MemPeerMem || traffic[pair] == 0 || traffic[port] != traffic[pair] {
					t.Errorf("rdma %+v, traffic %v", w.RDMA, traffic)
				}
				if len(rdmaRes) != 1 || rdmaRes[0].Status != result.Pass || !strings.Contains(rdmaRes[0].Message, "not verified") {
					t.Errorf("results %+v", rdmaRes)
				}
				// The section of the dossier names the pair by its GPU.
				sec := BurnSection(doc, "raw/burn/burn.json")
				if len(sec.Windows[0].RDMA) == 0 || sec.Windows[0].RDMA[0].GPU != "GPU0>mlx5_0:1" {
					t.Errorf("dossier rdma %+v", sec.Windows[0].RDMA)
				}
			}
		})
	}
}

// Each loopback's -D: a round takes at most half the window, each run 2 s
// to 20 s; a window too short for that has no loopback.
func TestLoopbackSeconds(t *testing.T) {
	for _, c := range []struct {
		window time.Duration
		runs   int
		want   int
	}{
		{5 * time.Minute, 16, 9}, // 8 pairs × peermem and dma-buf: two rounds a window
		{5 * time.Minute, 1, 20},
		{time.Hour, 16, 20},
		{20 * time.Second, 2, 5},
		{20 * time.Second, 16, 0}, // not 2 s a run in 10 s
		{4 * time.Second, 1, 2},
		{time.Minute, 0, 0},
	} {
		if got := loopbackSeconds(c.window, c.runs); got != c.want {
			t.Errorf("loopbackSeconds(%s, %d) = %d, want %d", c.window, c.runs, got, c.want)
		}
	}
}
