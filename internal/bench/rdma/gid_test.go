package rdma

import (
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// xOf is the -x argument of a command ("" none).
func xOf(c Cmd) string {
	if i := slices.Index(c.Args, "-x"); i >= 0 && i+1 < len(c.Args) {
		return c.Args[i+1]
	}
	return ""
}

// TestPlanRoCEGID: on RoCE ports the plan passes the GID index NCCL would
// choose (topology.Port.RoCEGID) to server and client, unless --gid-index
// is given; with no GID chosen or no table it leaves -x out and says why.
func TestPlanRoCEGID(t *testing.T) {
	reg := Registration{PeerMem: "nvidia_peermem", Known: true}
	// mlx5_4, the front-end card's second function, up with an address:
	// the server of a two-NIC loopback on mlx5_3.
	sibling := func(s string) string {
		return strings.Replace(s, "netdev=enp83s0f1np1 hca=MT4125 fw=22.39.1002 state=DOWN phys=Disabled", "netdev=enp83s0f1np1 ip=192.168.10.12 hca=MT4125 fw=22.39.1002", 1)
	}
	linkLocalOnly := func(h *topology.Host, nic string) {
		p := &h.NICByName(nic).Ports[0]
		p.GIDs = slices.DeleteFunc(slices.Clone(p.GIDs), func(g topology.GID) bool { return g.Index >= 2 })
	}
	v1Only := func(h *topology.Host, nic string) {
		p := &h.NICByName(nic).Ports[0]
		p.GIDs = slices.DeleteFunc(slices.Clone(p.GIDs), func(g topology.GID) bool { return g.Type == "RoCE v2" })
	}
	cases := []struct {
		name           string
		edit           func(string) string
		after          func(h *topology.Host)
		o              Options
		server, client string
		note           string
		noNote         string
	}{
		{name: "chosen as NCCL would", o: Options{GIDIndex: -1, Pairs: []PairSpec{{0, "mlx5_0"}}},
			server: "3", client: "3", note: "GID 3: RoCE v2 ::ffff:10.0.0.1 on mlx5_0 (chosen as NCCL would; --gid-index overrides)"},
		{name: "--gid-index overrides", o: Options{GIDIndex: 5, Pairs: []PairSpec{{0, "mlx5_0"}}},
			server: "5", client: "5", noNote: "GID"},
		{name: "--gid-index 0 is an index", o: Options{GIDIndex: 0, Pairs: []PairSpec{{0, "mlx5_0"}}},
			server: "0", client: "0", noNote: "GID"},
		{name: "cross-node: both roles carry it", o: Options{GIDIndex: -1, Mode: ModeCrossNode, Rails: []int{0}},
			server: "3", client: "3", note: "GID 3: RoCE v2 ::ffff:10.0.0.1 on mlx5_0"},
		{name: "no routable GID: perftest chooses", after: func(h *topology.Host) { linkLocalOnly(h, "mlx5_0") },
			o: Options{GIDIndex: -1, Pairs: []PairSpec{{0, "mlx5_0"}}}, note: "RoCE: no GID chosen on mlx5_0 (no IPv4 GID"},
		{name: "v1 only: NCCL's fallback, said", after: func(h *topology.Host) { v1Only(h, "mlx5_0") },
			o: Options{GIDIndex: -1, Pairs: []PairSpec{{0, "mlx5_0"}}}, server: "2", client: "2", note: "GID 2: IB/RoCE v1 ::ffff:10.0.0.1 on mlx5_0 (chosen as NCCL would: no RoCE v2 IPv4 GID"},
		{name: "table not collected: the old note", edit: func(s string) string {
			return strings.Replace(s, "netdev=enp25s0np0 ip=10.0.0.1", "netdev=enp25s0np0", 1)
		}, o: Options{GIDIndex: -1, Pairs: []PairSpec{{0, "mlx5_0"}}}, note: "RoCE: GID index not collected; perftest chooses (set --gid-index to force one)"},
		{name: "two-NIC loopback: each NIC its own GID", edit: sibling, after: func(h *topology.Host) { v1Only(h, "mlx5_4") },
			o: Options{GIDIndex: -1, Pairs: []PairSpec{{0, "mlx5_3"}}}, server: "2", client: "3", note: "GID 2: IB/RoCE v1 ::ffff:192.168.10.12 on mlx5_4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := host(t, "hgx-h100-8gpu-12nic-roce", c.edit)
			if c.after != nil {
				c.after(h)
			}
			c.o.Registration = reg
			p, err := Build(h, c.o, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Entries) != 1 {
				t.Fatalf("%d entries", len(p.Entries))
			}
			e := p.Entries[0]
			for _, r := range e.Runs {
				if got := xOf(r.Server); got != c.server {
					t.Errorf("%s server -x %q, want %q: %s", r.Memory, got, c.server, r.Server.Line())
				}
				if got := xOf(r.Client); got != c.client {
					t.Errorf("%s client -x %q, want %q: %s", r.Memory, got, c.client, r.Client.Line())
				}
			}
			notes := strings.Join(e.Notes, "\n")
			if c.note != "" && !strings.Contains(notes, c.note) {
				t.Errorf("notes %q, want %q", notes, c.note)
			}
			if c.noNote != "" && strings.Contains(notes, c.noNote) {
				t.Errorf("notes %q hold %q", notes, c.noNote)
			}
			if strings.Count(notes, "not collected") > 1 {
				t.Errorf("the not-collected note twice: %q", notes)
			}
		})
	}
}
