// Package topology is the model of what a GPU node is made of and how its
// parts are connected: the PCI tree (host bridges, root ports, PCIe
// switches, endpoints), GPUs, NVSwitches, RDMA NICs and other NICs, NUMA
// locality, and NVLink. From that it derives the relation of every pair of
// GPUs and NICs with the meaning `nvidia-smi topo -m` gives them, and the
// GPU→NIC pairing NCCL's GPU Direct RDMA depends on.
//
// The package reads nothing: internal/collect/discover builds a Host
// through a machine.Root, so the model is the same for the live host, a
// snapshot and test fixtures.
package topology

import (
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
)

// Host is the discovered model of one machine.
type Host struct {
	Root     string `json:"root"`
	Hostname string `json:"hostname,omitempty"`
	Kernel   string `json:"kernel,omitempty"`
	// CPU is the processors' architecture and model (/proc/cpuinfo); nil
	// when it could not be read (a snapshot taken without it).
	CPU        *CPU       `json:"cpu,omitempty"`
	NUMANodes  []NUMANode `json:"numa_nodes"`
	Devices    []*Device  `json:"pci_devices"`
	GPUs       []*GPU     `json:"gpus"`
	NVSwitches []*Device  `json:"nvswitches"`
	NICs       []*NIC     `json:"rdma_nics"`
	NetDevs    []*NetDev  `json:"netdevs"`
	// GPUFacts are the driver's facts (NVML live, or what a snapshot
	// captured); nil when none could be had (see GPUFactsError).
	GPUFacts      *gpu.Facts `json:"gpu_facts,omitempty"`
	GPUFactsError string     `json:"gpu_facts_error,omitempty"`
	// Problems are reads that failed or returned garbage. Discovery goes on
	// around them; whatever depended on them is unknown.
	Problems    []Problem `json:"problems,omitempty"`
	DiscoveryMS float64   `json:"discovery_ms"`

	// pairing is the GPU→NIC pairing, computed by Finish.
	pairing *Pairing
}

// Problem is one failed or suspicious read.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// NUMANode is one NUMA node and its CPUs.
type NUMANode struct {
	ID   int        `json:"id"`
	CPUs pci.CPUSet `json:"cpus"`
}

// Device is one PCI function.
type Device struct {
	Address   string       `json:"address"` // 0000:17:00.0
	Class     uint32       `json:"class"`   // 0x030200
	Vendor    uint16       `json:"vendor"`
	DeviceID  uint16       `json:"device"`
	SubVendor uint16       `json:"subsystem_vendor,omitempty"`
	SubDevice uint16       `json:"subsystem_device,omitempty"`
	Name      string       `json:"name,omitempty"` // from the PCI ID database
	Driver    string       `json:"driver,omitempty"`
	NUMANode  int          `json:"numa_node"` // as sysfs says; -1: none given
	LocalCPUs pci.CPUSet   `json:"local_cpus"`
	Link      Link         `json:"link"`
	PortType  pci.PortType `json:"port_type"`
	// PortTypeFrom says whether PortType was read from config space
	// ("config") or inferred from the tree's shape ("inferred").
	PortTypeFrom string      `json:"port_type_from"`
	Parent       string      `json:"parent,omitempty"` // address of the upstream bridge
	HostBridge   string      `json:"host_bridge"`      // pci0000:00
	SysPath      string      `json:"sys_path"`         // under the root
	IOMMUGroup   *int        `json:"iommu_group,omitempty"`
	Config       *pci.Config `json:"config,omitempty"`
	ConfigError  string      `json:"config_error,omitempty"`
	Children     []string    `json:"children,omitempty"`
	// TreeUnknown is set when the device's place in the PCI tree could not
	// be read (broken link, missing bridge): relations through it are
	// unknown rather than guessed.
	TreeUnknown bool `json:"tree_unknown,omitempty"`
	// Incomplete is set when an identifying attribute (class, vendor,
	// device) was missing or unreadable.
	Incomplete bool `json:"incomplete,omitempty"`

	parent *Device
}

// Link is a device's PCIe link as sysfs reports it.
type Link struct {
	CurSpeed pci.LinkSpeed `json:"cur_speed_gts"`
	MaxSpeed pci.LinkSpeed `json:"max_speed_gts"`
	CurWidth int           `json:"cur_width"`
	MaxWidth int           `json:"max_width"`
}

// IsBridge reports whether the function is a PCI-to-PCI bridge.
func (d *Device) IsBridge() bool {
	c := d.Class >> 8
	return c == 0x0604 || c == 0x0609
}

// IsGPU reports an NVIDIA display/3D controller.
func (d *Device) IsGPU() bool {
	c := d.Class >> 8
	return d.Vendor == 0x10de && (c == 0x0300 || c == 0x0302)
}

// IsNVSwitch reports an NVIDIA bridge-class "other" device (NVSwitch).
func (d *Device) IsNVSwitch() bool {
	return d.Vendor == 0x10de && d.Class>>8 == 0x0680
}

// ParentDevice is the upstream bridge, nil on a root bus (or before
// Host.LinkParents).
func (d *Device) ParentDevice() *Device { return d.parent }

// LinkParents points every device at its upstream bridge, the device whose
// address is its Parent, and lists it among that bridge's Children, in
// h.Devices order. It returns, in the same order, the devices whose Parent
// is not in h.Devices; they stay unlinked. Whoever builds a Host calls it
// once, after Devices is complete.
func (h *Host) LinkParents() (orphans []*Device) {
	byAddr := make(map[string]*Device, len(h.Devices))
	for _, dev := range h.Devices {
		byAddr[dev.Address] = dev
	}
	for _, dev := range h.Devices {
		if dev.Parent == "" {
			continue
		}
		p := byAddr[dev.Parent]
		if p == nil {
			orphans = append(orphans, dev)
			continue
		}
		dev.parent = p
		p.Children = append(p.Children, dev.Address)
	}
	return orphans
}

// GPU is an NVIDIA GPU.
type GPU struct {
	Index   int    `json:"index"` // in PCI bus order, as nvidia-smi numbers them
	Address string `json:"address"`
	Name    string `json:"name,omitempty"`
	UUID    string `json:"uuid,omitempty"`
	// NVLinks are this GPU's links from the driver; NVLinkKnown is false
	// when the driver could not be asked (then NVLink is unknown, not absent).
	NVLinks     []gpu.NVLink `json:"nvlinks,omitempty"`
	NVLinkKnown bool         `json:"nvlink_known"`
	Facts       *gpu.GPU     `json:"-"`
	Dev         *Device      `json:"-"`
}

// NIC is an RDMA device (/sys/class/infiniband/NAME).
type NIC struct {
	Index        int      `json:"index"` // NICn in the matrix; -1 when not in it (no PCI function)
	Name         string   `json:"name"`  // mlx5_0
	Address      string   `json:"address,omitempty"`
	NodeGUID     string   `json:"node_guid,omitempty"`
	SysImageGUID string   `json:"sys_image_guid,omitempty"`
	FWVersion    string   `json:"fw_ver,omitempty"`
	HCAType      string   `json:"hca_type,omitempty"`
	BoardID      string   `json:"board_id,omitempty"`
	NodeType     string   `json:"node_type,omitempty"`
	Driver       string   `json:"driver,omitempty"`
	Ports        []Port   `json:"ports"`
	NetDevs      []string `json:"netdevs,omitempty"`
	Dev          *Device  `json:"-"`
}

// Port is one port of an RDMA device.
type Port struct {
	Number    int     `json:"port"`
	State     string  `json:"state"`      // ACTIVE, DOWN, INIT, ARMED
	PhysState string  `json:"phys_state"` // LinkUp, Disabled, Polling
	RateGbps  float64 `json:"rate_gbps"`  // 0: unknown
	RateText  string  `json:"rate"`       // "400 Gb/sec (4X NDR)"
	LinkLayer string  `json:"link_layer"` // InfiniBand, Ethernet
	LID       string  `json:"lid,omitempty"`
	SMLID     string  `json:"sm_lid,omitempty"`
	NetDev    string  `json:"netdev,omitempty"`
	MTU       int     `json:"netdev_mtu,omitempty"`
	// Counters are the port's error counters that could be read.
	Counters map[string]uint64 `json:"counters,omitempty"`
	// GIDs are the populated (non-zero) entries of an Ethernet (RoCE)
	// port's GID table, in index order; GIDsRead counts the entries read
	// (0: the table was not read: an InfiniBand port, an older snapshot).
	GIDs     []GID `json:"gids,omitempty"`
	GIDsRead int   `json:"gids_read,omitempty"`
	// GIDChoice is RoCEGID() as discovery left it (Host.Finish), for the
	// JSON view.
	GIDChoice *GIDChoice `json:"roce_gid,omitempty"`
}

// NetDev is a network interface backed by a PCI function.
type NetDev struct {
	Name      string `json:"name"`
	Address   string `json:"address"`
	Driver    string `json:"driver,omitempty"`
	OperState string `json:"operstate,omitempty"`
	SpeedMbps int    `json:"speed_mbps,omitempty"`
	MTU       int    `json:"mtu,omitempty"`
	RDMA      string `json:"rdma,omitempty"` // the RDMA device on the same function
}

// GPUByAddress returns the GPU at a PCI address, or nil.
func (h *Host) GPUByAddress(addr string) *GPU {
	addr = pci.NormalizeBusID(addr)
	for _, g := range h.GPUs {
		if g.Address == addr {
			return g
		}
	}
	return nil
}

// NICByName returns the RDMA device with that name, or nil.
func (h *Host) NICByName(name string) *NIC { return nicByName(h.NICs, name) }

// nicByName is the NIC of nics with that name, or nil.
func nicByName(nics []*NIC, name string) *NIC {
	for _, n := range nics {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// NUMAOf is the NUMA node a device is local to: sysfs' numa_node when
// given; otherwise the only node of a single-node machine, or the one node
// whose CPUs the device's local CPUs fall in. -1 when it cannot be known.
func (h *Host) NUMAOf(d *Device) int {
	if d == nil {
		return -1
	}
	if d.NUMANode >= 0 {
		return d.NUMANode
	}
	if len(h.NUMANodes) <= 1 {
		if len(h.NUMANodes) == 1 {
			return h.NUMANodes[0].ID
		}
		return 0
	}
	found := -1
	for _, n := range h.NUMANodes {
		if n.CPUs.Intersects(d.LocalCPUs) {
			if found >= 0 {
				return -1
			}
			found = n.ID
		}
	}
	return found
}

// PathToRoot lists a device's upstream bridges, nearest first.
func (h *Host) PathToRoot(d *Device) []*Device {
	var out []*Device
	seen := map[*Device]bool{}
	for p := d.parent; p != nil && !seen[p]; p = p.parent {
		seen[p] = true
		out = append(out, p)
	}
	return out
}

// NaturalLess orders names with embedded numbers numerically:
// mlx5_2 < mlx5_10.
func NaturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		if da && db {
			i := 0
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			j := 0
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			na, nb := strings.TrimLeft(a[:i], "0"), strings.TrimLeft(b[:j], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[i:], b[j:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
