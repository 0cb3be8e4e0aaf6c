package nccltopo

import (
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// derive flattens the tree into GPUs and NICs and finds every GPU's nearest
// RDMA NIC.
func derive(s *System) {
	s.GPUs = []GPU{}
	s.NICs = []NIC{}
	for ci, c := range s.CPUs {
		for _, n := range c.NICs {
			nic := NIC{Source: "nic", CPU: ci, NUMAID: c.NUMAID, Nets: n.Nets, Line: n.Line}
			nic.RDMA = anyRDMA(n.Nets)
			s.NICs = append(s.NICs, nic)
		}
		for _, p := range c.PCI {
			walk(s, ci, c, p, nil)
		}
	}
	byBus := map[string]*PCI{}
	for _, c := range s.CPUs {
		for _, p := range c.PCI {
			index(byBus, p)
		}
	}
	s.Paths = nil
	for _, g := range s.GPUs {
		best := level.Unknown
		var nics []string
		for _, n := range s.NICs {
			if !n.RDMA {
				continue
			}
			t := pathType(g, n, byBus)
			label := nicLabel(n)
			switch {
			case t < best:
				best, nics = t, []string{label}
			case t == best:
				nics = append(nics, label)
			}
		}
		if best != level.Unknown {
			s.Paths = append(s.Paths, GPUPath{GPU: g.BusID, Dev: g.Dev, Type: best.String(), NICs: nics})
		}
	}
}

func index(m map[string]*PCI, p *PCI) {
	if p.BusID != "" {
		m[p.BusID] = p
	}
	for _, c := range p.Children {
		index(m, c)
	}
}

func walk(s *System, ci int, c *CPU, p *PCI, path []string) {
	isGPUClass := strings.HasPrefix(p.Class, "0x03")
	isNetClass := strings.HasPrefix(p.Class, "0x02")
	switch {
	case p.GPU != nil || isGPUClass && len(p.Children) == 0 && p.NIC == nil:
		g := GPU{BusID: p.BusID, Source: "pci-class", CPU: ci, NUMAID: c.NUMAID, Path: copyPath(path),
			LinkSpeedGTs: p.LinkSpeedGTs, LinkWidth: p.LinkWidth, Line: p.Line}
		if p.Vendor != "" || p.Device != "" {
			g.VendorDevice = strings.TrimPrefix(p.Vendor, "0x") + ":" + strings.TrimPrefix(p.Device, "0x")
		}
		if p.GPU != nil {
			g.Source = "gpu"
			g.Dev, g.SM, g.Rank, g.GDR, g.NVLinks = p.GPU.Dev, p.GPU.SM, p.GPU.Rank, p.GPU.GDR, p.GPU.NVLinks
		}
		s.GPUs = append(s.GPUs, g)
	case p.NIC != nil || isNetClass && len(p.Children) == 0:
		n := NIC{BusID: p.BusID, Source: "pci-class", Class: p.Class, CPU: ci, NUMAID: c.NUMAID, Path: copyPath(path),
			LinkSpeedGTs: p.LinkSpeedGTs, LinkWidth: p.LinkWidth, Line: p.Line}
		if p.Vendor != "" || p.Device != "" {
			n.VendorDevice = strings.TrimPrefix(p.Vendor, "0x") + ":" + strings.TrimPrefix(p.Device, "0x")
		}
		if p.NIC != nil {
			n.Source = "nic"
			n.Nets = p.NIC.Nets
			n.RDMA = anyRDMA(p.NIC.Nets)
			if len(p.NIC.Nets) == 0 {
				n.RDMA = rdmaClass(p)
			}
		} else {
			n.RDMA = rdmaClass(p)
		}
		s.NICs = append(s.NICs, n)
	}
	if len(path) < maxDepth {
		path = append(path, p.BusID)
	}
	for _, ch := range p.Children {
		walk(s, ci, c, ch, path)
	}
}

func copyPath(p []string) []string {
	if len(p) == 0 {
		return nil
	}
	return append([]string(nil), p...)
}

func anyRDMA(nets []Net) bool {
	for _, n := range nets {
		if n.RDMA {
			return true
		}
	}
	return false
}

// rdmaClass: an InfiniBand controller (class 0x0207), or a Mellanox/NVIDIA
// Ethernet controller (RoCE capable).
func rdmaClass(p *PCI) bool {
	return strings.HasPrefix(p.Class, "0x0207") || strings.HasPrefix(p.Class, "0x02") && p.Vendor == "0x15b3"
}

func nicLabel(n NIC) string {
	var names []string
	for _, x := range n.Nets {
		if x.RDMA && x.Name != "" {
			names = append(names, x.Name)
		}
	}
	if len(names) > 0 {
		l := strings.Join(names, "+")
		if n.BusID != "" {
			l += "@" + n.BusID
		}
		return l
	}
	if n.BusID != "" {
		return n.BusID
	}
	return "nic"
}

// pathType is the PCI distance between a GPU and a NIC in NCCL's terms:
// PIX, PXB, PHB or SYS.
func pathType(g GPU, n NIC, byBus map[string]*PCI) level.Level {
	if g.CPU != n.CPU {
		return level.SYS
	}
	k := 0
	for k < len(g.Path) && k < len(n.Path) && g.Path[k] == n.Path[k] {
		k++
	}
	if k == 0 {
		return level.PHB
	}
	if lca := byBus[g.Path[k-1]]; lca != nil && strings.HasPrefix(lca.Class, "0x0600") {
		return level.PHB // a host bridge, not a PCIe switch
	}
	if len(g.Path) == k && len(n.Path) == k {
		return level.PIX
	}
	return level.PXB
}
