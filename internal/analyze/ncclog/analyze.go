package ncclog

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
)

// Caps on what is kept in detail. Everything beyond is still counted; the
// caps only bound memory (a 1 GB log of thousands of ranks stays well under
// 200 MB).
const (
	maxHosts       = 1 << 15
	maxProcs       = 1 << 17
	maxComms       = 1 << 12
	maxProcComms   = 64
	maxGlobalRanks = 1 << 20
	maxCommRanks   = 1 << 21 // over all communicators
	maxRankRecs    = 1 << 14
	maxConns       = 1 << 18
	maxRecords     = 1000
	maxTransports  = 255
	maxTextBytes   = 16 << 20
	maxTextLen     = 400
	maxEventKinds  = 256
	maxEventsOut   = 50
	maxTrees       = 64
	maxTreeLinks   = 1024
	maxTreeFinds   = 16
	maxGPUGDR      = 4096
	maxHCAGDR      = 4096
	maxEnv         = 256
	maxPluginMsgs  = 32
	maxHostSet     = 4096
	maxSmallSet    = 64
	// hostSetBudget bounds the entries of all per-host sets together
	// (ranks, GPUs, devices), whatever the number of hosts.
	hostSetBudget = 1 << 20
	maxPatterns   = 256
	maxCounts     = 64
	maxNetPaths   = 512
	maxOffenders  = 64
)

// Transport classes.
const (
	clP2P     = 'p'
	clSHM     = 's'
	clNET     = 'n'
	clCollNet = 'c'
	clNVLS    = 'v'
	clOther   = 'o'
)

func className(c byte) string {
	switch c {
	case clP2P:
		return "p2p"
	case clSHM:
		return "shm"
	case clNET:
		return "net"
	case clCollNet:
		return "collnet"
	case clNVLS:
		return "nvls"
	}
	return "other"
}

// Localities.
const (
	locUnknown = iota
	locIntra
	locInter
)

var locName = [...]string{"unknown", "intra-node", "inter-node"}

const ambiguous = int32(-2)

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

type eventKind struct {
	level   byte
	line    int64
	host    int32
	message string
	count   int64
}

type countKey struct{ coll, collnet, nvls, p2p, perPeer int }

type countVal struct {
	procs int
	line  int64
	text  string
}

type envKey struct{ name, value string }

type envVal struct {
	procs int
	line  int64
}

type gpuGDRKey struct {
	host int32
	gpu  string
	hca  int
}

type analyzer struct {
	name      string
	nlines    int64
	nbytes    int64
	ncclLines int64
	spliced   int64
	longLines int64
	nulLine   int64

	hs []header

	hosts   []*hostState
	hostIdx map[string]int32

	procs    map[procKey]*procState
	lastKey  procKey
	lastProc *procState

	comms      []*commState
	commIdx    map[string]int32
	commRanks  int
	globalRank map[int32]int32
	testRanks  map[int32]int32 // from the nccl-tests "# Rank" header

	rankRecs     []Rank
	rankRecIdx   map[rankKey]int
	ranksOmitted int

	transports []*transport
	trIdx      map[string]int16

	conns          map[connKey]*connState
	connOrder      []connKey
	untracked      int64
	texts          []string
	textBytes      int
	garbled        int64
	transportLines int64
	collnetLines   int64
	// offenders seen on untracked lines
	offNet  []offender // NET without GDRDMA
	offLoop []offender // intra-node over NET
	offSHM  []offender // SHM

	ringLines    int64
	maxRingTotal int
	connRings    int64
	connTrees    int64
	connNVLS     int64
	nvlsSup      bool
	counts       map[countKey]*countVal
	countOrder   []countKey
	patterns     []Pattern
	patternSeen  map[Pattern]bool
	trees        []*treeState
	pathCount    int
	minRingTotal int
	maxRingID    int

	hcaGDR   []HCAGDR
	hcaSeen  map[gpuGDRKey]bool
	gpuGDR   []GPUGDR
	gpuSeen  map[gpuGDRKey]bool
	dmabuf   bool
	env      map[envKey]*envVal
	envOrder []envKey

	pluginMsgs  []Event
	pluginSeen  map[string]bool
	nonDevice   bool
	ofiProvider string
	ofiNICs     int
	libfabric   string
	bareVersion []Version

	setBudget  int
	events     map[string]*eventKind
	eventOrder []string
	errCount   int64
	warnCount  int64
}

func newAnalyzer(name string) *analyzer {
	return &analyzer{
		name:        name,
		hostIdx:     map[string]int32{},
		procs:       map[procKey]*procState{},
		lastKey:     procKey{host: -9},
		commIdx:     map[string]int32{},
		globalRank:  map[int32]int32{},
		testRanks:   map[int32]int32{},
		rankRecIdx:  map[rankKey]int{},
		trIdx:       map[string]int16{},
		conns:       map[connKey]*connState{},
		counts:      map[countKey]*countVal{},
		patternSeen: map[Pattern]bool{},
		hcaSeen:     map[gpuGDRKey]bool{},
		gpuSeen:     map[gpuGDRKey]bool{},
		env:         map[envKey]*envVal{},
		pluginSeen:  map[string]bool{},
		events:      map[string]*eventKind{},
		setBudget:   hostSetBudget,
	}
}

// line handles one physical line.
func (a *analyzer) line(b []byte, no int64, cut bool) {
	if bytes.IndexByte(b, 0) >= 0 && a.nulLine == 0 {
		a.nulLine = no
	}
	a.hs = findHeaders(b, a.hs[:0])
	if len(a.hs) == 0 {
		a.plainLine(b, no)
		return
	}
	if len(a.hs) > 1 {
		a.spliced++
	}
	hostIDs := [8]int32{}
	for i := range a.hs {
		id := a.resolveHost(b, &a.hs[i], i == 0)
		if i < len(hostIDs) {
			hostIDs[i] = id
		}
	}
	for i := range a.hs {
		h := &a.hs[i]
		end := len(b)
		spliced := cut
		if i+1 < len(a.hs) {
			end = a.hs[i+1].start
			spliced = true
		}
		if end < h.msg {
			end = h.msg
			if i+1 < len(a.hs) && a.hs[i+1].start < h.msg {
				a.hs[i+1].start = h.msg
			}
		}
		host := int32(-1)
		if i < len(hostIDs) {
			host = hostIDs[i]
		} else {
			host = a.resolveHost(b, h, false)
		}
		a.message(h, host, b[h.msg:end], b[h.start:end], spliced, no)
	}
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
	if id, ok := a.hostIdx[string(tok)]; ok {
		if clean {
			a.hosts[id].trusted = true
		}
		return id
	}
	if !clean {
		for i := 1; i < len(tok); i++ {
			if id, ok := a.hostIdx[string(tok[i:])]; ok && a.hosts[id].trusted {
				h.hostS += i
				h.start = h.hostS
				return id
			}
		}
	}
	return a.newHost(string(tok), clean)
}

func (a *analyzer) newHost(name string, trusted bool) int32 {
	if len(a.hosts) >= maxHosts {
		return -1
	}
	id := int32(len(a.hosts))
	a.hosts = append(a.hosts, &hostState{name: name, trusted: trusted})
	a.hostIdx[name] = id
	return id
}

func (a *analyzer) proc(host int32, pid int64) *procState {
	k := procKey{host, pid}
	if k == a.lastKey {
		return a.lastProc
	}
	p := a.procs[k]
	if p == nil {
		if len(a.procs) >= maxProcs {
			return nil
		}
		p = &procState{host: host, pid: pid}
		a.procs[k] = p
		a.hosts[host].procs++
	}
	a.lastKey, a.lastProc = k, p
	return p
}

var (
	pfxChannel   = []byte("Channel ")
	pfxRing      = []byte("Ring ")
	pfxCollNet   = []byte("CollNet ")
	pfxConnected = []byte("Connected ")
	pfxVersion   = []byte("NCCL version ")
	pfxNET       = []byte("NET/")
	pfxNCCLEnv   = []byte("NCCL_")
	pfxUsingNet  = []byte("Using network ")
	pfxNonDevice = []byte("Using non-device net plugin")
	pfxGPUDirect = []byte("GPU Direct RDMA ")
	pfxDMABuf    = []byte("DMA-BUF is available on GPU device ")
	pfxCUDADrv   = []byte("cudaDriverVersion ")
	pfxComm      = []byte("comm 0x")
	pfxSystem    = []byte("=== System : ")
	pfxPattern   = []byte("Pattern ")
	pfxBootstrap = []byte("Bootstrap")
	pfxNVLSSup   = []byte("NVLS multicast support is available")
	pfxAssigned  = []byte("Assigned NET plugin ")
	pfxInitNET   = []byte("Initialized NET plugin ")
	pfxFailNET   = []byte("Failed to initialize NET plugin ")
	sEnvTo       = []byte(" set by environment to ")
	sCommSp      = []byte(" comm 0x")
	sCollCh      = []byte(" coll channels")
	sRror        = []byte("rror")
	sRetry       = []byte("retry")
)

// message handles one NCCL message. raw is the header and message as
// printed; spliced says another writer cut it short.
func (a *analyzer) message(h *header, host int32, m, raw []byte, spliced bool, no int64) {
	a.ncclLines++
	m = bytes.TrimRight(m, " \t\r")
	var p *procState
	if host >= 0 {
		a.hosts[host].lines++
		if h.hasPID {
			p = a.proc(host, h.pid)
		}
	}
	if p != nil && p.tree != nil && p.treeTid == h.tid {
		if a.treeLine(p, m, raw, no) {
			return
		}
	}
	if h.level == 'W' {
		a.event(h.level, host, m, no)
		return
	}
	if len(m) == 0 {
		return
	}
	switch m[0] {
	case 'C':
		switch {
		case bytes.HasPrefix(m, pfxChannel):
			a.channelLine(h, host, p, m[len(pfxChannel):], raw, spliced, no, false)
			return
		case bytes.HasPrefix(m, pfxCollNet):
			a.channelLine(h, host, p, m[len(pfxCollNet):], raw, spliced, no, true)
			return
		case bytes.HasPrefix(m, pfxConnected):
			r := m[len(pfxConnected):]
			switch {
			case bytes.HasPrefix(r, []byte("all rings")):
				a.connRings++
			case bytes.HasPrefix(r, []byte("all trees")):
				a.connTrees++
			case bytes.HasPrefix(r, []byte("NVLS")):
				a.connNVLS++
			}
			return
		}
	case 'R':
		if bytes.HasPrefix(m, pfxRing) {
			a.channelLine(h, host, p, m[len(pfxRing):], raw, spliced, no, false)
			return
		}
	case 'N':
		switch {
		case bytes.HasPrefix(m, pfxVersion):
			if p != nil && p.version == "" {
				p.version = string(firstToken(m[len(pfxVersion):]))
				p.versionLine, p.versionText = no, clip(raw)
			} else if p == nil {
				a.addBareVersion(firstToken(m[len(pfxVersion):]), no, raw)
			}
			return
		case bytes.HasPrefix(m, pfxNET):
			a.netLine(host, p, m, raw, no)
			return
		case bytes.HasPrefix(m, pfxNCCLEnv):
			a.envLine(m, no)
			return
		case bytes.HasPrefix(m, pfxNVLSSup):
			a.nvlsSup = true
			return
		}
	case 'U':
		switch {
		case bytes.HasPrefix(m, pfxUsingNet):
			if p != nil && p.network == "" {
				p.network = string(m[len(pfxUsingNet):])
				p.networkLine, p.networkText = no, clip(raw)
			}
			return
		case bytes.HasPrefix(m, pfxNonDevice):
			a.nonDevice = true
			a.pluginMsg(host, m, no)
			return
		}
	case 'A':
		if bytes.HasPrefix(m, pfxAssigned) {
			if p != nil && p.network == "" {
				n := m[len(pfxAssigned):]
				if i := bytes.Index(n, []byte(" to comm")); i >= 0 {
					n = n[:i]
				}
				p.network = string(n)
				p.networkLine, p.networkText = no, clip(raw)
			}
			return
		}
	case 'I':
		if bytes.HasPrefix(m, pfxInitNET) {
			a.pluginMsg(host, m, no)
			return
		}
	case 'F':
		if bytes.HasPrefix(m, pfxFailNET) {
			a.pluginMsg(host, m, no)
			return
		}
	case 'G':
		if bytes.HasPrefix(m, pfxGPUDirect) {
			a.gpuGDRLine(host, m, raw, no)
			return
		}
		if bytes.HasPrefix(m, []byte("GPU/")) {
			a.pathLine(host, p, m)
			return
		}
	case 'D':
		if bytes.HasPrefix(m, pfxDMABuf) {
			a.dmabuf = true
			if host >= 0 {
				if d, err := strconv.Atoi(string(firstToken(m[len(pfxDMABuf):]))); err == nil {
					hs := a.hosts[host]
					hs.dmabuf = addHostSet(hs.dmabuf, d, &a.setBudget)
				}
			}
			return
		}
	case 'c':
		if bytes.HasPrefix(m, pfxCUDADrv) {
			if p != nil && p.cuda == "" {
				p.cuda = string(firstToken(m[len(pfxCUDADrv):]))
				p.cudaLine, p.cudaText = no, clip(raw)
			}
			return
		}
		if bytes.HasPrefix(m, pfxComm) {
			a.commLine(h, host, p, m, spliced, no)
			return
		}
	case 'n':
		// ncclCommInitRank comm 0x..., ncclCommInitRankConfig comm 0x...
		if i := bytes.Index(m, sCommSp); i >= 0 && i < 40 && bytes.HasPrefix(m, []byte("nccl")) {
			a.commLine(h, host, p, m[i+1:], spliced, no)
			return
		}
	case '=':
		if bytes.HasPrefix(m, pfxSystem) && p != nil {
			a.treeStart(host, p, h.tid, m, no)
			return
		}
	case 'P':
		if bytes.HasPrefix(m, pfxPattern) {
			a.patternLine(host, m, no)
			return
		}
	case 'B':
		if bytes.HasPrefix(m, pfxBootstrap) && host >= 0 {
			if i := bytes.Index(m, []byte("Using ")); i >= 0 && i < 16 {
				hs := a.hosts[host]
				if hs.boot == "" {
					hs.boot = string(firstToken(m[i+6:]))
				}
			}
			return
		}
	}
	if m[0] >= '0' && m[0] <= '9' {
		if bytes.Contains(m, sCollCh) {
			a.countsLine(m, raw, spliced, no)
			return
		}
	}
	// Errors reported at INFO level: propagated return codes
	// ("transport/net.cc:1302 -> 6") and error texts.
	if isPropagation(m) {
		a.event('E', host, m, no)
		return
	}
	if bytes.Contains(m, sRror) {
		if strongError(m) {
			a.event('E', host, m, no)
		} else {
			a.event('I', host, m, no)
		}
		return
	}
	if bytes.Contains(m, sRetry) {
		a.event('I', host, m, no)
	}
}

// isPropagation matches NCCL's error return traces: "init.cc:1234 -> 2".
func isPropagation(m []byte) bool {
	if len(m) > 0 && m[len(m)-1] == ']' {
		if k := bytes.LastIndex(m, []byte(" [")); k > 0 {
			m = m[:k] // "proxy.cc:878 -> 6 [Progress Thread]"
		}
	}
	n := len(m)
	if n < 8 || !isDigit(m[n-1]) {
		return false
	}
	i := n - 1
	for i >= 0 && isDigit(m[i]) {
		i--
	}
	if i < 4 || string(m[i-3:i+1]) != " -> " {
		return false
	}
	code := atoi64(m[i+1:])
	if code == 0 || code == 7 || n-i > 4 { // ncclSuccess, ncclInProgress
		return false
	}
	return bytes.Contains(m[:i], []byte(".c")) && bytes.IndexByte(m[:i], ':') >= 0
}

var strongPatterns = [][]byte{
	[]byte("unhandled system error"), []byte("unhandled cuda error"), []byte("internal error"),
	[]byte("remote process exited"), []byte("Got completion"), []byte("completion with error"),
	[]byte("Call to ibv_"), []byte("NCCL error"), []byte("NCCL failure"), []byte("Cuda failure"),
	[]byte("ncclSystemError"), []byte("ncclInternalError"), []byte("ncclUnhandledCudaError"),
	[]byte("ncclRemoteError"), []byte("ncclInvalidUsage"), []byte("ncclInvalidArgument"),
	[]byte("Connection closed"), []byte("Connection reset"), []byte("timed out"), []byte("Timeout"),
	[]byte("Error :"), []byte("async event"),
}

func strongError(m []byte) bool {
	for _, p := range strongPatterns {
		if bytes.Contains(m, p) {
			return true
		}
	}
	return false
}

var benignWarn = [][]byte{[]byte("deprecated"), []byte("Ignoring"), []byte("ignoring"), []byte("ignored")}

var reDigits = regexp.MustCompile(`0x[0-9a-fA-F]+|[0-9]+`)

// event records an error ('E' or a WARN line), or a warning ('I': an INFO
// line that mentions an error).
func (a *analyzer) event(level byte, host int32, m []byte, no int64) {
	isErr := level == 'E'
	if level == 'W' {
		isErr = true
		for _, bw := range benignWarn {
			if bytes.Contains(m, bw) {
				isErr = false
				break
			}
		}
	}
	lv := byte('w')
	if isErr {
		lv = 'e'
		a.errCount++
	} else {
		a.warnCount++
	}
	key := m
	if len(key) > 200 {
		key = key[:200]
	}
	k := string(lv) + reDigits.ReplaceAllString(string(key), "#")
	if ev := a.events[k]; ev != nil {
		ev.count++
		return
	}
	if len(a.events) >= maxEventKinds {
		return
	}
	a.events[k] = &eventKind{level: lv, line: no, host: host, message: clip(m), count: 1}
	a.eventOrder = append(a.eventOrder, k)
}

// plainLine handles a line without an NCCL header: a bare "NCCL version"
// line (old releases print it so), an application's NCCL error, or the
// nccl-tests "#  Rank N Group G Pid P on HOST device D [bus] NAME" header.
func (a *analyzer) plainLine(b []byte, no int64) {
	if i := bytes.Index(b, ncclTok); i >= 0 {
		r := b[i:]
		switch {
		case bytes.HasPrefix(r, pfxVersion):
			a.addBareVersion(firstToken(r[len(pfxVersion):]), no, b)
			return
		case bytes.HasPrefix(r, []byte("NCCL error")), bytes.HasPrefix(r, []byte("NCCL failure")):
			a.event('E', -1, bytes.TrimSpace(b), no)
			return
		}
	}
	if bytes.Contains(b, []byte("Pid")) && bytes.Contains(b, []byte("Rank")) {
		a.testRankLine(b, no)
		return
	}
	if bytes.Contains(b, []byte("nccl")) && bytes.Contains(b, []byte("Error")) && strongError(b) {
		a.event('E', -1, bytes.TrimSpace(b), no)
	}
}

func (a *analyzer) addBareVersion(v []byte, no int64, raw []byte) {
	if len(v) == 0 {
		return
	}
	for i := range a.bareVersion {
		if a.bareVersion[i].Version == string(v) {
			return
		}
	}
	if len(a.bareVersion) < maxSmallSet {
		a.bareVersion = append(a.bareVersion, Version{Version: string(v), Line: no, Text: clip(raw)})
	}
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
	id, ok := a.hostIdx[string(m[3])]
	if !ok {
		id = a.newHost(string(m[3]), true)
		if id < 0 {
			return
		}
	}
	a.hosts[id].trusted = true
	a.hosts[id].hasRanks = true
	a.addHostRank(id, int32(rank))
	if len(a.testRanks) < maxGlobalRanks {
		a.testRanks[int32(rank)] = id
	}
	pid, _ := strconv.ParseInt(string(m[2]), 10, 64)
	dev, _ := strconv.Atoi(string(m[4]))
	a.addRankRec(rankKey{comm: -3, rank: int32(rank)}, Rank{
		Rank: rank, Host: a.hosts[id].name, PID: pid, CUDADev: &dev, BusID: string(m[5]),
		Source: "nccl-tests", Line: no,
	})
}

func (a *analyzer) addHostRank(host int32, rank int32) {
	hs := a.hosts[host]
	if hs.ranks == nil {
		hs.ranks = map[int32]struct{}{}
	}
	if _, ok := hs.ranks[rank]; !ok && len(hs.ranks) < maxHostSet && a.spend() {
		hs.ranks[rank] = struct{}{}
	}
}

// spend takes one entry from the budget of per-host sets.
func (a *analyzer) spend() bool {
	if a.setBudget <= 0 {
		return false
	}
	a.setBudget--
	return true
}

func (a *analyzer) addRankRec(k rankKey, r Rank) {
	if i, ok := a.rankRecIdx[k]; ok {
		old := &a.rankRecs[i]
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
	if len(a.rankRecs) >= maxRankRecs {
		a.ranksOmitted++
		return
	}
	a.rankRecIdx[k] = len(a.rankRecs)
	a.rankRecs = append(a.rankRecs, r)
}

// placeRank records that rank lives on host, in comm (or -1 when the
// communicator is not known).
func (a *analyzer) placeRank(comm int32, rank int32, host int32) {
	if host < 0 || rank < 0 {
		return
	}
	a.hosts[host].hasRanks = true
	a.addHostRank(host, rank)
	if comm >= 0 {
		c := a.comms[comm]
		if old, ok := c.ranks[rank]; !ok {
			if a.commRanks < maxCommRanks {
				c.ranks[rank] = host
				a.commRanks++
			}
		} else if old != host && old != ambiguous {
			c.ranks[rank] = ambiguous
		}
	}
	if old, ok := a.globalRank[rank]; !ok {
		if len(a.globalRank) < maxGlobalRanks {
			a.globalRank[rank] = host
		}
	} else if old != host && old != ambiguous {
		a.globalRank[rank] = ambiguous
	}
}

func (a *analyzer) comm(id string, line int64) int32 {
	if i, ok := a.commIdx[id]; ok {
		return i
	}
	if len(a.comms) >= maxComms {
		return -1
	}
	i := int32(len(a.comms))
	a.comms = append(a.comms, &commState{id: id, ranks: map[int32]int32{}, line: line})
	a.commIdx[id] = i
	return i
}

// commLine reads "comm 0x.. rank R nranks N cudaDev D [nvmlDev E] busId B
// [commId C] - Init START|COMPLETE" (also Destroy/Abort), and
// "comm 0x.. rank R nRanks N nNodes K localRanks L localRank l MNNVL m".
func (a *analyzer) commLine(h *header, host int32, p *procState, m []byte, spliced bool, no int64) {
	f := bytes.Fields(m)
	if spliced && len(f) > 0 {
		f = f[:len(f)-1] // the last field may be cut
	}
	if len(f) < 4 {
		return
	}
	ptr := string(f[1])
	var rank, nranks, nnodes = -1, -1, -1
	var cudaDev, nvmlDev *int
	var busID, commID string
	mnnvl := false
	for i := 2; i+1 < len(f); i++ {
		v := f[i+1]
		switch string(f[i]) {
		case "rank":
			rank = atoiOr(v, -1)
		case "nranks", "nRanks":
			nranks = atoiOr(v, -1)
		case "nNodes":
			nnodes = atoiOr(v, -1)
		case "cudaDev":
			if d := atoiOr(v, -1); d >= 0 {
				cudaDev = &d
			}
		case "nvmlDev":
			if d := atoiOr(v, -1); d >= 0 {
				nvmlDev = &d
			}
		case "busId":
			busID = string(v)
		case "commId":
			commID = string(v)
		case "MNNVL":
			mnnvl = string(v) == "1"
		default:
			continue
		}
		i++
	}
	if rank < 0 || rank > 1<<30 {
		return
	}
	complete := bytes.Contains(m, []byte("Init COMPLETE"))
	ci := int32(-1)
	if commID != "" {
		ci = a.comm(commID, no)
	} else if p != nil && p.ptrs != nil {
		if c, ok := p.ptrs[ptr]; ok {
			ci = c
		}
	}
	if ci >= 0 {
		c := a.comms[ci]
		if nranks > 0 && c.nranks == 0 {
			c.nranks = nranks
		}
		if nnodes > 0 {
			c.nnodes = nnodes
		}
		if mnnvl {
			c.mnnvl = true
		}
		if complete {
			c.complete++
		}
		if p != nil {
			if p.ptrs == nil {
				p.ptrs = map[string]int32{}
			}
			if len(p.ptrs) >= maxProcComms {
				clear(p.ptrs)
			}
			p.ptrs[ptr] = ci
			found := false
			for _, pc := range p.comms {
				if pc.comm == ci {
					found = true
					break
				}
			}
			if !found {
				if len(p.comms) >= maxProcComms { // keep the latest ones
					p.comms = append(p.comms[:0], p.comms[1:]...)
				}
				p.comms = append(p.comms, procComm{comm: ci, tid: h.tid})
			}
		}
	} else if nnodes > 0 {
		// topology line of a communicator we only know by pointer
		a.orphanNNodes(nnodes)
	}
	if nnodes > 0 {
		return // the nNodes line carries no device facts
	}
	if host >= 0 {
		a.placeRank(ci, int32(rank), host)
		if busID != "" {
			hs := a.hosts[host]
			hs.gpus = addHostSet(hs.gpus, busID, &a.setBudget)
		}
	}
	r := Rank{Rank: rank, CUDADev: cudaDev, NVMLDev: nvmlDev, BusID: busID, CommID: commID,
		Source: "init", InitComplete: complete, Line: no}
	if nranks > 0 {
		r.NRanks = nranks
	}
	if host >= 0 {
		r.Host = a.hosts[host].name
	}
	if h.hasPID {
		r.PID = h.pid
	}
	a.addRankRec(rankKey{comm: ci, rank: int32(rank)}, r)
}

// orphanNNodes keeps nNodes of communicators known only by pointer in a
// pseudo communicator so that "several nodes" is still known.
func (a *analyzer) orphanNNodes(n int) {
	ci := a.comm("(unknown)", 0)
	if ci >= 0 && n > a.comms[ci].nnodes {
		a.comms[ci].nnodes = n
	}
}

func atoiOr(b []byte, def int) int {
	if len(b) == 0 || len(b) > 9 {
		return def
	}
	n := 0
	for _, c := range b {
		if !isDigit(c) {
			return def
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func firstToken(b []byte) []byte {
	b = bytes.TrimLeft(b, " \t")
	if i := bytes.IndexAny(b, " \t"); i >= 0 {
		return b[:i]
	}
	return b
}

// clip copies at most maxTextLen bytes of b into a string.
func clip(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > maxTextLen {
		return string(b[:maxTextLen]) + "..."
	}
	return string(b)
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

func (a *analyzer) envLine(m []byte, no int64) {
	i := bytes.Index(m, sEnvTo)
	if i < 0 {
		return
	}
	name := string(m[:i])
	val := bytes.TrimSpace(m[i+len(sEnvTo):])
	val = bytes.TrimSuffix(val, []byte("."))
	k := envKey{name, clip(val)}
	if v := a.env[k]; v != nil {
		v.procs++
		return
	}
	if len(a.env) >= maxEnv {
		return
	}
	a.env[k] = &envVal{procs: 1, line: no}
	a.envOrder = append(a.envOrder, k)
}

func (a *analyzer) pluginMsg(host int32, m []byte, no int64) {
	k := reDigits.ReplaceAllString(string(m), "#")
	if a.pluginSeen[k] || len(a.pluginMsgs) >= maxPluginMsgs {
		return
	}
	a.pluginSeen[k] = true
	ev := Event{Line: no, Level: "info", Message: clip(m), Count: 1}
	if host >= 0 {
		ev.Host = a.hosts[host].name
	}
	a.pluginMsgs = append(a.pluginMsgs, ev)
}

// netLine handles "NET/<plugin> ..." lines.
func (a *analyzer) netLine(host int32, p *procState, m, raw []byte, no int64) {
	r := m[len(pfxNET):]
	j := 0
	for j < len(r) && r[j] != ' ' && r[j] != ':' {
		j++
	}
	plugin := r[:j]
	r = bytes.TrimLeft(r[j:], " ")
	colon := len(r) > 0 && r[0] == ':'
	if colon {
		r = bytes.TrimLeft(r[1:], " ")
	}
	var hs *hostState
	if host >= 0 {
		hs = a.hosts[host]
	}
	switch {
	case string(plugin) == "Plugin":
		a.pluginMsg(host, m, no)
	case string(plugin) == "OFI":
		a.ofiLine(p, r, raw, no)
	case bytes.HasPrefix(r, pfxGPUDirect):
		a.hcaGDRLine(host, string(plugin), r[len(pfxGPUDirect):], raw, no)
	case bytes.HasPrefix(r, []byte("Using ")) && colon:
		if hs == nil {
			return
		}
		if string(plugin) == "IB" {
			a.ibUsing(hs, r[len("Using "):], no)
		} else if string(plugin) == "Socket" {
			for _, t := range bytes.Fields(r[len("Using "):]) {
				if t[0] == '[' {
					if k := bytes.IndexByte(t, ']'); k > 0 {
						hs.socket = addHostSet(hs.socket, string(t[k+1:]), &a.setBudget)
					}
				}
			}
		}
	case bytes.HasPrefix(r, []byte("No device found")):
		if hs != nil && string(plugin) == "IB" {
			hs.noIB = true
		}
		a.pluginMsg(host, m, no)
	default:
		if string(plugin) != "IB" && string(plugin) != "Socket" &&
			(bytes.Contains(r, []byte("ver")) || bytes.Contains(r, []byte("plugin"))) {
			a.pluginMsg(host, m, no)
		}
	}
}

// ibUsing reads "[0]mlx5_0:1/RoCE [1]mlx5_2:1/IB [RO]; OOB ib0:10.0.0.1<0>".
func (a *analyzer) ibUsing(hs *hostState, r []byte, no int64) {
	if len(hs.ib) > 0 {
		return
	}
	if i := bytes.Index(r, []byte("OOB ")); i >= 0 {
		hs.ibOOB = string(firstToken(r[i+4:]))
		r = r[:i]
	}
	for _, t := range bytes.Fields(r) {
		t = bytes.TrimRight(t, ";")
		if len(t) < 3 || t[0] != '[' {
			continue
		}
		k := bytes.IndexByte(t, ']')
		if k < 0 {
			continue
		}
		idx := atoiOr(t[1:k], -1)
		if idx < 0 {
			continue // [RO]
		}
		d := IBDevice{Index: idx, Line: no}
		rest := t[k+1:]
		if s := bytes.IndexByte(rest, '/'); s >= 0 {
			d.LinkLayer = string(rest[s+1:])
			rest = rest[:s]
		}
		if c := bytes.LastIndexByte(rest, ':'); c >= 0 {
			d.Port = atoiOr(rest[c+1:], 0)
			rest = rest[:c]
		}
		d.Name = string(rest)
		if len(hs.ib) < maxSmallSet && a.spend() {
			hs.ib = append(hs.ib, d)
		}
	}
}

func (a *analyzer) ofiLine(p *procState, r, raw []byte, no int64) {
	switch {
	case bytes.HasPrefix(r, []byte("Selected Provider is ")):
		s := r[len("Selected Provider is "):]
		a.ofiProvider = string(firstToken(s))
		if i := bytes.Index(s, []byte("(found ")); i >= 0 {
			a.ofiNICs = atoiOr(firstToken(s[i+7:]), 0)
		}
	case bytes.HasPrefix(r, []byte("Initializing ")):
		if p != nil && p.ofiVersion == "" {
			p.ofiVersion = string(bytes.TrimSpace(r[len("Initializing "):]))
			p.ofiLine, p.ofiText = no, clip(raw)
		}
	case bytes.HasPrefix(r, []byte("Using Libfabric version ")):
		a.libfabric = string(firstToken(r[len("Using Libfabric version "):]))
	}
}

// hcaGDRLine reads "Enabled for HCA 0 'mlx5_0'" (after "GPU Direct RDMA ").
func (a *analyzer) hcaGDRLine(host int32, plugin string, r, raw []byte, no int64) {
	var enabled bool
	switch {
	case bytes.HasPrefix(r, []byte("Enabled")):
		enabled = true
	case bytes.HasPrefix(r, []byte("Disabled")):
	default:
		return
	}
	i := bytes.Index(r, []byte("HCA "))
	if i < 0 {
		return
	}
	s := r[i+4:]
	idx := atoiOr(firstToken(s), -1)
	name := ""
	if q := bytes.IndexByte(s, '\''); q >= 0 {
		if q2 := bytes.IndexByte(s[q+1:], '\''); q2 >= 0 {
			name = string(s[q+1 : q+1+q2])
		}
	}
	k := gpuGDRKey{host: host, gpu: plugin + "/" + name, hca: idx}
	if a.hcaSeen[k] || len(a.hcaGDR) >= maxHCAGDR {
		return
	}
	a.hcaSeen[k] = true
	e := HCAGDR{Plugin: plugin, Index: idx, Name: name, Enabled: enabled, Line: no, Text: clip(raw)}
	if host >= 0 {
		e.Host = a.hosts[host].name
	}
	a.hcaGDR = append(a.hcaGDR, e)
}

// gpuGDRLine reads "GPU Direct RDMA Enabled for GPU 81000 / HCA 1 (distance
// 6 <= 7), read 0" and its Disabled form.
func (a *analyzer) gpuGDRLine(host int32, m, raw []byte, no int64) {
	r := m[len(pfxGPUDirect):]
	var enabled bool
	switch {
	case bytes.HasPrefix(r, []byte("Enabled for GPU ")):
		enabled, r = true, r[len("Enabled for GPU "):]
	case bytes.HasPrefix(r, []byte("Disabled for GPU ")):
		r = r[len("Disabled for GPU "):]
	default:
		return
	}
	gpu := string(firstToken(r))
	hca := -1
	if i := bytes.Index(r, []byte("HCA ")); i >= 0 {
		hca = atoiOr(bytes.TrimRight(firstToken(r[i+4:]), ",)"), -1)
	}
	dist, lim := -1, -1
	if i := bytes.Index(r, []byte("distance ")); i >= 0 {
		f := bytes.Fields(r[i+9:])
		if len(f) >= 3 {
			dist = atoiOr(f[0], -1)
			lim = atoiOr(bytes.TrimRight(f[2], "),"), -1)
		}
	}
	k := gpuGDRKey{host: host, gpu: gpu, hca: hca}
	if a.gpuSeen[k] || len(a.gpuGDR) >= maxGPUGDR {
		return
	}
	a.gpuSeen[k] = true
	e := GPUGDR{GPU: gpu, HCA: hca, Enabled: enabled, Distance: dist, Limit: lim, Line: no, Text: clip(raw)}
	if host >= 0 {
		e.Host = a.hosts[host].name
	}
	a.gpuGDR = append(a.gpuGDR, e)
}

// countsLine reads "24 coll channels, 24 collnet channels, 0 nvls channels,
// 32 p2p channels, 32 p2p channels per peer" (older releases print fewer).
func (a *analyzer) countsLine(m, raw []byte, spliced bool, no int64) {
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
	if v := a.counts[k]; v != nil {
		v.procs++
		return
	}
	if len(a.counts) >= maxCounts {
		return
	}
	a.counts[k] = &countVal{procs: 1, line: no, text: clip(raw)}
	a.countOrder = append(a.countOrder, k)
}

var patternNames = map[int]string{
	1: "balanced tree", 2: "split tree", 3: "tree", 4: "ring", 5: "nvls", 6: "collnet direct",
}

// patternLine reads "Pattern 4, crossNic 0, nChannels 12, bw 20.000000/20.000000,
// type NVL/PIX, sameChannels 1".
func (a *analyzer) patternLine(host int32, m []byte, no int64) {
	if len(a.patterns) >= maxPatterns {
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
				pt.BWIntra, _ = strconv.ParseFloat(string(f[1][:s]), 64)
				pt.BWInter, _ = strconv.ParseFloat(string(f[1][s+1:]), 64)
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
	if host >= 0 {
		pt.Host = a.hosts[host].name
	}
	if a.patternSeen[pt] {
		return
	}
	a.patternSeen[pt] = true
	pt.Line = no
	a.patterns = append(a.patterns, pt)
}
