package topology

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// GID is one populated entry of a RoCE port's GID table, as sysfs shows it
// (/sys/class/infiniband/DEV/ports/P/gids/N, gid_attrs/types/N,
// gid_attrs/ndevs/N).
type GID struct {
	Index int `json:"index"`
	// GID is the raw sysfs text: eight groups of four hex digits.
	GID string `json:"gid"`
	// Type is "IB/RoCE v1" or "RoCE v2"; "" when it could not be read.
	Type   string `json:"type,omitempty"`
	NetDev string `json:"netdev,omitempty"`
}

// Addr is the GID as an IPv6 address (an IPv4-mapped one for RoCE over
// IPv4); ok is false when the text is not a GID.
func (g GID) Addr() (netip.Addr, bool) { return ParseGID(g.GID) }

// ParseGID reads sysfs's GID text ("0000:0000:0000:0000:0000:ffff:0a00:0001").
func ParseGID(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 39 {
		return netip.Addr{}, false
	}
	for i := 4; i < len(s); i += 5 {
		if s[i] != ':' {
			return netip.Addr{}, false
		}
	}
	b, err := hex.DecodeString(strings.ReplaceAll(s, ":", ""))
	if err != nil || len(b) != 16 {
		return netip.Addr{}, false
	}
	return netip.AddrFrom16([16]byte(b)), true
}

// RoCEVersion is 1 for "IB/RoCE v1" (or "RoCE v1"), 2 for "RoCE v2", 0
// when the type is unknown.
func (g GID) RoCEVersion() int {
	switch {
	case strings.HasPrefix(g.Type, "IB/RoCE v1"), strings.HasPrefix(g.Type, "RoCE v1"):
		return 1
	case strings.HasPrefix(g.Type, "RoCE v2"):
		return 2
	}
	return 0
}

// GIDPrefs are NCCL's knobs for choosing a RoCE GID: NCCL_IB_ADDR_FAMILY
// (AF_INET unless IPv6) and NCCL_IB_ROCE_VERSION_NUM (2 when 0). The zero
// value is NCCL's default.
type GIDPrefs struct {
	IPv6        bool
	RoCEVersion int
}

// GIDChoice is the GID index a RoCE port's traffic should use, with the
// entry it names and why.
type GIDChoice struct {
	// Index is the GID index (perftest's -x); -1 when no routable GID was
	// found and the tools' default (GID 0) is left to apply.
	Index int    `json:"index"`
	GID   string `json:"gid,omitempty"` // the address: "::ffff:10.0.0.1"
	Type  string `json:"type,omitempty"`
	Why   string `json:"why"`
}

// Text is the choice in a few words: "GID 3: RoCE v2 ::ffff:10.0.0.1".
func (c GIDChoice) Text() string {
	if c.Index < 0 {
		return "no GID chosen"
	}
	return fmt.Sprintf("GID %d: %s %s", c.Index, orUnknownType(c.Type), c.GID)
}

func orUnknownType(t string) string {
	if t == "" {
		return "type unknown"
	}
	return t
}

// RoCEGID is the port's GID index as NCCL would choose it by default
// (ChooseGID with NCCL's defaults); nil for a port that is not Ethernet.
func (p *Port) RoCEGID() *GIDChoice {
	if p == nil || p.LinkLayer != "Ethernet" {
		return nil
	}
	c := ChooseGID(p.GIDs, p.GIDsRead, GIDPrefs{})
	return &c
}

type gidEntry struct {
	GID
	addr netip.Addr
	ok   bool
}

func (e gidEntry) v4() bool {
	// IPv4-mapped (::ffff:a.b.c.d) or NCCL's IPv4-mapped multicast
	// (ff0e::ffff:a.b.c.d) count as IPv4.
	if !e.ok {
		return false
	}
	b := e.addr.As16()
	tail := b[8] == 0 && b[9] == 0 && b[10] == 0xff && b[11] == 0xff
	mapped := tail && b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0 && b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] == 0
	multicast := tail && b[0] == 0xff && b[1] == 0x0e && b[2] == 0 && b[3] == 0 && b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] == 0
	return mapped || multicast
}

// valid is NCCL's "configured and not link-local": not all zero, not
// fe80::/64.
func (e gidEntry) valid() bool {
	if !e.ok || e.addr.IsUnspecified() {
		return false
	}
	b := e.addr.As16()
	return !(b[0] == 0xfe && b[1] == 0x80 && b[2] == 0 && b[3] == 0 && b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] == 0)
}

func (e gidEntry) show() string {
	if !e.ok {
		return e.GID.GID
	}
	if e.v4() {
		b := e.addr.As16()
		return "::ffff:" + netip.AddrFrom4([4]byte(b[12:])).String()
	}
	return e.addr.String()
}

// ChooseGID chooses a RoCE port's GID index the way NCCL does when
// NCCL_IB_GID_INDEX is not set (ncclIbGetGidIndex and ncclUpdateGidIndex in
// NCCL's src/transport/net_ib/connect.cc): starting from index 0, walk the
// table upwards; the first entry of the wanted address family (IPv4, i.e.
// IPv4-mapped, unless NCCL_IB_ADDR_FAMILY=AF_INET6) replaces a current one
// of the other family; after that an entry of that family that is neither
// zero nor link-local replaces the current one when it is of the wanted
// RoCE version (NCCL_IB_ROCE_VERSION_NUM, 2) and the current one is of
// another version or not routable. So: the first RoCE v2 IPv4-mapped GID,
// else the first IPv4-mapped GID of any version. NCCL_IB_ADDR_RANGE is not
// modelled. gids are the populated entries (zero ones may be left out),
// read the number of entries read (0: the table was not read).
//
// When NCCL would end on a GID that is zero or link-local (no address of
// the family on the port), the choice is none (-1), and Why says so.
func ChooseGID(gids []GID, read int, pr GIDPrefs) GIDChoice {
	if read == 0 {
		return GIDChoice{Index: -1, Why: "GID table not read"}
	}
	want := pr.RoCEVersion
	if want == 0 {
		want = 2
	}
	fam := "IPv4"
	if pr.IPv6 {
		fam = "IPv6"
	}
	isFam := func(e gidEntry) bool { return e.v4() != pr.IPv6 }
	cur := gidEntry{GID: GID{Index: 0, GID: "0000:0000:0000:0000:0000:0000:0000:0000"}, addr: netip.IPv6Unspecified(), ok: true}
	var entries []gidEntry
	gids = slices.SortedFunc(slices.Values(gids), func(a, b GID) int { return a.Index - b.Index })
	for _, g := range gids {
		a, ok := g.Addr()
		e := gidEntry{GID: g, addr: a, ok: ok}
		if g.Index == 0 {
			cur = e
			continue
		}
		if g.Index > 0 {
			entries = append(entries, e)
		}
	}
	for _, c := range entries {
		if !c.ok {
			continue
		}
		if isFam(c) && !isFam(cur) {
			cur = c
			continue
		}
		if !isFam(c) || !c.valid() {
			continue
		}
		if v := c.RoCEVersion(); v == want && (cur.RoCEVersion() != v || !cur.valid()) {
			cur = c
		}
	}
	if !cur.valid() || !isFam(cur) {
		why := fmt.Sprintf("no %s GID that is neither zero nor link-local among %d entries read: NCCL would fall back to GID 0, as perftest does", fam, read)
		if !pr.IPv6 {
			if alt := ChooseGID(gids, read, GIDPrefs{IPv6: true, RoCEVersion: pr.RoCEVersion}); alt.Index >= 0 {
				why += fmt.Sprintf("; with NCCL_IB_ADDR_FAMILY=AF_INET6 NCCL would take GID %d (%s %s)", alt.Index, orUnknownType(alt.Type), alt.GID)
			}
		}
		return GIDChoice{Index: -1, Why: why}
	}
	ch := GIDChoice{Index: cur.Index, GID: cur.show(), Type: cur.Type}
	switch v := cur.RoCEVersion(); {
	case v == want:
		ch.Why = fmt.Sprintf("the first RoCE v%d %s GID, as NCCL chooses by default", want, fam)
	case v == 0:
		ch.Why = fmt.Sprintf("the first %s GID (its RoCE version could not be read; no RoCE v%d %s GID), as NCCL chooses by default", fam, want, fam)
	default:
		ch.Why = fmt.Sprintf("no RoCE v%d %s GID: NCCL falls back to the first %s GID, RoCE v%d", want, fam, fam, v)
		if v == 1 {
			ch.Why += " (RoCE v1 does not cross IP subnets)"
		}
	}
	return ch
}
