package ncclog

import (
	"slices"
	"sort"
)

// Caps of the host tracker.
const (
	maxHosts    = 1 << 14
	maxProcs    = 1 << 15
	maxHostSet  = 4096 // ranks of one host
	maxSmallSet = 64   // GPUs, devices, interfaces of one host; names in a list
	// hostSetBudget bounds the entries of all per-host sets together
	// (ranks, GPUs, devices), whatever the number of hosts.
	hostSetBudget = 1 << 18
)

// hostTracker owns the hosts and processes that printed, and the budget
// shared by all per-host sets.
type hostTracker struct {
	all      []*hostState
	idx      map[string]int32
	procs    map[procKey]*procState
	lastKey  procKey
	lastProc *procState
	budget   int
	// bareVersion are "NCCL version" lines printed without a rank header.
	bareVersion []Version
}

func newHostTracker() hostTracker {
	return hostTracker{idx: map[string]int32{}, procs: map[procKey]*procState{}, lastKey: procKey{host: -9}, budget: hostSetBudget}
}

type hostState struct {
	name     string
	trusted  bool
	lines    int64
	procs    int
	hasRanks bool
	ranks    map[int32]struct{}
	gpus     []string
	boot     string
	ib       []IBDevice
	ibOOB    string
	noIB     bool
	socket   []string
	dmabuf   []int
	tree     *treeState
	treeDone bool
	pathPID  int64 // pid+1 of the process whose GPU/NET paths are kept
	paths    []NetPath
}

type procKey struct {
	host int32
	pid  int64
}

type procComm struct {
	comm int32
	tid  int64
}

type procState struct {
	host        int32
	pid         int64
	version     string
	versionLine int64
	versionText string
	cuda        string
	cudaLine    int64
	cudaText    string
	network     string
	networkLine int64
	networkText string
	comms       []procComm
	ptrs        map[string]int32
	tree        *treeState
	treeTid     int64
	ofiVersion  string
	ofiLine     int64
	ofiText     string
}

// resolveHost interns the host of a header. A host token is trusted when it
// starts the line (after a launcher tag); a token glued to other text
// ("cudaDev 0ljm:803564:...") is matched against the trusted hosts it ends
// with.
func (t *hostTracker) resolveHost(b []byte, h *header, first bool) int32 {
	if h.hostS == h.hostE {
		return -1
	}
	tok := b[h.hostS:h.hostE]
	clean := first && cleanPrefix(b[:h.hostS])
	if id, ok := t.idx[string(tok)]; ok {
		if clean {
			t.all[id].trusted = true
		}
		return id
	}
	if !clean {
		for i := 1; i < len(tok); i++ {
			if id, ok := t.idx[string(tok[i:])]; ok && t.all[id].trusted {
				h.hostS += i
				h.start = h.hostS
				return id
			}
		}
	}
	return t.newHost(string(tok), clean)
}

func (t *hostTracker) newHost(name string, trusted bool) int32 {
	if len(t.all) >= maxHosts {
		return -1
	}
	id := int32(len(t.all))
	t.all = append(t.all, &hostState{name: name, trusted: trusted})
	t.idx[name] = id
	return id
}

func (t *hostTracker) proc(host int32, pid int64) *procState {
	k := procKey{host, pid}
	if k == t.lastKey {
		return t.lastProc
	}
	p := t.procs[k]
	if p == nil {
		if len(t.procs) >= maxProcs {
			return nil
		}
		p = &procState{host: host, pid: pid}
		t.procs[k] = p
		t.all[host].procs++
	}
	t.lastKey, t.lastProc = k, p
	return p
}

func (t *hostTracker) addBareVersion(v []byte, no int64, raw []byte) {
	if len(v) == 0 {
		return
	}
	for i := range t.bareVersion {
		if t.bareVersion[i].Version == string(v) {
			return
		}
	}
	if len(t.bareVersion) < maxSmallSet {
		t.bareVersion = append(t.bareVersion, Version{Version: string(v), Line: no, Text: clip(raw)})
	}
}

func (t *hostTracker) addRank(host int32, rank int32) {
	hs := t.all[host]
	if hs.ranks == nil {
		hs.ranks = map[int32]struct{}{}
	}
	if _, ok := hs.ranks[rank]; !ok && len(hs.ranks) < maxHostSet && t.spend() {
		hs.ranks[rank] = struct{}{}
	}
}

// spend takes one entry from the budget of per-host sets.
func (t *hostTracker) spend() bool {
	if t.budget <= 0 {
		return false
	}
	t.budget--
	return true
}

// addCapped appends v to s unless s holds it already or has max entries.
func addCapped[T comparable](s []T, v T, max int) []T {
	if len(s) >= max || slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// addHostSet adds v to a per-host set of at most maxSmallSet entries; a
// value not in it yet is paid for from budget, shared by all per-host sets.
func addHostSet[T comparable](s []T, v T, budget *int) []T {
	if slices.Contains(s, v) || *budget <= 0 {
		return s
	}
	*budget--
	return addCapped(s, v, maxSmallSet)
}

func (t *hostTracker) sortedProcs() []*procState {
	ps := make([]*procState, 0, len(t.procs))
	for _, p := range t.procs {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].host != ps[j].host {
			return ps[i].host < ps[j].host
		}
		return ps[i].pid < ps[j].pid
	})
	return ps
}

// aggregate groups processes by a version-like string.
func aggregate(procs []*procState, hosts []*hostState, get func(*procState) (string, int64, string)) []Version {
	idx := map[string]int{}
	var out []Version
	for _, p := range procs {
		v, line, text := get(p)
		if v == "" {
			continue
		}
		i, ok := idx[v]
		if !ok {
			i = len(out)
			idx[v] = i
			out = append(out, Version{Version: v, Line: line, Text: text})
		}
		o := &out[i]
		o.Processes++
		if line < o.Line {
			o.Line, o.Text = line, text
		}
		if p.host >= 0 {
			o.Hosts = addCapped(o.Hosts, hosts[p.host].name, 16)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// name is the canonical name of host id ("" for none).
func (t *hostTracker) name(alias []int32, id int32) string {
	if id < 0 {
		return ""
	}
	return t.all[alias[id]].name
}

// canonicalNames maps every host name to its canonical one: a host token
// glued to other text becomes the trusted host it ends with.
func (t *hostTracker) canonicalNames(alias []int32) map[string]string {
	m := map[string]string{}
	for id, hs := range t.all {
		m[hs.name] = t.name(alias, int32(id))
	}
	return m
}

// versions are the NCCL versions the processes printed (and those printed
// without a rank header), and the CUDA driver versions.
func (t *hostTracker) versions(procs []*procState) (nccl, cuda []Version) {
	nccl = aggregate(procs, t.all, func(p *procState) (string, int64, string) { return p.version, p.versionLine, p.versionText })
	for _, bv := range t.bareVersion {
		found := false
		for i := range nccl {
			if nccl[i].Version == bv.Version {
				found = true
				if bv.Line < nccl[i].Line {
					nccl[i].Line, nccl[i].Text = bv.Line, bv.Text
				}
			}
		}
		if !found {
			nccl = append(nccl, bv)
		}
	}
	sort.SliceStable(nccl, func(i, j int) bool { return nccl[i].Line < nccl[j].Line })
	cuda = aggregate(procs, t.all, func(p *procState) (string, int64, string) { return p.cuda, p.cudaLine, p.cudaText })
	return nccl, cuda
}

type hostPID struct {
	host string
	pid  int64
}

// report is one Host per canonical host, and the NCCL version of every
// process.
func (t *hostTracker) report(alias []int32, procs []*procState) ([]Host, map[hostPID]string) {
	type hostAgg struct {
		h     Host
		ranks map[int32]struct{}
	}
	aggs := map[int32]*hostAgg{}
	var order []int32
	for id, hs := range t.all {
		c := alias[id]
		g := aggs[c]
		if g == nil {
			g = &hostAgg{h: Host{Name: t.all[c].name}, ranks: map[int32]struct{}{}}
			aggs[c] = g
			order = append(order, c)
		}
		for rk := range hs.ranks {
			g.ranks[rk] = struct{}{}
		}
		hs.merge(&g.h)
	}
	procVersion := map[hostPID]string{}
	for _, p := range procs {
		g := aggs[alias[p.host]]
		if p.network != "" {
			g.h.Networks = addCapped(g.h.Networks, p.network, maxSmallSet)
		}
		if len(g.h.PIDs) < maxSmallSet {
			g.h.PIDs = append(g.h.PIDs, p.pid)
		}
		if p.version != "" {
			procVersion[hostPID{t.all[p.host].name, p.pid}] = p.version
		}
	}
	var out []Host
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
		out = append(out, g.h)
	}
	return out, procVersion
}

// merge adds what one host token said to the Host of its canonical host.
func (hs *hostState) merge(h *Host) {
	h.Processes += hs.procs
	h.Lines += hs.lines
	for _, x := range hs.gpus {
		h.GPUs = addCapped(h.GPUs, x, maxSmallSet)
	}
	if h.Bootstrap == "" {
		h.Bootstrap = hs.boot
	}
	if len(h.IBDevices) == 0 {
		h.IBDevices = hs.ib
		h.IBOOB = hs.ibOOB
	}
	h.NoIBDevice = h.NoIBDevice || hs.noIB
	for _, x := range hs.socket {
		h.SocketIfaces = addCapped(h.SocketIfaces, x, maxSmallSet)
	}
	for _, x := range hs.dmabuf {
		h.DMABufGPUs = addCapped(h.DMABufGPUs, x, maxSmallSet)
	}
}

// summarize gives every host its canonical host (a token glued to other
// text is the trusted host it ends with), and lists the hosts that hold
// ranks and those of them that printed nothing.
func (t *hostTracker) summarize(s *summary) {
	s.alias = make([]int32, len(t.all))
	for i, h := range t.all {
		s.alias[i] = int32(i)
		if h.trusted {
			continue
		}
		for j := 1; j < len(h.name); j++ {
			if id, ok := t.idx[h.name[j:]]; ok && t.all[id].trusted {
				s.alias[i] = id
				break
			}
		}
	}
	withRanks := map[int32]bool{}
	lines := map[int32]int64{}
	for i, h := range t.all {
		c := s.alias[i]
		lines[c] += h.lines
		if h.hasRanks && len(h.ranks) > 0 {
			withRanks[c] = true
		}
	}
	for i := range t.all {
		c := int32(i)
		if s.alias[i] != c || !withRanks[c] {
			continue
		}
		s.hostsWithRanks = append(s.hostsWithRanks, c)
		if lines[c] == 0 {
			s.silentHosts = append(s.silentHosts, t.all[c].name)
		}
	}
}

// nameOf is the name of host id as printed ("" for none).
func (t *hostTracker) nameOf(id int32) string {
	if id < 0 {
		return ""
	}
	return t.all[id].name
}
