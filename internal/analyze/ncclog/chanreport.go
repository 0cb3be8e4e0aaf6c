package ncclog

import (
	"sort"
	"strings"
)

// report is the channel fragment: lines per transport and locality, and
// the first connections in detail. loc says where the two ranks of a
// connection are; name is a host's canonical name.
func (c *channelTracker) report(loc func(connKey) int, name func(int32) string) Channels {
	ch := Channels{
		TransportLines:       c.transportLines,
		GarbledLines:         c.garbled,
		Connections:          len(c.conns),
		ConnectionsUntracked: c.untracked,
		CollNetLines:         c.collnetLines,
		P2PNotEnabledLines:   c.p2pOff,
		Records:              []ChannelRecord{},
	}
	tc := make([]TransportCount, len(c.transports))
	for i, t := range c.transports {
		tc[i] = TransportCount{Transport: t.name, Class: className(t.class)}
		tc[i].Unknown += t.untracked[locUnknown]
		tc[i].Intra += t.untracked[locIntra]
		tc[i].Inter += t.untracked[locInter]
	}
	for _, k := range c.connOrder {
		cs := c.conns[k]
		l := loc(k)
		t := &tc[k.tr]
		switch l {
		case locIntra:
			t.Intra += cs.lines
		case locInter:
			t.Inter += cs.lines
		default:
			t.Unknown += cs.lines
		}
		if len(ch.Records) >= maxRecords {
			ch.RecordsOmitted++
			continue
		}
		tp := c.transports[k.tr]
		ch.Records = append(ch.Records, ChannelRecord{
			Channel: int(cs.channel), ConnIndex: int(cs.conn), From: int(k.from), To: int(k.to),
			Dir: dirName[k.dir], Transport: tp.name, Class: className(tp.class), GDRDMA: tp.gdr,
			Shared: tp.shared, NetDev: tp.netDev, Host: name(k.printer), Locality: locName[l],
			Lines: cs.lines, Line: cs.first,
		})
	}
	for i := range tc {
		tc[i].Lines = tc[i].Intra + tc[i].Inter + tc[i].Unknown
		ch.IntraNode += tc[i].Intra
		ch.InterNode += tc[i].Inter
		ch.UnknownLocality += tc[i].Unknown
	}
	ch.ByTransport = tc
	sort.SliceStable(ch.ByTransport, func(i, j int) bool { return ch.ByTransport[i].Lines > ch.ByTransport[j].Lines })
	return ch
}

// summarize counts the judged lines of every transport class by locality,
// with sample and offending lines.
func (c *channelTracker) summarize(s *summary, loc func(connKey) int) {
	for _, k := range c.connOrder {
		cs := c.conns[k]
		l := loc(k)
		text := ""
		if cs.text >= 0 {
			text = c.texts[cs.text]
		}
		s.count(c.transports[k.tr], l, cs.lines, offender{line: cs.first, host: k.printer, text: text, loc: l})
		if l == locInter {
			s.multiNode = true
		}
	}
	for _, t := range c.transports {
		for l, n := range t.untracked {
			if n > 0 {
				s.count(t, l, n, offender{line: -1, loc: l})
			}
		}
	}
	// offenders of untracked lines carry their text
	for _, o := range c.offNet {
		s.offNoGDR = keepOffender(s.offNoGDR, o)
	}
	for _, o := range c.offLoop {
		s.offLoop = keepOffender(s.offLoop, o)
	}
	for _, o := range c.offSHM {
		s.offSHM = keepOffender(s.offSHM, o)
	}
}

// keepOffender keeps the first maxOffenders offenders that have a line.
func keepOffender(list []offender, o offender) []offender {
	if len(list) >= maxOffenders || o.line < 0 {
		return list
	}
	return append(list, o)
}

// count adds n lines of transport t at locality loc; o is one of them.
func (s *summary) count(t *transport, loc int, n int64, o offender) {
	switch t.class {
	case clNET, clCollNet:
		s.countNet(t, loc, n, o)
	case clP2P:
		if loc == locInter {
			s.p2pInter += n
			break
		}
		s.p2pIntra += n
		s.intraLines += n
		kind := t.name
		if parts := strings.Split(t.name, "/"); len(parts) > 1 {
			kind = parts[1]
		}
		s.p2pKinds[kind] += n
		if len(s.sampleP2P) < 3 && o.line >= 0 {
			s.sampleP2P = append(s.sampleP2P, o)
		}
	case clSHM:
		s.shmIntra += n
		s.intraLines += n
		s.offSHM = keepOffender(s.offSHM, o)
	}
}

func (s *summary) countNet(t *transport, loc int, n int64, o offender) {
	s.netLines += n
	if t.class == clNET {
		s.netNames[t.netName] += n
	}
	if t.gdr {
		s.netGDR += n
		if len(s.sampleGDR) < 3 && o.line >= 0 {
			s.sampleGDR = append(s.sampleGDR, o)
		}
	} else {
		s.netNoGDR += n
		s.offNoGDR = keepOffender(s.offNoGDR, o)
	}
	if t.netName == "Socket" {
		s.socketLines += n
		if loc != locIntra {
			s.socketInter += n
			s.offSock = keepOffender(s.offSock, o)
		}
	}
	switch loc {
	case locIntra:
		s.netIntra += n
		s.loopIntra += n
		s.intraLines += n
		s.offLoop = keepOffender(s.offLoop, o)
	case locInter:
		s.netInter += n
	default:
		s.netUnknown += n
	}
}
