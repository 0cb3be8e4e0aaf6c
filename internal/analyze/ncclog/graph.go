package ncclog

import (
	"bytes"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Caps of the graph tracker.
const (
	maxPatterns = 256
	maxCounts   = 64
)

// graphTracker owns what NCCL said about its graphs: ring orders, the
// "Connected all rings/trees/NVLS" lines, channel counts and search
// patterns.
type graphTracker struct {
	ringLines    int64
	minRingTotal int
	maxRingTotal int
	maxRingID    int
	connRings    int64
	connTrees    int64
	connNVLS     int64
	nvlsSup      bool
	counts       map[countKey]*countVal
	countOrder   []countKey
	patterns     []Pattern
	patternSeen  map[Pattern]bool
}

func newGraphTracker() graphTracker {
	return graphTracker{counts: map[countKey]*countVal{}, patternSeen: map[Pattern]bool{}}
}

type countKey struct{ coll, collnet, nvls, p2p, perPeer int }

type countVal struct {
	procs int
	line  int64
	text  string
}

// countsLine reads "24 coll channels, 24 collnet channels, 0 nvls channels,
// 32 p2p channels, 32 p2p channels per peer" (older releases print fewer).
func (g *graphTracker) countsLine(m, raw []byte, spliced bool, no int64) {
	var k countKey
	k.collnet, k.nvls, k.p2p, k.perPeer = -1, -1, -1, -1
	got := 0
	parts := bytes.Split(m, []byte(","))
	if spliced && len(parts) > 0 {
		parts = parts[:len(parts)-1]
	}
	for _, part := range parts {
		f := bytes.Fields(part)
		if len(f) < 3 {
			continue
		}
		n := atoiOr(f[0], -1)
		if n < 0 {
			continue
		}
		switch {
		case string(f[1]) == "coll":
			k.coll = n
			got++
		case string(f[1]) == "collnet":
			k.collnet = n
		case string(f[1]) == "nvls":
			k.nvls = n
		case string(f[1]) == "p2p" && len(f) >= 5 && string(f[3]) == "per":
			k.perPeer = n
		case string(f[1]) == "p2p":
			k.p2p = n
		}
	}
	if got == 0 {
		return
	}
	if v := g.counts[k]; v != nil {
		v.procs++
		return
	}
	if len(g.counts) >= maxCounts {
		return
	}
	g.counts[k] = &countVal{procs: 1, line: no, text: clip(raw)}
	g.countOrder = append(g.countOrder, k)
}

var patternNames = map[int]string{
	1: "balanced tree", 2: "split tree", 3: "tree", 4: "ring", 5: "nvls", 6: "collnet direct",
}

// patternLine reads "Pattern 4, crossNic 0, nChannels 12, bw 20.000000/20.000000,
// type NVL/PIX, sameChannels 1".
func (g *graphTracker) patternLine(host string, m []byte, no int64) {
	if len(g.patterns) >= maxPatterns {
		return
	}
	var pt Pattern
	ok := false
	for _, part := range bytes.Split(m, []byte(",")) {
		f := bytes.Fields(part)
		if len(f) != 2 {
			continue
		}
		switch string(f[0]) {
		case "Pattern":
			pt.Pattern = atoiOr(f[1], -1)
			ok = pt.Pattern >= 0
		case "crossNic":
			pt.CrossNIC = atoiOr(f[1], 0)
		case "nChannels":
			pt.NChannels = atoiOr(f[1], 0)
		case "bw":
			if s := bytes.IndexByte(f[1], '/'); s >= 0 {
				pt.BWIntra, _ = textio.ParseFloat(string(f[1][:s]))
				pt.BWInter, _ = textio.ParseFloat(string(f[1][s+1:]))
			}
		case "type":
			if s := bytes.IndexByte(f[1], '/'); s >= 0 {
				pt.TypeIntra, pt.TypeInter = string(f[1][:s]), string(f[1][s+1:])
			}
		}
	}
	if !ok {
		return
	}
	pt.Name = patternNames[pt.Pattern]
	pt.Host = host
	if g.patternSeen[pt] {
		return
	}
	g.patternSeen[pt] = true
	pt.Line = no
	g.patterns = append(g.patterns, pt)
}

// fill puts the ring, count and pattern lines into ch.
func (g *graphTracker) fill(ch *Channels) {
	ch.RingLines = g.ringLines
	ch.MinRingChannels = g.minRingTotal
	ch.MaxRingChannels = g.maxRingTotal
	ch.ConnectedRings, ch.ConnectedTrees, ch.ConnectedNVLS = g.connRings, g.connTrees, g.connNVLS
	ch.NVLSSupported = g.nvlsSup
	for _, k := range g.countOrder {
		v := g.counts[k]
		ch.Counts = append(ch.Counts, ChannelCount{Coll: k.coll, CollNet: k.collnet, NVLS: k.nvls, P2P: k.p2p,
			P2PPerPeer: k.perPeer, Processes: v.procs, Line: v.line, Text: v.text})
	}
	ch.Patterns = g.patterns
}

// nvlink says whether a graph search found NVLink between GPUs.
func (g *graphTracker) nvlink() bool {
	for _, p := range g.patterns {
		if p.TypeIntra == "NVL" || p.TypeIntra == "NVB" {
			return true
		}
	}
	return false
}

// connectedLine reads what follows "Connected ": "all rings", "all trees",
// "NVLS ...".
func (g *graphTracker) connectedLine(r []byte) {
	switch {
	case bytes.HasPrefix(r, []byte("all rings")):
		g.connRings++
	case bytes.HasPrefix(r, []byte("all trees")):
		g.connTrees++
	case bytes.HasPrefix(r, []byte("NVLS")):
		g.connNVLS++
	}
}

// ringLine counts a ring order line "Channel 00/24 :    0   1" of channel
// ch; total is the channel total after the slash (-1 when none).
func (g *graphTracker) ringLine(ch, total int) {
	g.ringLines++
	g.maxRingID = max(g.maxRingID, ch)
	if total > g.maxRingTotal {
		g.maxRingTotal = total
	}
	if total > 0 && (g.minRingTotal == 0 || total < g.minRingTotal) {
		g.minRingTotal = total
	}
}
