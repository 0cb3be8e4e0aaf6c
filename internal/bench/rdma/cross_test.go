package rdma

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// A cross-node plan: the pairing's rails in order, the client's address a
// placeholder, --rails selects, every run its own TCP port.
func TestBuildCrossNode(t *testing.T) {
	h := host(t, "hgx-h200-8gpu-10nic", nil)
	p, err := Build(h, Options{Mode: ModeCrossNode, GIDIndex: -1, Rails: []int{1, 3}, Concurrent: true, Registration: Registration{PeerMem: "nvidia_peermem", Known: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err := Build(h, Options{Mode: ModeCrossNode, GIDIndex: -1, Registration: Registration{PeerMem: "nvidia_peermem", Known: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 2 || p.Entries[0].Rail != 1 || p.Entries[1].Rail != 3 || !p.Concurrent || len(all.Entries) != 8 {
		t.Fatalf("rails: %d entries, all %d", len(p.Entries), len(all.Entries))
	}
	if p.Entries[0].NIC != all.Entries[1].NIC || p.Entries[1].GPU != all.Entries[3].GPU {
		t.Errorf("rail 1 is %s (all: %s)", p.Entries[0].NIC, all.Entries[1].NIC)
	}
	ports := map[int]bool{}
	for _, e := range all.Entries {
		if e.Mode != ModeCrossNode || e.ServerNIC != e.NIC {
			t.Errorf("%s: mode %q server NIC %q", e.Subject(), e.Mode, e.ServerNIC)
		}
		for _, r := range e.Runs {
			if ports[r.TCPPort] {
				t.Errorf("port %d twice", r.TCPPort)
			}
			ports[r.TCPPort] = true
			if r.Client.Args[len(r.Client.Args)-1] != PeerAddr || slices.Contains(r.Server.Args, PeerAddr) {
				t.Errorf("%s: client %v server %v", e.Subject(), r.Client.Args, r.Server.Args)
			}
		}
	}
	for _, rails := range []string{"all", ""} {
		if r, err := ParseRails(rails); r != nil || err != nil {
			t.Errorf("%q: %v %v", rails, r, err)
		}
	}
	if r, err := ParseRails("0, 3,3"); err != nil || !slices.Equal(r, []int{0, 3}) {
		t.Errorf("0, 3,3: %v %v", r, err)
	}
	if _, err := ParseRails("0,x"); err == nil || !strings.Contains(err.Error(), "item 2") {
		t.Errorf("0,x: %v", err)
	}
}

func side(rank int, host string, n int, ll string) Side {
	s := Side{Rank: rank, Host: host, Addr: "10.0.0." + fmt.Sprint(rank+1), Test: WriteBW}
	for r := range n {
		e := Entry{GPU: r, GPUBusID: fmt.Sprintf("0000:%02x:00.0", 0x18+r), NIC: fmt.Sprintf("mlx5_%d", r), Port: 1, LinkLayer: ll, RateGbps: 400, Level: "PIX",
			Mode: ModeCrossNode, Rail: r, Expect: Expectation{LineGbps: 400, Source: "test"}}
		for _, m := range []string{MemPeerMem, MemHost} {
			e.Runs = append(e.Runs, Run{Memory: m})
		}
		s.Rails = append(s.Rails, e)
	}
	return s
}

// Rails pair by index; a rail on one side only and different link layers
// are that rail's RailMismatch, the others run.
func TestPairRails(t *testing.T) {
	a, b := side(0, "gpu01", 8, "InfiniBand"), side(1, "gpu02", 7, "InfiniBand")
	b.Rails[2].LinkLayer = "Ethernet"
	b.Rails[4].Skip = "port 1 is down (nic.port)"
	b.Rails[5].MTU, a.Rails[5].MTU = 4200, 9000
	rps := PairRails(a, b)
	if len(rps) != 8 {
		t.Fatalf("%d rails", len(rps))
	}
	for _, rp := range rps {
		switch rp.Rail {
		case 7:
			if rp.Cause != CauseRailMismatch || !strings.Contains(rp.Detail, "rail 7 exists on rank 0 (gpu01) only: rank 1 (gpu02) has 7 rails") {
				t.Errorf("rail 7: %+v", rp)
			}
		case 2:
			if rp.Cause != CauseRailMismatch || !strings.Contains(rp.Detail, "Ethernet") {
				t.Errorf("rail 2: %+v", rp)
			}
		case 4:
			if rp.Runs() || !strings.Contains(rp.Skip, "client side (rank 1 (gpu02)): port 1 is down") {
				t.Errorf("rail 4: %+v", rp)
			}
		default:
			if !rp.Runs() || !slices.Equal(rp.Memories, []string{MemPeerMem, MemHost}) {
				t.Errorf("rail %d: %+v", rp.Rail, rp)
			}
		}
	}
	if n := rps[5].Notes; len(n) != 1 || !strings.Contains(n[0], "MTUs differ") {
		t.Errorf("rail 5 notes %v", n)
	}
	// A memory kind one side cannot register is left out, with a note.
	b = side(1, "gpu02", 8, "InfiniBand")
	b.Rails[0].Runs = b.Rails[0].Runs[1:]
	if rp := PairRails(a, b)[0]; !slices.Equal(rp.Memories, []string{MemHost}) || len(rp.Notes) != 1 {
		t.Errorf("memories %v notes %v", rp.Memories, rp.Notes)
	}
	// Different tests: every rail.
	b = side(1, "gpu02", 8, "InfiniBand")
	b.Test = ReadBW
	for _, rp := range PairRails(a, b) {
		if rp.Cause != CauseRailMismatch || !strings.Contains(rp.Detail, "different tests") {
			t.Errorf("rail %d: %+v", rp.Rail, rp)
		}
	}
}

func TestMerge(t *testing.T) {
	ok := &SideOutcome{Memory: MemPeerMem, Role: RoleClient, Gbps: 380}
	for _, tc := range []struct {
		name       string
		s, c       *SideOutcome
		cause, has string
	}{
		{"measured", &SideOutcome{Role: RoleServer}, ok, "", ""},
		{"server registration", &SideOutcome{Role: RoleServer, Cause: CauseRegistration, Detail: "server: ibv_reg_mr failed"},
			&SideOutcome{Role: RoleClient, Cause: CauseServerDied, Detail: "client: Couldn't connect"}, CauseRegistration, "server on gpu01: ibv_reg_mr failed"},
		{"server died beats the client's failure", &SideOutcome{Role: RoleServer, Cause: CauseServerDied, Detail: "server: signal: killed"},
			&SideOutcome{Role: RoleClient, Cause: CauseClientFailed}, CauseServerDied, "server on gpu01"},
		{"client registration", &SideOutcome{Role: RoleServer}, &SideOutcome{Role: RoleClient, Cause: CauseRegistration, Detail: "client: Couldn't allocate MR"}, CauseRegistration, "client on gpu02"},
		{"client lost", &SideOutcome{Role: RoleServer, Cause: CausePeerMissing, Detail: "rank 1 lost"}, nil, CausePeerMissing, "server on gpu01: rank 1 lost"},
		{"client silent", &SideOutcome{Role: RoleServer}, nil, CausePeerMissing, "client on gpu02 reported nothing"},
		{"nobody", nil, nil, CausePeerMissing, "neither"},
		{"no row", &SideOutcome{Role: RoleServer}, &SideOutcome{Role: RoleClient}, CauseNoMeasurement, ""},
	} {
		o := Merge(tc.s, tc.c, "gpu01", "gpu02")
		if o.Cause != tc.cause || !strings.Contains(o.Detail, tc.has) {
			t.Errorf("%s: %+v", tc.name, o)
		}
	}
}

// Combine: one result per rail with the peer's side, the slower port's
// rate; a rail mismatch and a missing client are named; Judge and the
// table name both ends.
func TestCombineAndJudge(t *testing.T) {
	a, b := side(0, "gpu01", 3, "InfiniBand"), side(1, "gpu02", 2, "InfiniBand")
	b.Rails[1].RateGbps = 200
	rails := PairRails(a, b)
	srv := &RankPart{Rank: 0, Host: "gpu01", Side: a, Rails: rails}
	cli := &RankPart{Rank: 1, Host: "gpu02", Side: b, Rails: rails}
	for r := range 2 {
		for _, m := range []string{MemPeerMem, MemHost} {
			srv.Outcomes = append(srv.Outcomes, SideOutcome{Rail: r, Memory: m, Role: RoleServer, Out: "s.txt"})
			cli.Outcomes = append(cli.Outcomes, SideOutcome{Rail: r, Memory: m, Role: RoleClient, Gbps: 190, Out: "c.txt"})
		}
	}
	dir := func(r int) string {
		if r == 0 {
			return ""
		}
		return fmt.Sprintf("rank-%d", r)
	}
	prs := Combine(srv, cli, 0, []string{"gpu01", "gpu02"}, nil, dir)
	if len(prs) != 3 {
		t.Fatalf("%d results", len(prs))
	}
	if e := prs[1].Entry; e.Expect.LineGbps != 200 || e.Peer.NIC != "mlx5_1" || e.Peer.Host != "gpu02" || prs[1].Outcomes[0].ClientOut != "rank-1/c.txt" || prs[1].Outcomes[0].ServerOut != "s.txt" {
		t.Errorf("rail 1: %+v %+v", e, prs[1].Outcomes)
	}
	if prs[2].Cause != CauseRailMismatch {
		t.Errorf("rail 2: %+v", prs[2])
	}
	rs := Judge(prs, DefaultJudging)
	by := map[string]result.Result{}
	for _, r := range rs {
		by[r.Subject] = r
	}
	if r := by["gpu01:GPU0-mlx5_0↔gpu02:GPU0-mlx5_0/cuda"]; r.Reason != "BelowRate" || !strings.Contains(r.Message, "rail 0: gpu01 GPU0 (0000:18:00.0) mlx5_0 port 1 ↔ gpu02 GPU0 (0000:18:00.0) mlx5_0 port 1") {
		t.Errorf("rail 0: %+v", r)
	}
	if r := by["gpu01:GPU1-mlx5_1↔gpu02:GPU1-mlx5_1/cuda"]; r.Status != result.Pass {
		t.Errorf("rail 1 at the slower port's rate: %+v", r)
	}
	if r := by["gpu01:GPU2-mlx5_2↔gpu02:rail2"]; r.Status != result.Fail || r.Reason != CauseRailMismatch {
		t.Errorf("rail 2: %+v (%v)", r, rs)
	}
	var sb strings.Builder
	if err := WriteTable(&sb, prs, rs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PEER", "gpu02:mlx5_1", "PIX/PIX", "fail RailMismatch", "95%"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, sb.String())
		}
	}
	// The client rank never delivered: every rail names it.
	prs = Combine(srv, nil, 0, []string{"gpu01", "gpu02"}, map[int]string{1: "connection lost"}, dir)
	for _, pr := range prs[:2] {
		for _, o := range pr.Outcomes {
			if o.Cause != CausePeerMissing || !strings.Contains(o.Detail, "rank 1 (gpu02): connection lost") {
				t.Errorf("rail %d: %+v", pr.Entry.Rail, o)
			}
		}
	}
}

// A member's part is untrusted: its causes, details and memory names reach
// rank 0's table escaped, and a cause that is none of ours is not taken
// as one (the review's S4: raw ESC in the VERDICT column).
func TestHostileMemberPart(t *testing.T) {
	a, b := side(0, "gpu01", 1, "InfiniBand"), side(1, "gpu02", 1, "InfiniBand")
	rails := PairRails(a, b)
	srv := &RankPart{Rank: 0, Host: "gpu01", Side: a, Rails: rails}
	cli := &RankPart{Rank: 1, Host: "gpu02", Side: b, Rails: rails}
	const evil = "\x1b]0;PWNED\x07\x1b[2J\rFAKE PASS"
	for _, m := range []string{MemPeerMem, MemHost} {
		srv.Outcomes = append(srv.Outcomes, SideOutcome{Rail: 0, Memory: m, Role: RoleServer})
		cli.Outcomes = append(cli.Outcomes, SideOutcome{Rail: 0, Memory: m, Role: RoleClient, Cause: evil, Detail: evil})
	}
	prs := Combine(srv, cli, 0, []string{"gpu01", "gpu02"}, nil, func(int) string { return "" })
	for _, o := range prs[0].Outcomes {
		if o.Cause != CauseClientFailed || !strings.Contains(o.Detail, "unknown cause") {
			t.Errorf("outcome %+v", o)
		}
	}
	prs[0].Outcomes = append(prs[0].Outcomes, Outcome{Memory: evil, Cause: CauseClientFailed, Detail: evil})
	rs := Judge(prs, DefaultJudging)
	for i := range rs {
		rs[i].Reason += evil
	}
	for _, loop := range []bool{false, true} {
		if loop {
			prs[0].Entry.Peer, prs[0].Entry.Level, prs[0].Entry.Mode = nil, evil, evil
		}
		var sb strings.Builder
		if err := WriteTable(&sb, prs, rs); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(sb.String(), "\x1b\x07\r") {
			t.Errorf("raw control characters in the table (loopback %v):\n%q", loop, sb.String())
		}
	}
}
