package ncclog

import (
	"bytes"
	"regexp"
	"slices"
	"sort"
	"strconv"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Caps of the communicator tracker.
const (
	maxComms       = 1 << 12
	maxProcComms   = 64 // communicators remembered per process
	maxGlobalRanks = 1 << 19
	maxCommRanks   = 1 << 20 // over all communicators
	maxRankRecs    = 1 << 14
)

// commTracker owns the communicators and where their ranks are.
type commTracker struct {
	all    []*commState
	idx    map[string]int32
	ranks  int             // rank placements kept, over all communicators
	global map[int32]int32 // rank -> host over all communicators (or ambiguous)
	tests  map[int32]int32 // rank -> host from the nccl-tests "# Rank" header
	// recs are the ranks in detail (the first maxRankRecs; omitted counts
	// the rest).
	recs    []Rank
	recIdx  map[rankKey]int
	omitted int
}

func newCommTracker() commTracker {
	return commTracker{idx: map[string]int32{}, global: map[int32]int32{}, tests: map[int32]int32{}, recIdx: map[rankKey]int{}}
}

type commState struct {
	id       string
	nranks   int
	nnodes   int
	mnnvl    bool
	ranks    map[int32]int32 // rank -> host
	complete int
	line     int64
}

type rankKey struct {
	comm int32
	rank int32
}

var reTestRank = regexp.MustCompile(`#\s*Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]`)

func (a *analyzer) testRankLine(b []byte, no int64) {
	m := reTestRank.FindSubmatch(b)
	if m == nil {
		return
	}
	rank, err := strconv.Atoi(string(m[1]))
	if err != nil || rank < 0 || rank > 1<<30 {
		return
	}
	id, ok := a.hosts.idx[string(m[3])]
	if !ok {
		id = a.hosts.newHost(string(m[3]), true)
		if id < 0 {
			return
		}
	}
	a.hosts.all[id].trusted = true
	a.hosts.all[id].hasRanks = true
	a.hosts.addRank(id, int32(rank))
	if len(a.comms.tests) < maxGlobalRanks {
		a.comms.tests[int32(rank)] = id
	}
	pid, _ := strconv.ParseInt(string(m[2]), 10, 64)
	dev, _ := strconv.Atoi(string(m[4]))
	a.comms.addRankRec(rankKey{comm: -3, rank: int32(rank)}, Rank{
		Rank: rank, Host: a.hosts.all[id].name, PID: pid, CUDADev: &dev, BusID: string(m[5]),
		Source: "nccl-tests", Line: no,
	})
}

func (c *commTracker) addRankRec(k rankKey, r Rank) {
	if i, ok := c.recIdx[k]; ok {
		old := &c.recs[i]
		if old.BusID == "" {
			old.BusID = r.BusID
		}
		if old.CUDADev == nil {
			old.CUDADev = r.CUDADev
		}
		if old.NVMLDev == nil {
			old.NVMLDev = r.NVMLDev
		}
		if old.NRanks == 0 {
			old.NRanks = r.NRanks
		}
		if r.InitComplete {
			old.InitComplete = true
		}
		return
	}
	if len(c.recs) >= maxRankRecs {
		c.omitted++
		return
	}
	c.recIdx[k] = len(c.recs)
	c.recs = append(c.recs, r)
}

// placeRank records that rank lives on host, in comm (or -1 when the
// communicator is not known).
func (a *analyzer) placeRank(comm int32, rank int32, host int32) {
	if host < 0 || rank < 0 {
		return
	}
	a.hosts.all[host].hasRanks = true
	a.hosts.addRank(host, rank)
	if comm >= 0 {
		c := a.comms.all[comm]
		if old, ok := c.ranks[rank]; !ok {
			if a.comms.ranks < maxCommRanks {
				c.ranks[rank] = host
				a.comms.ranks++
			}
		} else if old != host && old != ambiguous {
			c.ranks[rank] = ambiguous
		}
	}
	if old, ok := a.comms.global[rank]; !ok {
		if len(a.comms.global) < maxGlobalRanks {
			a.comms.global[rank] = host
		}
	} else if old != host && old != ambiguous {
		a.comms.global[rank] = ambiguous
	}
}

func (c *commTracker) comm(id string, line int64) int32 {
	if i, ok := c.idx[id]; ok {
		return i
	}
	if len(c.all) >= maxComms {
		return -1
	}
	i := int32(len(c.all))
	c.all = append(c.all, &commState{id: id, ranks: map[int32]int32{}, line: line})
	c.idx[id] = i
	return i
}

// commFields are the fields of a "comm 0x..." line.
type commFields struct {
	ptr                  string
	rank, nranks, nnodes int
	cudaDev, nvmlDev     *int
	busID, commID        string
	mnnvl, complete      bool
}

// parseCommLine reads the fields of a "comm 0x..." line; ok is false
// without a rank.
func parseCommLine(m []byte, spliced bool) (c commFields, ok bool) {
	var buf [24][]byte // a comm line has about 20 fields: no allocation
	f := textio.AppendFields(buf[:0], m)
	if spliced && len(f) > 0 {
		f = f[:len(f)-1] // the last field may be cut
	}
	if len(f) < 4 {
		return c, false
	}
	c = commFields{ptr: string(f[1]), rank: -1, nranks: -1, nnodes: -1}
	for i := 2; i+1 < len(f); i++ {
		v := f[i+1]
		switch string(f[i]) {
		case "rank":
			c.rank = atoiOr(v, -1)
		case "nranks", "nRanks":
			c.nranks = atoiOr(v, -1)
		case "nNodes":
			c.nnodes = atoiOr(v, -1)
		case "cudaDev":
			if d := atoiOr(v, -1); d >= 0 {
				c.cudaDev = &d
			}
		case "nvmlDev":
			if d := atoiOr(v, -1); d >= 0 {
				c.nvmlDev = &d
			}
		case "busId":
			c.busID = string(v)
		case "commId":
			c.commID = string(v)
		case "MNNVL":
			c.mnnvl = string(v) == "1"
		default:
			continue
		}
		i++
	}
	c.complete = bytes.Contains(m, []byte("Init COMPLETE"))
	return c, c.rank >= 0 && c.rank <= 1<<30
}

// commLine reads "comm 0x.. rank R nranks N cudaDev D [nvmlDev E] busId B
// [commId C] - Init START|COMPLETE" (also Destroy/Abort), and
// "comm 0x.. rank R nRanks N nNodes K localRanks L localRank l MNNVL m".
func (a *analyzer) commLine(h *header, host int32, p *procState, m []byte, spliced bool, no int64) {
	f, ok := parseCommLine(m, spliced)
	if !ok {
		return
	}
	ci := int32(-1)
	if f.commID != "" {
		ci = a.comms.comm(f.commID, no)
	} else if p != nil && p.ptrs != nil {
		if c, ok := p.ptrs[f.ptr]; ok {
			ci = c
		}
	}
	if ci >= 0 {
		a.comms.all[ci].update(f)
		if p != nil {
			p.noteComm(f.ptr, ci, h.tid)
		}
	} else if f.nnodes > 0 {
		// topology line of a communicator we only know by pointer
		a.comms.orphanNNodes(f.nnodes)
	}
	if f.nnodes > 0 {
		return // the nNodes line carries no device facts
	}
	r := Rank{Rank: f.rank, CUDADev: f.cudaDev, NVMLDev: f.nvmlDev, BusID: f.busID, CommID: f.commID,
		Source: "init", InitComplete: f.complete, Line: no}
	if f.nranks > 0 {
		r.NRanks = f.nranks
	}
	if host >= 0 {
		a.placeRank(ci, int32(f.rank), host)
		hs := a.hosts.all[host]
		if f.busID != "" {
			hs.gpus = addHostSet(hs.gpus, f.busID, &a.hosts.budget)
		}
		r.Host = hs.name
	}
	if h.hasPID {
		r.PID = h.pid
	}
	a.comms.addRankRec(rankKey{comm: ci, rank: int32(f.rank)}, r)
}

// update takes what a comm line says about its communicator.
func (c *commState) update(f commFields) {
	if f.nranks > 0 && c.nranks == 0 {
		c.nranks = f.nranks
	}
	if f.nnodes > 0 {
		c.nnodes = f.nnodes
	}
	if f.mnnvl {
		c.mnnvl = true
	}
	if f.complete {
		c.complete++
	}
}

// noteComm remembers that the process's communicator pointer ptr is ci,
// set up by thread tid (the latest maxProcComms of each are kept).
func (p *procState) noteComm(ptr string, ci int32, tid int64) {
	if p.ptrs == nil {
		p.ptrs = map[string]int32{}
	}
	if len(p.ptrs) >= maxProcComms {
		clear(p.ptrs)
	}
	p.ptrs[ptr] = ci
	if slices.ContainsFunc(p.comms, func(pc procComm) bool { return pc.comm == ci }) {
		return
	}
	if len(p.comms) >= maxProcComms { // keep the latest ones
		p.comms = append(p.comms[:0], p.comms[1:]...)
	}
	p.comms = append(p.comms, procComm{comm: ci, tid: tid})
}

// orphanNNodes keeps nNodes of communicators known only by pointer in a
// pseudo communicator so that "several nodes" is still known.
func (c *commTracker) orphanNNodes(n int) {
	ci := c.comm("(unknown)", 0)
	if ci >= 0 && n > c.all[ci].nnodes {
		c.all[ci].nnodes = n
	}
}

func (p *procState) commFor(tid int64) int32 {
	if len(p.comms) == 1 {
		return p.comms[0].comm
	}
	for i := len(p.comms) - 1; i >= 0; i-- { // the latest communicator this thread set up
		if p.comms[i].tid == tid {
			return p.comms[i].comm
		}
	}
	return -1
}

// hostOf says where a rank is: from its communicator, else from the ranks
// of all communicators when they agree, else from the nccl-tests header.
func (c *commTracker) hostOf(comm, rank int32, alias []int32) int32 {
	h := int32(-1)
	if comm >= 0 {
		if x, ok := c.all[comm].ranks[rank]; ok && x != ambiguous {
			h = x
		}
	}
	if h < 0 {
		if x, ok := c.global[rank]; ok {
			if x == ambiguous {
				return -1
			}
			h = x
		} else if x, ok := c.tests[rank]; ok {
			h = x
		}
	}
	if h >= 0 && alias != nil {
		h = alias[h]
	}
	return h
}

// reportRanks is every rank in detail, with canonical host names and the
// NCCL version of its process, sorted by communicator and rank.
func (c *commTracker) reportRanks(canonical map[string]string, procVersion map[hostPID]string) ([]Rank, int) {
	rs := append([]Rank{}, c.recs...)
	for i := range rs {
		rk := &rs[i]
		rk.Version = procVersion[hostPID{rk.Host, rk.PID}]
		if n, ok := canonical[rk.Host]; ok {
			rk.Host = n
		}
	}
	srcOrder := map[string]int{"init": 0, "nccl-tests": 1, "channel": 2}
	sort.SliceStable(rs, func(i, j int) bool {
		x, y := rs[i], rs[j]
		if x.CommID != y.CommID {
			return x.CommID < y.CommID
		}
		if x.Rank != y.Rank {
			return x.Rank < y.Rank
		}
		return srcOrder[x.Source] < srcOrder[y.Source]
	})
	return rs, c.omitted
}

// report is every communicator, with the hosts its ranks are on.
func (c *commTracker) report(alias []int32) []Comm {
	var out []Comm
	for _, cs := range c.all {
		if cs.id == "(unknown)" && len(cs.ranks) == 0 {
			continue
		}
		hs := map[int32]bool{}
		for _, h := range cs.ranks {
			if h >= 0 {
				hs[alias[h]] = true
			}
		}
		out = append(out, Comm{ID: cs.id, NRanks: cs.nranks, NNodes: cs.nnodes, MNNVL: cs.mnnvl,
			RanksSeen: len(cs.ranks), Hosts: len(hs), InitComplete: cs.complete, Line: cs.line})
	}
	return out
}

// summarize counts the ranks whose host is known and the largest
// communicator.
func (c *commTracker) summarize(s *summary) {
	known := map[int32]bool{}
	for rk, h := range c.global {
		if h != ambiguous {
			known[rk] = true
		}
	}
	for rk := range c.tests {
		known[rk] = true
	}
	s.ranksKnown = len(known)
	for _, cs := range c.all {
		s.maxNRanks = max(s.maxNRanks, cs.nranks)
		s.maxNNodes = max(s.maxNNodes, cs.nnodes)
		s.mnnvl = s.mnnvl || cs.mnnvl
	}
	for _, rr := range c.recs {
		s.maxNRanks = max(s.maxNRanks, rr.NRanks)
	}
	// The nccl-tests header lists every rank of the test's communicator.
	s.maxNRanks = max(s.maxNRanks, len(c.tests))
}
