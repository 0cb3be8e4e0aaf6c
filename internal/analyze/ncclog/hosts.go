package ncclog

import (
	"slices"
	"sort"
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
func (a *analyzer) resolveHost(b []byte, h *header, first bool) int32 {
	if h.hostS == h.hostE {
		return -1
	}
	tok := b[h.hostS:h.hostE]
	clean := first && cleanPrefix(b[:h.hostS])
	if id, ok := a.hosts.idx[string(tok)]; ok {
		if clean {
			a.hosts.all[id].trusted = true
		}
		return id
	}
	if !clean {
		for i := 1; i < len(tok); i++ {
			if id, ok := a.hosts.idx[string(tok[i:])]; ok && a.hosts.all[id].trusted {
				h.hostS += i
				h.start = h.hostS
				return id
			}
		}
	}
	return a.newHost(string(tok), clean)
}

func (a *analyzer) newHost(name string, trusted bool) int32 {
	if len(a.hosts.all) >= maxHosts {
		return -1
	}
	id := int32(len(a.hosts.all))
	a.hosts.all = append(a.hosts.all, &hostState{name: name, trusted: trusted})
	a.hosts.idx[name] = id
	return id
}

func (a *analyzer) proc(host int32, pid int64) *procState {
	k := procKey{host, pid}
	if k == a.hosts.lastKey {
		return a.hosts.lastProc
	}
	p := a.hosts.procs[k]
	if p == nil {
		if len(a.hosts.procs) >= maxProcs {
			return nil
		}
		p = &procState{host: host, pid: pid}
		a.hosts.procs[k] = p
		a.hosts.all[host].procs++
	}
	a.hosts.lastKey, a.hosts.lastProc = k, p
	return p
}

func (a *analyzer) addBareVersion(v []byte, no int64, raw []byte) {
	if len(v) == 0 {
		return
	}
	for i := range a.hosts.bareVersion {
		if a.hosts.bareVersion[i].Version == string(v) {
			return
		}
	}
	if len(a.hosts.bareVersion) < maxSmallSet {
		a.hosts.bareVersion = append(a.hosts.bareVersion, Version{Version: string(v), Line: no, Text: clip(raw)})
	}
}

func (a *analyzer) addHostRank(host int32, rank int32) {
	hs := a.hosts.all[host]
	if hs.ranks == nil {
		hs.ranks = map[int32]struct{}{}
	}
	if _, ok := hs.ranks[rank]; !ok && len(hs.ranks) < maxHostSet && a.spend() {
		hs.ranks[rank] = struct{}{}
	}
}

// spend takes one entry from the budget of per-host sets.
func (a *analyzer) spend() bool {
	if a.hosts.budget <= 0 {
		return false
	}
	a.hosts.budget--
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

func (a *analyzer) sortedProcs() []*procState {
	ps := make([]*procState, 0, len(a.hosts.procs))
	for _, p := range a.hosts.procs {
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
func aggregate(procs []*procState, a *analyzer, get func(*procState) (string, int64, string)) []Version {
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
			o.Hosts = addCapped(o.Hosts, a.hosts.all[p.host].name, 16)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}
