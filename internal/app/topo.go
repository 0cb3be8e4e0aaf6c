package app

import (
	"context"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// TopoOptions are a `gdrcheck topo` run's.
type TopoOptions struct {
	// PCIe gives the matrix of PCIe paths only, no NV# (nvidia-smi topo -mp).
	PCIe bool
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
