package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
	"github.com/gdrcheck/gdrcheck/internal/rendezvous"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/freeport"
)

// crossStandIn writes a perftest stand-in for two ranks on this host: it
// logs its arguments, tells server (no address) from client (the last
// argument 127.0.0.1), GPU from host memory (--use_cuda) and the NIC (-d),
// and sources the most specific of ROLE-MEM-NIC.sh, ROLE-MEM.sh, ROLE.sh.
func crossStandIn(t *testing.T, tool string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	base := map[string]string{"server.sh": okServer, "client.sh": "cat $D/$mem.txt; " + served}
	for n, s := range files {
		base[n] = s
	}
	for n, s := range base {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf(`#!/bin/sh
D=%q
mem=host; nic=; port=; prev=; last=
for a in "$@"; do case "$a" in --use_cuda*) mem=gpu;; esac; [ "$prev" = -d ] && nic="$a"; [ "$prev" = -p ] && port="$a"; prev="$a"; last="$a"; done
M="$D/served-$nic-$port"
role=server; [ "$last" = 127.0.0.1 ] && role=client
echo "$role $*" >> $D/args.log
if [ -f $D/$role-$mem-$nic.sh ]; then . $D/$role-$mem-$nic.sh
elif [ -f $D/$role-$mem.sh ]; then . $D/$role-$mem.sh
else . $D/$role.sh; fi
`, dir)
	if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// crossPlan is one rank's plan of n rails on 400G InfiniBand, peermem and
// the host control each, ports from 18515.
func crossPlan(n int) *rdma.Plan { return crossPlanNICs(n, "mlx5_") }

// crossPlanNICs is crossPlan with NICs named prefix0, prefix1, ...
func crossPlanNICs(n int, prefix string) *rdma.Plan {
	p := &rdma.Plan{Mode: rdma.ModeCrossNode, Test: rdma.WriteBW}
	port := 18515
	for i := range n {
		nic := fmt.Sprintf("%s%d", prefix, i)
		e := rdma.Entry{GPU: i, GPUBusID: fmt.Sprintf("0000:%02x:00.0", 0x18+i), NIC: nic, Port: 1, LinkLayer: "InfiniBand",
			PortState: "ACTIVE", RateGbps: 400, Level: "PIX", Mode: rdma.ModeCrossNode, Rail: i, ServerNIC: nic, ServerPort: 1,
			Expect: rdma.Expectation{LineGbps: 400, Source: "test"}}
		for _, mem := range []string{rdma.MemPeerMem, rdma.MemHost} {
			args := []string{"-d", e.NIC, "-i", "1", "-p", fmt.Sprint(port), "-F", "--report_gbits", "-a"}
			if mem != rdma.MemHost {
				args = append(args, fmt.Sprintf("--use_cuda=%d", i))
			}
			e.Runs = append(e.Runs, rdma.Run{Memory: mem, TCPPort: port,
				Server: rdma.Cmd{Tool: rdma.WriteBW, Args: args}, Client: rdma.Cmd{Tool: rdma.WriteBW, Args: append(args, rdma.PeerAddr)}})
			port++
		}
		p.Entries = append(p.Entries, e)
	}
	return p
}

// rankRun is one rank's goroutine: join the rendezvous (KeepGoing) and run
// its side.
type rankRun struct {
	part  *rdma.RankPart
	err   error
	took  time.Duration
	coord *rendezvous.Coordinator
}

// crossJob runs ranks 0..size-1 as goroutines on 127.0.0.1 with the given
// plans; kill, when set, is called with rank r's member once it joined
// (to make it die).
func crossJob(t *testing.T, plans []*rdma.Plan, dir string, timeout time.Duration, kill func(r int, m closer)) ([]*rankRun, []string) {
	t.Helper()
	addr := freeport.Addr(t)
	size := len(plans)
	hosts := make([]string, size)
	for r := range size {
		hosts[r] = fmt.Sprintf("node%d", r)
	}
	out := make([]*rankRun, size)
	var wg sync.WaitGroup
	ctx := context.Background()
	for r := range size {
		out[r] = &rankRun{}
		wg.Go(func() {
			// A rank that dies takes its runs with it, as a process does.
			ctx, die := context.WithCancel(ctx)
			defer die()
			rr := out[r]
			start := time.Now()
			defer func() { rr.took = time.Since(start) }()
			cfg := rendezvous.Config{Addr: addr, Rank: r, Size: size, Host: hosts[r], Secret: []byte("0123456789abcdef-rdma"), JoinTimeout: 5 * time.Second, Hosts: hosts, KeepGoing: true}
			var ch RDMAChannel
			var ip string
			if r == 0 {
				c, err := rendezvous.Serve(ctx, cfg, make([]byte, rendezvous.IDSize))
				if err != nil {
					rr.err = err
					return
				}
				rr.coord, ch, ip = c, c, c.LocalIP()
			} else {
				m, _, err := rendezvous.Join(ctx, cfg)
				if err != nil {
					rr.err = err
					return
				}
				defer m.Close()
				if kill != nil {
					kill(r, dying{m, die})
				}
				ch, ip = m, m.LocalIP()
			}
			opt := RDMACrossOptions{RDMAOptions: RDMAOptions{PerftestDir: dir, Out: filepath.Join(t.TempDir(), fmt.Sprint(r)), Timeout: timeout}, Rank: r, Host: hosts[r], Addr: ip}
			rr.part, rr.err = RunRDMACross(ctx, plans[r], ch, opt)
		})
	}
	wg.Wait()
	for _, rr := range out {
		if rr.coord != nil {
			t.Cleanup(rr.coord.Close)
		}
	}
	return out, hosts
}

func TestRunRDMACross(t *testing.T) {
	host400 := sample(t, "gke-a3ultra-h200-ib-write-bw-host-failed-status10.txt")
	regFail := `echo ' ibv_reg_mr failed'; echo ' Couldn'"'"'t allocate MR'; exit 1`
	files := func(extra map[string]string) map[string]string {
		m := map[string]string{"gpu.txt": host400, "host.txt": host400}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name       string
		files      map[string]string
		rails      [2]int
		concurrent bool
		// want is each rail's GPU-memory and host-memory reasons.
		want [][2]string
	}{
		{name: "both rails pass", files: files(nil), rails: [2]int{2, 2}, want: [][2]string{{"AtRate", "AtRate"}, {"AtRate", "AtRate"}}},
		{name: "one rail's server cannot register GPU memory", files: files(map[string]string{"server-gpu-mlx5_1.sh": regFail, "client-gpu-mlx5_1.sh": "sleep 0.2; echo ' Couldn'\"'\"'t connect to 127.0.0.1:18517'; exit 1"}),
			rails: [2]int{2, 2}, want: [][2]string{{"AtRate", "AtRate"}, {rdma.CauseRegistration, "AtRate"}}},
		{name: "server dies mid-run", files: files(map[string]string{"server-gpu-mlx5_0.sh": banner + "; sleep 0.3; echo ' Failed to complete run'; exit 1", "client-gpu-mlx5_0.sh": "sleep 0.6; exit 1"}),
			rails: [2]int{2, 2}, want: [][2]string{{rdma.CauseServerDied, "AtRate"}, {"AtRate", "AtRate"}}},
		{name: "concurrent", files: files(nil), rails: [2]int{3, 3}, concurrent: true, want: [][2]string{{"AtRate", "AtRate"}, {"AtRate", "AtRate"}, {"AtRate", "AtRate"}}},
		{name: "rails mismatch 8 vs 7", files: files(nil), rails: [2]int{8, 7}, concurrent: true,
			want: [][2]string{{"AtRate", "AtRate"}, {"AtRate", "AtRate"}, {"AtRate", "AtRate"}, {"AtRate", "AtRate"}, {"AtRate", "AtRate"}, {"AtRate", "AtRate"}, {"AtRate", "AtRate"}, {rdma.CauseRailMismatch, rdma.CauseRailMismatch}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case is a job of its own (its rendezvous port, its
			// stand-in's folder; the plans' perftest ports are only
			// arguments): they wait on their stand-ins side by side.
			t.Parallel()
			dir := crossStandIn(t, rdma.WriteBW, tc.files)
			plans := []*rdma.Plan{crossPlan(tc.rails[0]), crossPlan(tc.rails[1])}
			for _, p := range plans {
				p.Concurrent = tc.concurrent
			}
			ranks, hosts := crossJob(t, plans, dir, 20*time.Second, nil)
			for r, rr := range ranks {
				if rr.err != nil || rr.part == nil || rr.part.Error != "" {
					t.Fatalf("rank %d: %v %+v", r, rr.err, rr.part)
				}
			}
			prs := rdma.Combine(ranks[0].part, ranks[1].part, 0, hosts, nil, func(r int) string { return fmt.Sprint(r) })
			rs := rdma.Judge(prs, rdma.DefaultJudging)
			by := map[string]result.Result{}
			for _, r := range rs {
				by[r.Subject] = r
			}
			if len(prs) != len(tc.want) {
				t.Fatalf("%d rails, want %d", len(prs), len(tc.want))
			}
			for i, w := range tc.want {
				e := prs[i].Entry
				if w[0] == rdma.CauseRailMismatch {
					if prs[i].Cause != w[0] || !strings.Contains(prs[i].Detail, "rail 7 exists on rank 0 (node0) only") {
						t.Errorf("rail %d: %+v", i, prs[i])
					}
					continue
				}
				g, h := by[e.Subject()+"/cuda"], by[e.Subject()+"/host"]
				if g.Reason != w[0] || h.Reason != w[1] {
					t.Errorf("rail %d: GPU %s %s (%s), host %s (%s)", i, g.Status, g.Reason, g.Message, h.Reason, h.Message)
				}
				if e.Peer == nil || e.Peer.Host != "node1" || e.Host != "node0" || !strings.Contains(g.Message, "node1 GPU") {
					t.Errorf("rail %d does not name both ends: %+v, %s", i, e.Peer, g.Message)
				}
				if w[0] == rdma.CauseRegistration && !strings.Contains(g.Message, "server on node0: Couldn't allocate MR") {
					t.Errorf("rail %d: %s", i, g.Message)
				}
				if w[0] == rdma.CauseServerDied && !strings.Contains(g.Message, "server on node0") {
					t.Errorf("rail %d: %s", i, g.Message)
				}
				for _, o := range prs[i].Outcomes {
					if o.ClientOut == "" || o.ServerOut == "" {
						t.Errorf("rail %d %s: raw outputs not named: %+v", i, o.Memory, o)
					}
				}
			}
			// Every client connected to the server's address and port.
			log, _ := os.ReadFile(filepath.Join(dir, "args.log"))
			ports := map[string]bool{}
			re := regexp.MustCompile(`^client .*-p (\d+) .* 127\.0\.0\.1$`)
			for _, l := range strings.Split(strings.TrimSpace(string(log)), "\n") {
				if strings.HasPrefix(l, "client") {
					m := re.FindStringSubmatch(l)
					if m == nil {
						t.Errorf("client line %q", l)
						continue
					}
					if ports[m[1]] {
						t.Errorf("port %s used twice", m[1])
					}
					ports[m[1]] = true
				}
			}
			if len(ports) == 0 {
				t.Error("no client ran")
			}
		})
	}
}

// closeOnClient makes a rank "die": in the background it closes m once the
// stand-in's args.log shows a client started on nic, looking every 20 ms,
// tries times at most.
// closer is a rank that can die: its connection closes and its runs end.
type closer interface{ Close() }

// dying is a member rank that dies: its connection to rank 0 closes and
// the runs of its own process end with it.
type dying struct {
	m   *rendezvous.Member
	die context.CancelFunc
}

func (d dying) Close() { d.m.Close(); d.die() }

func closeOnClient(dir, nic string, tries int, m closer) {
	go func() {
		for range tries {
			b, _ := os.ReadFile(filepath.Join(dir, "args.log"))
			if strings.Contains(string(b), "client -d "+nic) {
				m.Close()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
}

// The client rank dies mid-run: the server rank names it within moments
// (PeerMissing) and ends; rank 0 combines what it has.
func TestRunRDMACrossPeerDies(t *testing.T) {
	host400 := sample(t, "gke-a3ultra-h200-ib-write-bw-host-failed-status10.txt")
	dir := crossStandIn(t, rdma.WriteBW, map[string]string{"gpu.txt": host400, "host.txt": host400, "client-gpu-mlx5_1.sh": "sleep 30"})
	plans := []*rdma.Plan{crossPlan(2), crossPlan(2)}
	ranks, hosts := crossJob(t, plans, dir, 60*time.Second, func(r int, m closer) {
		// Rank 1 "dies" once rail 1's client hangs: its connection drops.
		closeOnClient(dir, "mlx5_1", 200, m)
	})
	if ranks[0].err != nil || ranks[0].took > 15*time.Second {
		t.Fatalf("rank 0: %v after %s", ranks[0].err, ranks[0].took)
	}
	prs := rdma.Combine(ranks[0].part, nil, 0, hosts, map[int]string{1: "connection lost"}, func(int) string { return "" })
	if len(prs) != 2 || len(prs[1].Outcomes) == 0 {
		t.Fatalf("%+v", prs)
	}
	if o := prs[1].Outcomes[0]; o.Cause != rdma.CausePeerMissing || !strings.Contains(o.Detail, "rank 1 (node1)") {
		t.Errorf("rail 1: %+v", o)
	}
	for _, o := range prs[0].Outcomes {
		if o.Cause != rdma.CausePeerMissing || !strings.Contains(o.Detail, "rank 1 (node1): connection lost") {
			t.Errorf("rail 0 (measured by the lost client): %+v", o)
		}
	}
}

// Four ranks, two node pairs: rank 3 dies mid-run; rank 2 names it and
// ends, pair 0-1 is untouched and passes.
func TestRunRDMACrossFourRanks(t *testing.T) {
	host400 := sample(t, "gke-a3ultra-h200-ib-write-bw-host-failed-status10.txt")
	dir := crossStandIn(t, rdma.WriteBW, map[string]string{"gpu.txt": host400, "host.txt": host400, "client-gpu-mlx6_1.sh": "sleep 30"})
	plans := []*rdma.Plan{crossPlan(2), crossPlan(2), crossPlanNICs(2, "mlx6_"), crossPlanNICs(2, "mlx6_")}
	ranks, hosts := crossJob(t, plans, dir, 60*time.Second, func(r int, m closer) {
		if r == 3 {
			closeOnClient(dir, "mlx6_1", 300, m)
		}
	})
	for r := range 3 {
		if ranks[r].err != nil || ranks[r].took > 20*time.Second {
			t.Fatalf("rank %d: %v after %s", r, ranks[r].err, ranks[r].took)
		}
	}
	rs := rdma.Judge(rdma.Combine(ranks[0].part, ranks[1].part, 0, hosts, nil, func(int) string { return "" }), rdma.DefaultJudging)
	for _, r := range rs {
		if r.Status != result.Pass {
			t.Errorf("pair 0-1: %s %s %s", r.Subject, r.Status, r.Message)
		}
	}
	if len(rs) != 4 {
		t.Errorf("pair 0-1: %d results", len(rs))
	}
	var lostSeen bool
	for _, o := range ranks[2].part.Outcomes {
		if o.Rail == 1 && o.Cause == rdma.CausePeerMissing && strings.Contains(o.Detail, "rank 3 (node3)") {
			lostSeen = true
		}
	}
	if !lostSeen {
		t.Errorf("rank 2 did not name rank 3: %+v", ranks[2].part.Outcomes)
	}
}

// hostileChannel is a partner rank that says what the test wants: every
// message of script is in the inbox from rank 0, what this rank sends is
// dropped.
type hostileChannel struct{ in chan rendezvous.Message }

func (h hostileChannel) Send(int, []byte) error           { return nil }
func (h hostileChannel) Inbox() <-chan rendezvous.Message { return h.in }

// A partner's server address and port are untrusted: an address that is
// not an IP address or a host name (an option, for perftest, which takes
// it as its last argument: --out_json_file= names a file) is refused
// before any client runs, and so is a port outside 1..65535 (the review's
// S2).
func TestRunRDMACrossHostilePartner(t *testing.T) {
	for _, tc := range []struct {
		name, addr string
		port       int
		want       string
	}{
		{"option as address", "--out_json_file=/tmp/PWNED", 18515, "not an IP address or a host name"},
		{"address with a space", "10.0.0.1 -x", 18515, "not an IP address or a host name"},
		{"port out of range", "127.0.0.1", 70000, "not a TCP port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := crossStandIn(t, rdma.WriteBW, nil)
			p := crossPlan(1)
			in := make(chan rendezvous.Message, 16)
			side := rdma.Side{Rank: 0, Host: "evil0", Addr: tc.addr, Test: p.Test, Rails: p.Entries}
			post := func(m crossMsg) {
				b, _ := json.Marshal(m)
				in <- rendezvous.Message{From: 0, Data: b}
			}
			post(crossMsg{Kind: msgSide, Side: &side})
			for _, r := range p.Entries[0].Runs {
				post(crossMsg{Kind: msgReady, Rail: 0, Memory: r.Memory, Port: tc.port})
			}
			opt := RDMACrossOptions{RDMAOptions: RDMAOptions{PerftestDir: dir, Out: t.TempDir(), Timeout: 3 * time.Second}, Rank: 1, Host: "node1", Addr: "127.0.0.1"}
			part, err := RunRDMACross(context.Background(), p, hostileChannel{in}, opt)
			if err != nil {
				t.Fatal(err)
			}
			got := part.Error
			for _, o := range part.Outcomes {
				got += " | " + o.Cause + ": " + o.Detail
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("part: %s", got)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "args.log")); len(b) > 0 {
				t.Errorf("perftest ran:\n%s", b)
			}
		})
	}
}
