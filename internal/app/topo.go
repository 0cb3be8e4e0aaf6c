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
	"github.com/gdrcheck/gdrcheck/internal/topology"
	"github.com/google/renameio/v2"
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
	var b bytes.Buffer
	if err := h.WriteNCCLTopo(&b, fmt.Sprintf("written by gdrcheck topo (NCCL topology file) from the PCI tree of %s (%s); NCCL reads it when NCCL_TOPO_FILE names it", cmp.Or(h.Hostname, "this host"), from)); err != nil {
		return nil, nil, toolErr(fmt.Errorf("topology file: %w", err))
	}
	return s, b.Bytes(), nil
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
