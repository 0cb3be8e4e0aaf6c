package dossier

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// Job is a job of several nodes whose results were brought into this
// node's dossier (`run --include`): a multi-rank `bench nccl`. It says
// which of its ranks ran here, on which GPU, which nodes each reached and
// how NCCL carried that traffic (its own log lines), so that the fabric
// hop of those GPUs' data paths is measured, naming the peer.
type Job struct {
	// Name is the job's name in this dossier ("job1", ...): the Run of its
	// measurements and the prefix of its results' subjects.
	Name string `json:"name"`
	// Path is the results.json read, SHA256 its digest.
	Path    string `json:"path"`
	SHA256  string `json:"sha256,omitempty"`
	Command string `json:"command"`
	// Host is where rank 0 ran and wrote the file, StartedAt when.
	Host      string    `json:"host"`
	StartedAt time.Time `json:"started_at"`
	Complete  bool      `json:"complete"`
	Error     string    `json:"error,omitempty"`
	WorldSize int       `json:"world_size"`
	Split     string    `json:"split,omitempty"`
	// Nodes are the job's nodes as NCCL counted them (host names, or
	// "HOST (NCCL_HOSTID X)" where ranks set one), in rank order.
	Nodes []string `json:"nodes"`
	// Ranks are the job's ranks that ran on this node (bench nccl).
	Ranks []JobRank `json:"ranks"`
	// Pairs are the GPU–NIC pairs of this node that a bench rdma measured
	// (loopback, or one end of a cross-node rail).
	Pairs []JobPair `json:"pairs,omitempty"`
	// Status is the worst of its results (Results: references).
	Status  result.Status `json:"status"`
	Results []string      `json:"results"`
}

// JobRank is one rank of a Job that ran on this node.
type JobRank struct {
	Rank int `json:"rank"`
	// Node is the rank's node as the job counted it.
	Node string `json:"node"`
	// GPU is this node's GPU the rank drove (-1: its bus id is not one of
	// this node's GPUs), BusID the bus id it reported.
	GPU   int    `json:"gpu"`
	BusID string `json:"bus_id"`
	// Peers are the other nodes the rank exchanged data with over the
	// network, as NCCL logged its connections (every other node of the job
	// when the log does not say).
	Peers []string `json:"peers"`
	// Transports are the network transports of those connections
	// ("NET/Socket", "NET/IB"), NICs this node's devices NCCL named for
	// them, Connections how many distinct connections NCCL logged.
	Transports  []string `json:"transports"`
	NICs        []string `json:"nics,omitempty"`
	Connections int      `json:"connections"`
	// GDR is how those connections moved GPU memory: GDRUsedDirect (every
	// one GPU Direct RDMA), GDRUsedHostStaged (none: through host memory),
	// GDRUsedMixed, or GDRUsedUnknown (NCCL's log of the rank's network
	// connections was not read).
	GDR string `json:"gdr"`
	// Registration is how GPU memory was registered with the NIC for that
	// traffic (RegDMABuf, RegPeerMem, RegEither where NCCL's log and the
	// node's modules do not tell), "" when not GPU Direct RDMA.
	Registration string `json:"registration,omitempty"`
	Error        string `json:"error,omitempty"`
}

// JobPair is one GPU–NIC pair of this node an included bench rdma ran.
type JobPair struct {
	// GPU is this node's GPU (-1: its bus id is not one of this node's).
	GPU   int    `json:"gpu"`
	BusID string `json:"bus_id"`
	NIC   string `json:"nic"`
	Port  int    `json:"port"`
	// Peer is the other end of a cross-node rail ("HOST GPUn-NIC"), ""
	// for a loopback on this node.
	Peer string `json:"peer,omitempty"`
	// Memory are the memories its runs moved: host (the control), cuda
	// (GPU memory registered through nvidia-peermem), cuda-dmabuf
	// (registered through dma-buf).
	Memory  []string `json:"memory"`
	Results []string `json:"results"`
}

// Memories of a bench rdma run (rdma.MemHost, MemPeerMem, MemDMABuf).
const (
	MemHost    = "host"
	MemPeerMem = "cuda"
	MemDMABuf  = "cuda-dmabuf"
)

// How a rank's inter-node traffic moved GPU memory, as NCCL logged it.
const (
	GDRUsedDirect     = "gdrdma"
	GDRUsedHostStaged = "host-staged"
	GDRUsedMixed      = "mixed"
	GDRUsedUnknown    = "unknown"
)

// JobGDRID is the ID of the result that judges how a rank of an included
// job moved GPU memory across the fabric.
const JobGDRID = "gdr.used"

// JobDataID is the ID of the result that says whether an included job's
// data arrived correct (nccl-tests' -c: every row's outputs checked).
const JobDataID = "job.data"

// JobInput is what app read of an included job: its results.json, as the
// dossier needs it.
type JobInput struct {
	Name, Path, SHA256, Command, Host string
	StartedAt                         time.Time
	Complete                          bool
	Error                             string
	WorldSize                         int
	Split                             string
	Ranks                             []JobInputRank
	// Pairs are a bench rdma's pairs (Command "bench-rdma").
	Pairs []JobInputPair
	// Logs is NCCL's log of every rank, read as one job (nil: none).
	Logs *ncclog.Report
	// Results are the job's own verdicts (its bandwidth judgements, rank
	// failures), as rank 0 wrote them.
	Results []result.Result
	// Rows are the job's measured rows, Checked whether their outputs
	// were checked (-c), Wrong the wrong values found.
	Rows    int
	Checked bool
	Wrong   int64
}

// data is the job's JobDataID result: whether the bytes that moved
// arrived correct.
func (in JobInput) data() result.Result {
	r := result.Result{ID: JobDataID, Source: "job", Subject: in.Name}
	switch {
	case in.Wrong > 0:
		r.Status, r.Reason = result.Fail, "WrongData"
		r.Message = fmt.Sprintf("%d wrong values in the outputs of the job's %d rows", in.Wrong, in.Rows)
		r.Remedy = "a collective that returns wrong data is a hardware or driver fault: find the rank (gdrcheck bench nccl prints #wrong per row) and test its GPU and links"
	case in.Rows == 0:
		r.Status, r.Reason, r.Message = result.Unknown, "NoRows", "the job measured no row"
	case !in.Checked:
		r.Status, r.Reason = result.Unknown, "NotChecked"
		r.Message = fmt.Sprintf("the job's %d rows ran without checking their outputs (-c 0): traffic moved, its correctness was not validated", in.Rows)
		r.Remedy = "run the job with -c 1 (the default)"
	default:
		r.Status, r.Reason = result.Pass, "DataCorrect"
		r.Message = fmt.Sprintf("every output of the job's %d rows was checked: no wrong value", in.Rows)
	}
	return r
}

// JobInputPair is one pair of an included bench rdma, seen from one of
// its ends: a loopback's, or each end of a cross-node rail.
type JobInputPair struct {
	// Host is the end's node ("" in a loopback: the job's host), BusID its
	// GPU, NIC and Port its NIC; Peer names the other end ("" loopback).
	Host, BusID, NIC string
	Port             int
	Peer             string
	// Subject is the subject of the pair's results before "/MEMORY"
	// (rdma.Entry.Subject), Memory the memories its runs moved.
	Subject string
	Memory  []string
}

// JobInputRank is one rank of an included job.
type JobInputRank struct {
	Rank   int
	Host   string
	HostID string // NCCL_HOSTID where the rank set one
	BusID  string
	Error  string
}

// node is the rank's node as NCCL counts nodes (by NCCL_HOSTID where set).
func (r JobInputRank) node() string {
	if r.HostID != "" {
		return fmt.Sprintf("%s (NCCL_HOSTID %s)", r.Host, r.HostID)
	}
	return r.Host
}

// SameHost says whether two host names name one machine: equal, or equal
// once a domain is cut from the longer (a rank may print its FQDN).
func SameHost(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if strings.EqualFold(a, b) {
		return true
	}
	short := func(s string) string { s, _, _ = strings.Cut(s, "."); return s }
	return (strings.Contains(a, ".") != strings.Contains(b, ".")) && strings.EqualFold(short(a), short(b))
}

// JobContext is the node an included job is placed on.
type JobContext struct {
	// Self is the node's name, Host the node.
	Self string
	Host *topology.Host
	// GDR: the node is meant for GPU Direct RDMA (host-staged traffic
	// fails); Mode is the site profile's gdr.mode ("", any, peermem,
	// dmabuf): the registration path the traffic must have used.
	GDR  bool
	Mode string
	// PeerMem says whether nvidia_peermem is loaded on the node (1 yes, 0
	// no, -1 not known): with NCCL's log it tells the registration mode.
	PeerMem int
}

// Registration modes (JobRank.Registration).
const (
	RegDMABuf  = "dmabuf"
	RegPeerMem = "peermem"
	RegEither  = "dmabuf-or-peermem"
	JobModeID  = "gdr.mode-used"
)

// NewJob places the included job in on host h (named self): its ranks
// that ran here, their GPUs, peers and how NCCL carried their inter-node
// traffic. It returns the job and its results: the job's own verdicts
// (subjects prefixed with the job's name, source "job") and one JobGDRID
// result per rank of this node that reached another node (gdr: the node
// is meant for GPU Direct RDMA, so host-staged traffic fails; otherwise it
// is a skip). An error says why the job is not this node's: none of its
// ranks ran here.
func NewJob(in JobInput, c JobContext) (Job, []result.Result, error) {
	self, h := c.Self, c.Host
	j := Job{Name: in.Name, Path: in.Path, SHA256: in.SHA256, Command: in.Command, Host: in.Host, StartedAt: in.StartedAt,
		Complete: in.Complete, Error: in.Error, WorldSize: in.WorldSize, Split: in.Split, Nodes: []string{}, Ranks: []JobRank{}, Results: []string{}}
	nodeOf := map[int]string{}
	var hosts []string
	for _, r := range in.Ranks {
		nodeOf[r.Rank] = r.node()
		if !slices.Contains(j.Nodes, r.node()) {
			j.Nodes = append(j.Nodes, r.node())
		}
		if !slices.Contains(hosts, r.Host) {
			hosts = append(hosts, r.Host)
		}
	}
	var rs []result.Result
	if in.Command != "bench-rdma" {
		rs = append(rs, in.data())
	}
	// The pairs' results by their original subject (before the job's name).
	bySubject := map[string][]string{}
	for _, r := range in.Results {
		orig := r.Subject
		r.Source = "job"
		r.Subject = strings.TrimSpace(in.Name + " " + r.Subject)
		rs = append(rs, r)
		bySubject[orig] = append(bySubject[orig], ResultRef(r))
	}
	gpus := map[string]*topology.GPU{}
	if h != nil {
		for _, g := range h.GPUs {
			gpus[pci.NormalizeBusID(g.Address)] = g
		}
	}
	for _, r := range in.Ranks {
		if !SameHost(r.Host, self) {
			continue
		}
		jr := JobRank{Rank: r.Rank, Node: r.node(), GPU: -1, BusID: r.BusID, Peers: []string{}, Transports: []string{}, GDR: GDRUsedUnknown, Error: r.Error}
		if g := gpus[pci.NormalizeBusID(r.BusID)]; g != nil && r.BusID != "" {
			jr.GPU = g.Index
		}
		jr.place(in, nodeOf)
		jr.Registration = jr.registration(in.Logs, in.WorldSize, c.PeerMem)
		j.Ranks = append(j.Ranks, jr)
		if res, ok := jr.judge(in.Name, c.GDR); ok {
			rs = append(rs, res)
		}
		if res, ok := jr.judgeMode(in.Name, c.Mode); ok {
			rs = append(rs, res)
		}
	}
	for _, p := range in.Pairs {
		host := cmp.Or(p.Host, in.Host)
		if !SameHost(host, self) {
			if !slices.Contains(hosts, host) {
				hosts = append(hosts, host)
			}
			continue
		}
		jp := JobPair{GPU: -1, BusID: p.BusID, NIC: p.NIC, Port: p.Port, Peer: p.Peer, Memory: append([]string{}, p.Memory...), Results: []string{}}
		if g := gpus[pci.NormalizeBusID(p.BusID)]; g != nil && p.BusID != "" {
			jp.GPU = g.Index
		}
		for _, mem := range []string{MemHost, MemPeerMem, MemDMABuf} {
			jp.Results = append(jp.Results, bySubject[p.Subject+"/"+mem]...)
		}
		j.Pairs = append(j.Pairs, jp)
		if res, ok := jp.judgeMode(in.Name, c.Mode); ok {
			rs = append(rs, res)
		}
	}
	if len(j.Ranks) == 0 && len(j.Pairs) == 0 {
		what := fmt.Sprintf("%d ranks", len(in.Ranks))
		if in.Command == "bench-rdma" {
			what = fmt.Sprintf("%d pairs", len(in.Pairs))
		}
		return Job{}, nil, fmt.Errorf("none of its %s ran on this node (%s): they ran on %s", what, self, strings.Join(hosts, ", "))
	}
	var r refs
	for _, x := range rs {
		j.Results = append(j.Results, ResultRef(x))
		r.sts = append(r.sts, x.Status)
	}
	j.Status = r.status()
	return j, rs, nil
}

// place fills the rank's peers, transports and GDR use from NCCL's log of
// the job: its network connections to ranks of other nodes. Connection
// rank numbers are the job's own in an unsplit job; in a split one they
// are the groups', so only the job's transports are known.
func (jr *JobRank) place(in JobInput, nodeOf map[int]string) {
	var direct, staged int
	seen := map[string]bool{}
	if l := in.Logs; l != nil && (in.Split == "" || in.Split == "all") {
		for _, c := range l.Channels.Records {
			if c.Class != "net" && c.Class != "collnet" {
				continue
			}
			var other int
			switch {
			case c.From == jr.Rank:
				other = c.To
			case c.To == jr.Rank:
				other = c.From
			default:
				continue
			}
			peer, ok := nodeOf[other]
			if !ok || peer == jr.Node {
				continue
			}
			jr.Connections++
			if !slices.Contains(jr.Peers, peer) {
				jr.Peers = append(jr.Peers, peer)
			}
			if t := netTransport(c.Transport); !slices.Contains(jr.Transports, t) {
				jr.Transports = append(jr.Transports, t)
			}
			if c.GDRDMA {
				direct++
			} else {
				staged++
			}
			if c.From == jr.Rank && c.NetDev >= 0 {
				if n := nicOf(l, c.Host, c.NetDev); n != "" && !seen[n] {
					seen[n] = true
					jr.NICs = append(jr.NICs, n)
				}
			}
		}
	}
	switch {
	case direct > 0 && staged == 0:
		jr.GDR = GDRUsedDirect
	case staged > 0 && direct == 0:
		jr.GDR = GDRUsedHostStaged
	case direct > 0:
		jr.GDR = GDRUsedMixed
	}
	if len(jr.Peers) == 0 {
		// The log does not say which: every other node of the job.
		for _, n := range nodeOf {
			if n != jr.Node && !slices.Contains(jr.Peers, n) {
				jr.Peers = append(jr.Peers, n)
			}
		}
	}
	slices.Sort(jr.Peers)
	slices.Sort(jr.Transports)
}

// netTransport is a channel transport's network part: "NET/IB/3/GDRDMA"
// is "NET/IB".
func netTransport(t string) string {
	parts := strings.SplitN(t, "/", 3)
	if len(parts) >= 2 {
		return parts[0] + "/" + parts[1]
	}
	return t
}

// nicOf is the device NCCL numbered dev on host: an IB device's name, or
// the socket interface.
func nicOf(l *ncclog.Report, host string, dev int) string {
	for _, h := range l.Hosts {
		if h.Name != host {
			continue
		}
		for _, d := range h.IBDevices {
			if d.Index == dev {
				return fmt.Sprintf("%s:%d", d.Name, d.Port)
			}
		}
		if dev < len(h.SocketIfaces) {
			// "eth0:10.0.0.1<0>": the interface
			name, _, _ := strings.Cut(h.SocketIfaces[dev], ":")
			return name
		}
	}
	return ""
}

// judge is the rank's JobGDRID result: how its inter-node traffic moved
// GPU memory. A rank that reached no other node has none.
func (jr JobRank) judge(job string, gdr bool) (result.Result, bool) {
	gpu := "a GPU not on this node (" + jr.BusID + ")"
	if jr.GPU >= 0 {
		gpu = gpuLabel(jr.GPU)
	}
	r := result.Result{ID: JobGDRID, Source: "job", Subject: fmt.Sprintf("%s rank %d (%s)", job, jr.Rank, gpu)}
	peers := strings.Join(jr.Peers, ", ")
	over := strings.Join(jr.Transports, ", ")
	switch jr.GDR {
	case GDRUsedDirect:
		r.Status, r.Reason = result.Pass, "GDRDMA"
		r.Message = fmt.Sprintf("every one of the %d network connections to %s that NCCL's log details moved GPU memory through the NIC directly (%s, GDRDMA)", jr.Connections, peers, over)
	case GDRUsedHostStaged, GDRUsedMixed:
		n := "none"
		if jr.GDR == GDRUsedMixed {
			n = "only some"
		}
		r.Reason = "HostStaged"
		r.Message = fmt.Sprintf("%s of the %d network connections to %s that NCCL's log details used GPU Direct RDMA (%s): NCCL staged that traffic through host memory", n, jr.Connections, peers, over)
		r.Remedy = "make GPU memory registrable with the NIC (nvidia-peermem or dma-buf) and pair the GPU with an RDMA NIC under its PCIe switch; NCCL_NET_GDR_LEVEL, NCCL_IB_DISABLE and NCCL_NET decide what NCCL uses"
		r.Status = result.Fail
		if !gdr {
			r.Status = result.Skip
			r.Message += "; the site profile does not require GPU Direct RDMA (gdr.required: false)"
			r.Remedy = ""
		}
	default:
		if len(jr.Peers) == 0 {
			return result.Result{}, false // a job of one node: no fabric
		}
		r.Status, r.Reason = result.Unknown, "NotLogged"
		r.Message = fmt.Sprintf("NCCL's log of the job does not show how rank %d connected to %s", jr.Rank, peers)
		r.Remedy = "run the job with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS including INIT (gdrcheck bench nccl sets both unless they are set)"
	}
	return r, true
}

// jobFabric is what the included jobs measured from one GPU across the
// fabric: the evidence for its fabric hop (refs), the hop's name after
// the transports and peers ("NET/Socket to b (NCCL_HOSTID x)") and its
// detail, how GPU memory moved (a GDRUsed value), and the gdr.used
// results of its ranks. Detail is "" when no job reached another node
// from the GPU.
type jobFabric struct {
	refs         refs
	name, detail string
	used         string
	gdrRefs      []string
}

// fabric is jobFabric for GPU g.
func (e *evidence) fabric(g int) jobFabric {
	var f jobFabric
	var details, trs, peers []string
	for _, j := range e.jobs {
		cited := false
		for _, jr := range j.Ranks {
			if jr.GPU != g || len(jr.Peers) == 0 {
				continue
			}
			// The traffic: the job's own verdicts (data, bandwidth, ranks),
			// once however many of its ranks drove g.
			for _, ref := range j.Results {
				if st, ok := e.status[ref]; ok && !cited && !strings.HasPrefix(ref, RefResult+JobGDRID+" ") {
					f.refs.add(ref, st, true)
				}
			}
			cited = true
			over := strings.Join(jr.Transports, ", ")
			if over == "" {
				over = "the network"
			}
			d := fmt.Sprintf("%s rank %d to %s over %s", j.Name, jr.Rank, strings.Join(jr.Peers, ", "), over)
			if len(jr.NICs) > 0 {
				d += " from " + strings.Join(jr.NICs, ", ")
			}
			details = append(details, d)
			for _, ref := range j.Results {
				if strings.HasPrefix(ref, RefResult+JobGDRID+" "+j.Name+" rank "+fmt.Sprint(jr.Rank)+" ") {
					f.gdrRefs = append(f.gdrRefs, ref)
				}
			}
			for _, t := range jr.Transports {
				if !slices.Contains(trs, t) {
					trs = append(trs, t)
				}
			}
			for _, p := range jr.Peers {
				if !slices.Contains(peers, p) {
					peers = append(peers, p)
				}
			}
			switch {
			case f.used == "" || f.used == jr.GDR:
				f.used = jr.GDR
			case jr.GDR != GDRUsedUnknown && f.used != GDRUsedUnknown:
				f.used = GDRUsedMixed
			}
		}
	}
	if len(details) == 0 {
		return f
	}
	slices.Sort(trs)
	slices.Sort(peers)
	f.name = cmp.Or(strings.Join(trs, "+"), "network") + " to " + strings.Join(peers, ", ")
	f.detail = "measured by " + strings.Join(details, "; ")
	return f
}

// isJob says whether the NCCL run named name is an included job's.
func (e *evidence) isJob(name string) bool {
	return slices.ContainsFunc(e.jobs, func(j Job) bool { return j.Name == name })
}

// rdma is what the included bench rdma runs measured on GPU g's pairs
// with nic: GPU-memory runs (registration), every run (the NIC), the
// cross-node runs (port and fabric), and the fabric's detail naming the
// peers.
func (e *evidence) rdma(g int, nic string) (gpuMem, all, cross refs, detail string) {
	var peers []string
	for _, j := range e.jobs {
		for _, p := range j.Pairs {
			if p.GPU != g || p.NIC != nic {
				continue
			}
			for _, ref := range p.Results {
				st, ok := e.status[ref]
				if !ok {
					continue
				}
				all.add(ref, st, true)
				if strings.HasSuffix(ref, "/"+MemPeerMem) || strings.HasSuffix(ref, "/"+MemDMABuf) {
					gpuMem.add(ref, st, true)
				}
				if p.Peer != "" {
					cross.add(ref, st, true)
				}
			}
			if p.Peer != "" {
				peers = append(peers, fmt.Sprintf("%s: bench rdma %s:%d to %s (%s)", j.Name, p.NIC, p.Port, p.Peer, strings.Join(p.Memory, ", ")))
			}
		}
	}
	if len(peers) > 0 {
		detail = "measured by " + strings.Join(peers, "; ")
	}
	return gpuMem, all, cross, detail
}

// registration is how the rank's GPU Direct RDMA traffic registered GPU
// memory. NCCL does not log the path it takes; it prefers dma-buf when
// CUDA offers it for the GPU ("DMA-BUF is available on GPU device N") and
// the NIC's plugin can use it, else nvidia-peermem. So: no DMA-BUF line
// means nvidia-peermem; a DMA-BUF line with nvidia_peermem not loaded
// means dma-buf; a DMA-BUF line with nvidia_peermem loaded (or not known)
// could be either.
func (jr JobRank) registration(l *ncclog.Report, world, peermem int) string {
	if jr.GDR != GDRUsedDirect || l == nil {
		return ""
	}
	host, dev := "", -1
	for _, r := range l.Ranks {
		// The job's own communicator: a split's ranks number other processes.
		if r.Rank == jr.Rank && r.CUDADev != nil && r.NRanks == world {
			host, dev = r.Host, *r.CUDADev
			break
		}
	}
	if dev < 0 {
		return ""
	}
	dmabuf := false
	for _, h := range l.Hosts {
		if h.Name == host && slices.Contains(h.DMABufGPUs, dev) {
			dmabuf = true
		}
	}
	switch {
	case !dmabuf:
		return RegPeerMem
	case peermem == 0:
		return RegDMABuf
	}
	return RegEither
}

// judgeMode is the rank's JobModeID result against the site profile's
// gdr.mode; none when the profile names no mode or the rank's traffic
// was not GPU Direct RDMA (gdr.used judges that).
func (jr JobRank) judgeMode(job, mode string) (result.Result, bool) {
	if (mode != RegDMABuf && mode != RegPeerMem) || jr.GDR != GDRUsedDirect {
		return result.Result{}, false
	}
	r := result.Result{ID: JobModeID, Source: "job", Subject: fmt.Sprintf("%s rank %d (GPU%d)", job, jr.Rank, jr.GPU)}
	switch jr.Registration {
	case mode:
		r.Status, r.Reason, r.Message = result.Pass, "AsProfiled", fmt.Sprintf("GPU memory was registered through %s, as the site profile's gdr.mode says", regText(mode))
	case RegEither, "":
		r.Status, r.Reason = result.Unknown, "NotLogged"
		r.Message = fmt.Sprintf("NCCL's log does not tell whether GPU memory was registered through dma-buf or nvidia-peermem (the site profile wants %s)", regText(mode))
		r.Remedy = "unload nvidia_peermem where the site relies on dma-buf (NCCL then has no other path), or set NCCL_DMABUF_ENABLE=0 where it relies on nvidia-peermem"
	default:
		r.Status, r.Reason = result.Fail, "RegistrationMismatch"
		r.Message = fmt.Sprintf("GPU memory was registered through %s, not %s as the site profile's gdr.mode says: a silent switch between the two is a known cause of large bandwidth losses", regText(jr.Registration), regText(mode))
		r.Remedy = "load the module the site relies on (nvidia_peermem) or enable dma-buf (open kernel module, kernel 5.12+, NCCL_DMABUF_ENABLE=1), and make the nodes alike"
	}
	return r, true
}

// judgeMode is the pair's JobModeID result: which registration its
// GPU-memory runs used against the site profile's gdr.mode.
func (jp JobPair) judgeMode(job, mode string) (result.Result, bool) {
	want := map[string]string{RegDMABuf: MemDMABuf, RegPeerMem: MemPeerMem}[mode]
	if want == "" || !(slices.Contains(jp.Memory, MemDMABuf) || slices.Contains(jp.Memory, MemPeerMem)) {
		return result.Result{}, false
	}
	r := result.Result{ID: JobModeID, Source: "job", Subject: fmt.Sprintf("%s GPU%d-%s", job, jp.GPU, jp.NIC)}
	if slices.Contains(jp.Memory, want) {
		r.Status, r.Reason, r.Message = result.Pass, "AsProfiled", fmt.Sprintf("perftest moved GPU memory registered through %s, as the site profile's gdr.mode says", regText(mode))
		return r, true
	}
	r.Status, r.Reason = result.Fail, "RegistrationMismatch"
	r.Message = fmt.Sprintf("perftest could only register GPU memory through %s, not %s as the site profile's gdr.mode says", regText(map[string]string{MemDMABuf: RegDMABuf, MemPeerMem: RegPeerMem}[otherMem(want)]), regText(mode))
	r.Remedy = "make the registration path the site relies on available on this node (gdr.kernel-module says what is missing)"
	return r, true
}

func otherMem(m string) string {
	if m == MemDMABuf {
		return MemPeerMem
	}
	return MemDMABuf
}

func regText(m string) string {
	switch m {
	case RegDMABuf:
		return "dma-buf"
	case RegPeerMem:
		return "nvidia-peermem"
	}
	return m
}
