package topology

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
)

// NCCLTopoVersion is the version attribute of NCCL's <system> element
// (NCCL_TOPO_XML_VERSION); NCCL refuses a file of another version.
const NCCLTopoVersion = 1

// WriteNCCLTopo writes the host's layout as an NCCL topology file (the XML
// NCCL reads from NCCL_TOPO_FILE): one <cpu> per NUMA node with the
// processor's architecture, vendor and model and the node's CPUs, and
// below it the PCI tree as NCCL draws it from sysfs, holding every GPU and
// RDMA NIC. NCCL keeps a PCI parent every second level of the sysfs path
// (a switch's upstream port; its downstream ports and root ports fall
// out), so that a GPU and a NIC under one switch are one bridge apart
// (PIX); the file does the same, so NCCL reads it as it would the live
// tree. Each <pci> carries its class, ids and link (the slower of the
// device's and its upstream port's maximum, as NCCL takes it); the GPUs'
// and NICs' own elements (<gpu>, <nic>, NVLinks) are left out: NCCL fills
// them from NVML and the NIC plugin at start, and a file that names them
// would override what the driver reports.
//
// It fails, writing nothing, when the file would have to guess: the CPU
// unknown (no /proc/cpuinfo), a GPU or NIC without a PCI function, or its
// place in the tree unread.
//
// layout overrides the tree where the node shows a false one (a
// passthrough VM puts every device on its own root port, and NCCL then
// sees no GPU and NIC sharing a switch): each Switch becomes a PCIe
// switch of its own below its NUMA node's CPU ("ffff:ff:NN.0", as cloud
// providers' topology files for their VMs write them), holding its GPUs
// and NICs, so that NCCL pairs them as on the host below. A layout
// device that is not a GPU or RDMA NIC of the host is an error.
func (h *Host) WriteNCCLTopo(w io.Writer, source string, layout ...Switch) error {
	if h.CPU == nil {
		return fmt.Errorf("the CPU is unknown (no /proc/cpuinfo read): NCCL needs its architecture and vendor in a topology file")
	}
	type node struct {
		dev      *Device
		children []*node
	}
	nodes := map[string]*node{}
	cpus := map[int][]*node{}
	var place func(chain []*Device) *node
	// place adds the last device of chain (root bus first) and its NCCL
	// parents: the device two sysfs levels up, until fewer than two are
	// left (then the CPU).
	place = func(chain []*Device) *node {
		d := chain[len(chain)-1]
		if n := nodes[d.Address]; n != nil {
			return n
		}
		n := &node{dev: d}
		nodes[d.Address] = n
		if len(chain) >= 3 {
			p := place(chain[:len(chain)-2])
			p.children = append(p.children, n)
		} else {
			cpus[d.NUMANode] = append(cpus[d.NUMANode], n)
		}
		return n
	}
	// The layout's switches, by the addresses of the devices below them.
	group := map[string]int{}
	for i, sw := range layout {
		for _, a := range sw.Devices {
			if _, dup := group[a]; dup {
				return fmt.Errorf("layout: %s is in two switches", a)
			}
			group[a] = i
		}
	}
	switches := make([]*node, len(layout))
	below := func(i int, d *Device) {
		if switches[i] == nil {
			numa := layout[i].NUMA
			if numa < 0 {
				numa = max(d.NUMANode, 0)
			}
			sw := &Device{Address: fmt.Sprintf("ffff:ff:%02x.0", i+1), Class: 0x060400, NUMANode: numa}
			switches[i] = &node{dev: sw}
			cpus[numa] = append(cpus[numa], switches[i])
		}
		sw := switches[i]
		// The switch is as fast as the fastest device below it.
		if d.Link.MaxSpeed > sw.dev.Link.MaxSpeed {
			sw.dev.Link.MaxSpeed = d.Link.MaxSpeed
		}
		sw.dev.Link.MaxWidth = max(sw.dev.Link.MaxWidth, d.Link.MaxWidth)
		n := &node{dev: d}
		nodes[d.Address] = n
		sw.children = append(sw.children, n)
	}
	placed := map[string]bool{}
	add := func(what string, d *Device) error {
		if d == nil {
			return fmt.Errorf("%s has no PCI function: its place cannot be written", what)
		}
		if i, ok := group[d.Address]; ok {
			below(i, d)
			placed[d.Address] = true
			return nil
		}
		var chain []*Device
		for x := d; x != nil; x = x.ParentDevice() {
			if x.TreeUnknown {
				return fmt.Errorf("%s (%s): its place in the PCI tree could not be read at %s", what, d.Address, x.Address)
			}
			chain = append(chain, x)
		}
		slices.Reverse(chain)
		place(chain)
		return nil
	}
	for _, g := range h.GPUs {
		if err := add(fmt.Sprintf("GPU%d", g.Index), g.Dev); err != nil {
			return err
		}
	}
	for _, n := range h.NICs {
		if err := add(n.Name, n.Dev); err != nil {
			return err
		}
	}
	if len(nodes) == 0 {
		return fmt.Errorf("no GPU and no RDMA NIC on the PCI bus: there is nothing for NCCL to place")
	}
	for i, sw := range layout {
		for _, a := range sw.Devices {
			if !placed[a] {
				return fmt.Errorf("layout: switch %d names %s, which is not a GPU or RDMA NIC of this host", i+1, a)
			}
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "<system version=\"%d\" name=\"%s\">\n", NCCLTopoVersion, xmlSafe("gdrcheck "+cmp.Or(h.Hostname, "host")))
	fmt.Fprintf(&b, "  <!-- %s -->\n", strings.ReplaceAll(xmlSafeText(source), "--", "- -"))
	numas := make([]int, 0, len(cpus))
	for id := range cpus {
		numas = append(numas, id)
	}
	slices.Sort(numas)
	var write func(n *node, indent string)
	write = func(n *node, indent string) {
		d := n.dev
		fmt.Fprintf(&b, "%s<pci busid=\"%s\" class=\"0x%06x\" vendor=\"0x%04x\" device=\"0x%04x\" subsystem_vendor=\"0x%04x\" subsystem_device=\"0x%04x\"",
			indent, xmlSafe(d.Address), d.Class, d.Vendor, d.DeviceID, d.SubVendor, d.SubDevice)
		speed, width := d.Link.MaxSpeed, d.Link.MaxWidth
		// A device of the layout has only its own link: the port above it
		// in the VM is not the host's.
		if up := d.ParentDevice(); up != nil && !placed[d.Address] {
			if up.Link.MaxSpeed > 0 && (speed == 0 || up.Link.MaxSpeed < speed) {
				speed = up.Link.MaxSpeed
			}
			if up.Link.MaxWidth > 0 && (width == 0 || up.Link.MaxWidth < width) {
				width = up.Link.MaxWidth
			}
		}
		if speed > 0 {
			fmt.Fprintf(&b, " link_speed=\"%s GT/s PCIe\"", strconv.FormatFloat(float64(speed), 'f', 1, 64))
		}
		if width > 0 {
			fmt.Fprintf(&b, " link_width=\"%d\"", width)
		}
		if len(n.children) == 0 {
			b.WriteString("/>\n")
			return
		}
		b.WriteString(">\n")
		slices.SortFunc(n.children, func(x, y *node) int { return strings.Compare(x.dev.Address, y.dev.Address) })
		for _, c := range n.children {
			write(c, indent+"  ")
		}
		fmt.Fprintf(&b, "%s</pci>\n", indent)
	}
	for _, id := range numas {
		fmt.Fprintf(&b, "  <cpu numaid=\"%d\"", id)
		if mask := h.numaAffinity(id); mask != "" {
			fmt.Fprintf(&b, " affinity=\"%s\"", mask)
		}
		fmt.Fprintf(&b, " arch=\"%s\"", xmlSafe(h.CPU.Arch))
		if h.CPU.Arch == "x86_64" {
			fmt.Fprintf(&b, " vendor=\"%s\" familyid=\"%d\" modelid=\"%d\"", xmlSafe(h.CPU.Vendor), h.CPU.Family, h.CPU.Model)
		}
		b.WriteString(">\n")
		tops := cpus[id]
		slices.SortFunc(tops, func(x, y *node) int { return strings.Compare(x.dev.Address, y.dev.Address) })
		for _, n := range tops {
			write(n, "    ")
		}
		b.WriteString("  </cpu>\n")
	}
	b.WriteString("</system>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// numaAffinity is NUMA node id's CPUs as the kernel's cpumap writes them
// (32-bit hex words, the highest first, comma separated), "" when the
// node is not known.
func (h *Host) numaAffinity(id int) string {
	var cpus pci.CPUSet
	for _, n := range h.NUMANodes {
		if n.ID == id {
			cpus = n.CPUs
		}
	}
	if len(cpus) == 0 {
		return ""
	}
	words := make([]uint32, slices.Max(cpus)/32+1)
	for _, c := range cpus {
		if c >= 0 {
			words[c/32] |= 1 << (c % 32)
		}
	}
	parts := make([]string, len(words))
	for i, w := range words {
		parts[len(words)-1-i] = fmt.Sprintf("%08x", w)
	}
	return strings.Join(parts, ",")
}

// xmlSafe keeps an attribute value to what NCCL's parser takes in a
// quoted value: no quote, angle bracket, ampersand or control character,
// and at most 200 bytes (NCCL's MAX_STR_LEN is 255).
func xmlSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(`"'<>&`, r) || r > 0x7e {
			return '_'
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// xmlSafeText is s fit for a comment: printable ASCII, no angle brackets.
func xmlSafeText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '<' || r == '>' {
			return '_'
		}
		return r
	}, s)
}

// Switch is a PCIe switch a node's PCI tree does not show (a passthrough
// VM's flattened tree): the PCI addresses of the GPUs and RDMA NICs below
// it, and the NUMA node it hangs off (-1: its first device's).
type Switch struct {
	Devices []string
	NUMA    int
}
