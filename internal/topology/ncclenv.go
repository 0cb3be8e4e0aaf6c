package topology

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/printable"

	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// NCCLSetting is one NCCL environment variable the topology suggests,
// with why. Advisory settings change what NCCL does at a cost (forcing
// GPU Direct RDMA across the host bridge): printed commented out, for the
// operator to decide.
type NCCLSetting struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Why      string `json:"why"`
	Advisory bool   `json:"advisory,omitempty"`
}

// NCCLEnv is what the node's topology says NCCL should be told: the rail
// NICs in GPU order (NCCL_IB_HCA, exact names), the RoCE GID index NCCL
// would pick on the rails (NCCL_IB_GID_INDEX, when every rail agrees),
// the front-end interface for NCCL's bootstrap sockets
// (NCCL_SOCKET_IFNAME: an Ethernet RDMA port no GPU is paired with), and,
// advisory, NCCL_NET_GDR_LEVEL where a GPU's NIC is beyond PXB. From the
// summary's pairing and NICs; a node without rails gives nothing.
func (sum *Summary) NCCLEnv() []NCCLSetting {
	p := sum.Pairing
	if p == nil || len(p.Rails) == 0 {
		return nil
	}
	var out []NCCLSetting
	if v := p.NCCL["NCCL_IB_HCA"]; v != "" {
		out = append(out, NCCLSetting{Name: "NCCL_IB_HCA", Value: v,
			Why: "the rail NICs in GPU order (GPU0's first), exact names: mlx5_1 alone would also select mlx5_10 to mlx5_19"})
	}
	// RoCE: the GID NCCL would choose, when every RoCE rail's is the same
	// index (one variable serves every NIC).
	gids := map[int][]string{}
	unknown := false
	for _, name := range p.Rails {
		n := nicByName(sum.NICs, name)
		if n == nil {
			continue
		}
		port := n.ActivePort()
		if port == nil || port.LinkLayer != "Ethernet" {
			continue
		}
		c := port.RoCEGID()
		if c == nil || c.Index < 0 {
			unknown = true
			continue
		}
		gids[c.Index] = append(gids[c.Index], fmt.Sprintf("%s:%d (%s)", name, port.Number, c.Text()))
	}
	switch {
	case len(gids) == 1 && !unknown:
		for i, ports := range gids {
			out = append(out, NCCLSetting{Name: "NCCL_IB_GID_INDEX", Value: fmt.Sprint(i),
				Why: "RoCE: the GID NCCL picks by default on every rail, said explicitly so a changed GID table cannot move it: " + strings.Join(ports, ", ")})
		}
	case len(gids) > 1:
		var idx []string
		for i, ports := range gids {
			idx = append(idx, fmt.Sprintf("%d on %s", i, strings.Join(ports, ", ")))
		}
		slices.Sort(idx)
		out = append(out, NCCLSetting{Name: "NCCL_IB_GID_INDEX", Value: "", Advisory: true,
			Why: "RoCE rails whose default GIDs differ (" + strings.Join(idx, "; ") + "): one variable cannot serve them all; make the GID tables alike"})
	}
	// The bootstrap: an Ethernet RDMA port no GPU is paired with, up.
	var front []string
	for _, name := range p.Unused {
		n := nicByName(sum.NICs, name)
		if n == nil {
			continue
		}
		for _, port := range n.Ports {
			if port.LinkLayer == "Ethernet" && port.State == "ACTIVE" && port.NetDev != "" && !slices.Contains(front, port.NetDev) {
				front = append(front, port.NetDev)
			}
		}
	}
	if len(front) > 0 {
		out = append(out, NCCLSetting{Name: "NCCL_SOCKET_IFNAME", Value: "=" + strings.Join(front, ","),
			Why: "NCCL's bootstrap and socket traffic on the front-end (Ethernet, no GPU paired), not on a rail; \"=\" matches the names exactly"})
	}
	// GDR beyond PXB: NCCL stages through host memory unless told.
	worst := level.PIX
	var far []string
	for _, e := range p.GPUs {
		if e.Level > level.DefaultGDR && e.Level != level.Unknown {
			worst = max(worst, e.Level)
			far = append(far, fmt.Sprintf("GPU%d→%s at %s", e.GPU, e.NIC, e.Level))
		}
	}
	if len(far) > 0 {
		out = append(out, NCCLSetting{Name: "NCCL_NET_GDR_LEVEL", Value: worst.String(), Advisory: true,
			Why: fmt.Sprintf("%s: beyond PXB NCCL does not use GPU Direct RDMA and stages through host memory; this forces GDR across that path, which is often slower (measure both)", strings.Join(far, ", "))})
	}
	return out
}

// WriteNCCLEnv prints the settings as shell lines, each after a comment
// saying why; advisory ones commented out.
// Names read from the host (NICs, interfaces) reach a shell line only
// when they hold nothing a shell would read as more than a word.
func WriteNCCLEnv(b *strings.Builder, host string, ss []NCCLSetting) {
	fmt.Fprintf(b, "# NCCL settings from the topology of %s (gdrcheck topo --nccl-env)\n", printable.Line(host))
	if len(ss) == 0 {
		b.WriteString("# none: no GPU is paired with an RDMA NIC here, NCCL's defaults apply\n")
		return
	}
	for _, s := range ss {
		fmt.Fprintf(b, "# %s\n", printable.Line(s.Why))
		switch {
		case s.Value == "":
		case !shellWord.MatchString(s.Value):
			fmt.Fprintf(b, "# not printed as a shell line: the value %s holds characters a shell would read\n", printable.Line(strconv.Quote(s.Value)))
		case s.Advisory:
			fmt.Fprintf(b, "# export %s=%s\n", s.Name, s.Value)
		default:
			fmt.Fprintf(b, "export %s=%s\n", s.Name, s.Value)
		}
	}
}

// shellWord is a value a shell reads as one word, unquoted.
var shellWord = regexp.MustCompile(`^[A-Za-z0-9_.:,=+/-]+$`)

// NCCLTopoFileSetting is NCCL_TOPO_FILE for a topology file written at
// path (WriteNCCLTopo); with no path, only why one may be written.
func NCCLTopoFileSetting(path string) NCCLSetting {
	if path == "" {
		return NCCLSetting{Name: "NCCL_TOPO_FILE", Advisory: true,
			Why: "NCCL_TOPO_FILE: not set here; gdrcheck topo --nccl-topo-file FILE --nccl-env writes this node's PCI layout for NCCL and exports it (for a VM, write it where the PCI tree NCCL would see is flattened only once the layout is right)"}
	}
	return NCCLSetting{Name: "NCCL_TOPO_FILE", Value: path,
		Why: "the node's PCI layout written by gdrcheck topo --nccl-topo-file: NCCL reads the GPUs' and NICs' places from it (NCCL_DEBUG=INFO logs \"Loading topology file\")"}
}
