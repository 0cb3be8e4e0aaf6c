package ncclog

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// The verdicts on the data path: GPU Direct RDMA (nccl.gdr), peer to peer
// within a host (nccl.p2p) and the network (nccl.net).

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
				out := titles.New(id, result.Fail, "job", "GDRDisabledForHCA", msg, a.hcaEvidence(disLines))
				out.Remedy = gdrRemedy
				return out
			}
			msg := "no channel transport lines: NCCL_DEBUG_SUBSYS must include INIT (or NET), and NCCL >= 2.22 connects at the first collective, so a log cut before it has none"
			if s.multiNode {
				msg = fmt.Sprintf("ranks on %d hosts but ", max(len(s.hostsWithRanks), s.maxNNodes)) + msg
			}
			return titles.New(id, result.Unknown, "job", "NoChannelLines", msg, nil)
		}
		if s.multiNode && s.p2pInter > 0 {
			return titles.New(id, result.Skip, "job", "NoNetChannels",
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
		return titles.New(id, result.Skip, "job", "NoInterNodeTraffic", msg, a.hcaEvidence(disLines))
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
		out := titles.New(id, result.Fail, "job", "NoGDRDMA", msg, evs)
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
		return titles.New(id, result.Warn, "job", "PartialLog", msg, evs)
	}
	return titles.New(id, result.Pass, "job", "GDRDMA", msg, evs)
}

const p2pRemedy = "Check why P2P is off: nvidia-smi topo -p2p r, NCCL_P2P_DISABLE/NCCL_P2P_LEVEL, PCIe ACS and IOMMU, GPUs without P2P support across the root complex."

func (a *analyzer) vP2P(r *Report, s *summary) result.Result {
	const id = "nccl.p2p"
	noP2P := a.chans.p2pOff
	if noP2P > 0 && s.loopIntra == 0 && s.shmIntra == 0 {
		// NCCL names two GPUs of one host between which P2P is impossible:
		// their channels are SHM or go through the NIC, whatever else
		// the log shows (or does not).
		msg := fmt.Sprintf("NCCL could not enable P2P between GPUs of one host (%d %s \"Could not enable P2P between dev X and dev Y\"): their channels go through host memory (SHM) or the NIC",
			noP2P, plural(noP2P, "line", "lines"))
		if s.intraLines > 0 {
			msg += fmt.Sprintf("; the %d intra-node channel %s the log shows use P2P", s.intraLines, plural(s.intraLines, "line", "lines"))
		}
		out := titles.New(id, result.Warn, "job", "P2PNotEnabled", msg, a.offEvidence(a.chans.offP2POff, "P2P impossible between these two GPUs"))
		out.Remedy = p2pRemedy
		return out
	}
	if s.intraLines == 0 {
		if a.chans.transportLines == 0 {
			if s.maxNRanks == 1 {
				return titles.New(id, result.Skip, "job", "SingleRank", "one rank: no peers", nil)
			}
			return titles.New(id, result.Unknown, "job", "NoChannelLines",
				"no channel transport lines in the log (NCCL_DEBUG_SUBSYS must include INIT; NCCL >= 2.22 connects at the first collective)", nil)
		}
		msg := "no channel joins two ranks of the same host"
		if a.chans.garbled > 0 && a.chans.garbled == a.chans.transportLines {
			return titles.New(id, result.Unknown, "job", "GarbledChannelLines",
				fmt.Sprintf("all %d channel transport lines were cut by other writers", a.chans.garbled), nil)
		}
		return titles.New(id, result.Skip, "job", "NoIntraNodePeers", msg, nil)
	}
	if s.loopIntra > 0 {
		msg := fmt.Sprintf("%d of %d intra-node channel %s go over the network (%s) between ranks of the same host: loopback through the NIC instead of P2P/NVLink",
			s.loopIntra, s.intraLines, plural(s.intraLines, "line", "lines"),
			transportList(r, func(t TransportCount) bool { return isNetClass(t) && t.Intra > 0 }))
		out := titles.New(id, result.Fail, "job", "IntraNodeOverNet", msg, a.offEvidence(s.offLoop, "both ranks are on this host"))
		out.Remedy = "Let NCCL use P2P between local GPUs: unset NCCL_P2P_DISABLE / NCCL_SHM_DISABLE, check NCCL_P2P_LEVEL, run the ranks of a host in one container (or with shared IPC and /dev/shm), and check nvidia-smi topo -p2p r."
		return out
	}
	if s.shmIntra > 0 {
		msg := fmt.Sprintf("%d of %d intra-node channel %s use SHM (%s): data goes through host memory, P2P between these GPUs is not available",
			s.shmIntra, s.intraLines, plural(s.intraLines, "line", "lines"),
			transportList(r, func(t TransportCount) bool { return t.Class == "shm" }))
		if noP2P > 0 {
			msg += fmt.Sprintf("; NCCL could not enable P2P (%d %s)", noP2P, plural(noP2P, "line", "lines"))
		}
		out := titles.New(id, result.Warn, "job", "SHMFallback", msg, a.offEvidence(s.offSHM, "SHM instead of P2P"))
		out.Remedy = p2pRemedy
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
	return titles.New(id, result.Pass, "job", "P2P", msg, evs)
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
		out := titles.New(id, result.Fail, "job", "SocketFallback",
			fmt.Sprintf("%d channel %s between hosts use NET/Socket (TCP, no RDMA)%s", s.socketInter, plural(s.socketInter, "line", "lines"), sockWhy),
			a.offEvidence(s.offSock, "socket transport"))
		out.Remedy = remedy
		return out
	}
	if sockSel {
		ev := []result.Evidence{a.ev(sockLine, sockText, "")}
		switch {
		case s.multiNode:
			out := titles.New(id, result.Fail, "job", "SocketFallback",
				fmt.Sprintf("NCCL selected the Socket network%s on a job that spans %d hosts: inter-node traffic goes over TCP", sockWhy, max(len(s.hostsWithRanks), s.maxNNodes)), ev)
			out.Remedy = remedy
			return out
		case s.singleNode:
			return titles.New(id, result.Skip, "job", "SocketSingleHost",
				fmt.Sprintf("NCCL selected the Socket network%s, but all ranks are on one host so the network is not used; in a multi-node job this host would fall back to TCP", sockWhy), ev)
		}
		out := titles.New(id, result.Warn, "job", "SocketSelected",
			fmt.Sprintf("NCCL selected the Socket network%s; the log does not show whether the job spans hosts", sockWhy), ev)
		out.Remedy = remedy
		return out
	}
	if len(rdma) > 0 {
		return a.vRDMANet(r, s, rdma)
	}
	if a.events.ibTraffic > 0 {
		// No "Using network" line and no channel line, but NCCL's IB
		// transport reported completions: it was moving the job's data.
		return titles.New(id, result.Pass, "job", "RDMANetwork",
			"NCCL used the IB network: its IB transport reported work completions (errors or not), although no \"Using network\" or channel line is in the log",
			[]result.Evidence{a.ev(a.events.ibTraffic, a.events.ibTrafficText, "IB transport at work")})
	}
	if s.singleNode {
		return titles.New(id, result.Skip, "job", "NoNetwork", "all ranks are on one host and the log names no network", nil)
	}
	return titles.New(id, result.Unknown, "job", "NoNetworkLines", "the log names no network (\"Using network ...\") and no channel goes over NET", nil)
}

// vRDMANet is the pass of nccl.net: the RDMA networks used, with the IB
// devices of the first hosts and the OFI provider.
func (a *analyzer) vRDMANet(r *Report, s *summary, rdma []string) result.Result {
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
	return titles.New("nccl.net", result.Pass, "job", "RDMANetwork", msg, evs)
}
