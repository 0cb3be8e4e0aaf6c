package app

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/profile"
	"github.com/gdrcheck/gdrcheck/internal/topology"
	"github.com/google/renameio/v2"
)

// TopoOptions are a `gdrcheck topo` run's.
type TopoOptions struct {
	// PCIe gives the matrix of PCIe paths only, no NV# (nvidia-smi topo -mp).
	PCIe bool
	// Expect is the site profile (--expect): its layout, where it has one,
	// places the GPUs and NICs in the topology file (a VM's real layout).
	Expect string
}

// Topo is `gdrcheck topo`: the node's summary, its matrix and its GPU→NIC
// pairing. The pairing sees the module facts: where neither nvidia_peermem
// nor dma-buf can register GPU memory with a NIC, its GDR column says so
// and why (checks.GDRBlocked, the facts gdr.kernel-module judges), rather
// than "yes" for a NIC that is merely close enough.
func Topo(ctx context.Context, n NodeOptions, o TopoOptions) (*topology.Summary, error) {
	r, cleanup, h, err := openNode(ctx, n)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	s := h.Summarize()
	s.Root = n.Root
	if o.PCIe {
		s.Matrix = h.BuildPCIeMatrix()
	}
	f := sysinfo.CollectRegistration(ctx, r, sysinfo.Options{})
	s.Pairing = s.Pairing.WithGDRBlocked(checks.GDRBlocked(&checks.Env{Host: h, Facts: f}))
	return s, nil
}

// NCCLTopo is `gdrcheck topo --nccl-topo-file`: the node's summary and its
// layout as an NCCL topology file (topology.Host.WriteNCCLTopo), which
// says where it came from.
func NCCLTopo(ctx context.Context, n NodeOptions, o TopoOptions) (*topology.Summary, []byte, error) {
	_, cleanup, h, err := openNode(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	defer cleanup()
	s := h.Summarize()
	s.Root = n.Root
	from := "the live host"
	if n.Root != "" && n.Root != "/" {
		from = "the capture " + filepath.Base(n.Root)
	}
	source := fmt.Sprintf("written by gdrcheck topo (NCCL topology file) from the PCI tree of %s (%s); NCCL reads it when NCCL_TOPO_FILE names it", cmp.Or(h.Hostname, "this host"), from)
	var layout []topology.Switch
	if o.Expect != "" {
		p, err := profile.Load(o.Expect)
		if err != nil {
			return nil, nil, toolErr(err)
		}
		if layout, err = switchesOf(h, p.Layout); err != nil {
			return nil, nil, toolErr(fmt.Errorf("--expect %s: %w", o.Expect, err))
		}
		if len(layout) > 0 {
			source += fmt.Sprintf("; the GPUs and NICs of the site profile's layout (%s, %d switch(es)) placed as it says, not as this PCI tree shows them", filepath.Base(o.Expect), len(layout))
		}
	}
	var b bytes.Buffer
	if err := h.WriteNCCLTopo(&b, source, layout...); err != nil {
		return nil, nil, toolErr(fmt.Errorf("topology file: %w", err))
	}
	return s, b.Bytes(), nil
}

// switchesOf is a site profile's layout on h: every GPU by its PCI
// address, every NIC by its RDMA name or address. A device the host does
// not have is an error naming the profile's field.
func switchesOf(h *topology.Host, groups []profile.SwitchGroup) ([]topology.Switch, error) {
	var out []topology.Switch
	for i, g := range groups {
		sw := topology.Switch{NUMA: -1}
		if g.NUMA != nil {
			sw.NUMA = *g.NUMA
		}
		for k, a := range g.GPUs {
			addr, err := pci.ParseAddress(a)
			if err != nil {
				return nil, fmt.Errorf("layout[%d].gpus[%d]: %w", i, k, err)
			}
			if h.GPUByAddress(addr.String()) == nil {
				return nil, fmt.Errorf("layout[%d].gpus[%d]: %s is not a GPU of this host", i, k, a)
			}
			sw.Devices = append(sw.Devices, addr.String())
		}
		for k, name := range g.NICs {
			found := ""
			for _, n := range h.NICs {
				if n.Dev == nil {
					continue
				}
				if n.Name == name {
					found = n.Dev.Address
				} else if addr, err := pci.ParseAddress(name); err == nil && addr.String() == n.Dev.Address {
					found = n.Dev.Address
				}
			}
			if found == "" {
				return nil, fmt.Errorf("layout[%d].nics[%d]: %s is not an RDMA NIC of this host", i, k, name)
			}
			sw.Devices = append(sw.Devices, found)
		}
		out = append(out, sw)
	}
	return out, nil
}

// ourTopoFile is how a topology file gdrcheck wrote begins.
var ourTopoFile = regexp.MustCompile(`^<system version="\d+" name="gdrcheck `)

// WriteNCCLTopoFile writes an NCCL topology file atomically at path. An
// existing file is replaced only when gdrcheck wrote it, or with force.
func WriteNCCLTopoFile(path string, b []byte, force bool) error {
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return toolErr(fmt.Errorf("--nccl-topo-file %s: not a regular file", path))
		}
		head := make([]byte, 64)
		f, err := os.Open(path)
		if err != nil {
			return toolErr(fmt.Errorf("--nccl-topo-file: %w", err))
		}
		k, _ := io.ReadFull(f, head)
		f.Close()
		if !force && !ourTopoFile.Match(head[:k]) {
			return toolErr(fmt.Errorf("--nccl-topo-file %s: the file exists and gdrcheck did not write it (--force replaces it)", path))
		}
	}
	if err := renameio.WriteFile(path, b, 0o644); err != nil {
		return toolErr(fmt.Errorf("--nccl-topo-file: %w", err))
	}
	return nil
}
