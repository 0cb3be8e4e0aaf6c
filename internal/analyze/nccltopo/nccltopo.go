// Package nccltopo reads NCCL's topology and graph XML files: the system
// dump NCCL writes with NCCL_TOPO_DUMP_FILE (and reads with NCCL_TOPO_FILE,
// including the hand-written files clouds ship for their VMs), and the
// graph dump of NCCL_GRAPH_DUMP_FILE. It returns the PCI tree, the GPUs and
// NICs with their gdr attributes, link speeds and widths and NVLink counts,
// the GPU to NIC PCI distance, and the graphs' channels, patterns and
// intra/inter speeds and path types, with verdicts on what they mean for
// GPU Direct RDMA and NVLink.
//
// Files are read leniently: XML comments, unquoted or oddly spelled
// attributes ("link_speed=\"16 GT/s\""), missing attributes and fragments
// cut off without closing tags are accepted; a cut is reported (Truncated,
// Problem) and what was read is still returned.
package nccltopo

import (
	"bytes"
	"io"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Kind is the analyzer kind name.
const Kind = "nccl-topo"

// Report is what one topology or graph file says.
type Report struct {
	File string `json:"file"`
	// Kind is "system" (a topology) or "graphs".
	Kind    string `json:"kind"`
	Version string `json:"version,omitempty"`
	Lines   int    `json:"lines"`
	// Truncated is true when the file ends (or stops being XML) before its
	// elements are closed; Problem says where and why, as "file:line: ...".
	Truncated bool   `json:"truncated"`
	Problem   string `json:"problem,omitempty"`
	// Paste says which paste prefixes were removed and which lines were
	// skipped (code fences of an issue) before the XML was read.
	Paste *textio.PasteNote `json:"paste,omitempty"`
	// gpuOpen: the input stops inside a <gpu> element (its NVLinks may
	// be incomplete).
	gpuOpen  bool
	Comments int `json:"comments,omitempty"`
	// UnknownElements are element names this reader does not interpret.
	UnknownElements []string `json:"unknown_elements,omitempty"`
	System          *System  `json:"system,omitempty"`
	Graphs          []Graph  `json:"graphs,omitempty"`
}

// System is a <system> topology.
type System struct {
	CPUs []*CPU `json:"cpus"`
	// GPUs and NICs flatten the tree: every GPU (a <gpu>, or in
	// hand-written files a <pci> of display class) and every NIC (a <nic>,
	// or a <pci> of network class) with where it sits.
	GPUs []GPU `json:"gpus"`
	NICs []NIC `json:"nics"`
	// Paths gives every GPU its nearest RDMA NIC(s).
	Paths []GPUPath `json:"gpu_nic_paths,omitempty"`
}

// CPU is one <cpu> (a NUMA node).
type CPU struct {
	NUMAID   *int              `json:"numaid,omitempty"`
	Affinity string            `json:"affinity,omitempty"`
	Arch     string            `json:"arch,omitempty"`
	Vendor   string            `json:"vendor,omitempty"`
	FamilyID *int              `json:"familyid,omitempty"`
	ModelID  *int              `json:"modelid,omitempty"`
	HostHash string            `json:"host_hash,omitempty"`
	Line     int               `json:"line"`
	PCI      []*PCI            `json:"pci,omitempty"`
	NICs     []*NICElem        `json:"nics,omitempty"`
	Extra    map[string]string `json:"extra_attrs,omitempty"`
}

// PCI is one <pci> device or bridge.
type PCI struct {
	BusID           string `json:"busid"`
	Class           string `json:"class,omitempty"`
	Vendor          string `json:"vendor,omitempty"`
	Device          string `json:"device,omitempty"`
	SubsystemVendor string `json:"subsystem_vendor,omitempty"`
	SubsystemDevice string `json:"subsystem_device,omitempty"`
	// LinkSpeed is the attribute as written ("16.0 GT/s PCIe", "16 GT/s",
	// ""); LinkSpeedGTs its number (0 when absent or unreadable).
	LinkSpeed    string            `json:"link_speed,omitempty"`
	LinkSpeedGTs float64           `json:"link_speed_gts"`
	LinkWidth    *int              `json:"link_width,omitempty"`
	Line         int               `json:"line"`
	Children     []*PCI            `json:"children,omitempty"`
	GPU          *GPUElem          `json:"gpu,omitempty"`
	NIC          *NICElem          `json:"nic,omitempty"`
	Extra        map[string]string `json:"extra_attrs,omitempty"`
}

// GPUElem is one <gpu>.
type GPUElem struct {
	Dev     *int              `json:"dev,omitempty"`
	SM      *int              `json:"sm,omitempty"`
	Rank    *int              `json:"rank,omitempty"`
	GDR     *bool             `json:"gdr,omitempty"`
	NVLinks []NVLink          `json:"nvlinks,omitempty"`
	Line    int               `json:"line"`
	Extra   map[string]string `json:"extra_attrs,omitempty"`
}

// NVLink is one <nvlink target=.. count=.. tclass=..>.
type NVLink struct {
	Target string `json:"target"`
	Count  *int   `json:"count,omitempty"`
	TClass string `json:"tclass,omitempty"`
	Line   int    `json:"line"`
}

// NICElem is one <nic>.
type NICElem struct {
	Nets []Net `json:"nets"`
	Line int   `json:"line"`
}

// Net is one <net>.
type Net struct {
	Name string `json:"name"`
	Dev  *int   `json:"dev,omitempty"`
	// Speed is in Mb/s as NCCL writes it (100000 = 100 Gb/s).
	Speed   *int              `json:"speed,omitempty"`
	Port    *int              `json:"port,omitempty"`
	Latency string            `json:"latency,omitempty"`
	GUID    string            `json:"guid,omitempty"`
	MaxConn *int              `json:"maxconn,omitempty"`
	GDR     *bool             `json:"gdr,omitempty"`
	Coll    *bool             `json:"coll,omitempty"`
	RDMA    bool              `json:"rdma"`
	Line    int               `json:"line"`
	Extra   map[string]string `json:"extra_attrs,omitempty"`
}

// GPU is one GPU with where it sits.
type GPU struct {
	BusID string `json:"busid"`
	// Source is "gpu" (a <gpu> element) or "pci-class" (a <pci> of class
	// 0x03xxxx without one, as in hand-written files).
	Source       string   `json:"source"`
	Dev          *int     `json:"dev,omitempty"`
	SM           *int     `json:"sm,omitempty"`
	Rank         *int     `json:"rank,omitempty"`
	GDR          *bool    `json:"gdr,omitempty"`
	VendorDevice string   `json:"vendor_device,omitempty"`
	CPU          int      `json:"cpu"` // index in System.CPUs
	NUMAID       *int     `json:"numaid,omitempty"`
	Path         []string `json:"path,omitempty"` // bus ids of the bridges above, from the CPU down
	LinkSpeedGTs float64  `json:"link_speed_gts"`
	LinkWidth    *int     `json:"link_width,omitempty"`
	NVLinks      []NVLink `json:"nvlinks,omitempty"`
	Line         int      `json:"line"`
}

// NIC is one NIC with where it sits.
type NIC struct {
	// BusID is empty for a <nic> directly under a <cpu> (a NIC NCCL could
	// not place on the PCI tree, such as a virtio socket NIC).
	BusID        string   `json:"busid,omitempty"`
	Source       string   `json:"source"` // "nic" or "pci-class"
	Class        string   `json:"class,omitempty"`
	VendorDevice string   `json:"vendor_device,omitempty"`
	CPU          int      `json:"cpu"`
	NUMAID       *int     `json:"numaid,omitempty"`
	Path         []string `json:"path,omitempty"`
	LinkSpeedGTs float64  `json:"link_speed_gts"`
	LinkWidth    *int     `json:"link_width,omitempty"`
	Nets         []Net    `json:"nets,omitempty"`
	RDMA         bool     `json:"rdma"`
	Line         int      `json:"line"`
}

// GPUPath is a GPU's distance to its nearest RDMA NIC, in NCCL's path
// vocabulary: PIX (one PCIe switch), PXB (several switches), PHB (through
// the CPU's host bridge), SYS (across CPUs).
type GPUPath struct {
	GPU  string   `json:"gpu"`
	Dev  *int     `json:"dev,omitempty"`
	Type string   `json:"type"`
	NICs []string `json:"nics"` // the nearest NICs: net names, or bus ids
}

// Graph is one <graph> of a graph dump.
type Graph struct {
	ID           int       `json:"id"`
	Pattern      int       `json:"pattern"`
	PatternName  string    `json:"pattern_name,omitempty"`
	CrossNIC     int       `json:"crossnic"`
	NChannels    int       `json:"nchannels"`
	SpeedIntra   float64   `json:"speedintra"`
	SpeedInter   float64   `json:"speedinter"`
	LatencyInter float64   `json:"latencyinter"`
	TypeIntra    string    `json:"typeintra"`
	TypeInter    string    `json:"typeinter"`
	SameChannels int       `json:"samechannels"`
	Channels     []Channel `json:"channels"`
	Line         int       `json:"line"`
}

// Channel is one <channel>: the NETs and GPUs in order.
type Channel struct {
	Devices []ChannelDev `json:"devices"`
	Line    int          `json:"line"`
}

// ChannelDev is a <net dev=..> or <gpu dev=..> of a channel.
type ChannelDev struct {
	Kind string `json:"kind"` // "gpu" or "net"
	Dev  int    `json:"dev"`
}

// Detect reports whether the start of a file (up to 64 KiB) is an NCCL
// topology (<system>) or graph (<graphs>) XML file: after any byte order
// mark, XML declaration, comments and white space, the first element is
// <system>, <graphs> or <graph>.
func Detect(head []byte) bool { return rootKind(textio.CleanHead(head)) != "" }

// rootKind says which root element the start of a file opens: "system",
// "graphs" (for <graphs> and a bare <graph>), or "".
func rootKind(head []byte) string {
	b := bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	for {
		b = bytes.TrimLeft(b, " \t\r\n")
		switch {
		case bytes.HasPrefix(b, []byte("<?")):
			i := bytes.Index(b, []byte("?>"))
			if i < 0 {
				return ""
			}
			b = b[i+2:]
		case bytes.HasPrefix(b, []byte("<!--")):
			i := bytes.Index(b, []byte("-->"))
			if i < 0 {
				return ""
			}
			b = b[i+3:]
		case bytes.HasPrefix(b, []byte("<!")):
			i := bytes.IndexByte(b, '>')
			if i < 0 {
				return ""
			}
			b = b[i+1:]
		default:
			for _, root := range []string{"<system", "<graphs", "<graph"} {
				if bytes.HasPrefix(b, []byte(root)) && len(b) > len(root) {
					switch b[len(root)] {
					case ' ', '\t', '\r', '\n', '>', '/':
						if root == "<system" {
							return "system"
						}
						return "graphs"
					}
				}
			}
			return ""
		}
	}
}

// Analyze reads a topology or graph file from r; name is used in evidence
// and errors. It fails only when no topology or graph element can be read
// at all, naming the file and line.
func Analyze(name string, r io.Reader) (*Report, []result.Result, error) {
	rep, err := parse(name, r)
	if err != nil {
		return nil, nil, err
	}
	if rep.System != nil {
		derive(rep.System)
	}
	vs := verdicts(rep)
	result.SetSource(vs, Kind)
	return rep, vs, nil
}
