package ncclog

import (
	"bytes"
	"strconv"
)

var (
	pfxChannel   = []byte("Channel ")
	pfxRing      = []byte("Ring ")
	pfxCollNet   = []byte("CollNet ")
	pfxConnected = []byte("Connected ")
	pfxNoP2P     = []byte("Could not enable P2P between dev ")
	pfxVersion   = []byte("NCCL version ")
	pfxNET       = []byte("NET/")
	pfxNCCLEnv   = []byte("NCCL_")
	pfxUsingNet  = []byte("Using network ")
	pfxNonDevice = []byte("Using non-device net plugin")
	pfxGPUDirect = []byte("GPU Direct RDMA ")
	pfxDMABuf    = []byte("DMA-BUF is available on GPU device ")
	pfxCUDADrv   = []byte("cudaDriverVersion ")
	pfxComm      = []byte("comm 0x")
	pfxSystem    = []byte("=== System : ")
	pfxPattern   = []byte("Pattern ")
	pfxBootstrap = []byte("Bootstrap")
	pfxNVLSSup   = []byte("NVLS multicast support is available")
	pfxAssigned  = []byte("Assigned NET plugin ")
	pfxInitNET   = []byte("Initialized NET plugin ")
	pfxFailNET   = []byte("Failed to initialize NET plugin ")
	sEnvTo       = []byte(" set by environment to ")
	sCommSp      = []byte(" comm 0x")
	sCollCh      = []byte(" coll channels")
	sRror        = []byte("rror")
	sRetry       = []byte("retry")
)

// message handles one NCCL message. raw is the header and message as
// printed; spliced says another writer cut it short.
func (a *analyzer) message(h *header, host int32, m, raw []byte, spliced bool, no int64) {
	a.stats.nccl++
	m = bytes.TrimRight(m, " \t\r")
	var p *procState
	if host >= 0 {
		a.hosts.all[host].lines++
		if h.hasPID {
			p = a.hosts.proc(host, h.pid)
		}
	}
	if p != nil && p.tree != nil && p.treeTid == h.tid {
		if a.treeLine(p, m, raw, no) {
			return
		}
	}
	if h.level == 'W' {
		a.events.add(h.level, host, m, no)
		if isProbeWarn(m) && h.hasPID {
			a.probe = probeThread{host: host, pid: h.pid, tid: h.tid, ok: true}
		}
		return
	}
	if a.probe.ok && a.probe == (probeThread{host: host, pid: h.pid, tid: h.tid, ok: true}) {
		if isPropagation(m) {
			// The probe's return code, passed up its thread's stack.
			a.events.add('I', host, m, no)
			return
		}
		a.probe.ok = false // the thread went on: the chain ended
	}
	if len(m) == 0 {
		return
	}
	if a.dispatch(h, host, p, m, raw, spliced, no) {
		return
	}
	if isDigit(m[0]) && bytes.Contains(m, sCollCh) {
		a.graph.countsLine(m, raw, spliced, no)
		return
	}
	a.events.fromInfo(host, m, no)
}

// probeThread is the thread that printed a probe's warning (isProbeWarn):
// the return codes it propagates next are that probe's.
type probeThread struct {
	host     int32
	pid, tid int64
	ok       bool
}

// dispatch sends a message to its tracker by the text it starts with; it
// reports false for a message no tracker takes.
func (a *analyzer) dispatch(h *header, host int32, p *procState, m, raw []byte, spliced bool, no int64) bool {
	switch m[0] {
	case 'C':
		return a.cMessage(h, host, p, m, raw, spliced, no)
	case 'R':
		if bytes.HasPrefix(m, pfxRing) {
			a.channelLine(h, host, p, m[len(pfxRing):], raw, spliced, no, false)
			return true
		}
	case 'N':
		return a.nMessage(host, p, m, raw, no)
	case 'U', 'A', 'I', 'F':
		return a.pluginMessage(host, p, m, raw, no)
	case 'G':
		if bytes.HasPrefix(m, pfxGPUDirect) {
			a.net.gpuGDRLine(host, a.hosts.nameOf(host), m, raw, no)
			return true
		}
		if bytes.HasPrefix(m, []byte("GPU/")) {
			a.pathLine(host, p, m)
			return true
		}
	case 'D':
		if bytes.HasPrefix(m, pfxDMABuf) {
			a.dmabufLine(host, m)
			return true
		}
	case 'c', 'n':
		return a.commMessage(h, host, p, m, raw, spliced, no)
	case '=':
		if bytes.HasPrefix(m, pfxSystem) && p != nil {
			a.treeStart(host, p, h.tid, m, no)
			return true
		}
	case 'P':
		if bytes.HasPrefix(m, pfxPattern) {
			a.graph.patternLine(a.hosts.nameOf(host), m, no)
			return true
		}
	case 'B':
		if bytes.HasPrefix(m, pfxBootstrap) && host >= 0 {
			if i := bytes.Index(m, []byte("Using ")); i >= 0 && i < 16 {
				if hs := a.hosts.all[host]; hs.boot == "" {
					hs.boot = string(firstToken(m[i+6:]))
				}
			}
			return true
		}
	}
	return false
}

// cMessage takes channel lines and "Connected all rings|trees|NVLS".
func (a *analyzer) cMessage(h *header, host int32, p *procState, m, raw []byte, spliced bool, no int64) bool {
	switch {
	case bytes.HasPrefix(m, pfxChannel):
		a.channelLine(h, host, p, m[len(pfxChannel):], raw, spliced, no, false)
	case bytes.HasPrefix(m, pfxCollNet):
		a.channelLine(h, host, p, m[len(pfxCollNet):], raw, spliced, no, true)
	case bytes.HasPrefix(m, pfxConnected):
		a.graph.connectedLine(m[len(pfxConnected):])
	case bytes.HasPrefix(m, pfxNoP2P):
		c := &a.chans
		c.p2pOff++
		if len(c.offP2POff) < maxOffenders {
			c.offP2POff = append(c.offP2POff, offender{line: no, host: host, text: clip(raw), loc: locIntra})
		}
	default:
		return false
	}
	return true
}

// nMessage takes "NCCL version", "NET/...", "NCCL_X set by environment"
// and the NVLS support line.
func (a *analyzer) nMessage(host int32, p *procState, m, raw []byte, no int64) bool {
	switch {
	case bytes.HasPrefix(m, pfxVersion):
		if p != nil && p.version == "" {
			p.version = string(firstToken(m[len(pfxVersion):]))
			p.versionLine, p.versionText = no, clip(raw)
		} else if p == nil {
			a.hosts.addBareVersion(firstToken(m[len(pfxVersion):]), no, raw)
		}
	case bytes.HasPrefix(m, pfxNET):
		a.netLine(host, p, m, raw, no)
	case bytes.HasPrefix(m, pfxNVLSEnv):
		a.nvls.envLine(m, raw, no)
		a.net.envLine(m, no)
	case bytes.HasPrefix(m, pfxNCCLEnv):
		a.net.envLine(m, no)
	case bytes.HasPrefix(m, pfxNVLSSup):
		a.graph.nvlsSup = true
		a.nvls.supportLine(true, raw, no)
	case bytes.HasPrefix(m, pfxNVLSNot):
		a.nvls.supportLine(false, raw, no)
	default:
		return false
	}
	return true
}

// pluginMessage takes the network choice of a process ("Using network X",
// "Assigned NET plugin X to comm") and the plugin loading lines.
func (a *analyzer) pluginMessage(host int32, p *procState, m, raw []byte, no int64) bool {
	switch {
	case bytes.HasPrefix(m, pfxUsingNet):
		if p != nil && p.network == "" {
			p.network = string(m[len(pfxUsingNet):])
			p.networkLine, p.networkText = no, clip(raw)
		}
	case bytes.HasPrefix(m, pfxNonDevice):
		a.net.nonDevice = true
		a.net.pluginMsg(a.hosts.nameOf(host), m, no)
	case bytes.HasPrefix(m, pfxAssigned):
		if p != nil && p.network == "" {
			n := m[len(pfxAssigned):]
			if i := bytes.Index(n, []byte(" to comm")); i >= 0 {
				n = n[:i]
			}
			p.network = string(n)
			p.networkLine, p.networkText = no, clip(raw)
		}
	case bytes.HasPrefix(m, pfxInitNET), bytes.HasPrefix(m, pfxFailNET):
		a.net.pluginMsg(a.hosts.nameOf(host), m, no)
	default:
		return false
	}
	return true
}

// commMessage takes "cudaDriverVersion N", "comm 0x..." and
// "ncclCommInitRank comm 0x..." lines.
func (a *analyzer) commMessage(h *header, host int32, p *procState, m, raw []byte, spliced bool, no int64) bool {
	if m[0] == 'n' {
		// ncclCommInitRank comm 0x..., ncclCommInitRankConfig comm 0x...
		if i := bytes.Index(m, sCommSp); i >= 0 && i < 40 && bytes.HasPrefix(m, []byte("nccl")) {
			a.commLine(h, host, p, m[i+1:], spliced, no)
			return true
		}
		return false
	}
	switch {
	case bytes.HasPrefix(m, pfxCUDADrv):
		if p != nil && p.cuda == "" {
			p.cuda = string(firstToken(m[len(pfxCUDADrv):]))
			p.cudaLine, p.cudaText = no, clip(raw)
		}
	case bytes.HasPrefix(m, pfxComm):
		a.commLine(h, host, p, m, spliced, no)
	default:
		return false
	}
	return true
}

// dmabufLine reads "DMA-BUF is available on GPU device N".
func (a *analyzer) dmabufLine(host int32, m []byte) {
	a.net.dmabuf = true
	if host < 0 {
		return
	}
	if d, err := strconv.Atoi(string(firstToken(m[len(pfxDMABuf):]))); err == nil {
		hs := a.hosts.all[host]
		hs.dmabuf = addHostSet(hs.dmabuf, d, &a.hosts.budget)
	}
}
