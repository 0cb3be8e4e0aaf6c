package cli

import (
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/report"
)

// modelFlags are gdrcheck model's flags.
type modelFlags struct {
	formulas                                                                             bool
	gpu, nicLayer, nvlinkTopo, gpuPath, collectives, sizes, downtrain, expect            string
	format                                                                               *formatValue
	nodes, gpusPerNode, nicsPerNode, nvlinks, pcieGen, pcieWidth, nvlinksDown, nvlDomain int
	nicRate, interSocket, hostMem, pass, warn                                            float64
	nvls, sharp, gdrOff, remoteNIC, halfRails, all, noCopies                             bool
}

// modelHardwareFlags describe hardware; with a host (no --gpu) it comes
// from the host instead.
var modelHardwareFlags = []string{"gpus-per-node", "nics-per-node", "nic-rate", "nic-link-layer", "nvlinks", "nvlink-topology", "pcie-gen", "pcie-width", "gpu-path"}

func newModel(g *globals) *cobra.Command {
	var f modelFlags
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Expected performance of collectives and copies, from the hardware (this host, --root, or --gpu ...)",
		Example: `  gdrcheck model                                   # this host's expected bus bandwidths and copies
  gdrcheck model --root node.tgz --nodes 16        # sixteen such nodes
  gdrcheck model --gpu h100 --nics-per-node 8 --nic-rate 400 --nodes 4   # hardware described by flags
  gdrcheck model --gpu gb200 --gpus-per-node 72    # one GB200 NVL72 rack (one NVLink domain)`,
		Long: `Predicts what NCCL collectives (as nccl-tests reports them), device and host copies, NVLink
peer copies and perftest ib_write_bw should reach on the hardware, names the bottleneck of each
and the formula used, and says how a measurement will be judged.

The hardware comes from this host (or --root: a snapshot or host directory), or, with --gpu, from
flags: gdrcheck model --gpu h100 --nodes 8 --gpus-per-node 8 --nics-per-node 8 --nic-rate 400.
A host is modelled as it should be, not as found: the catalogue's NVLinks and PCIe width for its
GPU, and with --expect FILE the site profile's GPU count, NVLinks, PCIe generation and width, rails
and NIC rate; where the host as found falls short (16 of 18 NVLinks, an x8 link, a missing GPU),
its own prediction is shown beside the expectation (AS FOUND), as the explanation.
What-ifs (--gdr-off, --nic-remote-socket, --half-rails, --downtrain gen4x8, --sharp) change it.
A rack-scale NVLink domain is one "node" of many GPUs: --gpu gb200 --gpus-per-node 72 for an NVL72
rack, with --nodes 2 --nics-per-node 72 --nic-rate 400 for two racks joined by the network.
Every bandwidth-bound expectation carries an interval from the public runs of its class (wide
where they are few, "no public calibration" where there are none); a result within it passes.
Sizes read like nccl-tests' -b/-e: 8, 1K, 64M, 8G (binary units).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runModel(cmd, g, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.gpu, "gpu", "", "GPU model (h100, h100-pcie, h200, h800, a100, a100-pcie, b200, l40s, rtx6000-ada, v100, ...): describe the hardware by flags instead of reading a host")
	fl.IntVar(&f.nodes, "nodes", 0, "nodes (default 1; with a host: that many identical nodes)")
	fl.IntVar(&f.gpusPerNode, "gpus-per-node", 0, "GPUs per node (default 8); a rack-scale NVLink domain is one node: 72 for an NVL72 rack")
	fl.IntVar(&f.nvlDomain, "nvlink-domain", 0, "with a host: it is one tray of a rack-scale NVLink domain of this many GPUs (72 for a GB200/GB300 NVL72 tray), modelled as that domain; --nodes then counts domains")
	fl.IntVar(&f.nicsPerNode, "nics-per-node", 0, "RDMA NICs (rails) per node")
	fl.Float64Var(&f.nicRate, "nic-rate", 0, "rate of each NIC, Gb/s (400 for NDR)")
	fl.StringVar(&f.nicLayer, "nic-link-layer", "", "InfiniBand (default) or Ethernet (RoCE)")
	fl.IntVar(&f.nvlinks, "nvlinks", 0, "active NVLinks per GPU (default: the datasheet's)")
	fl.StringVar(&f.nvlinkTopo, "nvlink-topology", "", "switch, mesh, partial (bridged pairs) or none (default: from the GPU and count)")
	fl.BoolVar(&f.nvls, "nvls", false, "NVLink SHARP on or off (default: on where the GPU and NVSwitches support it)")
	fl.BoolVar(&f.sharp, "sharp", false, "in-network reduction (SHARP/CollNet) on or off")
	fl.IntVar(&f.pcieGen, "pcie-gen", 0, "PCIe generation of each GPU (default: the datasheet's)")
	fl.IntVar(&f.pcieWidth, "pcie-width", 0, "PCIe width of each GPU (default: the datasheet's)")
	fl.StringVar(&f.gpuPath, "gpu-path", "", "farthest PCIe path between two GPUs: PIX, PXB, PHB, NODE or SYS (default NODE up to 4 GPUs, SYS above)")
	fl.Float64Var(&f.interSocket, "inter-socket-bw", 0, "GB/s GPU traffic gets across the CPU interconnect (default 22, NCCL's Sapphire Rapids figure)")
	fl.Float64Var(&f.hostMem, "host-mem-bw", 0, "host memory bandwidth, GB/s, to bound host staging (default: not modelled)")
	fl.BoolVar(&f.gdrOff, "gdr-off", false, "what if: GPU Direct RDMA off (network traffic staged through host memory)")
	fl.BoolVar(&f.remoteNIC, "nic-remote-socket", false, "what if: the NICs sit on the other CPU socket")
	fl.BoolVar(&f.halfRails, "half-rails", false, "what if: half the NICs of every node are down")
	fl.StringVar(&f.downtrain, "downtrain", "", "what if: a GPU's PCIe link trained down to GENxWIDTH (gen4x8, x8)")
	fl.IntVar(&f.nvlinksDown, "nvlinks-down", 0, "what if: this many NVLinks down on a GPU")
	fl.StringVar(&f.collectives, "collective", "", "collectives, comma-separated (default all): all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv")
	fl.StringVar(&f.sizes, "size", "", "sizes, comma-separated, as nccl-tests reads them (default 8,1M,64M,8G)")
	fl.BoolVar(&f.all, "all", false, "list every applicable algorithm, not only the fastest")
	fl.BoolVar(&f.noCopies, "no-copies", false, "leave out the copy and perftest expectations")
	fl.Float64Var(&f.pass, "margin", model.DefaultMargin().Pass, "pass a bandwidth-bound result at this fraction of expected")
	fl.Float64Var(&f.warn, "warn-margin", model.DefaultMargin().Warn, "warn (rather than fail) from this fraction of expected")
	f.format = addFormat(fl, nil, report.Text, report.JSON)
	fl.BoolVar(&f.formulas, "formulas", false, "text: print every formula the tables refer to ([n])")
	fl.StringVar(&f.expect, "expect", "", "site profile (YAML or JSON, as check --expect): the hardware a host should have (GPU count, NVLinks, PCIe gen/width, NICs, NIC rate)")
	return cmd
}

func runModel(cmd *cobra.Command, g *globals, f *modelFlags) error {
	format := f.format.Format()
	started := g.session.Now()
	changed := cmd.Flags().Changed
	opts := model.ReportOptions{All: f.all, NoCopies: f.noCopies, Margin: model.DefaultMargin()}
	opts.Margin.Pass, opts.Margin.Warn = f.pass, f.warn
	if err := opts.Margin.Validate(); err != nil {
		return toolError(fmt.Errorf("%v", err))
	}
	if f.collectives != "" {
		for _, c := range strings.Split(f.collectives, ",") {
			if strings.TrimSpace(c) == "" {
				continue
			}
			coll, err := collective.Parse(c)
			if err != nil {
				return toolError(fmt.Errorf("--collective: %v", err))
			}
			opts.Collectives = append(opts.Collectives, coll)
		}
	}
	if f.sizes != "" {
		sz, err := collective.ParseSizes(f.sizes)
		if err != nil {
			return toolError(fmt.Errorf("--size: %v", err))
		}
		for _, b := range sz {
			opts.Sizes = append(opts.Sizes, float64(b))
		}
	}
	if changed("nodes") && f.nodes < 1 {
		return toolError(fmt.Errorf("--nodes %d: at least 1", f.nodes))
	}
	for name, v := range map[string]float64{"nic-rate": f.nicRate, "inter-socket-bw": f.interSocket, "host-mem-bw": f.hostMem} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return toolError(fmt.Errorf("--%s %g: want a finite number", name, v))
		}
	}

	var s model.System
	var basis *model.Basis
	if f.gpu != "" && changed("nvlink-domain") {
		return toolError(fmt.Errorf("--nvlink-domain describes a host's domain: with --gpu give the domain as --gpus-per-node %d", f.nvlDomain))
	}
	if changed("nvlink-domain") && f.nvlDomain < 1 {
		return toolError(fmt.Errorf("--nvlink-domain %d: at least 1", f.nvlDomain))
	}
	if f.gpu != "" && f.expect != "" {
		return toolError(fmt.Errorf("--expect %s describes the hardware a host should have: with --gpu the flags describe it", f.expect))
	}
	profile, err := app.LoadProfile(f.expect)
	if err != nil {
		return err
	}
	if f.gpu != "" {
		p := model.Params{GPU: f.gpu, Nodes: f.nodes, GPUsPerNode: f.gpusPerNode, NICsPerNode: f.nicsPerNode,
			NICRateGbps: f.nicRate, NICLayer: f.nicLayer, NVLinks: f.nvlinks, NVLinkTopology: f.nvlinkTopo,
			PCIeGen: f.pcieGen, PCIeWidth: f.pcieWidth, GPUPath: f.gpuPath, InterSocket: f.interSocket, HostMemGBps: f.hostMem,
			SHARP: f.sharp}
		if changed("gpus-per-node") && f.gpusPerNode < 1 {
			return toolError(fmt.Errorf("--gpus-per-node %d: at least 1", f.gpusPerNode))
		}
		if changed("nvls") {
			p.NVLS = &f.nvls
		}
		var err error
		if s, err = model.NewSystem(p); err != nil {
			return toolError(fmt.Errorf("%v", err))
		}
	} else {
		for _, name := range modelHardwareFlags {
			if changed(name) {
				return toolError(fmt.Errorf("--%s describes hardware: with a host (--root %s) the hardware is read from it; give --gpu to describe it by flags instead", name, g.root))
			}
		}
		h, cleanup, err := g.discoverRoot(cmd.Context())
		if err != nil {
			return err
		}
		defer cleanup()
		hm := app.HostModel{Host: h, Source: "host " + g.root, Nodes: f.nodes, NVLinkDomain: f.nvlDomain, InterSocketGBps: f.interSocket, HostMemGBps: f.hostMem,
			Want: model.WantOf(profile), Profile: f.expect}
		if changed("nvls") {
			hm.NVLS = &f.nvls
		}
		b, err := hm.Basis()
		if err != nil {
			return err
		}
		s, basis = b.Should, &b
	}

	if s.GPUsPerNode > 0 && s.Nodes > math.MaxInt32/s.GPUsPerNode {
		return toolError(fmt.Errorf("--nodes %d × %d GPU(s) per node: more ranks than the model counts (%d)", s.Nodes, s.GPUsPerNode, math.MaxInt32))
	}
	w := model.WhatIf{GDROff: f.gdrOff, RemoteNIC: f.remoteNIC, HalfRails: f.halfRails, NVLinkDown: f.nvlinksDown}
	if changed("sharp") {
		w.SHARP = &f.sharp
	}
	if f.downtrain != "" {
		l, err := model.ParsePCIeLink(f.downtrain)
		if err != nil {
			return toolError(fmt.Errorf("--downtrain: %v", err))
		}
		w.Downtrain = &l
	}
	var rep *model.Report
	if basis != nil {
		rep, err = app.ModelBasis(*basis, f.expect, w, opts)
	} else {
		rep, err = app.Model(s, w, opts)
	}
	if err != nil {
		return err
	}
	if format == report.JSON {
		return report.WriteJSON(g.out, g.envelope("model", started, nil, rep))
	}
	return rep.WriteTextWith(g.out, model.TextOptions{Formulas: f.formulas})
}
