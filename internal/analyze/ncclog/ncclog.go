// Package ncclog reads NCCL debug logs (NCCL_DEBUG=INFO, TRACE or WARN) of
// any NCCL 2.x release and says what they mean for the data path: which
// NCCL version and network plugin every rank ran, which hosts, processes,
// ranks and GPUs took part, which NICs NCCL used, whether GPU Direct RDMA
// was enabled per HCA and per GPU, and above all the transport of every
// channel NCCL connected (P2P, SHM, NET with or without GDRDMA, CollNet).
//
// Logs are read as they come from real jobs: many ranks interleaved, lines
// spliced by concurrent writers, prefixed by launcher tags ("[1,3]<stdout>:",
// "3: "), glued to nccl-tests table rows, cut off at either end. The reader
// streams: memory is bounded whatever the size of the input (distinct
// records kept in detail are capped, everything is counted).
package ncclog

import (
	"bytes"
	"io"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Kind is the analyzer kind name.
const Kind = "nccl-log"

// Report is what one log says.
type Report struct {
	File string `json:"file"`
	// Files are the logs of a job judged together (Job), in the order
	// read; the line numbers of a job's report (Line fields) count on
	// across them, a file's lines starting at its FirstLine. Evidence
	// names the file and its own line.
	Files []JobFile `json:"files,omitempty"`
	Lines int64     `json:"lines"`
	Bytes int64     `json:"bytes"`
	// NCCLLines counts NCCL messages (INFO, WARN, TRACE); SplicedLines the
	// physical lines that hold more than one of them (concurrent writers).
	NCCLLines    int64 `json:"nccl_lines"`
	SplicedLines int64 `json:"spliced_lines"`
	// LongLines counts lines longer than MaxLine, read in part.
	LongLines int64 `json:"long_lines,omitempty"`
	// Paste says which paste prefixes were removed and which lines were
	// skipped (code fences of an issue) before the lines were read.
	Paste *textio.PasteNote `json:"paste,omitempty"`

	Versions           []Version `json:"versions"`
	CUDADriverVersions []Version `json:"cuda_driver_versions,omitempty"`
	Hosts              []Host    `json:"hosts"`
	Ranks              []Rank    `json:"ranks"`
	RanksOmitted       int       `json:"ranks_omitted,omitempty"`
	Comms              []Comm    `json:"comms,omitempty"`
	Network            Network   `json:"network"`
	GDR                GDR       `json:"gdr"`
	Env                []EnvVar  `json:"env,omitempty"`
	Channels           Channels  `json:"channels"`
	// Topology holds the "=== System : maxBw ... ===" trees NCCL printed,
	// the first one of every host.
	Topology []SystemTree `json:"topology,omitempty"`

	Errors       []Event `json:"errors,omitempty"`
	ErrorCount   int64   `json:"error_count"`
	Warnings     []Event `json:"warnings,omitempty"`
	WarningCount int64   `json:"warning_count"`
}

// Version is one NCCL (or CUDA driver, or plugin) version and who printed it.
type Version struct {
	Version   string   `json:"version"`
	Processes int      `json:"processes"`
	Hosts     []string `json:"hosts,omitempty"`
	Line      int64    `json:"line"`
	Text      string   `json:"text"`
}

// Host is one machine that took part, named as NCCL printed it.
type Host struct {
	Name      string `json:"name"`
	Processes int    `json:"processes"`
	// PIDs are the process ids that printed (the first 64).
	PIDs []int64 `json:"pids,omitempty"`
	// Ranks are the distinct rank numbers seen on this host (of any
	// communicator), sorted.
	Ranks []int `json:"ranks,omitempty"`
	// GPUs are the bus ids NCCL printed for the ranks of this host.
	GPUs []string `json:"gpus,omitempty"`
	// Lines counts the NCCL messages this host printed; a host that is
	// known to hold ranks but printed nothing is Silent.
	Lines        int64      `json:"lines"`
	Silent       bool       `json:"silent,omitempty"`
	Networks     []string   `json:"networks,omitempty"`
	Bootstrap    string     `json:"bootstrap,omitempty"`
	IBDevices    []IBDevice `json:"ib_devices,omitempty"`
	IBOOB        string     `json:"ib_oob,omitempty"`
	NoIBDevice   bool       `json:"no_ib_device,omitempty"`
	SocketIfaces []string   `json:"socket_ifaces,omitempty"`
	// DMABufGPUs are the CUDA devices for which NCCL printed "DMA-BUF is
	// available".
	DMABufGPUs []int `json:"dmabuf_gpus,omitempty"`
}

// IBDevice is one entry of "NET/IB : Using [0]mlx5_0:1/RoCE ...".
type IBDevice struct {
	Index     int    `json:"index"`
	Name      string `json:"name"`
	Port      int    `json:"port"`
	LinkLayer string `json:"link_layer,omitempty"`
	Line      int64  `json:"line"`
}

// Rank is one rank of one communicator.
type Rank struct {
	Rank    int    `json:"rank"`
	NRanks  int    `json:"nranks,omitempty"`
	Host    string `json:"host,omitempty"`
	PID     int64  `json:"pid,omitempty"`
	CUDADev *int   `json:"cuda_dev,omitempty"`
	NVMLDev *int   `json:"nvml_dev,omitempty"`
	BusID   string `json:"bus_id,omitempty"`
	CommID  string `json:"comm_id,omitempty"`
	// Version is the NCCL version its process printed.
	Version string `json:"version,omitempty"`
	// Source says how the rank was placed: "init" (an Init/Destroy line),
	// "nccl-tests" (the "#  Rank N ... on HOST" header) or "channel" (the
	// rank printed a channel line).
	Source       string `json:"source"`
	InitComplete bool   `json:"init_complete,omitempty"`
	Line         int64  `json:"line"`
}

// Comm is one communicator (by commId).
type Comm struct {
	ID           string `json:"id"`
	NRanks       int    `json:"nranks"`
	NNodes       int    `json:"nnodes,omitempty"`
	MNNVL        bool   `json:"mnnvl,omitempty"`
	RanksSeen    int    `json:"ranks_seen"`
	Hosts        int    `json:"hosts"`
	InitComplete int    `json:"init_complete"`
	Line         int64  `json:"line"`
}

// Network is what NCCL said about the network plugin and transport.
type Network struct {
	// Selected are the "Using network X" choices, with how many processes
	// made each.
	Selected []Selected `json:"selected,omitempty"`
	// NetTransports are the NET/<name> transports seen on channel lines.
	NetTransports []string `json:"net_transports,omitempty"`
	// PluginMessages are the distinct plugin-loading lines (first of each).
	PluginMessages []Event `json:"plugin_messages,omitempty"`
	// PluginVersions are external plugin versions (aws-ofi-nccl, ...).
	PluginVersions  []Version `json:"plugin_versions,omitempty"`
	OFIProvider     string    `json:"ofi_provider,omitempty"`
	OFINICs         int       `json:"ofi_nics,omitempty"`
	Libfabric       string    `json:"libfabric,omitempty"`
	NonDevicePlugin bool      `json:"non_device_plugin,omitempty"`
}

// Selected is one "Using network X" choice.
type Selected struct {
	Name      string `json:"name"`
	Processes int    `json:"processes"`
	Line      int64  `json:"line"`
	Text      string `json:"text"`
}

// GDR is what NCCL said about GPU Direct RDMA.
type GDR struct {
	HCAs []HCAGDR `json:"hcas,omitempty"`
	GPUs []GPUGDR `json:"gpus,omitempty"`
	// DMABuf is true when any rank printed "DMA-BUF is available".
	DMABuf bool `json:"dmabuf"`
	// Level is NCCL_NET_GDR_LEVEL when it was set by the environment.
	Level string `json:"net_gdr_level,omitempty"`
}

// HCAGDR is one "NET/<plugin> : GPU Direct RDMA Enabled|Disabled for HCA n 'name'".
type HCAGDR struct {
	Host    string `json:"host"`
	Plugin  string `json:"plugin"`
	Index   int    `json:"index"`
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	Line    int64  `json:"line"`
	Text    string `json:"text"`
}

// GPUGDR is one "GPU Direct RDMA Enabled|Disabled for GPU x / HCA n (distance d <= t)".
type GPUGDR struct {
	Host     string `json:"host"`
	GPU      string `json:"gpu"`
	HCA      int    `json:"hca"`
	Enabled  bool   `json:"enabled"`
	Distance int    `json:"distance"`
	Limit    int    `json:"limit"`
	Line     int64  `json:"line"`
	Text     string `json:"text"`
}

// EnvVar is one "NCCL_X set by environment to V".
type EnvVar struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Processes int    `json:"processes"`
	Line      int64  `json:"line"`
}

// Channels is the transport of every channel connection.
type Channels struct {
	// TransportLines counts the channel transport lines ("... via ...").
	TransportLines int64 `json:"transport_lines"`
	// GarbledLines are transport lines cut by another writer; they are
	// counted but not judged.
	GarbledLines int64 `json:"garbled_lines,omitempty"`
	// Connections counts distinct (communicator, peer pair, direction,
	// transport) connections; ConnectionsUntracked the lines seen after
	// the cap on distinct connections was reached.
	Connections          int   `json:"connections"`
	ConnectionsUntracked int64 `json:"connections_untracked,omitempty"`
	// IntraNode/InterNode/UnknownLocality split the lines by where the two
	// ranks are: on one host, on two hosts, or not known.
	IntraNode       int64            `json:"intra_node"`
	InterNode       int64            `json:"inter_node"`
	UnknownLocality int64            `json:"unknown_locality"`
	ByTransport     []TransportCount `json:"by_transport"`
	// RingLines are "Channel 00/24 :  0 1" ring orders; MaxRingChannels
	// the largest channel total they announced.
	RingLines       int64          `json:"ring_lines,omitempty"`
	MinRingChannels int            `json:"min_ring_channels,omitempty"`
	MaxRingChannels int            `json:"max_ring_channels,omitempty"`
	Counts          []ChannelCount `json:"counts,omitempty"`
	Patterns        []Pattern      `json:"patterns,omitempty"`
	ConnectedRings  int64          `json:"connected_rings,omitempty"`
	ConnectedTrees  int64          `json:"connected_trees,omitempty"`
	ConnectedNVLS   int64          `json:"connected_nvls,omitempty"`
	NVLSSupported   bool           `json:"nvls_supported,omitempty"`
	CollNetLines    int64          `json:"collnet_lines,omitempty"`
	// P2PNotEnabledLines counts "Could not enable P2P between dev X(=bus)
	// and dev Y(=bus)": two GPUs of one host between which NCCL found P2P
	// impossible (it then uses SHM, or the NIC).
	P2PNotEnabledLines int64 `json:"p2p_not_enabled_lines,omitempty"`
	// Records are the first connections in detail (see RecordsOmitted).
	Records        []ChannelRecord `json:"records"`
	RecordsOmitted int             `json:"records_omitted,omitempty"`
}

// TransportCount counts lines of one transport.
type TransportCount struct {
	Transport string `json:"transport"`
	Class     string `json:"class"` // p2p, shm, net, collnet, nvls, other
	Lines     int64  `json:"lines"`
	Intra     int64  `json:"intra_node"`
	Inter     int64  `json:"inter_node"`
	Unknown   int64  `json:"unknown_locality"`
}

// ChannelCount is one "N coll channels, N collnet channels, N nvls channels,
// N p2p channels, N p2p channels per peer" line (distinct values; -1 for a
// count the NCCL release does not print).
type ChannelCount struct {
	Coll       int    `json:"coll"`
	CollNet    int    `json:"collnet"`
	NVLS       int    `json:"nvls"`
	P2P        int    `json:"p2p"`
	P2PPerPeer int    `json:"p2p_per_peer"`
	Processes  int    `json:"processes"`
	Line       int64  `json:"line"`
	Text       string `json:"text"`
}

// Pattern is one graph search result line ("Pattern 4, crossNic 0,
// nChannels 12, bw 20.0/20.0, type NVL/PIX, sameChannels 1").
type Pattern struct {
	Host      string  `json:"host"`
	Pattern   int     `json:"pattern"`
	Name      string  `json:"name"`
	CrossNIC  int     `json:"cross_nic"`
	NChannels int     `json:"nchannels"`
	BWIntra   float64 `json:"bw_intra"`
	BWInter   float64 `json:"bw_inter"`
	TypeIntra string  `json:"type_intra"`
	TypeInter string  `json:"type_inter"`
	Line      int64   `json:"line"`
}

// ChannelRecord is one distinct connection.
type ChannelRecord struct {
	Channel   int    `json:"channel"`
	ConnIndex int    `json:"conn_index"` // -1 when the line has no "/n"
	From      int    `json:"from"`
	To        int    `json:"to"` // -1 for CollNet lines
	Dir       string `json:"dir,omitempty"`
	Transport string `json:"transport"`
	Class     string `json:"class"`
	GDRDMA    bool   `json:"gdrdma,omitempty"`
	Shared    bool   `json:"shared,omitempty"`
	NetDev    int    `json:"net_dev"` // -1 unless NET/COLLNET
	Host      string `json:"host"`    // host that printed it
	Locality  string `json:"locality"`
	Lines     int64  `json:"lines"`
	Line      int64  `json:"line"`
}

// SystemTree is one "=== System : maxBw X totalBw Y ===" tree.
type SystemTree struct {
	Host         string     `json:"host"`
	MaxBW        float64    `json:"max_bw"`
	TotalBW      float64    `json:"total_bw"`
	Line         int64      `json:"line"`
	GPUs         int        `json:"gpus"`
	NICs         int        `json:"nics"`
	NVLinks      int        `json:"nvlinks"`
	Links        []TreeLink `json:"links"`
	LinksOmitted int        `json:"links_omitted,omitempty"`
	Findings     []Finding  `json:"findings,omitempty"`
	// FindingsOmitted counts findings beyond the first 16.
	FindingsOmitted int       `json:"findings_omitted,omitempty"`
	GPUNetPaths     []NetPath `json:"gpu_net_paths,omitempty"`
	Complete        bool      `json:"complete"`
}

// TreeLink is one "+ TYPE[bw] - NODE" line of the tree.
type TreeLink struct {
	From string  `json:"from"`
	To   string  `json:"to"`
	Type string  `json:"type"`
	BW   float64 `json:"bw"`
	Line int64   `json:"line"`
}

// Finding is something wrong in a system tree.
type Finding struct {
	Kind   string `json:"kind"` // nvlink-asymmetric, nvlink-degraded, pci-slow-link, gpu-pci-narrow
	Detail string `json:"detail"`
	Line   int64  `json:"line"`
	Text   string `json:"text"`
}

// Event is one error or warning line, with how many lines said the same
// (numbers aside).
type Event struct {
	Line    int64  `json:"line"`
	Host    string `json:"host,omitempty"`
	Level   string `json:"level"`
	Message string `json:"message"`
	Count   int64  `json:"count"`
	// Explanation names the ncclResult_t the message quotes and what it
	// means ("ncclResult 6 is ncclRemoteError: ..."); "" when it quotes none.
	Explanation string `json:"explanation,omitempty"`
}

// MaxLine bounds the part of one physical line that is read; the rest of a
// longer line is skipped and counted in LongLines.
const MaxLine = 1 << 20

// Detect reports whether the start of a file (up to 64 KiB) looks like an
// NCCL debug log: NCCL message lines ("host:pid:tid [dev] NCCL INFO ...")
// make up at least a fifth of its non-blank lines, or there are at least 50
// of them. A single stray NCCL line at the top of an nccl-tests output does
// not make it a log.
func Detect(head []byte) bool {
	if len(head) > 64<<10 {
		head = head[:64<<10]
	}
	var hs []header
	nonBlank, nccl, watchdog, diag := 0, 0, 0, 0
	for len(head) > 0 {
		i := bytes.IndexByte(head, '\n')
		var line []byte
		if i < 0 {
			line, head = head, nil
		} else {
			line, head = head[:i], head[i+1:]
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		nonBlank++
		if watchdogLine(line) {
			watchdog++
		}
		if bytes.Contains(line, sDiag) {
			diag++
		}
		hs = findHeaders(line, hs[:0])
		for _, h := range hs {
			if h.hasDev {
				nccl++
				break
			}
		}
	}
	// A framework watchdog's collective timeout is what a hung NCCL job
	// prints, often without any debug line: it is read as a log whose
	// nccl.errors fails.
	return nccl >= 50 || (nccl >= 1 && nccl*5 >= nonBlank) || watchdog > 0 || diag > 0
}

// Analyze reads a whole NCCL log from r, streaming; name is used in
// evidence and errors. It fails only on input it cannot read at all (a
// read error, empty or binary input), naming the file and line.
func Analyze(name string, r io.Reader) (*Report, []result.Result, error) {
	a := newAnalyzer(name)
	if err := a.run(r); err != nil {
		return nil, nil, err
	}
	rep, vs := a.report()
	result.SetSource(vs, Kind)
	return rep, vs, nil
}
