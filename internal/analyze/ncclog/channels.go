package ncclog

import (
	"bytes"
)

// Caps of the channel tracker.
const (
	maxConns      = 1 << 17
	maxRecords    = 1000 // connections in detail in the report
	maxTransports = 255
	maxTextBytes  = 16 << 20
	maxOffenders  = 64
)

// channelTracker owns the channel transport lines: the transports, the
// distinct connections (up to maxConns; lines past the cap are judged at
// once and only counted), and the offenders of the untracked lines.
type channelTracker struct {
	transports     []*transport
	trIdx          map[string]int16
	conns          map[connKey]*connState
	connOrder      []connKey
	untracked      int64
	texts          []string // the first line of each connection, up to maxTextBytes
	textBytes      int
	garbled        int64
	transportLines int64
	collnetLines   int64
	offNet         []offender // NET without GDRDMA
	offLoop        []offender // intra-node over NET
	offSHM         []offender // SHM
	p2pOff         int64      // "Could not enable P2P between dev X and dev Y"
	offP2POff      []offender
}

func newChannelTracker() channelTracker {
	return channelTracker{trIdx: map[string]int16{}, conns: map[connKey]*connState{}}
}

var sVia = []byte(" via ")

// channelLine reads what follows "Channel ", "Ring " or "CollNet ":
//
//	00/0 : 0[0] -> 1[1] via P2P/CUMEM/read        (sender prints P2P/SHM)
//	01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA
//	00 : 7 -> 8 [send] via NET/IB/0               (NCCL 2.4 "Ring" lines)
//	05/0 : 5 [receive] via COLLNET/SHARP/5/GDRDMA (CollNet)
//	00/24 :    0   1                              (ring order)
//	00 : 1 -> 0 -> 1                              (ring neighbours)
func (a *analyzer) channelLine(h *header, host int32, p *procState, r, raw []byte, spliced bool, no int64, collnet bool) {
	ch, n := readUint(r)
	if n == 0 {
		return
	}
	r = r[n:]
	slash := -1
	if len(r) > 0 && r[0] == '/' {
		v, n2 := readUint(r[1:])
		if n2 == 0 {
			return
		}
		slash, r = v, r[1+n2:]
	}
	r = bytes.TrimLeft(r, " ")
	if len(r) == 0 || r[0] != ':' {
		return
	}
	r = bytes.TrimLeft(r[1:], " ")
	via := bytes.Index(r, sVia)
	if via < 0 {
		if collnet || bytes.Contains(r, []byte("->")) {
			return
		}
		if len(r) > 0 && isDigit(r[0]) {
			a.graph.ringLine(ch, slash)
		}
		return
	}
	a.chans.transportLines++
	if collnet {
		a.chans.collnetLines++
	}
	if spliced {
		a.chans.garbled++
		return
	}
	from, to, dir, ok := parseEnds(r[:via], collnet)
	if !ok {
		a.chans.garbled++
		return
	}
	tr := a.chans.transport(bytes.TrimSpace(r[via+len(sVia):]))
	printer := from
	if dir == 2 && to >= 0 {
		printer = to
	}
	comm := int32(-1)
	if p != nil {
		comm = p.commFor(h.tid)
	}
	k := connKey{comm: comm, printer: host, from: from, to: to, tr: tr, dir: dir}
	if c := a.chans.conns[k]; c != nil {
		c.lines++ // seen before: the printer is already placed
		return
	}
	if host >= 0 {
		_, had := a.comms.global[printer]
		a.placeRank(comm, printer, host)
		if !had {
			a.comms.addRankRec(rankKey{comm: -4, rank: printer}, Rank{Rank: int(printer), Host: a.hosts.all[host].name,
				PID: h.pid, Source: "channel", Line: no})
		}
	}
	if !a.chans.track(k, ch, slash, raw, no) {
		// Too many distinct connections: judge this line now with what
		// is known so far and count it.
		a.chans.untrackedLine(k, a.locality(k, nil), no, raw)
	}
}

// track keeps a new connection of channel ch (connection index slash, or
// -1), first printed on line no; it reports false past maxConns.
func (c *channelTracker) track(k connKey, ch, slash int, raw []byte, no int64) bool {
	if len(c.conns) >= maxConns {
		return false
	}
	conn := int8(-1)
	if slash >= 0 && slash < 128 {
		conn = int8(slash)
	}
	cs := &connState{lines: 1, first: no, channel: int16(min(ch, 1<<14)), conn: conn, text: -1}
	if c.textBytes < maxTextBytes {
		t := clip(raw)
		cs.text = int32(len(c.texts))
		c.texts = append(c.texts, t)
		c.textBytes += len(t)
	}
	c.conns[k] = cs
	c.connOrder = append(c.connOrder, k)
	return true
}

// untrackedLine counts a line of a connection past the cap at locality
// loc, and keeps it as an offender (NET without GDRDMA, intra-node over
// NET, SHM).
func (c *channelTracker) untrackedLine(k connKey, loc int, no int64, raw []byte) {
	c.untracked++
	t := c.transports[k.tr]
	t.untracked[loc]++
	o := func(list []offender) []offender {
		if len(list) >= maxOffenders {
			return list
		}
		return append(list, offender{line: no, host: k.printer, text: clip(raw), loc: loc})
	}
	switch {
	case (t.class == clNET || t.class == clCollNet) && loc == locIntra:
		c.offLoop = o(c.offLoop)
		if !t.gdr {
			c.offNet = o(c.offNet)
		}
	case (t.class == clNET || t.class == clCollNet) && !t.gdr:
		c.offNet = o(c.offNet)
	case t.class == clSHM:
		c.offSHM = o(c.offSHM)
	}
}

func readUint(b []byte) (int, int) {
	n, i := 0, 0
	for i < len(b) && i < 9 && isDigit(b[i]) {
		n = n*10 + int(b[i]-'0')
		i++
	}
	return n, i
}

// parseEnds reads "A[x] -> B[y] [send]" (or "A [receive]" for CollNet).
func parseEnds(b []byte, collnet bool) (from, to int32, dir int8, ok bool) {
	skip := func() {
		for len(b) > 0 && b[0] == ' ' {
			b = b[1:]
		}
	}
	dev := func() {
		if len(b) > 0 && b[0] == '[' {
			if k := bytes.IndexByte(b, ']'); k > 0 && k < 24 {
				w := b[1:k]
				if !bytes.Equal(w, []byte("send")) && !bytes.Equal(w, []byte("receive")) {
					b = b[k+1:]
				}
			}
		}
	}
	skip()
	v, n := readUint(b)
	if n == 0 {
		return 0, 0, 0, false
	}
	from, to = int32(v), -1
	b = b[n:]
	dev()
	skip()
	if !collnet {
		if !bytes.HasPrefix(b, []byte("->")) {
			return 0, 0, 0, false
		}
		b = b[2:]
		skip()
		v, n = readUint(b)
		if n == 0 {
			return 0, 0, 0, false
		}
		to = int32(v)
		b = b[n:]
		dev()
		skip()
	}
	switch {
	case bytes.HasPrefix(b, []byte("[send]")):
		dir = 1
	case bytes.HasPrefix(b, []byte("[receive]")):
		dir = 2
	case len(b) == 0:
	default:
		return 0, 0, 0, false
	}
	return from, to, dir, true
}

// transport interns a transport string ("P2P/CUMEM/read", "NET/IB/0/GDRDMA").
func (c *channelTracker) transport(t []byte) int16 {
	if i, ok := c.trIdx[string(t)]; ok {
		return i
	}
	if len(c.transports) >= maxTransports {
		// one shared bucket for the rest
		if i, ok := c.trIdx["(other)"]; ok {
			return i
		}
		i := int16(len(c.transports))
		c.transports = append(c.transports, &transport{name: "(other)", class: clOther, netDev: -1})
		c.trIdx["(other)"] = i
		return i
	}
	tp := classify(string(t))
	i := int16(len(c.transports))
	c.transports = append(c.transports, tp)
	c.trIdx[tp.name] = i
	return i
}

// classify reads a transport string.
func classify(s string) *transport {
	t := &transport{name: s, class: clOther, netDev: -1}
	parts := bytes.Split([]byte(s), []byte("/"))
	switch string(parts[0]) {
	case "P2P":
		t.class = clP2P
	case "SHM", "direct shared memory":
		// NCCL up to 2.7 named the SHM transport "direct shared memory"
		// ("Channel 00 : 0[18000] -> 1[3b000] via direct shared memory").
		t.class = clSHM
	case "NVLS":
		t.class = clNVLS
	case "NET", "COLLNET":
		t.class = clNET
		if string(parts[0]) == "COLLNET" {
			t.class = clCollNet
		}
		if len(parts) > 1 {
			t.netName = string(parts[1])
		}
		if len(parts) > 2 {
			d := parts[2]
			if k := bytes.IndexByte(d, '('); k >= 0 { // PXN: "0(5)"
				d = d[:k]
			}
			t.netDev = atoiOr(d, -1)
		}
		for _, f := range parts[min(3, len(parts)):] {
			switch string(f) {
			case "GDRDMA":
				t.gdr = true
			case "Shared":
				t.shared = true
			}
		}
	}
	return t
}

// locality says whether a connection joins ranks of one host or two. A
// shared-memory connection joins ranks of one host by definition, wherever
// its peer was placed.
func (a *analyzer) locality(k connKey, alias []int32) int {
	if k.tr >= 0 && int(k.tr) < len(a.chans.transports) && a.chans.transports[k.tr].class == clSHM {
		return locIntra
	}
	if k.printer < 0 || k.to < 0 {
		return locUnknown
	}
	other := k.to
	if k.dir == 2 {
		other = k.from
	}
	oh := a.comms.hostOf(k.comm, other, alias)
	if oh < 0 {
		return locUnknown
	}
	ph := k.printer
	if alias != nil {
		ph = alias[ph]
	}
	if oh == ph {
		return locIntra
	}
	return locInter
}

type connKey struct {
	comm    int32
	printer int32
	from    int32
	to      int32
	tr      int16
	dir     int8 // 0 none, 1 send, 2 receive
}

type connState struct {
	lines   int64
	first   int64
	channel int16
	conn    int8
	text    int32 // index in texts, -1 none
}

type transport struct {
	name    string
	class   byte
	netName string
	netDev  int
	gdr     bool
	shared  bool
	// per-locality line counts for lines not tracked as connections
	untracked [3]int64
}

type offender struct {
	line int64
	host int32
	text string
	loc  int
}
