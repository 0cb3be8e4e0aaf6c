package topology

import (
	"strings"
	"testing"
)

const (
	gidLL   = "fe80:0000:0000:0000:b83f:d203:0009:1234"
	gidV4   = "0000:0000:0000:0000:0000:ffff:0a00:0001" // ::ffff:10.0.0.1
	gidV4b  = "0000:0000:0000:0000:0000:ffff:c0a8:0a0b" // ::ffff:192.168.10.11
	gidV6   = "2001:0db8:0000:0000:0000:0000:0000:0001"
	gidZero = "0000:0000:0000:0000:0000:0000:0000:0000"
	v1      = "IB/RoCE v1"
	v2      = "RoCE v2"
)

// table is the kernel's table for a netdev with one IPv4 address: 0/1 the
// link-local GID as RoCE v1/v2, 2/3 the IPv4-mapped one.
func table() []GID {
	return []GID{{0, gidLL, v1, "eth0"}, {1, gidLL, v2, "eth0"}, {2, gidV4, v1, "eth0"}, {3, gidV4, v2, "eth0"}}
}

func TestChooseGID(t *testing.T) {
	cases := []struct {
		name   string
		gids   []GID
		read   int
		prefs  GIDPrefs
		index  int
		addr   string
		typ    string
		whyHas string
		whyNot string
	}{
		{name: "v2 IPv4-mapped preferred over v1 and link-local", gids: table(), read: 12, index: 3, addr: "::ffff:10.0.0.1", typ: v2, whyHas: "first RoCE v2 IPv4 GID"},
		{name: "v2 before v1 in the table", gids: []GID{{0, gidLL, v1, ""}, {1, gidLL, v2, ""}, {2, gidV4, v2, ""}, {3, gidV4, v1, ""}}, read: 12, index: 2, typ: v2},
		{name: "the first v2 IPv4 of several wins", gids: append(table(), GID{4, gidV4b, v1, ""}, GID{5, gidV4b, v2, ""}), read: 14, index: 3, addr: "::ffff:10.0.0.1"},
		{name: "unsorted input is ordered by index", gids: []GID{{3, gidV4, v2, ""}, {1, gidLL, v2, ""}, {2, gidV4, v1, ""}, {0, gidLL, v1, ""}}, read: 12, index: 3},
		{name: "v1 only: NCCL falls back to the v1 IPv4 GID", gids: []GID{{0, gidLL, v1, ""}, {1, gidV4, v1, ""}}, read: 10, index: 1, typ: v1, whyHas: "does not cross IP subnets"},
		{name: "v1 link-local only: none", gids: []GID{{0, gidLL, v1, ""}}, read: 9, index: -1, whyHas: "no IPv4 GID", whyNot: "AF_INET6"},
		{name: "IPv6 only: none by default, AF_INET6 named", gids: []GID{{0, gidLL, v1, ""}, {1, gidLL, v2, ""}, {2, gidV6, v1, ""}, {3, gidV6, v2, ""}}, read: 12, index: -1, whyHas: "NCCL_IB_ADDR_FAMILY=AF_INET6 NCCL would take GID 3 (RoCE v2 2001:db8::1)"},
		{name: "IPv6 only with AF_INET6: the global v2", gids: []GID{{0, gidLL, v1, ""}, {1, gidLL, v2, ""}, {2, gidV6, v1, ""}, {3, gidV6, v2, ""}}, read: 12, prefs: GIDPrefs{IPv6: true}, index: 3, addr: "2001:db8::1", whyHas: "RoCE v2 IPv6"},
		{name: "AF_INET6 skips IPv4 entries", gids: append(table(), GID{4, gidV6, v2, ""}), read: 13, prefs: GIDPrefs{IPv6: true}, index: 4},
		{name: "NCCL_IB_ROCE_VERSION_NUM=1", gids: table(), read: 12, prefs: GIDPrefs{RoCEVersion: 1}, index: 2, typ: v1, whyHas: "first RoCE v1 IPv4 GID"},
		{name: "all-zero table: none", gids: nil, read: 8, index: -1, whyHas: "among 8 entries read"},
		{name: "explicit zero entries: none", gids: []GID{{0, gidZero, "", ""}, {1, gidZero, "", ""}}, read: 8, index: -1},
		{name: "table not read", gids: nil, read: 0, index: -1, whyHas: "not read"},
		{name: "unreadable type of the v2 entry: the v1 one stays", gids: []GID{{0, gidLL, v1, ""}, {1, gidLL, v2, ""}, {2, gidV4, v1, ""}, {3, gidV4, "", ""}}, read: 12, index: 2, typ: v1},
		{name: "unreadable types everywhere: the first IPv4 GID", gids: []GID{{0, gidLL, "", ""}, {1, gidV4, "", ""}, {2, gidV4b, "", ""}}, read: 11, index: 1, typ: "unknown", whyHas: "could not be read"},
		{name: "unreadable type of the first IPv4: a later v2 replaces it", gids: []GID{{0, gidLL, v1, ""}, {2, gidV4, "", ""}, {3, gidV4, v2, ""}}, read: 12, index: 3, typ: v2},
		{name: "IPv4-mapped at index 0", gids: []GID{{0, gidV4, v2, ""}, {1, gidV4b, v2, ""}}, read: 10, index: 0},
		{name: "garbage text is skipped", gids: []GID{{0, gidLL, v1, ""}, {1, "not a gid", v2, ""}, {2, gidV4, v2, ""}}, read: 11, index: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ChooseGID(c.gids, c.read, c.prefs)
			if got.Index != c.index {
				t.Fatalf("index %d, want %d (%+v)", got.Index, c.index, got)
			}
			if c.addr != "" && got.GID != c.addr {
				t.Errorf("gid %q, want %q", got.GID, c.addr)
			}
			if want := strings.TrimPrefix(c.typ, "unknown"); c.typ != "" && got.Type != want {
				t.Errorf("type %q, want %q", got.Type, c.typ)
			}
			if got.Why == "" || !strings.Contains(got.Why, c.whyHas) {
				t.Errorf("why %q, want it to hold %q", got.Why, c.whyHas)
			}
			if c.whyNot != "" && strings.Contains(got.Why, c.whyNot) {
				t.Errorf("why %q holds %q", got.Why, c.whyNot)
			}
			if c.index < 0 && (got.GID != "" || got.Text() != "no GID chosen") {
				t.Errorf("none carries %+v", got)
			}
		})
	}
}

func TestPortRoCEGID(t *testing.T) {
	ib := &Port{LinkLayer: "InfiniBand", GIDs: table(), GIDsRead: 12}
	if ib.RoCEGID() != nil {
		t.Error("an InfiniBand port has a RoCE GID choice")
	}
	var none *Port
	if none.RoCEGID() != nil {
		t.Error("a nil port has a RoCE GID choice")
	}
	eth := &Port{LinkLayer: "Ethernet", GIDs: table(), GIDsRead: 12}
	c := eth.RoCEGID()
	if c == nil || c.Text() != "GID 3: RoCE v2 ::ffff:10.0.0.1" {
		t.Fatalf("got %+v", c)
	}
}

func TestParseGID(t *testing.T) {
	for s, want := range map[string]string{
		gidV4: "::ffff:10.0.0.1", gidLL: "fe80::b83f:d203:9:1234", gidZero: "::",
		"0000:0000:0000:0000:0000:ffff:0a00:000": "", "0000:0000:0000:0000:0000:ffff:0a00:00zz": "", "": "",
		"00000:000:0000:0000:0000:ffff:0a00:0001": "",
	} {
		a, ok := ParseGID(s)
		if got := ""; ok {
			got = a.String()
			if got != want {
				t.Errorf("ParseGID(%q) = %q, want %q", s, got, want)
			}
		} else if want != "" {
			t.Errorf("ParseGID(%q) failed, want %q", s, want)
		}
	}
}
