// Package rdma plans and judges GPU-memory RDMA tests with perftest, one per
// GPU–NIC pair: which GPU (by PCI bus order, as CUDA_DEVICE_ORDER=PCI_BUS_ID
// numbers them), which NIC and port, which registration path (nvidia-peermem
// or dma-buf), the server and client command lines, the host-memory control
// and what the pair should reach. It is pure: the runner that executes a plan
// lives in internal/bench (RunRDMA), the use-case in internal/app.
//
// Modes: loopback (server and client on this host), and cross-node: one
// rank per node under a launcher, ranks 2k and 2k+1 a node pair, rail r of
// the even rank (the server) against rail r of the odd rank (the client).
// This package plans a node's side of it, pairs two sides' rails
// (PairRails), merges what the two sides saw of each run (Merge, Combine)
// and judges the result; the runner is bench.RunRDMACross, the rendezvous
// that carries the sides and the runs' signals internal/rendezvous.
package rdma

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/topology"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// Tests perftest offers here.
const (
	WriteBW  = "ib_write_bw"
	ReadBW   = "ib_read_bw"
	SendBW   = "ib_send_bw"
	WriteLat = "ib_write_lat"
)

// Tests lists the perftest tools bench rdma runs, the default first.
func Tests() []string { return []string{WriteBW, ReadBW, SendBW, WriteLat} }

// IsLatency reports a latency test (no bandwidth, no line-rate judgement).
func IsLatency(test string) bool { return strings.HasSuffix(test, "_lat") }

// Modes.
const (
	// ModeLoopback: server and client on this host.
	ModeLoopback = "loopback"
	// ModeCrossNode: server on one node (the even rank of a node pair),
	// client on the other (the odd rank), rail by rail. A plan entry's
	// Server and Client are this node's commands in either role; the
	// client's last argument is PeerAddr until the peer's server says where
	// it listens.
	ModeCrossNode = "cross-node"
)

// PeerAddr stands for the peer server's address in a cross-node plan's
// client commands.
const PeerAddr = "<server-addr>"

// Loopback kinds, an entry's Mode.
const (
	// LoopTwoNICs: client on the pair's NIC, server on a sibling NIC (the
	// other port or function of the same card): the data leaves the card,
	// crosses the cable and the switch, and comes back.
	LoopTwoNICs = "loopback, two NICs"
	// LoopOneNIC: server and client on the same NIC: proves GPU memory
	// registers and the NIC reaches it over PCIe, not the cables.
	LoopOneNIC = "loopback, one NIC"
)

// Memory kinds of a run.
const (
	MemPeerMem = "cuda"        // --use_cuda=N through nvidia-peermem
	MemDMABuf  = "cuda-dmabuf" // --use_cuda=N --use_cuda_dmabuf
	MemHost    = "host"        // the control
)

// DefaultTCPPort is perftest's own default out-of-band port.
const DefaultTCPPort = 18515

// Registration is how this node registers GPU memory with a NIC, from the
// collected facts (checks.Registration).
type Registration struct {
	// PeerMem names the loaded peer-memory module ("" none).
	PeerMem string `json:"peermem,omitempty"`
	// DMABuf: the open kernel module, the kernel and the RDMA driver allow
	// dma-buf registration.
	DMABuf bool `json:"dmabuf"`
	// Known: both answers could be read.
	Known bool `json:"known"`
	// Why is the dma-buf answer's reason.
	Why string `json:"why,omitempty"`
}

// NCCLPath is the path NCCL would use: dma-buf where possible (NCCL 2.13 and
// later, NCCL_DMABUF_ENABLE=1 by default), else nvidia-peermem.
func (r Registration) NCCLPath() string {
	switch {
	case r.DMABuf:
		return MemDMABuf
	case r.PeerMem != "":
		return MemPeerMem
	}
	return ""
}

// PairSpec is one --pairs item: a GPU (CUDA index in PCI bus order) and a
// NIC by name.
type PairSpec struct {
	GPU int
	NIC string
}

// ParsePairs reads --pairs: "0:mlx5_0,1:mlx5_3".
func ParsePairs(s string) ([]PairSpec, error) {
	var out []PairSpec
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		g, n, ok := strings.Cut(item, ":")
		gi, err := strconv.Atoi(g)
		if !ok || err != nil || gi < 0 || n == "" {
			return nil, fmt.Errorf("--pairs item %d %q: want GPU:NIC, e.g. 0:mlx5_0", i+1, item)
		}
		out = append(out, PairSpec{GPU: gi, NIC: n})
	}
	return out, nil
}

// Options choose the tests. Zero values take the defaults from the NIC.
type Options struct {
	Mode string // "" is loopback
	Test string // "" is ib_write_bw
	// Size is one message size in bytes; 0 sweeps all sizes (-a).
	Size int64
	// TCPPort is the first out-of-band port; each run takes the next.
	TCPPort int
	// GIDIndex for RoCE (-x); negative lets perftest choose.
	GIDIndex int
	MTU      int // -m; 0: the port's active MTU (perftest's default)
	QPs      int // -q; 0: perftest's default (1)
	Pairs    []PairSpec
	// Iters (-n) or Duration (-D seconds); zero: perftest's defaults.
	Iters    int
	Duration int
	// Registration is the node's registration path.
	Registration Registration
	// Rails selects rails (pairs by their index in the pairing) in
	// cross-node mode; nil: all.
	Rails []int
	// Concurrent runs every rail at once in cross-node mode (each run has
	// its own TCP port); default one rail at a time.
	Concurrent bool
}

// Cmd is one perftest command line.
type Cmd struct {
	Tool string   `json:"tool"`
	Args []string `json:"args"`
	// Env is set for the process (CUDA_DEVICE_ORDER=PCI_BUS_ID for GPU
	// memory, so that --use_cuda=N is the N-th GPU by bus id).
	Env []string `json:"env,omitempty"`
}

// Line is the command as a shell would take it.
func (c Cmd) Line() string {
	parts := append(slices.Clone(c.Env), c.Tool)
	return strings.Join(append(parts, c.Args...), " ")
}

// Run is one server/client pair of commands: one memory kind on one pair.
type Run struct {
	Memory  string `json:"memory"`
	TCPPort int    `json:"tcp_port"`
	Server  Cmd    `json:"server"`
	Client  Cmd    `json:"client"`
	// NCCL: the registration path NCCL would use.
	NCCL bool `json:"nccl_path,omitempty"`
}

// Expectation is what the pair should reach at large messages.
type Expectation struct {
	LineGbps float64 `json:"line_gbps,omitempty"` // the port's rate
	HostGbps float64 `json:"host_gbps,omitempty"` // the model's host-memory control
	GPUGbps  float64 `json:"gpu_gbps,omitempty"`  // the model's GPU-memory run
	Source   string  `json:"source"`
}

// Entry is one GPU–NIC pair of the plan.
type Entry struct {
	GPU        int     `json:"gpu"` // CUDA index, PCI bus order
	GPUBusID   string  `json:"gpu_bus_id"`
	GPUName    string  `json:"gpu_name,omitempty"`
	NIC        string  `json:"nic"`
	NICAddress string  `json:"nic_address,omitempty"`
	Port       int     `json:"port"`
	LinkLayer  string  `json:"link_layer,omitempty"`
	PortState  string  `json:"port_state,omitempty"`
	RateGbps   float64 `json:"rate_gbps,omitempty"`
	MTU        int     `json:"netdev_mtu,omitempty"`
	Level      string  `json:"path_level"`
	Mode       string  `json:"mode"`
	// Rail is the pair's index in the pairing (or in --pairs): cross-node,
	// rail r of one node meets rail r of the other.
	Rail int `json:"rail"`
	// Host and Peer are set on a cross-node result: this (the server's)
	// node and the client's side of the rail.
	Host string `json:"host,omitempty"`
	Peer *Peer  `json:"peer,omitempty"`
	// ServerNIC is the NIC the server runs on (the sibling in a two-NIC
	// loopback, else the pair's NIC).
	ServerNIC  string      `json:"server_nic"`
	ServerPort int         `json:"server_port"`
	Runs       []Run       `json:"runs,omitempty"`
	Expect     Expectation `json:"expect"`
	// Skip is why the pair is not run (its port is down, no GPU memory can
	// be registered); the runs are still listed for the record.
	Skip  string   `json:"skip,omitempty"`
	Notes []string `json:"notes,omitempty"`
}

// Peer is the client's side of a cross-node rail.
type Peer struct {
	Rank      int     `json:"rank"`
	Host      string  `json:"host"`
	GPU       int     `json:"gpu"`
	GPUBusID  string  `json:"gpu_bus_id"`
	NIC       string  `json:"nic"`
	Port      int     `json:"port"`
	LinkLayer string  `json:"link_layer,omitempty"`
	RateGbps  float64 `json:"rate_gbps,omitempty"`
	MTU       int     `json:"netdev_mtu,omitempty"`
	Level     string  `json:"path_level"`
}

// Subject names the pair in results: "GPU0-mlx5_3"; cross-node, both
// ends: "gpu01:GPU0-mlx5_0↔gpu02:GPU0-mlx5_0".
func (e *Entry) Subject() string {
	if e.Peer != nil {
		end := func(host string, gpu int, nic string) string {
			if gpu < 0 { // the rail is missing on that side
				return fmt.Sprintf("%s:rail%d", host, e.Rail)
			}
			return fmt.Sprintf("%s:GPU%d-%s", host, gpu, nic)
		}
		return end(e.Host, e.GPU, e.NIC) + "↔" + end(e.Peer.Host, e.Peer.GPU, e.Peer.NIC)
	}
	return fmt.Sprintf("GPU%d-%s", e.GPU, e.NIC)
}

// Plan is what bench rdma runs.
type Plan struct {
	Mode         string       `json:"mode"`
	Test         string       `json:"test"`
	Size         int64        `json:"size,omitempty"` // 0: all sizes (-a)
	Concurrent   bool         `json:"concurrent,omitempty"`
	Registration Registration `json:"registration"`
	NCCLPath     string       `json:"nccl_path,omitempty"`
	Entries      []Entry      `json:"pairs"`
	Notes        []string     `json:"notes,omitempty"`
}

// Model gives the expectation of one pair; nil or ok=false: none fits.
type Model func(h *topology.Host, e *Entry) (Expectation, bool)

// Build plans the tests on h. It errors on options that cannot mean
// anything (an unknown test or mode, a --pairs item naming no GPU or NIC);
// a host with no RDMA NIC or no GPU gives an empty plan with a note.
func Build(h *topology.Host, o Options, model Model) (*Plan, error) {
	if o.Mode == "" {
		o.Mode = ModeLoopback
	}
	if o.Test == "" {
		o.Test = WriteBW
	}
	if o.TCPPort == 0 {
		o.TCPPort = DefaultTCPPort
	}
	cross := o.Mode == ModeCrossNode
	switch {
	case o.Mode != ModeLoopback && !cross:
		return nil, fmt.Errorf("--mode %q: want %s or %s", o.Mode, ModeLoopback, ModeCrossNode)
	case !cross && (o.Rails != nil || o.Concurrent):
		return nil, fmt.Errorf("--rails and --concurrent are for --mode %s", ModeCrossNode)
	case !slices.Contains(Tests(), o.Test):
		return nil, fmt.Errorf("--test %q: want one of %s", o.Test, strings.Join(Tests(), ", "))
	case o.Size < 0:
		return nil, fmt.Errorf("-s %d: a message size in bytes, or 0 for all sizes", o.Size)
	case o.TCPPort < 1 || o.TCPPort > 65535:
		return nil, fmt.Errorf("--tcp-port %d: want 1..65535", o.TCPPort)
	case o.QPs < 0 || o.MTU < 0 || o.Iters < 0 || o.Duration < 0:
		return nil, fmt.Errorf("-q, -m, -n and -D are counts: 0 or more")
	case o.MTU != 0 && !slices.Contains([]int{256, 512, 1024, 2048, 4096}, o.MTU):
		return nil, fmt.Errorf("-m %d: want 256, 512, 1024, 2048 or 4096", o.MTU)
	}
	p := &Plan{Mode: o.Mode, Test: o.Test, Size: o.Size, Concurrent: o.Concurrent, Registration: o.Registration, NCCLPath: o.Registration.NCCLPath()}
	if len(h.NICs) == 0 {
		p.Notes = append(p.Notes, "no RDMA NIC on this host: nothing to test")
		return p, nil
	}
	if len(h.GPUs) == 0 {
		p.Notes = append(p.Notes, "no NVIDIA GPU on this host: nothing to test")
		return p, nil
	}
	gpus := cudaOrder(h)
	pairs := o.Pairs
	pr := h.Pairing()
	if len(pairs) == 0 {
		for _, g := range pr.GPUs {
			if g.NIC == "" {
				continue
			}
			pairs = append(pairs, PairSpec{GPU: indexOf(gpus, g.GPUAddress), NIC: g.NIC})
		}
	}
	for _, r := range o.Rails {
		if r < 0 || r >= len(pairs) {
			return nil, fmt.Errorf("--rails %d: this host has rails 0..%d (its GPU–NIC pairs in order)", r, len(pairs)-1)
		}
	}
	port := o.TCPPort
	for rail, ps := range pairs {
		if o.Rails != nil && !slices.Contains(o.Rails, rail) {
			continue
		}
		if ps.GPU < 0 || ps.GPU >= len(gpus) {
			return nil, fmt.Errorf("--pairs %d:%s: no GPU %d (this host has %d, numbered 0..%d in PCI bus order)", ps.GPU, ps.NIC, ps.GPU, len(gpus), len(gpus)-1)
		}
		nic := h.NICByName(ps.NIC)
		if nic == nil {
			return nil, fmt.Errorf("--pairs %d:%s: no RDMA device %q", ps.GPU, ps.NIC, ps.NIC)
		}
		e, gx := entry(h, gpus[ps.GPU], ps.GPU, nic, o)
		e.Rail = rail
		for _, mem := range memories(o.Registration) {
			e.Runs = append(e.Runs, runOf(&e, mem, port, o, gx, p.NCCLPath == mem))
			port++
			if port > 65535 {
				return nil, fmt.Errorf("--tcp-port %d: the runs need ports past 65535", o.TCPPort)
			}
		}
		if model != nil {
			if x, ok := model(h, &e); ok {
				e.Expect = x
			}
		}
		if e.Expect.Source == "" && e.RateGbps > 0 {
			e.Expect = Expectation{LineGbps: e.RateGbps, Source: "the port's rate (" + e.NIC + " port " + strconv.Itoa(e.Port) + "); no model fits this pair"}
		} else if e.Expect.Source == "" {
			e.Expect.Source = "the port's rate is unknown: fractions are not judged"
		}
		p.Entries = append(p.Entries, e)
	}
	if !o.Registration.Known && o.Registration.PeerMem == "" && !o.Registration.DMABuf {
		p.Notes = append(p.Notes, "registration path unknown (modules or driver unreadable): --use_cuda through nvidia-peermem is tried")
	}
	if p.NCCLPath != "" {
		p.Notes = append(p.Notes, "NCCL would register GPU memory through "+MemoryText(p.NCCLPath)+" (dma-buf where the driver, kernel and NIC allow it, NCCL 2.13 and later; else nvidia-peermem)")
	}
	p.Notes = append(p.Notes, "--use_cuda=N numbers GPUs by PCI bus id (CUDA_DEVICE_ORDER=PCI_BUS_ID is set, CUDA_VISIBLE_DEVICES unset); each pair prints the bus id it means")
	if cross {
		how := "one rail at a time"
		if o.Concurrent {
			how = "every rail at once (--concurrent), each run on its own TCP port"
		}
		p.Notes = append(p.Notes, "cross-node: ranks 2k and 2k+1 are a node pair; the even rank runs each rail's server, the odd rank the client of the same rail, "+how+"; "+PeerAddr+" is the server's address, sent over the rendezvous")
	}
	return p, nil
}

// cudaOrder is the GPUs in PCI bus order, as CUDA_DEVICE_ORDER=PCI_BUS_ID
// numbers them.
func cudaOrder(h *topology.Host) []*topology.GPU {
	gs := slices.Clone(h.GPUs)
	slices.SortStableFunc(gs, func(a, b *topology.GPU) int {
		return strings.Compare(strings.ToLower(a.Address), strings.ToLower(b.Address))
	})
	return gs
}

func indexOf(gs []*topology.GPU, addr string) int {
	for i, g := range gs {
		if g.Address == addr {
			return i
		}
	}
	return -1
}

// memories are the memory kinds each pair runs: the GPU paths available,
// then the host control. Neither path known: peermem is tried (its failure
// is the finding).
func memories(r Registration) []string {
	var out []string
	if r.PeerMem != "" || !r.DMABuf {
		out = append(out, MemPeerMem)
	}
	if r.DMABuf {
		out = append(out, MemDMABuf)
	}
	return append(out, MemHost)
}

func active(p *topology.Port) bool { return p != nil && strings.EqualFold(p.State, "ACTIVE") }

// sibling is another function of the same card (same PCI bus and device)
// with an active port of the same link layer: the server side of a
// two-NIC loopback.
func sibling(h *topology.Host, n *topology.NIC, p *topology.Port) *topology.NIC {
	slot := func(a string) string {
		if i := strings.LastIndexByte(a, '.'); i > 0 {
			return a[:i]
		}
		return a
	}
	if n.Address == "" || p == nil {
		return nil
	}
	for _, o := range h.NICs {
		if o == n || o.Address == "" || slot(o.Address) != slot(n.Address) {
			continue
		}
		if op := o.ActivePort(); active(op) && op.LinkLayer == p.LinkLayer {
			return o
		}
	}
	return nil
}

// gidIndexes are the -x of an entry's client and server (-1: none).
type gidIndexes struct{ client, server int }

func entry(h *topology.Host, g *topology.GPU, cuda int, nic *topology.NIC, o Options) (Entry, gidIndexes) {
	e := Entry{GPU: cuda, GPUBusID: g.Address, GPUName: g.Name, NIC: nic.Name, NICAddress: nic.Address, Level: level.Unknown.String()}
	if g.Dev != nil && nic.Dev != nil {
		e.Level = h.PCIeRelation(g.Dev, nic.Dev).Level.String()
	}
	p := nic.ActivePort()
	if p != nil {
		e.Port, e.LinkLayer, e.PortState, e.RateGbps, e.MTU = p.Number, p.LinkLayer, p.State, p.RateGbps, p.MTU
	}
	e.Mode, e.ServerNIC, e.ServerPort = LoopOneNIC, e.NIC, e.Port
	if o.Mode == ModeCrossNode {
		e.Mode = ModeCrossNode
		e.Notes = append(e.Notes, "cross-node: the server runs here when this rank is even, the client when it is odd; the peer node runs the same rail")
	} else if s := sibling(h, nic, p); s != nil {
		e.Mode, e.ServerNIC, e.ServerPort = LoopTwoNICs, s.Name, s.ActivePort().Number
		e.Notes = append(e.Notes, "server on "+s.Name+" (the same card's other function): the data crosses the cable and the switch")
	} else {
		e.Notes = append(e.Notes, "one NIC: proves GPU memory registers and the NIC reaches it, not the cables")
	}
	switch {
	case p == nil:
		e.Skip = "the NIC has no port"
	case !active(p):
		e.Skip = fmt.Sprintf("port %d is %s (nic.port)", p.Number, strings.ToLower(p.State))
	case !o.Registration.DMABuf && o.Registration.PeerMem == "" && o.Registration.Known:
		e.Skip = "no GPU memory registration path: neither nvidia_peermem nor dma-buf (" + o.Registration.Why + "; gdr.kernel-module)"
	}
	gx := gidIndexes{o.GIDIndex, o.GIDIndex}
	if p != nil && p.LinkLayer == "Ethernet" && o.GIDIndex < 0 {
		gx.client = roceGID(&e, e.NIC, p)
		gx.server = gx.client
		if e.ServerNIC != e.NIC {
			gx.server = roceGID(&e, e.ServerNIC, h.NICByName(e.ServerNIC).ActivePort())
		}
	}
	return e, gx
}

// roceGID is the GID index NCCL would use on a RoCE port
// (topology.Port.RoCEGID), noted on the entry; -1 leaves it to perftest.
func roceGID(e *Entry, nic string, p *topology.Port) int {
	const notRead = "RoCE: GID index not collected; perftest chooses (set --gid-index to force one)"
	c := p.RoCEGID()
	switch {
	case c == nil || p.GIDsRead == 0:
		if !slices.Contains(e.Notes, notRead) {
			e.Notes = append(e.Notes, notRead)
		}
		return -1
	case c.Index < 0:
		e.Notes = append(e.Notes, "RoCE: no GID chosen on "+nic+" ("+c.Why+"); perftest chooses (set --gid-index to force one)")
		return -1
	}
	how := "chosen as NCCL would"
	if c.Type != "RoCE v2" {
		how += ": " + c.Why
	}
	e.Notes = append(e.Notes, fmt.Sprintf("%s on %s (%s; --gid-index overrides)", c.Text(), nic, how))
	return c.Index
}

func runOf(e *Entry, mem string, port int, o Options, gx gidIndexes, nccl bool) Run {
	common := func(dev string, ibport, gid int) []string {
		a := []string{"-d", dev}
		if ibport > 0 {
			a = append(a, "-i", strconv.Itoa(ibport))
		}
		a = append(a, "-p", strconv.Itoa(port), "-F")
		if !IsLatency(o.Test) {
			a = append(a, "--report_gbits")
		}
		if o.Size > 0 {
			a = append(a, "-s", strconv.FormatInt(o.Size, 10))
		} else {
			a = append(a, "-a")
		}
		if gid >= 0 && e.LinkLayer == "Ethernet" {
			a = append(a, "-x", strconv.Itoa(gid))
		}
		if o.MTU > 0 {
			a = append(a, "-m", strconv.Itoa(o.MTU))
		}
		if o.QPs > 0 {
			a = append(a, "-q", strconv.Itoa(o.QPs))
		}
		if o.Iters > 0 {
			a = append(a, "-n", strconv.Itoa(o.Iters))
		}
		if o.Duration > 0 {
			a = append(a, "-D", strconv.Itoa(o.Duration))
		}
		switch mem {
		case MemPeerMem:
			a = append(a, "--use_cuda="+strconv.Itoa(e.GPU))
		case MemDMABuf:
			a = append(a, "--use_cuda="+strconv.Itoa(e.GPU), "--use_cuda_dmabuf")
		}
		return a
	}
	var env []string
	if mem != MemHost {
		env = []string{"CUDA_DEVICE_ORDER=PCI_BUS_ID"}
	}
	return Run{
		Memory:  mem,
		TCPPort: port,
		NCCL:    nccl,
		Server:  Cmd{Tool: o.Test, Args: common(e.ServerNIC, e.ServerPort, gx.server), Env: env},
		Client:  Cmd{Tool: o.Test, Args: append(common(e.NIC, e.Port, gx.client), clientAddr(o.Mode)), Env: env},
	}
}

func clientAddr(mode string) string {
	if mode == ModeCrossNode {
		return PeerAddr
	}
	return "127.0.0.1"
}

// ParseRails reads --rails: "all" (nil) or "0,2,5".
func ParseRails(s string) ([]int, error) {
	if s == "" || s == "all" {
		return nil, nil
	}
	var out []int
	for i, item := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(item))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--rails item %d %q: want all or rail numbers, e.g. 0,1,4", i+1, item)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}
