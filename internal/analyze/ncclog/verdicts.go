package ncclog

import (
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze/verdict"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

const maxEvidence = 10

func (a *analyzer) ev(line int64, text, note string) result.Evidence {
	name, line := a.where(line)
	return result.Evidence{Source: fmt.Sprintf("%s:%d", name, line), Value: text, Note: note}
}

func (a *analyzer) offEvidence(list []offender, note string) []result.Evidence {
	var out []result.Evidence
	for _, o := range list {
		if len(out) >= maxEvidence {
			break
		}
		out = append(out, a.ev(o.line, o.text, note))
	}
	return out
}

func (a *analyzer) verdicts(r *Report, s *summary) []result.Result {
	if a.stats.nccl == 0 {
		msg := fmt.Sprintf("no NCCL debug lines (\"host:pid:tid [dev] NCCL INFO ...\") in %d lines; run with NCCL_DEBUG=INFO", a.stats.lines)
		var out []result.Result
		for _, id := range []string{"nccl.gdr", "nccl.p2p", "nccl.net", "nccl.version", "nccl.errors", "nccl.channels", "nccl.nvls", "nccl.diag", "nccl.topology"} {
			if id == "nccl.diag" && a.diag.lines > 0 {
				out = append(out, a.vDiag(r)) // diagnostics printed without debug lines
				continue
			}
			if id == "nccl.nvls" && a.nvls.fails > 0 {
				out = append(out, a.vNVLS(r)) // the application's NVLS error, without debug lines
				continue
			}
			if id == "nccl.errors" && r.ErrorCount > 0 {
				// A watchdog's timeout or the application's NCCL
				// error is a failure without any debug line.
				out = append(out, a.vErrors(r))
				continue
			}
			out = append(out, titles.New(id, result.Unknown, "job", "NoNCCLDebugLines", msg, nil))
		}
		return out
	}
	out := []result.Result{
		a.vGDR(r, s), a.vP2P(r, s), a.vNet(r, s), a.vVersion(r), a.vErrors(r), a.vChannels(r, s), a.vNVLS(r), a.vDiag(r),
	}
	out = append(out, a.vTopology(r)...)
	return out
}

var titles = verdict.Titles{
	"nccl.gdr":      "GPU Direct RDMA on the network channels",
	"nccl.p2p":      "Intra-node peers over P2P (NVLink/PCIe), not SHM or the NIC",
	"nccl.net":      "RDMA network transport, not a socket fallback",
	"nccl.version":  "One NCCL version and network plugin on every rank",
	"nccl.errors":   "NCCL errors and warnings",
	"nccl.channels": "Number of channels NCCL built",
	"nccl.nvls":     "NVLink SHARP (NVLS) multicast set up, or why not",
	"nccl.diag":     "NCCL's own readiness diagnostics (2.31+), judged",
	"nccl.topology": "NCCL's view of the node (system tree)",
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func pluralS(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

const gdrRemedy = "Make GPU memory registrable by the NIC: load nvidia-peermem (or use a kernel and driver with dma-buf, NCCL_DMABUF_ENABLE=1), " +
	"keep GPU and NIC under one PCIe switch (nvidia-smi topo -m: PIX/PXB) or raise NCCL_NET_GDR_LEVEL on every rank, and check that ACS/IOMMU settings allow peer-to-peer."

func (a *analyzer) vVersion(r *Report) result.Result {
	const id = "nccl.version"
	verEv := func(vs []Version, note string) []result.Evidence {
		var out []result.Evidence
		for _, v := range vs {
			if len(out) >= maxEvidence {
				break
			}
			n := note
			if v.Processes > 0 {
				n = fmt.Sprintf("%d process(es): %s", v.Processes, strings.Join(v.Hosts, ", "))
			}
			out = append(out, a.ev(v.Line, v.Text, n))
		}
		return out
	}
	names := func(vs []Version) string {
		var p []string
		for _, v := range vs {
			p = append(p, fmt.Sprintf("%s (%d)", v.Version, v.Processes))
		}
		return strings.Join(p, ", ")
	}
	if len(r.Versions) > 1 {
		out := titles.New(id, result.Fail, "job", "VersionMismatch",
			"ranks run different NCCL versions: "+names(r.Versions)+" (processes)", verEv(r.Versions, ""))
		out.Remedy = "Run one NCCL build on every node (same container image or the same libnccl.so.2 first in LD_LIBRARY_PATH)."
		return out
	}
	// Processes that chose different networks are a mismatch whatever
	// the log says (or does not) about versions.
	if len(r.Network.Selected) > 1 {
		var p []string
		var evs []result.Evidence
		for _, x := range r.Network.Selected {
			p = append(p, fmt.Sprintf("%s (%d)", x.Name, x.Processes))
			evs = append(evs, a.ev(x.Line, x.Text, fmt.Sprintf("%d process(es)", x.Processes)))
		}
		out := titles.New(id, result.Fail, "job", "NetworkMismatch", "ranks use different network plugins: "+strings.Join(p, ", ")+" (processes)", evs)
		out.Remedy = "Give every node the same net plugin and RDMA devices (a rank without them falls back to another network)."
		return out
	}
	if len(r.Versions) == 0 {
		return titles.New(id, result.Unknown, "job", "NoVersionLine", "no \"NCCL version\" line in the log", nil)
	}
	if len(r.Network.PluginVersions) > 1 {
		out := titles.New(id, result.Fail, "job", "PluginVersionMismatch",
			"ranks load different network plugin versions: "+names(r.Network.PluginVersions), verEv(r.Network.PluginVersions, ""))
		out.Remedy = "Install one net plugin build on every node."
		return out
	}
	if len(r.CUDADriverVersions) > 1 {
		return titles.New(id, result.Warn, "job", "DriverVersionMismatch",
			"NCCL "+r.Versions[0].Version+" everywhere, but CUDA drivers differ: "+names(r.CUDADriverVersions), verEv(r.CUDADriverVersions, ""))
	}
	v := r.Versions[0]
	msg := "NCCL " + v.Version
	nprocs := len(a.hosts.procs)
	switch {
	case v.Processes > 0 && v.Processes == nprocs:
		msg += fmt.Sprintf(" on all %d process(es)", nprocs)
	case v.Processes > 0:
		msg += fmt.Sprintf(" (printed by %d of %d processes)", v.Processes, nprocs)
	default:
		msg += " (printed once, not per rank)"
	}
	if len(r.Network.Selected) == 1 {
		msg += ", network " + r.Network.Selected[0].Name
	}
	if len(r.Network.PluginVersions) == 1 {
		msg += ", plugin " + r.Network.PluginVersions[0].Version
	}
	return titles.New(id, result.Pass, "job", "SameVersion", msg, verEv(r.Versions[:1], ""))
}

func (a *analyzer) vErrors(r *Report) result.Result {
	const id = "nccl.errors"
	evs := func(list []Event) []result.Evidence {
		var out []result.Evidence
		for _, e := range list {
			if len(out) >= maxEvidence {
				break
			}
			var notes []string
			if e.Count > 1 {
				notes = append(notes, fmt.Sprintf("%d lines like this", e.Count))
			}
			if e.Explanation != "" {
				notes = append(notes, e.Explanation)
			}
			note := strings.Join(notes, "; ")
			out = append(out, a.ev(e.Line, e.Message, note))
		}
		return out
	}
	first := func(list []Event) string {
		var p []string
		for i, e := range list {
			if i == 3 {
				p = append(p, "...")
				break
			}
			m := e.Message
			if len(m) > 120 {
				m = m[:117] + "..."
			}
			p = append(p, fmt.Sprintf("%q", m))
		}
		return strings.Join(p, "; ")
	}
	if r.ErrorCount > 0 {
		msg := fmt.Sprintf("%d error %s (%d distinct): %s", r.ErrorCount, plural(r.ErrorCount, "line", "lines"), len(r.Errors), first(r.Errors))
		if r.WarningCount > 0 {
			msg += fmt.Sprintf("; and %d warning %s", r.WarningCount, plural(r.WarningCount, "line", "lines"))
		}
		if a.events.timeouts > 0 {
			out := titles.New(id, result.Fail, "job", "CollectiveTimeout",
				fmt.Sprintf("a collective did not complete: %d watchdog %s (the job hung in NCCL, or a rank failed); %s", a.events.timeouts, plural(a.events.timeouts, "line", "lines"), msg), evs(r.Errors))
			out.Remedy = "Find the rank that did not join or stalled first (the lowest \"last completed NCCL work\"; -1: the first collective never completed): " +
				"rerun with NCCL_DEBUG=INFO and look for its WARN lines, a network that cannot connect (firewall, NCCL_SOCKET_IFNAME, IB/RoCE link down) or a GPU fault (Xid) on its host."
			return out
		}
		return titles.New(id, result.Fail, "job", "NCCLErrors", msg, evs(r.Errors))
	}
	if r.WarningCount > 0 {
		return titles.New(id, result.Warn, "job", "NCCLWarnings",
			fmt.Sprintf("%d warning %s: %s", r.WarningCount, plural(r.WarningCount, "line", "lines"), first(r.Warnings)), evs(r.Warnings))
	}
	return titles.New(id, result.Pass, "job", "NoErrors", fmt.Sprintf("no NCCL WARN or error lines in %d NCCL lines", a.stats.nccl), nil)
}

func (a *analyzer) vChannels(r *Report, s *summary) result.Result {
	const id = "nccl.channels"
	minColl, line := -1, int64(0)
	var cc *ChannelCount
	for i := range r.Channels.Counts {
		c := &r.Channels.Counts[i]
		if minColl < 0 || c.Coll < minColl {
			minColl, line, cc = c.Coll, c.Line, c
		}
	}
	what := "coll channels"
	switch {
	case minColl >= 0:
	case a.graph.minRingTotal > 0:
		minColl, what = a.graph.minRingTotal, "ring channels (\"Channel nn/N\")"
	case a.graph.ringLines > 0:
		minColl, what = a.graph.maxRingID+1, "rings (ring order lines)"
	}
	if minColl < 0 {
		return titles.New(id, result.Unknown, "job", "NoChannelCount", "the log does not say how many channels NCCL built (\"N coll channels, ...\")", nil)
	}
	var evs []result.Evidence
	if cc != nil {
		evs = append(evs, a.ev(line, cc.Text, fmt.Sprintf("%d process(es) printed this count", cc.Processes)))
	}
	if s.nvlink && minColl <= 2 {
		msg := fmt.Sprintf("only %d %s although NCCL's topology shows NVLink between the GPUs; NVLink systems normally get 8 or more", minColl, what)
		for _, p := range r.Channels.Patterns {
			if p.TypeIntra == "NVL" || p.TypeIntra == "NVB" {
				msg += fmt.Sprintf("; the %s search found %d channel(s) at %.1f GB/s over %s", p.Name, p.NChannels, p.BWIntra, p.TypeIntra)
				evs = append(evs, a.ev(p.Line, fmt.Sprintf("Pattern %d, crossNic %d, nChannels %d, bw %f/%f, type %s/%s",
					p.Pattern, p.CrossNIC, p.NChannels, p.BWIntra, p.BWInter, p.TypeIntra, p.TypeInter), "graph search result"))
				break
			}
		}
		out := titles.New(id, result.Warn, "job", "LowChannelCount", msg+" (see nccl.topology)", evs)
		out.Remedy = "Compare the system tree with nvidia-smi topo -m and nvidia-smi nvlink -s; a wrong NCCL_TOPO_FILE or missing NVLinks limit the channels."
		return out
	}
	msg := fmt.Sprintf("%d %s", minColl, what)
	if cc != nil {
		msg = fmt.Sprintf("%d coll channels", cc.Coll)
		if cc.NVLS > 0 {
			msg += fmt.Sprintf(", %d nvls", cc.NVLS)
		}
		if cc.CollNet > 0 {
			msg += fmt.Sprintf(", %d collnet", cc.CollNet)
		}
		if cc.P2P >= 0 {
			msg += fmt.Sprintf(", %d p2p", cc.P2P)
		}
		if len(r.Channels.Counts) > 1 {
			msg += fmt.Sprintf(" (fewest of %d distinct counts)", len(r.Channels.Counts))
		}
	}
	return titles.New(id, result.Pass, "job", "ChannelCount", msg, evs)
}

func (a *analyzer) vTopology(r *Report) []result.Result {
	const id = "nccl.topology"
	if len(r.Topology) == 0 {
		return []result.Result{titles.New(id, result.Unknown, "job", "NoSystemTree",
			"the log has no \"=== System : maxBw ... ===\" tree (NCCL_DEBUG_SUBSYS must include GRAPH or ALL)", nil)}
	}
	var out []result.Result
	for _, t := range r.Topology {
		subject := t.Host
		if subject == "" {
			subject = "job"
		}
		var bad, slow []Finding
		for _, f := range t.Findings {
			switch f.Kind {
			case "nvlink-asymmetric", "nvlink-one-way", "nvlink-degraded":
				bad = append(bad, f)
			default:
				slow = append(slow, f)
			}
		}
		evs := func(fs []Finding) []result.Evidence {
			var e []result.Evidence
			for _, f := range fs {
				if len(e) >= maxEvidence {
					break
				}
				e = append(e, a.ev(f.Line, f.Text, f.Detail))
			}
			return e
		}
		details := func(fs []Finding) string {
			var p []string
			for i, f := range fs {
				if i == 3 {
					p = append(p, fmt.Sprintf("and %d more", len(fs)-3+t.FindingsOmitted))
					break
				}
				p = append(p, f.Detail)
			}
			return strings.Join(p, "; ")
		}
		switch {
		case len(bad) > 0:
			o := titles.New(id, result.Fail, subject, "NVLinkDegraded", "NVLink bandwidth in NCCL's topology is not what the GPUs should have: "+details(bad), evs(bad))
			o.Remedy = "Check nvidia-smi nvlink -s on this host and any NCCL_TOPO_FILE it loads (a hand-written file can claim fewer links than the hardware has)."
			out = append(out, o)
		case len(slow) > 0:
			reason := "SlowPCILink"
			msg := "NCCL sees PCI links slower than the devices behind them: " + details(slow)
			if slow[0].Kind == "pci-slow-link" {
				reason = "EmulatedPCIBridge"
				msg = fmt.Sprintf("%d PCI link(s) NCCL rates below 1 GB/s, typical of emulated bridges in a VM that advertise 2.5 GT/s x1: %s",
					len(slow)+t.FindingsOmitted, details(slow))
			}
			o := titles.New(id, result.Warn, subject, reason, msg, evs(slow))
			o.Remedy = "Give the VM PCIe bridges that report the real link speed and width, or an NCCL_TOPO_FILE that describes the host."
			out = append(out, o)
		default:
			msg := fmt.Sprintf("%d GPU(s), %d NIC(s), %d NVLink link(s), maxBw %.1f totalBw %.1f", t.GPUs, t.NICs, t.NVLinks, t.MaxBW, t.TotalBW)
			if !t.Complete {
				msg += " (tree cut short in the log)"
			}
			out = append(out, titles.New(id, result.Pass, subject, "TopologyConsistent", msg,
				[]result.Evidence{a.ev(t.Line, fmt.Sprintf("=== System : maxBw %.1f totalBw %.1f ===", t.MaxBW, t.TotalBW), "")}))
		}
	}
	return out
}
