package ncclog

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

const maxEvidence = 10

func (a *analyzer) ev(line int64, text, note string) result.Evidence {
	return result.Evidence{Source: fmt.Sprintf("%s:%d", a.name, line), Value: text, Note: note}
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
		for _, id := range []string{"nccl.gdr", "nccl.p2p", "nccl.net", "nccl.version", "nccl.errors", "nccl.channels", "nccl.topology"} {
			out = append(out, result.Result{ID: id, Title: titles[id], Status: result.Unknown, Subject: "job",
				Reason: "NoNCCLDebugLines", Message: msg})
		}
		return out
	}
	out := []result.Result{
		a.vGDR(r, s), a.vP2P(r, s), a.vNet(r, s), a.vVersion(r), a.vErrors(r), a.vChannels(r, s),
	}
	out = append(out, a.vTopology(r)...)
	return out
}

var titles = map[string]string{
	"nccl.gdr":      "GPU Direct RDMA on the network channels",
	"nccl.p2p":      "Intra-node peers over P2P (NVLink/PCIe), not SHM or the NIC",
	"nccl.net":      "RDMA network transport, not a socket fallback",
	"nccl.version":  "One NCCL version and network plugin on every rank",
	"nccl.errors":   "NCCL errors and warnings",
	"nccl.channels": "Number of channels NCCL built",
	"nccl.topology": "NCCL's view of the node (system tree)",
}

func res(id string, st result.Status, subject, reason, msg string, ev []result.Evidence) result.Result {
	return result.Result{ID: id, Title: titles[id], Status: st, Subject: subject, Reason: reason, Message: msg, Evidence: ev}
}

// transportList summarises the transports of a class: "NET/IB/1/GDRDMA x4, NET/IB/0 x2".
func transportList(r *Report, keep func(TransportCount) bool) string {
	var parts []string
	for _, t := range r.Channels.ByTransport {
		if t.Lines > 0 && keep(t) {
			parts = append(parts, fmt.Sprintf("%s x%d", t.Transport, t.Lines))
		}
		if len(parts) == 6 {
			parts = append(parts, "...")
			break
		}
	}
	return strings.Join(parts, ", ")
}

func isNetClass(t TransportCount) bool { return t.Class == "net" || t.Class == "collnet" }

// hcaState says whether NCCL disabled GPU Direct RDMA on every RDMA HCA
// it reported on (socket "HCAs" aside).
func hcaState(r *Report) (allDisabled bool, names []string, lines []HCAGDR) {
	n := 0
	allDisabled = true
	for _, h := range r.GDR.HCAs {
		if h.Plugin == "Socket" {
			continue
		}
		n++
		if h.Enabled {
			allDisabled = false
		} else {
			lines = append(lines, h)
			label := h.Name
			if h.Host != "" {
				label += " on " + h.Host
			}
			names = addCapped(names, label, 8)
		}
	}
	return n > 0 && allDisabled, names, lines
}

func (a *analyzer) hcaEvidence(lines []HCAGDR) []result.Evidence {
	var out []result.Evidence
	for _, h := range lines {
		if len(out) >= 4 {
			break
		}
		out = append(out, a.ev(h.Line, h.Text, "NCCL found no way to register GPU memory with this HCA (nvidia-peermem or dma-buf)"))
	}
	return out
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (a *analyzer) vGDR(r *Report, s *summary) result.Result {
	const id = "nccl.gdr"
	allDis, disNames, disLines := hcaState(r)
	if s.netLines == 0 {
		if a.chans.transportLines == 0 && !s.singleNode {
			if allDis {
				msg := fmt.Sprintf("NCCL reported GPU Direct RDMA Disabled for every RDMA HCA it found (%s) and the log has no network channel lines: traffic between hosts would be staged through host memory", strings.Join(disNames, ", "))
				if s.maxNRanks > 0 {
					msg += fmt.Sprintf(" (%d ranks, %d of them placed on %d host(s) in this log)", s.maxNRanks, s.ranksKnown, len(s.hostsWithRanks))
				}
				if r.GDR.Level != "" {
					msg += fmt.Sprintf("; NCCL_NET_GDR_LEVEL=%s does not help when the HCA itself has GDR disabled", r.GDR.Level)
				}
				out := res(id, result.Fail, "job", "GDRDisabledForHCA", msg, a.hcaEvidence(disLines))
				out.Remedy = gdrRemedy
				return out
			}
			msg := "no channel transport lines: NCCL_DEBUG_SUBSYS must include INIT (or NET), and NCCL >= 2.22 connects at the first collective, so a log cut before it has none"
			if s.multiNode {
				msg = fmt.Sprintf("ranks on %d hosts but ", max(len(s.hostsWithRanks), s.maxNNodes)) + msg
			}
			return res(id, result.Unknown, "job", "NoChannelLines", msg, nil)
		}
		if s.multiNode && s.p2pInter > 0 {
			return res(id, result.Skip, "job", "NoNetChannels",
				fmt.Sprintf("ranks on several hosts are joined over P2P (%d lines; multi-node NVLink, MNNVL) and no channel goes over the network", s.p2pInter), nil)
		}
		msg := "no channel goes over the network"
		switch {
		case a.chans.transportLines > 0:
			msg = fmt.Sprintf("none of the %d channel transport lines goes over the network", a.chans.transportLines)
		case s.singleNode:
			msg += fmt.Sprintf(": all %d rank(s) are on one host", max(s.maxNRanks, s.ranksKnown))
		}
		if len(disNames) > 0 {
			msg += fmt.Sprintf("; NCCL reported GPU Direct RDMA Disabled for %s, which matters once the job spans hosts", strings.Join(disNames, ", "))
		}
		return res(id, result.Skip, "job", "NoInterNodeTraffic", msg, a.hcaEvidence(disLines))
	}
	where := ""
	if s.netIntra == s.netLines {
		where = " (all of them between ranks on the same host: loopback through the NIC, see nccl.p2p)"
	}
	if s.netNoGDR > 0 {
		msg := fmt.Sprintf("%d of %d network channel %s do not use GDRDMA (%s): their data is staged through host memory%s",
			s.netNoGDR, s.netLines, plural(s.netLines, "line", "lines"),
			transportList(r, func(t TransportCount) bool { return isNetClass(t) && !strings.Contains(t.Transport, "GDRDMA") }), where)
		if s.netGDR > 0 {
			msg += fmt.Sprintf("; %d use GDRDMA", s.netGDR)
		}
		if len(disNames) > 0 {
			msg += fmt.Sprintf("; GPU Direct RDMA Disabled for %s", strings.Join(disNames, ", "))
		}
		evs := a.offEvidence(s.offNoGDR, "network channel without GDRDMA")
		evs = append(evs, a.hcaEvidence(disLines)...)
		out := res(id, result.Fail, "job", "NoGDRDMA", msg, evs)
		out.Remedy = gdrRemedy
		return out
	}
	msg := fmt.Sprintf("all %d network channel %s use GDRDMA (%s)%s", s.netLines, plural(s.netLines, "line", "lines"),
		transportList(r, isNetClass), where)
	var evs []result.Evidence
	for _, o := range s.sampleGDR {
		evs = append(evs, a.ev(o.line, o.text, ""))
	}
	if r.GDR.Level != "" {
		msg += fmt.Sprintf("; NCCL_NET_GDR_LEVEL=%s set by environment", r.GDR.Level)
		for _, g := range r.GDR.GPUs {
			if g.Enabled {
				msg += fmt.Sprintf(" (GPU %s to HCA %d enabled at distance %d <= %d)", g.GPU, g.HCA, g.Distance, g.Limit)
				evs = append(evs, a.ev(g.Line, g.Text, "GDR allowed by the level set in the environment"))
				break
			}
		}
	}
	if len(s.silentHosts) > 0 {
		msg += fmt.Sprintf("; but %s %s ranks and printed no NCCL line, so %s side of these connections is not in this log",
			strings.Join(s.silentHosts, ", "), pluralS(len(s.silentHosts), "holds", "hold"), pluralS(len(s.silentHosts), "its", "their"))
		return res(id, result.Warn, "job", "PartialLog", msg, evs)
	}
	return res(id, result.Pass, "job", "GDRDMA", msg, evs)
}

func pluralS(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

const gdrRemedy = "Make GPU memory registrable by the NIC: load nvidia-peermem (or use a kernel and driver with dma-buf, NCCL_DMABUF_ENABLE=1), " +
	"keep GPU and NIC under one PCIe switch (nvidia-smi topo -m: PIX/PXB) or raise NCCL_NET_GDR_LEVEL on every rank, and check that ACS/IOMMU settings allow peer-to-peer."

func (a *analyzer) vP2P(r *Report, s *summary) result.Result {
	const id = "nccl.p2p"
	if s.intraLines == 0 {
		if a.chans.transportLines == 0 {
			if s.maxNRanks == 1 {
				return res(id, result.Skip, "job", "SingleRank", "one rank: no peers", nil)
			}
			return res(id, result.Unknown, "job", "NoChannelLines",
				"no channel transport lines in the log (NCCL_DEBUG_SUBSYS must include INIT; NCCL >= 2.22 connects at the first collective)", nil)
		}
		msg := "no channel joins two ranks of the same host"
		if a.chans.garbled > 0 && a.chans.garbled == a.chans.transportLines {
			return res(id, result.Unknown, "job", "GarbledChannelLines",
				fmt.Sprintf("all %d channel transport lines were cut by other writers", a.chans.garbled), nil)
		}
		return res(id, result.Skip, "job", "NoIntraNodePeers", msg, nil)
	}
	if s.loopIntra > 0 {
		msg := fmt.Sprintf("%d of %d intra-node channel %s go over the network (%s) between ranks of the same host: loopback through the NIC instead of P2P/NVLink",
			s.loopIntra, s.intraLines, plural(s.intraLines, "line", "lines"),
			transportList(r, func(t TransportCount) bool { return isNetClass(t) && t.Intra > 0 }))
		out := res(id, result.Fail, "job", "IntraNodeOverNet", msg, a.offEvidence(s.offLoop, "both ranks are on this host"))
		out.Remedy = "Let NCCL use P2P between local GPUs: unset NCCL_P2P_DISABLE / NCCL_SHM_DISABLE, check NCCL_P2P_LEVEL, run the ranks of a host in one container (or with shared IPC and /dev/shm), and check nvidia-smi topo -p2p r."
		return out
	}
	if s.shmIntra > 0 {
		msg := fmt.Sprintf("%d of %d intra-node channel %s use SHM (%s): data goes through host memory, P2P between these GPUs is not available",
			s.shmIntra, s.intraLines, plural(s.intraLines, "line", "lines"),
			transportList(r, func(t TransportCount) bool { return t.Class == "shm" }))
		out := res(id, result.Warn, "job", "SHMFallback", msg, a.offEvidence(s.offSHM, "SHM instead of P2P"))
		out.Remedy = "Check why P2P is off: nvidia-smi topo -p2p r, NCCL_P2P_DISABLE/NCCL_P2P_LEVEL, PCIe ACS and IOMMU, GPUs without P2P support across the root complex."
		return out
	}
	var kinds []string
	for k, n := range s.p2pKinds {
		kinds = append(kinds, fmt.Sprintf("%s x%d", k, n))
	}
	sort.Strings(kinds)
	msg := fmt.Sprintf("all %d intra-node channel %s use P2P (%s)", s.intraLines, plural(s.intraLines, "line", "lines"), strings.Join(kinds, ", "))
	if s.nvlink {
		msg += "; NCCL's topology shows NVLink"
	}
	var evs []result.Evidence
	for _, o := range s.sampleP2P {
		evs = append(evs, a.ev(o.line, o.text, ""))
	}
	return res(id, result.Pass, "job", "P2P", msg, evs)
}

func (a *analyzer) vNet(r *Report, s *summary) result.Result {
	const id = "nccl.net"
	sockSel := false
	var sockLine int64
	var sockText string
	var rdma []string
	for _, x := range r.Network.Selected {
		if x.Name == "Socket" {
			sockSel, sockLine, sockText = true, x.Line, x.Text
		} else {
			rdma = addCapped(rdma, x.Name, 8)
		}
	}
	for n := range s.netNames {
		if n != "Socket" && n != "" {
			rdma = addCapped(rdma, n, 8)
		}
	}
	sort.Strings(rdma)
	var noDev []string
	for _, h := range r.Hosts {
		if h.NoIBDevice {
			noDev = append(noDev, h.Name)
		}
	}
	sockWhy := ""
	if len(noDev) > 0 {
		sockWhy = fmt.Sprintf(" (NET/IB : No device found on %s)", strings.Join(noDev, ", "))
	}
	remedy := "Give NCCL an RDMA device: check ibv_devinfo, the rdma-core/libibverbs packages and /dev/infiniband in the container, NCCL_IB_DISABLE, NCCL_NET and the net plugin (aws-ofi-nccl, TCPX)."
	if s.socketInter > 0 {
		out := res(id, result.Fail, "job", "SocketFallback",
			fmt.Sprintf("%d channel %s between hosts use NET/Socket (TCP, no RDMA)%s", s.socketInter, plural(s.socketInter, "line", "lines"), sockWhy),
			a.offEvidence(s.offSock, "socket transport"))
		out.Remedy = remedy
		return out
	}
	if sockSel {
		ev := []result.Evidence{a.ev(sockLine, sockText, "")}
		switch {
		case s.multiNode:
			out := res(id, result.Fail, "job", "SocketFallback",
				fmt.Sprintf("NCCL selected the Socket network%s on a job that spans %d hosts: inter-node traffic goes over TCP", sockWhy, max(len(s.hostsWithRanks), s.maxNNodes)), ev)
			out.Remedy = remedy
			return out
		case s.singleNode:
			return res(id, result.Skip, "job", "SocketSingleHost",
				fmt.Sprintf("NCCL selected the Socket network%s, but all ranks are on one host so the network is not used; in a multi-node job this host would fall back to TCP", sockWhy), ev)
		}
		out := res(id, result.Warn, "job", "SocketSelected",
			fmt.Sprintf("NCCL selected the Socket network%s; the log does not show whether the job spans hosts", sockWhy), ev)
		out.Remedy = remedy
		return out
	}
	if len(rdma) > 0 {
		msg := "NCCL used the " + strings.Join(rdma, ", ") + " network"
		var det []string
		for _, h := range r.Hosts {
			if len(h.IBDevices) > 0 {
				var ds []string
				for _, d := range h.IBDevices {
					ds = append(ds, fmt.Sprintf("%s:%d/%s", d.Name, d.Port, d.LinkLayer))
				}
				det = append(det, h.Name+": "+strings.Join(ds, " "))
			}
			if len(det) == 3 {
				det = append(det, "...")
				break
			}
		}
		if len(det) > 0 {
			msg += " (" + strings.Join(det, "; ") + ")"
		}
		if r.Network.OFIProvider != "" {
			msg += fmt.Sprintf(" (OFI provider %s, %d NICs)", r.Network.OFIProvider, r.Network.OFINICs)
		}
		var evs []result.Evidence
		for _, x := range r.Network.Selected {
			evs = append(evs, a.ev(x.Line, x.Text, fmt.Sprintf("%d process(es)", x.Processes)))
		}
		if len(evs) == 0 && len(s.sampleGDR) > 0 {
			evs = append(evs, a.ev(s.sampleGDR[0].line, s.sampleGDR[0].text, "network transport of a channel"))
		}
		if len(s.offNoGDR) > 0 && len(evs) == 0 {
			evs = append(evs, a.ev(s.offNoGDR[0].line, s.offNoGDR[0].text, "network transport of a channel"))
		}
		return res(id, result.Pass, "job", "RDMANetwork", msg, evs)
	}
	if s.singleNode {
		return res(id, result.Skip, "job", "NoNetwork", "all ranks are on one host and the log names no network", nil)
	}
	return res(id, result.Unknown, "job", "NoNetworkLines", "the log names no network (\"Using network ...\") and no channel goes over NET", nil)
}

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
	if len(r.Versions) == 0 {
		return res(id, result.Unknown, "job", "NoVersionLine", "no \"NCCL version\" line in the log", nil)
	}
	if len(r.Versions) > 1 {
		out := res(id, result.Fail, "job", "VersionMismatch",
			"ranks run different NCCL versions: "+names(r.Versions)+" (processes)", verEv(r.Versions, ""))
		out.Remedy = "Run one NCCL build on every node (same container image or the same libnccl.so.2 first in LD_LIBRARY_PATH)."
		return out
	}
	if len(r.Network.Selected) > 1 {
		var p []string
		var evs []result.Evidence
		for _, x := range r.Network.Selected {
			p = append(p, fmt.Sprintf("%s (%d)", x.Name, x.Processes))
			evs = append(evs, a.ev(x.Line, x.Text, fmt.Sprintf("%d process(es)", x.Processes)))
		}
		out := res(id, result.Fail, "job", "NetworkMismatch", "ranks use different network plugins: "+strings.Join(p, ", ")+" (processes)", evs)
		out.Remedy = "Give every node the same net plugin and RDMA devices (a rank without them falls back to another network)."
		return out
	}
	if len(r.Network.PluginVersions) > 1 {
		out := res(id, result.Fail, "job", "PluginVersionMismatch",
			"ranks load different network plugin versions: "+names(r.Network.PluginVersions), verEv(r.Network.PluginVersions, ""))
		out.Remedy = "Install one net plugin build on every node."
		return out
	}
	if len(r.CUDADriverVersions) > 1 {
		return res(id, result.Warn, "job", "DriverVersionMismatch",
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
	return res(id, result.Pass, "job", "SameVersion", msg, verEv(r.Versions[:1], ""))
}

func (a *analyzer) vErrors(r *Report) result.Result {
	const id = "nccl.errors"
	evs := func(list []Event) []result.Evidence {
		var out []result.Evidence
		for _, e := range list {
			if len(out) >= maxEvidence {
				break
			}
			note := ""
			if e.Count > 1 {
				note = fmt.Sprintf("%d lines like this", e.Count)
			}
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
		return res(id, result.Fail, "job", "NCCLErrors", msg, evs(r.Errors))
	}
	if r.WarningCount > 0 {
		return res(id, result.Warn, "job", "NCCLWarnings",
			fmt.Sprintf("%d warning %s: %s", r.WarningCount, plural(r.WarningCount, "line", "lines"), first(r.Warnings)), evs(r.Warnings))
	}
	return res(id, result.Pass, "job", "NoErrors", fmt.Sprintf("no NCCL WARN or error lines in %d NCCL lines", a.stats.nccl), nil)
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
		return res(id, result.Unknown, "job", "NoChannelCount", "the log does not say how many channels NCCL built (\"N coll channels, ...\")", nil)
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
		out := res(id, result.Warn, "job", "LowChannelCount", msg+" (see nccl.topology)", evs)
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
	return res(id, result.Pass, "job", "ChannelCount", msg, evs)
}

func (a *analyzer) vTopology(r *Report) []result.Result {
	const id = "nccl.topology"
	if len(r.Topology) == 0 {
		return []result.Result{res(id, result.Unknown, "job", "NoSystemTree",
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
			o := res(id, result.Fail, subject, "NVLinkDegraded", "NVLink bandwidth in NCCL's topology is not what the GPUs should have: "+details(bad), evs(bad))
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
			o := res(id, result.Warn, subject, reason, msg, evs(slow))
			o.Remedy = "Give the VM PCIe bridges that report the real link speed and width, or an NCCL_TOPO_FILE that describes the host."
			out = append(out, o)
		default:
			msg := fmt.Sprintf("%d GPU(s), %d NIC(s), %d NVLink link(s), maxBw %.1f totalBw %.1f", t.GPUs, t.NICs, t.NVLinks, t.MaxBW, t.TotalBW)
			if !t.Complete {
				msg += " (tree cut short in the log)"
			}
			out = append(out, res(id, result.Pass, subject, "TopologyConsistent", msg,
				[]result.Evidence{a.ev(t.Line, fmt.Sprintf("=== System : maxBw %.1f totalBw %.1f ===", t.MaxBW, t.TotalBW), "")}))
		}
	}
	return out
}
