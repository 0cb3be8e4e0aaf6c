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
			p = a.proc(host, h.pid)
		}
	}
	if p != nil && p.tree != nil && p.treeTid == h.tid {
		if a.treeLine(p, m, raw, no) {
			return
		}
	}
	if h.level == 'W' {
		a.event(h.level, host, m, no)
		return
	}
	if len(m) == 0 {
		return
	}
	switch m[0] {
	case 'C':
		switch {
		case bytes.HasPrefix(m, pfxChannel):
			a.channelLine(h, host, p, m[len(pfxChannel):], raw, spliced, no, false)
			return
		case bytes.HasPrefix(m, pfxCollNet):
			a.channelLine(h, host, p, m[len(pfxCollNet):], raw, spliced, no, true)
			return
		case bytes.HasPrefix(m, pfxConnected):
			r := m[len(pfxConnected):]
			switch {
			case bytes.HasPrefix(r, []byte("all rings")):
				a.graph.connRings++
			case bytes.HasPrefix(r, []byte("all trees")):
				a.graph.connTrees++
			case bytes.HasPrefix(r, []byte("NVLS")):
				a.graph.connNVLS++
			}
			return
		}
	case 'R':
		if bytes.HasPrefix(m, pfxRing) {
			a.channelLine(h, host, p, m[len(pfxRing):], raw, spliced, no, false)
			return
		}
	case 'N':
		switch {
		case bytes.HasPrefix(m, pfxVersion):
			if p != nil && p.version == "" {
				p.version = string(firstToken(m[len(pfxVersion):]))
				p.versionLine, p.versionText = no, clip(raw)
			} else if p == nil {
				a.addBareVersion(firstToken(m[len(pfxVersion):]), no, raw)
			}
			return
		case bytes.HasPrefix(m, pfxNET):
			a.netLine(host, p, m, raw, no)
			return
		case bytes.HasPrefix(m, pfxNCCLEnv):
			a.envLine(m, no)
			return
		case bytes.HasPrefix(m, pfxNVLSSup):
			a.graph.nvlsSup = true
			return
		}
	case 'U':
		switch {
		case bytes.HasPrefix(m, pfxUsingNet):
			if p != nil && p.network == "" {
				p.network = string(m[len(pfxUsingNet):])
				p.networkLine, p.networkText = no, clip(raw)
			}
			return
		case bytes.HasPrefix(m, pfxNonDevice):
			a.net.nonDevice = true
			a.pluginMsg(host, m, no)
			return
		}
	case 'A':
		if bytes.HasPrefix(m, pfxAssigned) {
			if p != nil && p.network == "" {
				n := m[len(pfxAssigned):]
				if i := bytes.Index(n, []byte(" to comm")); i >= 0 {
					n = n[:i]
				}
				p.network = string(n)
				p.networkLine, p.networkText = no, clip(raw)
			}
			return
		}
	case 'I':
		if bytes.HasPrefix(m, pfxInitNET) {
			a.pluginMsg(host, m, no)
			return
		}
	case 'F':
		if bytes.HasPrefix(m, pfxFailNET) {
			a.pluginMsg(host, m, no)
			return
		}
	case 'G':
		if bytes.HasPrefix(m, pfxGPUDirect) {
			a.gpuGDRLine(host, m, raw, no)
			return
		}
		if bytes.HasPrefix(m, []byte("GPU/")) {
			a.pathLine(host, p, m)
			return
		}
	case 'D':
		if bytes.HasPrefix(m, pfxDMABuf) {
			a.net.dmabuf = true
			if host >= 0 {
				if d, err := strconv.Atoi(string(firstToken(m[len(pfxDMABuf):]))); err == nil {
					hs := a.hosts.all[host]
					hs.dmabuf = addHostSet(hs.dmabuf, d, &a.hosts.budget)
				}
			}
			return
		}
	case 'c':
		if bytes.HasPrefix(m, pfxCUDADrv) {
			if p != nil && p.cuda == "" {
				p.cuda = string(firstToken(m[len(pfxCUDADrv):]))
				p.cudaLine, p.cudaText = no, clip(raw)
			}
			return
		}
		if bytes.HasPrefix(m, pfxComm) {
			a.commLine(h, host, p, m, spliced, no)
			return
		}
	case 'n':
		// ncclCommInitRank comm 0x..., ncclCommInitRankConfig comm 0x...
		if i := bytes.Index(m, sCommSp); i >= 0 && i < 40 && bytes.HasPrefix(m, []byte("nccl")) {
			a.commLine(h, host, p, m[i+1:], spliced, no)
			return
		}
	case '=':
		if bytes.HasPrefix(m, pfxSystem) && p != nil {
			a.treeStart(host, p, h.tid, m, no)
			return
		}
	case 'P':
		if bytes.HasPrefix(m, pfxPattern) {
			a.patternLine(host, m, no)
			return
		}
	case 'B':
		if bytes.HasPrefix(m, pfxBootstrap) && host >= 0 {
			if i := bytes.Index(m, []byte("Using ")); i >= 0 && i < 16 {
				hs := a.hosts.all[host]
				if hs.boot == "" {
					hs.boot = string(firstToken(m[i+6:]))
				}
			}
			return
		}
	}
	if m[0] >= '0' && m[0] <= '9' {
		if bytes.Contains(m, sCollCh) {
			a.countsLine(m, raw, spliced, no)
			return
		}
	}
	// Errors reported at INFO level: propagated return codes
	// ("transport/net.cc:1302 -> 6") and error texts.
	if isPropagation(m) {
		a.event('E', host, m, no)
		return
	}
	if bytes.Contains(m, sRror) {
		if strongError(m) {
			a.event('E', host, m, no)
		} else {
			a.event('I', host, m, no)
		}
		return
	}
	if bytes.Contains(m, sRetry) {
		a.event('I', host, m, no)
	}
}
