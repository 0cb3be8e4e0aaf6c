package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// sample is a perftest output of the reader's corpus without its
// provenance header (everything up to the first "---" line).
func sample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "analyze", "perftest", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(b), "\n---\n")
	if !ok {
		t.Fatalf("%s: no provenance header", name)
	}
	return body
}

// standIn writes an ib_write_bw stand-in into a fresh folder: a shell
// script that behaves per side (server: no address argument; client: the
// last argument is 127.0.0.1) and per memory (--use_cuda among the
// arguments), running the given shell snippets. Outputs are written to
// files next to it and cat'ed, so no quoting of perftest tables is needed.
func standIn(t *testing.T, tool string, b behaviour) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"gpu.txt": b.gpuOut, "host.txt": b.hostOut}
	for n, s := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf(`#!/bin/sh
D=%q
mem=host; nic=; port=; prev=
for a in "$@"; do case "$a" in --use_cuda*) mem=gpu;; esac; [ "$prev" = -d ] && nic="$a"; [ "$prev" = -p ] && port="$a"; prev="$a"; last="$a"; done
M="$D/served-$nic-$port"
if [ "$last" = 127.0.0.1 ]; then
  if [ $mem = gpu ]; then %s; else %s; fi
else
  if [ $mem = gpu ]; then %s; else %s; fi
fi
`, dir, or(b.gpuClient, "cat $D/gpu.txt; "+served), or(b.hostClient, "cat $D/host.txt; "+served), or(b.gpuServer, okServer), or(b.hostServer, okServer))
	if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// okServer is perftest's server: the banner, then it serves one client.
// It stays until the client says it was served ($M, the run's marker: the
// stand-in's folder, the NIC and the port) or for 0.3 s, as long as a
// client that does not say so takes to fail.
const okServer = `rm -f "$M"; ` + banner + `; i=0; while [ ! -e "$M" ] && [ $i -lt 30 ]; do sleep 0.01; i=$((i+1)); done`

// banner is what a perftest server prints once it listens.
const banner = `echo '************************************'; echo '* Waiting for client to connect... *'; echo '************************************'`

// served is what a client that was served does last: it tells the server
// to end (okServer).
const served = `touch "$M"`

type behaviour struct {
	gpuOut, hostOut                              string
	gpuServer, hostServer, gpuClient, hostClient string
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// pairPlan is a plan of n pairs on 400G InfiniBand ports, peermem and the
// host control each.
func pairPlan(n int, test string) *rdma.Plan {
	p := &rdma.Plan{Mode: rdma.ModeLoopback, Test: test}
	port := 18515
	for i := range n {
		e := rdma.Entry{GPU: i, GPUBusID: fmt.Sprintf("0000:%02x:00.0", 0x18+i), NIC: fmt.Sprintf("mlx5_%d", i), Port: 1, LinkLayer: "InfiniBand",
			PortState: "ACTIVE", RateGbps: 400, Level: "PIX", Mode: rdma.LoopOneNIC, ServerNIC: fmt.Sprintf("mlx5_%d", i), ServerPort: 1,
			Expect: rdma.Expectation{LineGbps: 400, Source: "test"}}
		for _, mem := range []string{rdma.MemPeerMem, rdma.MemHost} {
			args := []string{"-d", e.NIC, "-p", fmt.Sprint(port), "-a"}
			if mem != rdma.MemHost {
				args = append(args, fmt.Sprintf("--use_cuda=%d", i))
			}
			e.Runs = append(e.Runs, rdma.Run{Memory: mem, TCPPort: port,
				Server: rdma.Cmd{Tool: test, Args: args}, Client: rdma.Cmd{Tool: test, Args: append(args, "127.0.0.1")}})
			port++
		}
		p.Entries = append(p.Entries, e)
	}
	return p
}

func TestRunRDMAStandIns(t *testing.T) {
	host400 := sample(t, "gke-a3ultra-h200-ib-write-bw-host-failed-status10.txt")
	gpu140 := sample(t, "gke-a3ultra-h200-ib-write-bw-cuda-dmabuf-140g.txt")
	mrFail := `echo ' Couldn'"'"'t allocate MR'; echo ' failed to create mr'; echo ' Failed to create MR'; exit 1`
	for _, tc := range []struct {
		name    string
		b       behaviour
		noTool  bool
		timeout time.Duration
		// want is the reason of the GPU run's and the host run's result.
		wantGPU, wantHost string
		status            result.Status
	}{
		{name: "at line rate", b: behaviour{gpuOut: host400, hostOut: host400}, wantGPU: "AtRate", wantHost: "AtRate", status: result.Pass},
		{name: "GPU staged", b: behaviour{gpuOut: gpu140, hostOut: host400}, wantGPU: "GDRStaged", wantHost: "AtRate", status: result.Fail},
		{name: "no peermem", b: behaviour{hostOut: host400, gpuServer: mrFail, gpuClient: "sleep 30"}, wantGPU: rdma.CauseRegistration, wantHost: "AtRate", status: result.Fail},
		{name: "MR fails on the client", b: behaviour{hostOut: host400, gpuClient: served + "; " + mrFail}, wantGPU: rdma.CauseRegistration, wantHost: "AtRate", status: result.Fail},
		{name: "missing binary", noTool: true, wantGPU: rdma.CauseMissingBinary, wantHost: rdma.CauseMissingBinary, status: result.Error},
		{name: "server dies", b: behaviour{hostOut: host400, gpuServer: "echo ' Failed to init device'; exit 1"}, wantGPU: rdma.CauseServerDied, wantHost: "AtRate", status: result.Fail},
		{name: "server gone before the client connects", b: behaviour{hostOut: host400, gpuServer: banner + "; sleep 0.3; exit 0",
			gpuClient: "sleep 0.5; echo ' Couldn'\"'\"'t connect to 127.0.0.1:18515' >&2; echo ' Unable to open file descriptor for socket connection Unable to init the socket connection'; exit 1"},
			wantGPU: rdma.CauseServerDied, wantHost: "AtRate", status: result.Fail},
		{name: "port conflict", b: behaviour{hostOut: host400, gpuServer: "echo ' Couldn'\"'\"'t listen to port 18515'; echo ' Couldn'\"'\"'t bind: Address already in use'; exit 1"},
			wantGPU: rdma.CausePortConflict, wantHost: "AtRate", status: result.Error},
		{name: "server hangs silent", b: behaviour{hostOut: host400, gpuServer: "sleep 60"}, timeout: time.Second, wantGPU: rdma.CauseServerNotReady, wantHost: "AtRate", status: result.Fail},
		{name: "client hangs", b: behaviour{hostOut: host400, gpuServer: banner + "; sleep 60", gpuClient: "sleep 60"}, timeout: time.Second, wantGPU: rdma.CauseTimeout, wantHost: "AtRate", status: result.Fail},
		{name: "no result row", b: behaviour{hostOut: host400, gpuOut: "hello\n"}, wantGPU: rdma.CauseNoMeasurement, wantHost: "AtRate", status: result.Fail},
	} {
		// Every stand-in is written before any subtest runs: a script
		// written while a parallel subtest forks can be held open for
		// writing by the child, and exec then fails with "text file busy".
		dir := t.TempDir()
		if !tc.noTool {
			dir = standIn(t, rdma.WriteBW, tc.b)
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 20 * time.Second
			}
			// Two pairs: the second runs whatever became of the first.
			p := pairPlan(2, rdma.WriteBW)
			start := time.Now()
			prs, err := RunRDMA(context.Background(), p, RDMAOptions{PerftestDir: dir, Out: out, Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 4*timeout+10*time.Second {
				t.Errorf("took %s", took)
			}
			if len(prs) != 2 {
				t.Fatalf("%d pair results, want 2", len(prs))
			}
			rs := rdma.Judge(prs, rdma.DefaultJudging)
			by := map[string]result.Result{}
			for _, r := range rs {
				by[r.Subject] = r
			}
			for i := range 2 {
				g, h := by[fmt.Sprintf("GPU%d-mlx5_%d/cuda", i, i)], by[fmt.Sprintf("GPU%d-mlx5_%d/host", i, i)]
				if g.Reason != tc.wantGPU || h.Reason != tc.wantHost || g.Status != tc.status {
					t.Errorf("pair %d: GPU %s %s (%s), host %s; want GPU %s %s, host %s", i, g.Status, g.Reason, g.Message, h.Reason, tc.status, tc.wantGPU, tc.wantHost)
				}
				if !strings.Contains(g.Message, fmt.Sprintf("GPU%d (0000:%02x:00.0) ↔ mlx5_%d", i, 0x18+i, i)) {
					t.Errorf("the message does not name the pair: %s", g.Message)
				}
			}
			if !tc.noTool {
				for _, o := range prs[0].Outcomes {
					for _, f := range []string{o.ServerOut, o.ClientOut} {
						if _, err := os.Stat(filepath.Join(out, f)); err != nil {
							t.Errorf("raw output not kept: %v", err)
						}
					}
				}
			}
			var sb strings.Builder
			if err := rdma.WriteTable(&sb, prs, rs); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(sb.String(), "0000:18:00.0") || !strings.Contains(sb.String(), "mlx5_1") {
				t.Errorf("table:\n%s", sb.String())
			}
		})
	}
}

// A latency test reads the typical latency.
func TestRunRDMALatency(t *testing.T) {
	lat := sample(t, "synthetic-ib-write-lat.txt")
	dir := standIn(t, rdma.WriteLat, behaviour{gpuOut: lat, hostOut: lat})
	prs, err := RunRDMA(context.Background(), pairPlan(1, rdma.WriteLat), RDMAOptions{PerftestDir: dir, Out: t.TempDir(), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range prs[0].Outcomes {
		if o.Cause != "" || o.LatencyUS <= 0 {
			t.Errorf("%s: %+v", o.Memory, o)
		}
	}
	for _, r := range rdma.Judge(prs, rdma.DefaultJudging) {
		if r.Status != result.Pass {
			t.Errorf("%s: %s %s", r.Subject, r.Status, r.Message)
		}
	}
}

// A cancelled run stops between runs and says so.
func TestRunRDMACancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := RunRDMA(ctx, pairPlan(1, rdma.WriteBW), RDMAOptions{PerftestDir: t.TempDir(), Out: t.TempDir()})
	if err == nil {
		t.Fatal("no error from a cancelled run")
	}
}
