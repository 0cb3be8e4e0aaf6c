package discover_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

func port1(t *testing.T, h *topology.Host, nic string) *topology.Port {
	t.Helper()
	n := h.NICByName(nic)
	if n == nil || len(n.Ports) == 0 {
		t.Fatalf("no %s port", nic)
	}
	return &n.Ports[0]
}

// TestRoCEGIDTable: the RoCE fixture's ports carry the kernel's table for
// one IPv4 address (0/1 link-local v1/v2, 2/3 IPv4-mapped v1/v2); the scan
// stops after MaxGIDZeroRun zero entries; ports without a table (InfiniBand,
// an Ethernet port without an address in the fixture) read none.
func TestRoCEGIDTable(t *testing.T) {
	h, _ := discoverHost(t, "../../../testdata/hosts/hgx-h100-8gpu-12nic-roce.host")
	p := port1(t, h, "mlx5_0")
	if p.GIDsRead != 4+discover.MaxGIDZeroRun {
		t.Errorf("read %d entries, want %d", p.GIDsRead, 4+discover.MaxGIDZeroRun)
	}
	if len(p.GIDs) != 4 {
		t.Fatalf("GIDs %+v, want 4", p.GIDs)
	}
	ll := p.GIDs[0].GID
	if !strings.HasPrefix(ll, "fe80:0000:0000:0000:b83f:d203:0006:") {
		t.Errorf("GID 0 %q, want the link-local GID from the port GUID", ll)
	}
	want := []topology.GID{
		{Index: 0, GID: ll, Type: "IB/RoCE v1", NetDev: "enp25s0np0"},
		{Index: 1, GID: ll, Type: "RoCE v2", NetDev: "enp25s0np0"},
		{Index: 2, GID: "0000:0000:0000:0000:0000:ffff:0a00:0001", Type: "IB/RoCE v1", NetDev: "enp25s0np0"},
		{Index: 3, GID: "0000:0000:0000:0000:0000:ffff:0a00:0001", Type: "RoCE v2", NetDev: "enp25s0np0"},
	}
	for i := range want {
		if p.GIDs[i] != want[i] {
			t.Errorf("GID %d: %+v, want %+v", i, p.GIDs[i], want[i])
		}
	}
	if c := p.GIDChoice; c == nil || c.Index != 3 || c.GID != "::ffff:10.0.0.1" || c.Type != "RoCE v2" {
		t.Errorf("choice %+v, want GID 3 RoCE v2 ::ffff:10.0.0.1", c)
	}
	if p := port1(t, h, "mlx5_4"); p.GIDsRead != 0 || p.GIDs != nil || p.GIDChoice != nil {
		t.Errorf("mlx5_4 (no address): %+v", p)
	}
	for _, path := range h.Problems {
		if strings.Contains(path.Path, "gid") {
			t.Errorf("problem %+v", path)
		}
	}

	ib, _ := discoverHost(t, "../../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	for _, n := range ib.NICs {
		for _, p := range n.Ports {
			if p.LinkLayer == "InfiniBand" && (p.GIDsRead != 0 || p.GIDChoice != nil) {
				t.Errorf("%s: an InfiniBand port's GID table was read: %+v", n.Name, p)
			}
		}
	}
}

const roceSmall = `
numa 0 0-7
hostbridge pci0000:00 numa=0
  0000:00:01.0 rootport
    0000:01:00.0 usp
      0000:02:00.0 dsp
        0000:03:00.0 gpu
      0000:02:01.0 dsp
        0000:04:00.0 nic
rdma mlx5_0 0000:04:00.0 layer=Ethernet rate=200 netdev=eth0 ip=10.1.2.3
`

func TestRoCEGIDTableEdges(t *testing.T) {
	const base = "sys/class/infiniband/mlx5_0/ports/1/"
	cases := []struct {
		name   string
		change func(t *testing.T, fsys fstest.MapFS, dir string)
		read   int
		gids   []int
		choice int
		typ3   string
	}{
		{name: "as built", read: 12, gids: []int{0, 1, 2, 3}, choice: 3, typ3: "RoCE v2"},
		{name: "a hole shorter than the zero run is crossed, the table's end stops the scan",
			change: func(t *testing.T, fsys fstest.MapFS, dir string) {
				fsys[dir+"gids/10"] = file("0000:0000:0000:0000:0000:ffff:0a01:0204\n")
				fsys[dir+"gid_attrs/types/10"] = file("RoCE v2\n")
			}, read: 16, gids: []int{0, 1, 2, 3, 10}, choice: 3, typ3: "RoCE v2"},
		{name: "entries past the zero run are not read",
			change: func(t *testing.T, fsys fstest.MapFS, dir string) {
				fsys[dir+"gids/13"] = file("0000:0000:0000:0000:0000:ffff:0a01:0204\n")
			}, read: 12, gids: []int{0, 1, 2, 3}, choice: 3, typ3: "RoCE v2"},
		{name: "an unreadable type is absent, not a problem",
			change: func(t *testing.T, fsys fstest.MapFS, dir string) {
				delete(fsys, dir+"gid_attrs/types/3")
				fsys[dir+"gid_attrs/types/3/x"] = file("not a type file") // a directory: the read fails
			}, read: 12, gids: []int{0, 1, 2, 3}, choice: 2, typ3: ""},
		{name: "no table: a snapshot taken before GIDs were read",
			change: func(t *testing.T, fsys fstest.MapFS, dir string) {
				for k := range fsys {
					if strings.HasPrefix(k, dir+"gids/") {
						delete(fsys, k)
					}
				}
			}, read: 0, choice: -2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := fakehost.Parse("roce-small", strings.NewReader(roceSmall))
			if err != nil {
				t.Fatal(err)
			}
			fsys, err := s.FS()
			if err != nil {
				t.Fatal(err)
			}
			dir := resolve(t, fsys, base) + "/"
			if c.change != nil {
				c.change(t, fsys, dir)
			}
			h, err := discover.Discover(context.Background(), discover.WithRoot(machine.NewRootFS(fsys, "roce-small")), discover.WithoutGPUFacts(), discover.WithoutNames())
			if err != nil {
				t.Fatal(err)
			}
			p := port1(t, h, "mlx5_0")
			if p.GIDsRead != c.read {
				t.Errorf("read %d entries, want %d", p.GIDsRead, c.read)
			}
			var idx []int
			for _, g := range p.GIDs {
				idx = append(idx, g.Index)
				if g.Index == 3 && g.Type != c.typ3 {
					t.Errorf("type of 3: %q, want %q", g.Type, c.typ3)
				}
			}
			if !slices.Equal(idx, c.gids) {
				t.Errorf("entries %v, want %v", idx, c.gids)
			}
			switch {
			case c.choice == -2 && p.GIDChoice != nil:
				t.Errorf("choice %+v without a table", p.GIDChoice)
			case c.choice > -2 && (p.GIDChoice == nil || p.GIDChoice.Index != c.choice):
				t.Errorf("choice %+v, want index %d", p.GIDChoice, c.choice)
			}
			for _, pr := range h.Problems {
				if strings.Contains(pr.Path, "gid") {
					t.Errorf("problem %+v", pr)
				}
			}
		})
	}
}

func TestParseIBRate(t *testing.T) {
	for in, want := range map[string]float64{
		"400 Gb/sec (4X NDR)": 400,
		"200 Gb/sec (2X NDR)": 200,
		"25 Gb/sec (1X EDR)":  25,
		"":                    0,
		"fast":                0,
		"inf Gb/sec (4X NDR)": 0,
		"NaN Gb/sec":          0,
		"-1 Gb/sec":           0,
	} {
		if got := discover.ParseIBRate(in); got != want {
			t.Errorf("ParseIBRate(%q) = %v, want %v", in, got, want)
		}
	}
}
