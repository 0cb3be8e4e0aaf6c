package topology

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
	"github.com/gdrcheck/gdrcheck/internal/topology/pairing"
)

// GPUNIC is one GPU's place in the GPU→NIC pairing.
type GPUNIC struct {
	GPU        int         `json:"gpu"`
	GPUAddress string      `json:"gpu_address"`
	Nearest    []string    `json:"nearest_nics"`  // every NIC at the best level
	Level      level.Level `json:"level"`         // the best level reached
	NIC        string      `json:"nic,omitempty"` // the NIC assigned as this GPU's rail
	NICAddress string      `json:"nic_address,omitempty"`
	Port       int         `json:"port,omitempty"`
	RateGbps   float64     `json:"rate_gbps,omitempty"`
	LinkLayer  string      `json:"link_layer,omitempty"`
	PortState  string      `json:"port_state,omitempty"`
	Rail       int         `json:"rail"`   // -1: none
	Shared     bool        `json:"shared"` // the NIC also serves another GPU
	// GDR is true when the assigned NIC is within level.DefaultGDR.
	GDR  bool     `json:"gdr"`
	Path []string `json:"path,omitempty"` // the hops between GPU and NIC
}

// Pairing is the GPU→NIC assignment and what NCCL settings follow from it.
type Pairing struct {
	GPUs []GPUNIC `json:"gpus"`
	// Rails lists the rail NICs in rail order (rail i = Rails[i]).
	Rails []string `json:"rails"`
	// NoGDR lists GPUs with no RDMA NIC at PIX or PXB.
	NoGDR []int `json:"gpus_without_gdr_nic"`
	// GDRBlocked, when set, is why no NIC can register GPU memory on this
	// node (neither nvidia_peermem nor dma-buf), from the kernel-module
	// facts (checks.GDRBlocked, set through WithGDRBlocked). Each pair's GDR
	// stays its placement; the text then says "path only", not "yes".
	GDRBlocked string `json:"gdr_blocked,omitempty"`
	// Unused lists RDMA NICs no GPU was paired with (front-end, storage).
	Unused []string `json:"unused_nics"`
	// NCCL are environment settings that follow from the pairing.
	NCCL  map[string]string `json:"nccl,omitempty"`
	Notes []string          `json:"notes,omitempty"`
}

// ActivePort is the NIC's first ACTIVE port, else its first; nil: none
// (or no NIC).
func (n *NIC) ActivePort() *Port {
	if n == nil {
		return nil
	}
	for i := range n.Ports {
		if strings.EqualFold(n.Ports[i].State, "ACTIVE") {
			return &n.Ports[i]
		}
	}
	if len(n.Ports) > 0 {
		return &n.Ports[0]
	}
	return nil
}

// portScore ranks NICs of one level: an active port first, then the faster.
func portScore(p *Port) float64 {
	if p == nil {
		return 0
	}
	s := p.RateGbps
	if strings.EqualFold(p.State, "ACTIVE") {
		s += 1e6
	}
	return s
}

// Pairing is the GPU→NIC pairing, computed once by Finish; a Host not
// finished gets it computed on each call. It is shared: callers must not
// modify it.
func (h *Host) Pairing() *Pairing {
	if h.pairing != nil {
		return h.pairing
	}
	return h.pair()
}

// Finish computes the GPU→NIC pairing and keeps it for Pairing, and each
// RoCE port's GID choice where its table was read (Port.GIDChoice). Whoever
// builds a Host calls it last, once GPUs and NICs are complete; the Host
// must not change afterwards.
func (h *Host) Finish() {
	for _, n := range h.NICs {
		for i := range n.Ports {
			if n.Ports[i].GIDsRead > 0 {
				n.Ports[i].GIDChoice = n.Ports[i].RoCEGID()
			}
		}
	}
	h.pairing = h.pair()
}

// pair assigns each GPU a rail NIC with pairing.Assign: the nearest by PCIe
// path, a distinct NIC per GPU where the tree allows (a maximum matching
// level by level: PIX, then PXB, and so on), the active and the faster port
// among equals, then name order. With more GPUs than NICs the rest share
// the least used of their nearest. GPUs whose NIC is beyond PXB are listed
// in NoGDR.
func (h *Host) pair() *Pairing {
	p := &Pairing{NCCL: map[string]string{}, GPUs: []GPUNIC{}, Rails: []string{}, NoGDR: []int{}, Unused: []string{}}
	nics := h.MatrixNICs()
	if len(h.GPUs) == 0 {
		return p
	}
	if len(nics) == 0 {
		for _, g := range h.GPUs {
			p.GPUs = append(p.GPUs, GPUNIC{GPU: g.Index, GPUAddress: g.Address, Level: level.Unknown, Rail: -1})
			p.NoGDR = append(p.NoGDR, g.Index)
		}
		p.Notes = append(p.Notes, "no RDMA NIC on this host: inter-node NCCL traffic can only use sockets (or a network plugin)")
		return p
	}
	rels := make([][]Relation, len(h.GPUs))
	levels := make([][]level.Level, len(h.GPUs))
	for i, g := range h.GPUs {
		for _, n := range nics {
			r := h.PCIeRelation(g.Dev, n.Dev)
			rels[i] = append(rels[i], r)
			levels[i] = append(levels[i], r.Level)
		}
	}
	// NICs are in natural name order, so column order is name order.
	ports := make([]*Port, len(nics))
	for k, n := range nics {
		ports[k] = n.ActivePort()
	}
	choices := pairing.Assign(levels, func(_, nic int) float64 { return portScore(ports[nic]) })
	users := map[int]int{}
	for _, c := range choices {
		users[c.NIC]++
	}
	railOf := map[int]int{}
	for i, g := range h.GPUs {
		c := choices[i]
		e := GPUNIC{GPU: g.Index, GPUAddress: g.Address, Level: levels[i][c.Nearest[0]], Rail: -1}
		for _, k := range c.Nearest {
			e.Nearest = append(e.Nearest, nics[k].Name)
		}
		n, rel := nics[c.NIC], rels[i][c.NIC]
		r, ok := railOf[c.NIC]
		if !ok {
			r = len(p.Rails)
			railOf[c.NIC] = r
			p.Rails = append(p.Rails, n.Name)
		}
		e.NIC, e.NICAddress, e.Rail = n.Name, n.Address, r
		e.Shared = users[c.NIC] > 1
		e.GDR = rel.Level <= level.DefaultGDR
		e.Path = rel.Via
		if a := ports[c.NIC]; a != nil {
			e.Port, e.RateGbps, e.LinkLayer, e.PortState = a.Number, a.RateGbps, a.LinkLayer, a.State
		}
		e.Level = rel.Level
		if !e.GDR {
			p.NoGDR = append(p.NoGDR, g.Index)
		}
		p.GPUs = append(p.GPUs, e)
	}
	for k, n := range nics {
		if _, ok := railOf[k]; !ok {
			p.Unused = append(p.Unused, n.Name)
		}
	}
	var hca []string
	for _, name := range p.Rails {
		n := h.NICByName(name)
		port := 1
		if ap := n.ActivePort(); ap != nil {
			port = ap.Number
		}
		hca = append(hca, fmt.Sprintf("%s:%d", name, port))
	}
	if len(hca) > 0 {
		// "=" makes NCCL match the names exactly (mlx5_1 would otherwise
		// also select mlx5_10..mlx5_19).
		p.NCCL["NCCL_IB_HCA"] = "=" + strings.Join(hca, ",")
	}
	if len(p.NoGDR) > 0 {
		worst := level.PIX
		var names []string
		for _, i := range p.NoGDR {
			e := p.GPUs[i]
			if e.Level > worst && e.Level != level.Unknown {
				worst = e.Level
			}
			names = append(names, fmt.Sprintf("GPU%d (%s at %s)", e.GPU, e.NIC, e.Level))
		}
		p.Notes = append(p.Notes, fmt.Sprintf("no RDMA NIC within PXB of %s: by default NCCL will not use GPU Direct RDMA for them and stages network traffic through host memory; NCCL_NET_GDR_LEVEL=%s would force GDR across that path, usually at lower bandwidth", strings.Join(names, ", "), worst))
	}
	for _, e := range p.GPUs {
		if e.Shared && e.GDR {
			p.Notes = append(p.Notes, fmt.Sprintf("GPU%d shares %s with another GPU: each gets at most half of its bandwidth", e.GPU, e.NIC))
		}
	}
	return p
}

// WithGDRBlocked is a copy of p whose GDR column says why no GPU memory
// can be registered with a NIC ("": p as it is). The host's own pairing is
// left unchanged.
func (p *Pairing) WithGDRBlocked(why string) *Pairing {
	if p == nil || why == "" {
		return p
	}
	c := *p
	c.GDRBlocked = why
	return &c
}

// WriteText prints the pairing as a table, then the NCCL settings and
// notes. Names and states read from the host are printed escaped
// (printable.Line), so that they cannot act on the terminal or shift the
// table's columns.
func (p *Pairing) WriteText(w io.Writer) error {
	var b strings.Builder
	l := printable.Line
	b.WriteString("\nGPU→NIC pairing (GPU Direct RDMA needs the NIC within PXB of the GPU, NCCL's default NCCL_NET_GDR_LEVEL):\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tBus Id\tNIC\tPath\tRail\tPort\tState\tRate\tLink layer\tGDR\tAlso nearest")
	for _, e := range p.GPUs {
		nic, rail, port, rate, layer, gdr, state := "-", "-", "-", "-", "-", "no", "-"
		if e.PortState != "" {
			state = l(e.PortState)
		}
		if e.NIC != "" {
			nic, rail = l(e.NIC), strconv.Itoa(e.Rail)
			if e.Port > 0 {
				port = strconv.Itoa(e.Port)
			}
			if e.RateGbps > 0 {
				rate = strconv.FormatFloat(e.RateGbps, 'f', -1, 64) + " Gb/s"
			}
			if e.LinkLayer != "" {
				layer = l(e.LinkLayer)
			}
			if e.GDR {
				gdr = "yes"
				if p.GDRBlocked != "" {
					gdr = "path only"
				}
			}
			if e.Shared {
				rail += " (shared)"
			}
		}
		var also []string
		for _, n := range e.Nearest {
			if n != e.NIC {
				also = append(also, n)
			}
		}
		alsoS := "-"
		if len(also) > 0 {
			alsoS = l(strings.Join(also, ","))
		}
		lvl := e.Level.String()
		if e.NIC == "" {
			lvl = "-"
		}
		fmt.Fprintf(tw, "GPU%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.GPU, l(e.GPUAddress), nic, lvl, rail, port, state, rate, layer, gdr, alsoS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(p.Unused) > 0 {
		fmt.Fprintf(&b, "\nRDMA NICs no GPU is paired with: %s\n", l(strings.Join(p.Unused, ", ")))
	}
	if len(p.NCCL) > 0 {
		b.WriteString("\nNCCL settings that follow:\n")
		keys := make([]string, 0, len(p.NCCL))
		for k := range p.NCCL {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s=%s\n", k, l(p.NCCL[k]))
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "\nNote: %s\n", l(n))
	}
	if p.GDRBlocked != "" {
		fmt.Fprintf(&b, "\nNote: GPU Direct RDMA cannot be used on this node: %s. \"path only\": the NIC is within PXB, but no GPU memory can be registered with it (see gdr.kernel-module).\n", l(p.GDRBlocked))
	}
	_, err := io.WriteString(w, printable.Text(b.String()))
	return err
}
