package ncclog

import (
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
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

// report assembles the fragments of the trackers, then the verdicts.
func (a *analyzer) report() (*Report, []result.Result) {
	s := a.summarize()
	r := &Report{
		File:         a.name,
		Lines:        a.stats.lines,
		Bytes:        a.stats.bytes,
		NCCLLines:    a.stats.nccl,
		SplicedLines: a.stats.spliced,
		LongLines:    a.stats.long,
		Paste:        textio.MergeNotes(a.pastes),
		ErrorCount:   a.events.errCount,
		WarningCount: a.events.warnCount,
	}
	name := func(id int32) string { return a.hosts.name(s.alias, id) }
	procs := a.hosts.sortedProcs()
	canonical := a.hosts.canonicalNames(s.alias)

	r.Versions, r.CUDADriverVersions = a.hosts.versions(procs)
	var procVersion map[hostPID]string
	r.Hosts, procVersion = a.hosts.report(s.alias, procs)
	r.Ranks, r.RanksOmitted = a.comms.reportRanks(canonical, procVersion)
	r.Comms = a.comms.report(s.alias)
	r.Network = a.net.network(procs, a.chans.transports, a.hosts.all)
	r.GDR, r.Env = a.net.gdr(canonical)
	r.Channels = a.chans.report(func(k connKey) int { return a.locality(k, s.alias) }, name)
	a.graph.fill(&r.Channels)
	r.Topology = a.trees.report(a.hosts.all, name)
	r.Errors, r.Warnings = a.events.report(name)
	return r, a.verdicts(r, s)
}

var dirName = [...]string{"", "send", "receive"}

// summarize decides where every rank is and what every channel is.
func (a *analyzer) summarize() *summary {
	s := &summary{p2pKinds: map[string]int64{}, netNames: map[string]int64{}}
	a.hosts.summarize(s)
	a.comms.summarize(s)
	a.chans.summarize(s, func(k connKey) int { return a.locality(k, s.alias) })
	if len(s.hostsWithRanks) >= 2 || s.maxNNodes >= 2 {
		s.multiNode = true
	}
	if !s.multiNode {
		s.singleNode = s.maxNNodes == 1 || s.maxNRanks == 1 ||
			len(s.hostsWithRanks) == 1 && s.maxNRanks > 0 && s.ranksKnown >= s.maxNRanks
	}
	s.nvlink = a.trees.nvlink() || a.graph.nvlink()
	return s
}
