// Package burn is the pure core of the burn-in (issue 28): which links carried
// traffic in which window (Schedule, Link), the counter deltas of every port
// and PCI function per window attributed to those links (Attribute), and the
// verdicts on them in the result vocabulary (Judge): a new fatal event fails
// naming the device, the links and the window; correctable errors are judged
// as a rate per bit moved with a Poisson confidence bound; too few bits is
// unknown, never a pass. It reads nothing: the samples come from
// internal/collect/counters, the schedule from the workload.
package burn

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
)

// LinkKind is what kind of link a Link is.
type LinkKind string

// Link kinds. The text form of each is in Link.String.
const (
	// RDMAPort is an RDMA port's link to the fabric: "rdma:mlx5_0/1".
	RDMAPort LinkKind = "rdma"
	// GPUNIC is the PCIe path between a GPU and an RDMA NIC (GPU Direct
	// RDMA): "gpu-nic:0000:18:00.0>mlx5_0".
	GPUNIC LinkKind = "gpu-nic"
	// GPUHost is a GPU's PCIe path to the host (its root port: copies to
	// and from host memory): "gpu-host:0000:18:00.0".
	GPUHost LinkKind = "gpu-host"
	// GPUPeer is the PCIe path between two GPUs (peer-to-peer copies not
	// over NVLink), the lower address first: "gpu-peer:0000:18:00.0>0000:3a:00.0".
	GPUPeer LinkKind = "gpu-peer"
	// NVLink is one NVLink of a GPU, by its link number:
	// "nvlink:0000:18:00.0#3".
	NVLink LinkKind = "nvlink"
)

// Link names one link a workload moves data over: a small comparable key,
// usable as a map key, written as text in JSON ("rdma:mlx5_0/1").
type Link struct {
	Kind LinkKind
	GPU  string // the GPU's PCI address (gpu-nic, gpu-host, gpu-peer, nvlink)
	Peer string // the second GPU's PCI address (gpu-peer)
	NIC  string // the RDMA device (rdma, gpu-nic)
	Num  int    // the RDMA port (rdma) or the NVLink number (nvlink)
}

// PortLink is the link of an RDMA port.
func PortLink(nic string, port int) Link { return Link{Kind: RDMAPort, NIC: nic, Num: port} }

// GPUNICLink is the PCIe path between a GPU and an RDMA NIC.
func GPUNICLink(gpu, nic string) Link { return Link{Kind: GPUNIC, GPU: gpu, NIC: nic} }

// GPUHostLink is a GPU's PCIe path to the host.
func GPUHostLink(gpu string) Link { return Link{Kind: GPUHost, GPU: gpu} }

// GPUPeerLink is the PCIe path between two GPUs, in either order.
func GPUPeerLink(a, b string) Link {
	if b < a {
		a, b = b, a
	}
	return Link{Kind: GPUPeer, GPU: a, Peer: b}
}

// NVLinkLink is NVLink number n of a GPU.
func NVLinkLink(gpu string, n int) Link { return Link{Kind: NVLink, GPU: gpu, Num: n} }

func (l Link) String() string {
	switch l.Kind {
	case RDMAPort:
		return fmt.Sprintf("rdma:%s/%d", l.NIC, l.Num)
	case GPUNIC:
		return "gpu-nic:" + l.GPU + ">" + l.NIC
	case GPUHost:
		return "gpu-host:" + l.GPU
	case GPUPeer:
		return "gpu-peer:" + l.GPU + ">" + l.Peer
	case NVLink:
		return fmt.Sprintf("nvlink:%s#%d", l.GPU, l.Num)
	}
	return string(l.Kind) + ":?"
}

// ParseLink reads a link's text form (Link.String). PCI addresses are
// normalised; a gpu-peer link must name two different GPUs, in any order.
func ParseLink(s string) (Link, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || rest == "" {
		return Link{}, fmt.Errorf("link %q: want KIND:WHAT (rdma:mlx5_0/1, gpu-nic:ADDR>NIC, gpu-host:ADDR, gpu-peer:ADDR>ADDR, nvlink:ADDR#N)", s)
	}
	bad := func(want string) (Link, error) { return Link{}, fmt.Errorf("link %q: want %s", s, want) }
	addr := func(a string) (string, bool) {
		pa, err := pci.ParseAddress(a)
		if err != nil {
			return "", false
		}
		return pa.String(), true
	}
	switch LinkKind(kind) {
	case RDMAPort:
		nic, port, ok := strings.Cut(rest, "/")
		n, err := strconv.Atoi(port)
		if !ok || nic == "" || err != nil || n < 0 {
			return bad("rdma:DEVICE/PORT")
		}
		return PortLink(nic, n), nil
	case GPUNIC:
		g, nic, ok := strings.Cut(rest, ">")
		ga, gok := addr(g)
		if !ok || !gok || nic == "" {
			return bad("gpu-nic:GPU-PCI-ADDRESS>NIC")
		}
		return GPUNICLink(ga, nic), nil
	case GPUHost:
		ga, ok := addr(rest)
		if !ok {
			return bad("gpu-host:GPU-PCI-ADDRESS")
		}
		return GPUHostLink(ga), nil
	case GPUPeer:
		a, b, ok := strings.Cut(rest, ">")
		aa, aok := addr(a)
		ba, bok := addr(b)
		if !ok || !aok || !bok || aa == ba {
			return bad("gpu-peer:GPU-PCI-ADDRESS>OTHER-GPU-PCI-ADDRESS")
		}
		return GPUPeerLink(aa, ba), nil
	case NVLink:
		g, num, ok := strings.Cut(rest, "#")
		ga, gok := addr(g)
		n, err := strconv.Atoi(num)
		if !ok || !gok || err != nil || n < 0 {
			return bad("nvlink:GPU-PCI-ADDRESS#LINK")
		}
		return NVLinkLink(ga, n), nil
	}
	return Link{}, fmt.Errorf("link %q: unknown kind %q (want rdma, gpu-nic, gpu-host, gpu-peer or nvlink)", s, kind)
}

// MarshalText writes the text form.
func (l Link) MarshalText() ([]byte, error) {
	if l.Kind == "" {
		return nil, fmt.Errorf("link without a kind")
	}
	return []byte(l.String()), nil
}

// UnmarshalText reads the text form.
func (l *Link) UnmarshalText(b []byte) error {
	v, err := ParseLink(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}
