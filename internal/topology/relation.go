package topology

import (
	"fmt"
	"slices"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// Relation is how one device reaches another.
type Relation struct {
	Level   level.Level `json:"level"`
	NVLinks int         `json:"nvlinks,omitempty"` // for level.NVLink
	// PCIe is the PCIe-only level (what the pair would use without NVLink).
	PCIe level.Level `json:"pcie"`
	// Bridges is the number of PCIe bridge hops, each switch counted once.
	Bridges int `json:"bridges"`
	// Via names the hops: switch/root-port addresses, host bridges.
	Via []string `json:"via,omitempty"`
}

// String prints the matrix cell.
func (r Relation) String() string {
	if r.Level == level.NVLink {
		return fmt.Sprintf("NV%d", r.NVLinks)
	}
	return r.Level.String()
}

// switchKey collapses a PCIe switch into one hop: an upstream port and its
// downstream ports share the upstream port's address.
func switchKey(d *Device) string {
	switch d.PortType {
	case pci.PortDownstream:
		if p := d.parent; p != nil && p.PortType == pci.PortUpstream {
			return p.Address
		}
	}
	return d.Address
}

// bridgeHops lists a device's upstream hops from the root bus down, with
// each switch collapsed to one hop.
func bridgeHops(h *Host, d *Device) []string {
	up := h.PathToRoot(d)
	var hops []string
	for i := len(up) - 1; i >= 0; i-- {
		k := switchKey(up[i])
		if len(hops) > 0 && hops[len(hops)-1] == k {
			continue
		}
		hops = append(hops, k)
	}
	return hops
}

// treeUnknown reports whether a device or any bridge above it has an
// unknown place in the tree.
func treeUnknown(h *Host, d *Device) bool {
	if d.TreeUnknown {
		return true
	}
	for _, p := range h.PathToRoot(d) {
		if p.TreeUnknown {
			return true
		}
	}
	return false
}

// PCIeRelation is the PCIe-only relation of two devices.
func (h *Host) PCIeRelation(a, b *Device) Relation {
	if a == nil || b == nil {
		return Relation{Level: level.Unknown, PCIe: level.Unknown}
	}
	if a == b {
		return Relation{Level: level.Self, PCIe: level.Self}
	}
	if treeUnknown(h, a) || treeUnknown(h, b) {
		return Relation{Level: level.Unknown, PCIe: level.Unknown}
	}
	ha, hb := bridgeHops(h, a), bridgeHops(h, b)
	k := 0
	if a.HostBridge == b.HostBridge {
		for k < len(ha) && k < len(hb) && ha[k] == hb[k] {
			k++
		}
	}
	r := Relation{}
	if k > 0 {
		r.Bridges = (len(ha) - k) + (len(hb) - k) + 1
		via := append([]string{}, ha[k-1:]...)
		for i := len(hb) - 1; i >= k; i-- {
			via = append(via, hb[i])
		}
		r.Via = via
		if r.Bridges <= 1 {
			r.Level = level.PIX
		} else {
			r.Level = level.PXB
		}
		r.PCIe = r.Level
		return r
	}
	r.Bridges = len(ha) + len(hb)
	switch {
	case a.HostBridge == b.HostBridge && a.HostBridge != "":
		r.Level = level.PHB
		r.Via = []string{a.HostBridge}
	default:
		na, nb := h.NUMAOf(a), h.NUMAOf(b)
		r.Via = []string{a.HostBridge, b.HostBridge}
		if na >= 0 && na == nb {
			r.Level = level.NODE
		} else {
			r.Level = level.SYS
		}
	}
	r.PCIe = r.Level
	return r
}

// NVLinksBetween counts the NVLinks joining two GPUs: direct links, or,
// through NVSwitches, the links both have into the switch fabric (the
// fewer of the two, which bounds the pair). -1 when NVLink is unknown for
// either GPU.
func NVLinksBetween(a, b *GPU) int {
	if a == nil || b == nil || !a.NVLinkKnown || !b.NVLinkKnown {
		return -1
	}
	direct, swA, swB := 0, 0, 0
	for _, l := range a.NVLinks {
		if !l.Active {
			continue
		}
		switch {
		case l.RemoteType == "nvswitch":
			swA++
		case l.RemoteBusID == b.Address:
			direct++
		}
	}
	for _, l := range b.NVLinks {
		if l.Active && l.RemoteType == "nvswitch" {
			swB++
		}
	}
	return direct + min(swA, swB)
}

// GPURelation is the relation of two GPUs, NVLink first.
func (h *Host) GPURelation(a, b *GPU) Relation {
	r := h.PCIeRelation(a.Dev, b.Dev)
	if a == b {
		return r
	}
	// NVLink is known from the driver even when the PCIe path is not.
	if n := NVLinksBetween(a, b); n > 0 {
		r.Level = level.NVLink
		r.NVLinks = n
	}
	return r
}

// Endpoint is a row or column of the topology matrix: a GPU or a NIC.
type Endpoint struct {
	Label string // GPU0, NIC3
	GPU   *GPU
	NIC   *NIC
}

// Dev is the PCI function behind the endpoint (nil for a NIC without one).
func (e Endpoint) Dev() *Device {
	if e.GPU != nil {
		return e.GPU.Dev
	}
	return e.NIC.Dev
}

// Endpoints lists the matrix rows: GPUs in PCI bus order, then the RDMA
// NICs that sit on a PCI function, in natural name order.
func (h *Host) Endpoints() []Endpoint {
	var out []Endpoint
	for _, g := range h.GPUs {
		out = append(out, Endpoint{Label: fmt.Sprintf("GPU%d", g.Index), GPU: g})
	}
	for _, n := range h.MatrixNICs() {
		out = append(out, Endpoint{Label: fmt.Sprintf("NIC%d", n.Index), NIC: n})
	}
	return out
}

// MatrixNICs are the RDMA NICs backed by a PCI function (software RDMA
// devices such as rxe/siw have none and are left out, as nvidia-smi does).
func (h *Host) MatrixNICs() []*NIC {
	var out []*NIC
	for _, n := range h.NICs {
		if n.Dev != nil {
			out = append(out, n)
		}
	}
	return out
}

// Relate is the relation between two matrix endpoints.
func (h *Host) Relate(a, b Endpoint) Relation {
	if a.GPU != nil && b.GPU != nil {
		return h.GPURelation(a.GPU, b.GPU)
	}
	if a.NIC != nil && b.NIC != nil && a.NIC == b.NIC {
		return Relation{Level: level.Self, PCIe: level.Self}
	}
	return h.PCIeRelation(a.Dev(), b.Dev())
}

// NVSwitchesSeen says whether this host's GPUs sit on NVSwitches, and
// from what: NVSwitch PCI functions (bare metal), or GPUs whose active
// NVLinks end at a switch (a VM shows the links, not the switches). ""
// and false when neither is seen; GPUs whose NVLink state is unknown are
// named then, since their links could not be looked at.
func (h *Host) NVSwitchesSeen() (bool, string) {
	if n := len(h.NVSwitches); n > 0 {
		return true, fmt.Sprintf("%d NVSwitch PCI function(s)", n)
	}
	gpus, unknown := 0, 0
	for _, g := range h.GPUs {
		if !g.NVLinkKnown {
			unknown++
			continue
		}
		if slices.ContainsFunc(g.NVLinks, func(l gpu.NVLink) bool { return l.Active && l.RemoteType == "nvswitch" }) {
			gpus++
		}
	}
	if gpus > 0 {
		return true, fmt.Sprintf("%d GPU(s) with active NVLinks to an NVSwitch", gpus)
	}
	why := "no NVSwitch PCI function and no GPU NVLink to a switch"
	if unknown > 0 {
		why += fmt.Sprintf(" (the NVLink state of %d GPU(s) is unknown)", unknown)
	}
	return false, why
}
