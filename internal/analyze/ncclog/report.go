package ncclog

import (
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// summary is what the verdicts are decided from, computed once the whole
// log has been read (so that ranks placed late still count).
type summary struct {
	alias []int32 // host id -> canonical host id

	hostsWithRanks []int32 // canonical
	silentHosts    []string
	maxNRanks      int
	maxNNodes      int
	ranksKnown     int
	multiNode      bool
	singleNode     bool

	// channel lines judged (garbled ones are not)
	netLines, netGDR, netNoGDR         int64
	netIntra, netInter, netUnknown     int64
	socketLines, socketInter           int64
	p2pIntra, shmIntra, loopIntra      int64
	p2pInter                           int64
	intraLines                         int64
	offNoGDR, offLoop, offSHM, offSock []offender
	sampleGDR                          []offender
	sampleP2P                          []offender
	p2pKinds                           map[string]int64
	netNames                           map[string]int64
	mnnvl                              bool
	nvlink                             bool
}

func (a *analyzer) report() (*Report, []result.Result) {
	s := a.summarize()
	r := &Report{
		File:         a.name,
		Lines:        a.stats.lines,
		Bytes:        a.stats.bytes,
		NCCLLines:    a.stats.nccl,
		SplicedLines: a.stats.spliced,
		LongLines:    a.stats.long,
		ErrorCount:   a.events.errCount,
		WarningCount: a.events.warnCount,
	}
	name := func(id int32) string {
		if id < 0 {
			return ""
		}
		return a.hosts.all[s.alias[id]].name
	}
	procs := a.sortedProcs()

	// versions
	r.Versions = aggregate(procs, a, func(p *procState) (string, int64, string) { return p.version, p.versionLine, p.versionText })
	for _, bv := range a.hosts.bareVersion {
		found := false
		for i := range r.Versions {
			if r.Versions[i].Version == bv.Version {
				found = true
				if bv.Line < r.Versions[i].Line {
					r.Versions[i].Line, r.Versions[i].Text = bv.Line, bv.Text
				}
			}
		}
		if !found {
			r.Versions = append(r.Versions, bv)
		}
	}
	sort.SliceStable(r.Versions, func(i, j int) bool { return r.Versions[i].Line < r.Versions[j].Line })
	r.CUDADriverVersions = aggregate(procs, a, func(p *procState) (string, int64, string) { return p.cuda, p.cudaLine, p.cudaText })

	// hosts
	type hostAgg struct {
		h     Host
		ranks map[int32]struct{}
	}
	aggs := map[int32]*hostAgg{}
	var order []int32
	for id, hs := range a.hosts.all {
		c := s.alias[id]
		g := aggs[c]
		if g == nil {
			ch := a.hosts.all[c]
			g = &hostAgg{h: Host{Name: ch.name}, ranks: map[int32]struct{}{}}
			aggs[c] = g
			order = append(order, c)
		}
		g.h.Processes += hs.procs
		g.h.Lines += hs.lines
		for rk := range hs.ranks {
			g.ranks[rk] = struct{}{}
		}
		for _, x := range hs.gpus {
			g.h.GPUs = addCapped(g.h.GPUs, x, maxSmallSet)
		}
		if g.h.Bootstrap == "" {
			g.h.Bootstrap = hs.boot
		}
		if len(g.h.IBDevices) == 0 {
			g.h.IBDevices = hs.ib
			g.h.IBOOB = hs.ibOOB
		}
		g.h.NoIBDevice = g.h.NoIBDevice || hs.noIB
		for _, x := range hs.socket {
			g.h.SocketIfaces = addCapped(g.h.SocketIfaces, x, maxSmallSet)
		}
		for _, x := range hs.dmabuf {
			g.h.DMABufGPUs = addCapped(g.h.DMABufGPUs, x, maxSmallSet)
		}
	}
	type hostPID struct {
		host string
		pid  int64
	}
	procVersion := map[hostPID]string{}
	for _, p := range procs {
		g := aggs[s.alias[p.host]]
		if p.network != "" {
			g.h.Networks = addCapped(g.h.Networks, p.network, maxSmallSet)
		}
		if len(g.h.PIDs) < maxSmallSet {
			g.h.PIDs = append(g.h.PIDs, p.pid)
		}
		if p.version != "" {
			procVersion[hostPID{a.hosts.all[p.host].name, p.pid}] = p.version
		}
	}
	for _, c := range order {
		g := aggs[c]
		if len(g.ranks) > 0 {
			g.h.Ranks = make([]int, 0, len(g.ranks))
			for rk := range g.ranks {
				g.h.Ranks = append(g.h.Ranks, int(rk))
			}
			sort.Ints(g.h.Ranks)
		}
		sort.Ints(g.h.DMABufGPUs)
		g.h.Silent = g.h.Lines == 0 && len(g.ranks) > 0
		r.Hosts = append(r.Hosts, g.h)
	}

	// ranks
	hostName := map[string]string{}
	for id, hs := range a.hosts.all {
		hostName[hs.name] = name(int32(id))
	}
	r.Ranks = append([]Rank{}, a.comms.recs...)
	for i := range r.Ranks {
		rk := &r.Ranks[i]
		rk.Version = procVersion[hostPID{rk.Host, rk.PID}]
		if n, ok := hostName[rk.Host]; ok {
			rk.Host = n
		}
	}
	srcOrder := map[string]int{"init": 0, "nccl-tests": 1, "channel": 2}
	sort.SliceStable(r.Ranks, func(i, j int) bool {
		x, y := r.Ranks[i], r.Ranks[j]
		if x.CommID != y.CommID {
			return x.CommID < y.CommID
		}
		if x.Rank != y.Rank {
			return x.Rank < y.Rank
		}
		return srcOrder[x.Source] < srcOrder[y.Source]
	})
	r.RanksOmitted = a.comms.omitted

	// communicators
	for _, c := range a.comms.all {
		if c.id == "(unknown)" && len(c.ranks) == 0 {
			continue
		}
		hs := map[int32]bool{}
		for _, h := range c.ranks {
			if h >= 0 {
				hs[s.alias[h]] = true
			}
		}
		r.Comms = append(r.Comms, Comm{ID: c.id, NRanks: c.nranks, NNodes: c.nnodes, MNNVL: c.mnnvl,
			RanksSeen: len(c.ranks), Hosts: len(hs), InitComplete: c.complete, Line: c.line})
	}

	// network
	sel := map[string]*Selected{}
	var selOrder []string
	for _, p := range procs {
		if p.network == "" {
			continue
		}
		if x := sel[p.network]; x != nil {
			x.Processes++
			if p.networkLine < x.Line {
				x.Line, x.Text = p.networkLine, p.networkText
			}
			continue
		}
		sel[p.network] = &Selected{Name: p.network, Processes: 1, Line: p.networkLine, Text: p.networkText}
		selOrder = append(selOrder, p.network)
	}
	for _, n := range selOrder {
		r.Network.Selected = append(r.Network.Selected, *sel[n])
	}
	sort.SliceStable(r.Network.Selected, func(i, j int) bool { return r.Network.Selected[i].Line < r.Network.Selected[j].Line })
	for _, t := range a.chans.transports {
		if t.class == clNET && t.netName != "" {
			r.Network.NetTransports = addCapped(r.Network.NetTransports, "NET/"+t.netName, maxSmallSet)
		}
		if t.class == clCollNet && t.netName != "" {
			r.Network.NetTransports = addCapped(r.Network.NetTransports, "COLLNET/"+t.netName, maxSmallSet)
		}
	}
	r.Network.PluginMessages = a.net.pluginMsgs
	r.Network.PluginVersions = aggregate(procs, a, func(p *procState) (string, int64, string) { return p.ofiVersion, p.ofiLine, p.ofiText })
	r.Network.OFIProvider = a.net.ofiProvider
	r.Network.OFINICs = a.net.ofiNICs
	r.Network.Libfabric = a.net.libfabric
	r.Network.NonDevicePlugin = a.net.nonDevice

	// GDR
	for _, e := range a.net.hcaGDR {
		if e.Host != "" {
			e.Host = hostName[e.Host]
		}
		r.GDR.HCAs = append(r.GDR.HCAs, e)
	}
	for _, e := range a.net.gpuGDR {
		if e.Host != "" {
			e.Host = hostName[e.Host]
		}
		r.GDR.GPUs = append(r.GDR.GPUs, e)
	}
	r.GDR.DMABuf = a.net.dmabuf
	for _, k := range a.net.envOrder {
		v := a.net.env[k]
		r.Env = append(r.Env, EnvVar{Name: k.name, Value: k.value, Processes: v.procs, Line: v.line})
		if k.name == "NCCL_NET_GDR_LEVEL" && r.GDR.Level == "" {
			r.GDR.Level = k.value
		}
	}

	// channels
	ch := &r.Channels
	ch.TransportLines = a.chans.transportLines
	ch.GarbledLines = a.chans.garbled
	ch.Connections = len(a.chans.conns)
	ch.ConnectionsUntracked = a.chans.untracked
	ch.RingLines = a.graph.ringLines
	ch.MinRingChannels = a.graph.minRingTotal
	ch.MaxRingChannels = a.graph.maxRingTotal
	ch.ConnectedRings, ch.ConnectedTrees, ch.ConnectedNVLS = a.graph.connRings, a.graph.connTrees, a.graph.connNVLS
	ch.NVLSSupported = a.graph.nvlsSup
	ch.CollNetLines = a.chans.collnetLines
	tc := make([]TransportCount, len(a.chans.transports))
	for i, t := range a.chans.transports {
		tc[i] = TransportCount{Transport: t.name, Class: className(t.class)}
		tc[i].Unknown += t.untracked[locUnknown]
		tc[i].Intra += t.untracked[locIntra]
		tc[i].Inter += t.untracked[locInter]
	}
	ch.Records = []ChannelRecord{}
	for _, k := range a.chans.connOrder {
		c := a.chans.conns[k]
		loc := a.locality(k, s.alias)
		t := &tc[k.tr]
		switch loc {
		case locIntra:
			t.Intra += c.lines
		case locInter:
			t.Inter += c.lines
		default:
			t.Unknown += c.lines
		}
		if len(ch.Records) < maxRecords {
			tp := a.chans.transports[k.tr]
			ch.Records = append(ch.Records, ChannelRecord{
				Channel: int(c.channel), ConnIndex: int(c.conn), From: int(k.from), To: int(k.to),
				Dir: dirName[k.dir], Transport: tp.name, Class: className(tp.class), GDRDMA: tp.gdr,
				Shared: tp.shared, NetDev: tp.netDev, Host: name(k.printer), Locality: locName[loc],
				Lines: c.lines, Line: c.first,
			})
		} else {
			ch.RecordsOmitted++
		}
	}
	for i := range tc {
		tc[i].Lines = tc[i].Intra + tc[i].Inter + tc[i].Unknown
		ch.IntraNode += tc[i].Intra
		ch.InterNode += tc[i].Inter
		ch.UnknownLocality += tc[i].Unknown
	}
	ch.ByTransport = tc
	sort.SliceStable(ch.ByTransport, func(i, j int) bool { return ch.ByTransport[i].Lines > ch.ByTransport[j].Lines })
	for _, k := range a.graph.countOrder {
		v := a.graph.counts[k]
		ch.Counts = append(ch.Counts, ChannelCount{Coll: k.coll, CollNet: k.collnet, NVLS: k.nvls, P2P: k.p2p,
			P2PPerPeer: k.perPeer, Processes: v.procs, Line: v.line, Text: v.text})
	}
	ch.Patterns = a.graph.patterns

	// topology
	for _, t := range a.trees.all {
		t.analyze()
		hs := a.hosts.all[t.host]
		st := SystemTree{Host: name(t.host), MaxBW: t.maxBW, TotalBW: t.totalBW, Line: t.line,
			Links: t.links, LinksOmitted: t.omitted, Findings: t.findings, FindingsOmitted: t.findOmit,
			GPUNetPaths: hs.paths, Complete: t.complete}
		if st.Links == nil {
			st.Links = []TreeLink{}
		}
		for n := range t.nodes {
			switch {
			case strings.HasPrefix(n, "GPU/"):
				st.GPUs++
			case strings.HasPrefix(n, "NIC/"):
				st.NICs++
			}
		}
		for _, l := range t.links {
			if l.Type == "NVL" {
				st.NVLinks++
			}
		}
		r.Topology = append(r.Topology, st)
	}

	// errors and warnings
	for _, k := range a.events.order {
		e := a.events.kinds[k]
		ev := Event{Line: e.line, Host: name(e.host), Message: e.message, Count: e.count}
		if e.level == 'e' {
			ev.Level = "error"
			if len(r.Errors) < maxEventsOut {
				r.Errors = append(r.Errors, ev)
			}
		} else {
			ev.Level = "warning"
			if len(r.Warnings) < maxEventsOut {
				r.Warnings = append(r.Warnings, ev)
			}
		}
	}

	return r, a.verdicts(r, s)
}

var dirName = [...]string{"", "send", "receive"}

// summarize decides where every rank is and what every channel is.
func (a *analyzer) summarize() *summary {
	s := &summary{p2pKinds: map[string]int64{}, netNames: map[string]int64{}}
	s.alias = make([]int32, len(a.hosts.all))
	for i, h := range a.hosts.all {
		s.alias[i] = int32(i)
		if h.trusted {
			continue
		}
		for j := 1; j < len(h.name); j++ {
			if id, ok := a.hosts.idx[h.name[j:]]; ok && a.hosts.all[id].trusted {
				s.alias[i] = id
				break
			}
		}
	}
	withRanks := map[int32]bool{}
	lines := map[int32]int64{}
	for i, h := range a.hosts.all {
		c := s.alias[i]
		lines[c] += h.lines
		if h.hasRanks && len(h.ranks) > 0 {
			withRanks[c] = true
		}
	}
	for i := range a.hosts.all {
		c := int32(i)
		if s.alias[i] != c || !withRanks[c] {
			continue
		}
		s.hostsWithRanks = append(s.hostsWithRanks, c)
		if lines[c] == 0 {
			s.silentHosts = append(s.silentHosts, a.hosts.all[c].name)
		}
	}
	known := map[int32]bool{}
	for rk, h := range a.comms.global {
		if h != ambiguous {
			known[rk] = true
		}
	}
	for rk := range a.comms.tests {
		known[rk] = true
	}
	s.ranksKnown = len(known)
	for _, c := range a.comms.all {
		s.maxNRanks = max(s.maxNRanks, c.nranks)
		s.maxNNodes = max(s.maxNNodes, c.nnodes)
		s.mnnvl = s.mnnvl || c.mnnvl
	}
	for _, rr := range a.comms.recs {
		s.maxNRanks = max(s.maxNRanks, rr.NRanks)
	}
	// The nccl-tests header lists every rank of the test's communicator.
	s.maxNRanks = max(s.maxNRanks, len(a.comms.tests))

	note := func(list []offender, o offender) []offender {
		if len(list) >= maxOffenders || o.line < 0 {
			return list
		}
		return append(list, o)
	}
	count := func(t *transport, loc int, n int64, o offender) {
		switch t.class {
		case clNET, clCollNet:
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
				s.offNoGDR = note(s.offNoGDR, o)
			}
			if t.netName == "Socket" {
				s.socketLines += n
				if loc != locIntra {
					s.socketInter += n
					s.offSock = note(s.offSock, o)
				}
			}
			switch loc {
			case locIntra:
				s.netIntra += n
				s.loopIntra += n
				s.intraLines += n
				s.offLoop = note(s.offLoop, o)
			case locInter:
				s.netInter += n
			default:
				s.netUnknown += n
			}
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
			s.offSHM = note(s.offSHM, o)
		}
	}
	for _, k := range a.chans.connOrder {
		c := a.chans.conns[k]
		loc := a.locality(k, s.alias)
		text := ""
		if c.text >= 0 {
			text = a.chans.texts[c.text]
		}
		count(a.chans.transports[k.tr], loc, c.lines, offender{line: c.first, host: k.printer, text: text, loc: loc})
		if loc == locInter {
			s.multiNode = true
		}
	}
	for _, t := range a.chans.transports {
		for loc, n := range t.untracked {
			if n > 0 {
				count(t, loc, n, offender{line: -1, loc: loc})
			}
		}
	}
	// offenders of untracked lines carry their text
	for _, o := range a.chans.offNet {
		s.offNoGDR = note(s.offNoGDR, o)
	}
	for _, o := range a.chans.offLoop {
		s.offLoop = note(s.offLoop, o)
	}
	for _, o := range a.chans.offSHM {
		s.offSHM = note(s.offSHM, o)
	}

	if len(s.hostsWithRanks) >= 2 || s.maxNNodes >= 2 {
		s.multiNode = true
	}
	if !s.multiNode {
		s.singleNode = s.maxNNodes == 1 || s.maxNRanks == 1 ||
			len(s.hostsWithRanks) == 1 && s.maxNRanks > 0 && s.ranksKnown >= s.maxNRanks
	}
	for _, t := range a.trees.all {
		for _, l := range t.links {
			if l.Type == "NVL" {
				s.nvlink = true
				break
			}
		}
	}
	for _, p := range a.graph.patterns {
		if p.TypeIntra == "NVL" || p.TypeIntra == "NVB" {
			s.nvlink = true
		}
	}
	return s
}
