package topology

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// GDRMaxLevel is the farthest PCIe path over which NCCL uses GPU Direct
// RDMA by default (NCCL_NET_GDR_LEVEL defaults to PXB).
const GDRMaxLevel = LevelPXB

// GPUNIC is one GPU's place in the GPU→NIC pairing.
type GPUNIC struct {
	GPU        int      `json:"gpu"`
	GPUAddress string   `json:"gpu_address"`
	Nearest    []string `json:"nearest_nics"`  // every NIC at the best level
	Level      Level    `json:"level"`         // the best level reached
	NIC        string   `json:"nic,omitempty"` // the NIC assigned as this GPU's rail
	NICAddress string   `json:"nic_address,omitempty"`
	Port       int      `json:"port,omitempty"`
	RateGbps   float64  `json:"rate_gbps,omitempty"`
	LinkLayer  string   `json:"link_layer,omitempty"`
	PortState  string   `json:"port_state,omitempty"`
	Rail       int      `json:"rail"`   // -1: none
	Shared     bool     `json:"shared"` // the NIC also serves another GPU
	// GDR is true when the assigned NIC is within GDRMaxLevel.
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
	// Unused lists RDMA NICs no GPU was paired with (front-end, storage).
	Unused []string `json:"unused_nics"`
	// NCCL are environment settings that follow from the pairing.
	NCCL  map[string]string `json:"nccl,omitempty"`
	Notes []string          `json:"notes,omitempty"`
}

type nicCand struct {
	nic   *NIC
	rel   Relation
	port  *Port
	score float64
}

// activePort is the first ACTIVE port, else the first port.
func activePort(n *NIC) *Port {
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

// Pair assigns each GPU a rail NIC: the nearest by PCIe path, a distinct NIC
// per GPU where the tree allows (a maximum matching level by level: PIX,
// then PXB, and so on), the faster and the active port among equals, then
// name order. With more GPUs than NICs the rest share the least used of
// their nearest. GPUs whose NIC is beyond PXB are listed in NoGDR.
func (h *Host) Pair() *Pairing {
	p := &Pairing{NCCL: map[string]string{}, GPUs: []GPUNIC{}, Rails: []string{}, NoGDR: []int{}, Unused: []string{}}
	nics := h.MatrixNICs()
	if len(h.GPUs) == 0 {
		return p
	}
	if len(nics) == 0 {
		for _, g := range h.GPUs {
			p.GPUs = append(p.GPUs, GPUNIC{GPU: g.Index, GPUAddress: g.Address, Level: LevelUnknown, Rail: -1})
			p.NoGDR = append(p.NoGDR, g.Index)
		}
		p.Notes = append(p.Notes, "no RDMA NIC on this host: inter-node NCCL traffic can only use sockets (or a network plugin)")
		return p
	}
	cands := make([][]nicCand, len(h.GPUs))
	for i, g := range h.GPUs {
		for _, n := range nics {
			c := nicCand{nic: n, rel: h.PCIeRelation(g.Dev, n.Dev), port: activePort(n)}
			if c.port != nil {
				c.score = c.port.RateGbps
				if strings.EqualFold(c.port.State, "ACTIVE") {
					c.score += 1e6
				}
			}
			cands[i] = append(cands[i], c)
		}
		sort.SliceStable(cands[i], func(a, b int) bool {
			x, y := cands[i][a], cands[i][b]
			if x.rel.Level != y.rel.Level {
				return x.rel.Level < y.rel.Level
			}
			if x.score != y.score {
				return x.score > y.score
			}
			return NaturalLess(x.nic.Name, y.nic.Name)
		})
	}
	assigned := make([]*nicCand, len(h.GPUs))
	taken := map[*NIC]int{}
	for _, lvl := range []Level{LevelPIX, LevelPXB, LevelPHB, LevelNODE, LevelSYS} {
		match(cands, assigned, taken, lvl)
	}
	// More GPUs than NICs: the rest share, the least used of their nearest.
	for i := range h.GPUs {
		if assigned[i] != nil || len(cands[i]) == 0 {
			continue
		}
		best := 0
		for k, c := range cands[i] {
			if c.rel.Level != cands[i][0].rel.Level {
				break
			}
			if taken[c.nic] < taken[cands[i][best].nic] {
				best = k
			}
		}
		c := cands[i][best]
		assigned[i] = &c
		taken[c.nic]++
	}
	// Count sharing after every GPU has its NIC.
	users := map[*NIC]int{}
	for _, a := range assigned {
		if a != nil {
			users[a.nic]++
		}
	}
	railOf := map[*NIC]int{}
	for i, g := range h.GPUs {
		a := assigned[i]
		best := cands[i][0].rel.Level
		e := GPUNIC{GPU: g.Index, GPUAddress: g.Address, Level: best, Rail: -1}
		for _, c := range cands[i] {
			if c.rel.Level == best {
				e.Nearest = append(e.Nearest, c.nic.Name)
			}
		}
		if a != nil {
			r, ok := railOf[a.nic]
			if !ok {
				r = len(p.Rails)
				railOf[a.nic] = r
				p.Rails = append(p.Rails, a.nic.Name)
			}
			e.NIC, e.NICAddress, e.Rail = a.nic.Name, a.nic.Address, r
			e.Shared = users[a.nic] > 1
			e.GDR = a.rel.Level <= GDRMaxLevel
			e.Path = a.rel.Via
			if a.port != nil {
				e.Port, e.RateGbps, e.LinkLayer, e.PortState = a.port.Number, a.port.RateGbps, a.port.LinkLayer, a.port.State
			}
			e.Level = a.rel.Level
		}
		if !e.GDR {
			p.NoGDR = append(p.NoGDR, g.Index)
		}
		p.GPUs = append(p.GPUs, e)
	}
	for _, n := range nics {
		if _, ok := railOf[n]; !ok {
			p.Unused = append(p.Unused, n.Name)
		}
	}
	var hca []string
	for _, name := range p.Rails {
		n := h.NICByName(name)
		port := 1
		if ap := activePort(n); ap != nil {
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
		worst := LevelPIX
		var names []string
		for _, i := range p.NoGDR {
			e := p.GPUs[i]
			if e.Level > worst && e.Level != LevelUnknown {
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

// match extends the assignment with a maximum bipartite matching between
// unassigned GPUs and free NICs over edges at or better than lvl
// (augmenting paths; candidate order decides ties).
func match(cands [][]nicCand, assigned []*nicCand, taken map[*NIC]int, lvl Level) {
	owner := map[*NIC]int{}
	for i, a := range assigned {
		if a != nil {
			owner[a.nic] = i
		}
	}
	fixed := map[*NIC]bool{}
	for n := range taken {
		fixed[n] = true
	}
	var try func(i int, seen map[*NIC]bool) bool
	try = func(i int, seen map[*NIC]bool) bool {
		// A free NIC in preference order first, so a GPU keeps its first
		// choice when it can; only then displace another GPU.
		for k := range cands[i] {
			c := &cands[i][k]
			if c.rel.Level > lvl || fixed[c.nic] || seen[c.nic] {
				continue
			}
			if _, busy := owner[c.nic]; !busy {
				seen[c.nic] = true
				owner[c.nic] = i
				assigned[i] = c
				return true
			}
		}
		for k := range cands[i] {
			c := &cands[i][k]
			if c.rel.Level > lvl || fixed[c.nic] || seen[c.nic] {
				continue
			}
			seen[c.nic] = true
			j, busy := owner[c.nic]
			if !busy || try(j, seen) {
				owner[c.nic] = i
				assigned[i] = c
				return true
			}
		}
		return false
	}
	for i := range cands {
		if assigned[i] == nil {
			try(i, map[*NIC]bool{})
		}
	}
	for i, a := range assigned {
		if a != nil && owner[a.nic] == i {
			taken[a.nic]++
		}
	}
}

// WriteText prints the pairing as a table, then the NCCL settings and notes.
func (p *Pairing) WriteText(w io.Writer) error {
	var b strings.Builder
	b.WriteString("\nGPU→NIC pairing (GPU Direct RDMA needs the NIC within PXB of the GPU, NCCL's default NCCL_NET_GDR_LEVEL):\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tBus Id\tNIC\tPath\tRail\tPort\tState\tRate\tLink layer\tGDR\tAlso nearest")
	for _, e := range p.GPUs {
		nic, rail, port, rate, layer, gdr, state := "-", "-", "-", "-", "-", "no", "-"
		if e.PortState != "" {
			state = e.PortState
		}
		if e.NIC != "" {
			nic, rail = e.NIC, strconv.Itoa(e.Rail)
			if e.Port > 0 {
				port = strconv.Itoa(e.Port)
			}
			if e.RateGbps > 0 {
				rate = strconv.FormatFloat(e.RateGbps, 'f', -1, 64) + " Gb/s"
			}
			if e.LinkLayer != "" {
				layer = e.LinkLayer
			}
			if e.GDR {
				gdr = "yes"
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
			alsoS = strings.Join(also, ",")
		}
		level := e.Level.String()
		if e.NIC == "" {
			level = "-"
		}
		fmt.Fprintf(tw, "GPU%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.GPU, e.GPUAddress, nic, level, rail, port, state, rate, layer, gdr, alsoS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(p.Unused) > 0 {
		fmt.Fprintf(&b, "\nRDMA NICs no GPU is paired with: %s\n", strings.Join(p.Unused, ", "))
	}
	if len(p.NCCL) > 0 {
		b.WriteString("\nNCCL settings that follow:\n")
		keys := make([]string, 0, len(p.NCCL))
		for k := range p.NCCL {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s=%s\n", k, p.NCCL[k])
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "\nNote: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
