package topology

import (
	"fmt"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/printable"
)

// Summary is the discovered host as data: what `gdrcheck topo --format
// json` prints and what later stages (checks, model, report) consume.
type Summary struct {
	Hostname       string       `json:"hostname,omitempty"`
	Kernel         string       `json:"kernel,omitempty"`
	Root           string       `json:"root"`
	GPUFactsSource string       `json:"gpu_facts_source,omitempty"`
	GPUFactsError  string       `json:"gpu_facts_error,omitempty"`
	DriverVersion  string       `json:"driver_version,omitempty"`
	NUMANodes      []NUMANode   `json:"numa_nodes"`
	GPUs           []GPUSummary `json:"gpus"`
	NVSwitches     []string     `json:"nvswitches"`
	NICs           []*NIC       `json:"rdma_nics"`
	NetDevs        []*NetDev    `json:"netdevs"`
	Matrix         *Matrix      `json:"matrix"`
	Pairing        *Pairing     `json:"pairing"`
	Problems       []Problem    `json:"problems,omitempty"`
	DiscoveryMS    float64      `json:"discovery_ms"`
}

// GPUSummary is one GPU with where it sits.
type GPUSummary struct {
	Index      int      `json:"index"`
	Address    string   `json:"address"`
	Name       string   `json:"name"`
	UUID       string   `json:"uuid,omitempty"`
	Serial     string   `json:"serial,omitempty"` // the board serial the driver reports
	NUMA       int      `json:"numa_node"`
	LocalCPUs  string   `json:"local_cpus"`
	Link       Link     `json:"link"`
	HostBridge string   `json:"host_bridge"`
	Upstream   []string `json:"upstream"` // bridges, nearest first, "addr (type)"
	// NVLinks: active of total; -1 when unknown.
	NVLinksActive int `json:"nvlinks_active"`
	NVLinksTotal  int `json:"nvlinks_total"`
}

// Summarize builds the summary.
func (h *Host) Summarize() *Summary {
	s := &Summary{Hostname: h.Hostname, Kernel: h.Kernel, Root: h.Root, GPUFactsError: h.GPUFactsError,
		NUMANodes: h.NUMANodes, NICs: h.NICs, NetDevs: h.NetDevs, Matrix: h.BuildMatrix(), Pairing: h.Pairing(),
		Problems: h.Problems, DiscoveryMS: h.DiscoveryMS, NVSwitches: []string{}}
	if h.GPUFacts != nil {
		s.GPUFactsSource = h.GPUFacts.Source
		s.DriverVersion = h.GPUFacts.DriverVersion
	}
	for _, d := range h.NVSwitches {
		s.NVSwitches = append(s.NVSwitches, d.Address)
	}
	for _, g := range h.GPUs {
		gs := GPUSummary{Index: g.Index, Address: g.Address, Name: g.Name, UUID: g.UUID, NUMA: h.NUMAOf(g.Dev),
			LocalCPUs: g.Dev.LocalCPUs.String(), Link: g.Dev.Link, HostBridge: g.Dev.HostBridge, NVLinksActive: -1, NVLinksTotal: -1}
		if g.Facts != nil {
			gs.Serial = g.Facts.Serial
		}
		for _, p := range h.PathToRoot(g.Dev) {
			gs.Upstream = append(gs.Upstream, fmt.Sprintf("%s (%s)", p.Address, p.PortType))
		}
		if g.NVLinkKnown {
			gs.NVLinksTotal = len(g.NVLinks)
			gs.NVLinksActive = 0
			for _, l := range g.NVLinks {
				if l.Active {
					gs.NVLinksActive++
				}
			}
		}
		s.GPUs = append(s.GPUs, gs)
	}
	return s
}

// WriteInventory prints what was found, in words a person reads first.
// Every value read from the host is printed escaped, on its own line
// (printable.Line): a snapshot cannot send escape sequences to the
// terminal or forge a line.
func (s *Summary) WriteInventory(w io.Writer) error {
	var b strings.Builder
	l := printable.Line
	name := l(s.Hostname)
	if name == "" {
		name = "(unknown host)"
	}
	fmt.Fprintf(&b, "Host %s", name)
	if s.Kernel != "" {
		fmt.Fprintf(&b, ", kernel %s", l(s.Kernel))
	}
	if s.Root != "/" {
		fmt.Fprintf(&b, " (read from %s)", l(s.Root))
	}
	b.WriteString("\n")
	if len(s.NUMANodes) > 0 {
		var parts []string
		for _, n := range s.NUMANodes {
			parts = append(parts, fmt.Sprintf("node%d: CPUs %s", n.ID, n.CPUs))
		}
		fmt.Fprintf(&b, "NUMA: %s\n", strings.Join(parts, "; "))
	}
	switch {
	case s.DriverVersion != "":
		fmt.Fprintf(&b, "NVIDIA driver %s (facts from %s)\n", l(s.DriverVersion), l(s.GPUFactsSource))
	case s.GPUFactsError != "":
		fmt.Fprintf(&b, "NVIDIA driver facts unavailable: %s\n", l(s.GPUFactsError))
	}
	if len(s.GPUs) == 0 {
		b.WriteString("GPUs: none: no NVIDIA GPU on the PCI bus (no function with vendor 0x10de and class 0x0300/0x0302)\n")
	} else {
		fmt.Fprintf(&b, "GPUs: %d\n", len(s.GPUs))
	}
	for _, g := range s.GPUs {
		nv := "NVLink unknown"
		if g.NVLinksTotal == 0 {
			nv = "no NVLink"
		} else if g.NVLinksTotal > 0 {
			nv = fmt.Sprintf("NVLink %d/%d active", g.NVLinksActive, g.NVLinksTotal)
		}
		up := "on the root bus"
		if len(g.Upstream) > 0 {
			up = "under " + l(strings.Join(g.Upstream, " < "))
		}
		fmt.Fprintf(&b, "  GPU%d %s %s, PCIe %s x%d (max %s x%d), NUMA %s, %s, %s %s\n", g.Index, l(g.Address), l(g.Name),
			g.Link.CurSpeed, g.Link.CurWidth, g.Link.MaxSpeed, g.Link.MaxWidth, numaText(g.NUMA), nv, l(g.HostBridge), up)
	}
	if len(s.NVSwitches) > 0 {
		fmt.Fprintf(&b, "NVSwitches: %d (%s)\n", len(s.NVSwitches), l(strings.Join(s.NVSwitches, ", ")))
	}
	if len(s.NICs) == 0 {
		b.WriteString("RDMA NICs: none: GPU Direct RDMA is not possible on this host (no /sys/class/infiniband devices)\n")
	} else {
		fmt.Fprintf(&b, "RDMA NICs: %d\n", len(s.NICs))
	}
	for _, n := range s.NICs {
		var ports []string
		for _, p := range n.Ports {
			pt := fmt.Sprintf("port %d %s/%s %s %s", p.Number, l(p.State), l(p.PhysState), l(p.LinkLayer), l(p.RateText))
			if c := p.GIDChoice; c != nil {
				pt += ", " + l(c.Text())
			}
			ports = append(ports, pt)
		}
		addr := l(n.Address)
		if addr == "" {
			addr = "no PCI function"
		}
		fmt.Fprintf(&b, "  %s %s fw %s: %s\n", l(n.Name), addr, l(n.FWVersion), strings.Join(ports, "; "))
	}
	var eth []string
	for _, nd := range s.NetDevs {
		if nd.RDMA == "" {
			eth = append(eth, fmt.Sprintf("%s (%s, %s, %s)", l(nd.Name), l(nd.Address), l(nd.Driver), l(nd.OperState)))
		}
	}
	if len(eth) > 0 {
		fmt.Fprintf(&b, "Other NICs: %s\n", strings.Join(eth, ", "))
	}
	if len(s.Problems) > 0 {
		fmt.Fprintf(&b, "Could not read %d item(s):\n", len(s.Problems))
		for _, p := range s.Problems {
			fmt.Fprintf(&b, "  %s: %s\n", l(p.Path), l(p.Message))
		}
	}
	_, err := io.WriteString(w, printable.Text(b.String()))
	return err
}

func numaText(n int) string {
	if n < 0 {
		return "unknown"
	}
	return fmt.Sprint(n)
}
