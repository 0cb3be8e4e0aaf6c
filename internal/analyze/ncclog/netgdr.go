package ncclog

import (
	"bytes"
	"sort"
)

// Caps of the network tracker.
const (
	maxGPUGDR     = 4096
	maxHCAGDR     = 4096
	maxEnv        = 256
	maxPluginMsgs = 32
)

// netTracker owns what NCCL said about the network plugin, GPU Direct
// RDMA and the environment.
type netTracker struct {
	hcaGDR      []HCAGDR
	hcaSeen     map[gpuGDRKey]bool
	gpuGDR      []GPUGDR
	gpuSeen     map[gpuGDRKey]bool
	dmabuf      bool
	env         map[envKey]*envVal
	envOrder    []envKey
	pluginMsgs  []Event
	pluginSeen  map[string]bool
	nonDevice   bool
	ofiProvider string
	ofiNICs     int
	libfabric   string
}

func newNetTracker() netTracker {
	return netTracker{hcaSeen: map[gpuGDRKey]bool{}, gpuSeen: map[gpuGDRKey]bool{}, env: map[envKey]*envVal{}, pluginSeen: map[string]bool{}}
}

type envKey struct{ name, value string }

type envVal struct {
	procs int
	line  int64
}

type gpuGDRKey struct {
	host int32
	gpu  string
	hca  int
}

func (n *netTracker) envLine(m []byte, no int64) {
	i := bytes.Index(m, sEnvTo)
	if i < 0 {
		return
	}
	name := string(m[:i])
	val := bytes.TrimSpace(m[i+len(sEnvTo):])
	val = bytes.TrimSuffix(val, []byte("."))
	k := envKey{name, clip(val)}
	if v := n.env[k]; v != nil {
		v.procs++
		return
	}
	if len(n.env) >= maxEnv {
		return
	}
	n.env[k] = &envVal{procs: 1, line: no}
	n.envOrder = append(n.envOrder, k)
}

func (n *netTracker) pluginMsg(host string, m []byte, no int64) {
	k := maskNumbers(m)
	if n.pluginSeen[k] || len(n.pluginMsgs) >= maxPluginMsgs {
		return
	}
	n.pluginSeen[k] = true
	ev := Event{Line: no, Host: host, Level: "info", Message: clip(m), Count: 1}
	n.pluginMsgs = append(n.pluginMsgs, ev)
}

// netLine handles "NET/<plugin> ..." lines.
func (a *analyzer) netLine(host int32, p *procState, m, raw []byte, no int64) {
	r := m[len(pfxNET):]
	j := 0
	for j < len(r) && r[j] != ' ' && r[j] != ':' {
		j++
	}
	plugin := r[:j]
	r = bytes.TrimLeft(r[j:], " ")
	colon := len(r) > 0 && r[0] == ':'
	if colon {
		r = bytes.TrimLeft(r[1:], " ")
	}
	var hs *hostState
	if host >= 0 {
		hs = a.hosts.all[host]
	}
	switch {
	case string(plugin) == "Plugin":
		a.net.pluginMsg(a.hosts.nameOf(host), m, no)
	case string(plugin) == "OFI":
		a.net.ofiLine(p, r, raw, no)
	case bytes.HasPrefix(r, pfxGPUDirect):
		a.net.hcaGDRLine(host, a.hosts.nameOf(host), string(plugin), r[len(pfxGPUDirect):], raw, no)
	case bytes.HasPrefix(r, []byte("Using ")) && colon:
		if hs == nil {
			return
		}
		if string(plugin) == "IB" {
			a.ibUsing(hs, r[len("Using "):], no)
		} else if string(plugin) == "Socket" {
			for _, t := range bytes.Fields(r[len("Using "):]) {
				if t[0] == '[' {
					if k := bytes.IndexByte(t, ']'); k > 0 {
						hs.socket = addHostSet(hs.socket, string(t[k+1:]), &a.hosts.budget)
					}
				}
			}
		}
	case bytes.HasPrefix(r, []byte("No device found")):
		if hs != nil && string(plugin) == "IB" {
			hs.noIB = true
		}
		a.net.pluginMsg(a.hosts.nameOf(host), m, no)
	default:
		if string(plugin) != "IB" && string(plugin) != "Socket" &&
			(bytes.Contains(r, []byte("ver")) || bytes.Contains(r, []byte("plugin"))) {
			a.net.pluginMsg(a.hosts.nameOf(host), m, no)
		}
	}
}

// ibUsing reads "[0]mlx5_0:1/RoCE [1]mlx5_2:1/IB [RO]; OOB ib0:10.0.0.1<0>".
func (a *analyzer) ibUsing(hs *hostState, r []byte, no int64) {
	if len(hs.ib) > 0 {
		return
	}
	if i := bytes.Index(r, []byte("OOB ")); i >= 0 {
		hs.ibOOB = string(firstToken(r[i+4:]))
		r = r[:i]
	}
	for _, t := range bytes.Fields(r) {
		t = bytes.TrimRight(t, ";")
		if len(t) < 3 || t[0] != '[' {
			continue
		}
		k := bytes.IndexByte(t, ']')
		if k < 0 {
			continue
		}
		idx := atoiOr(t[1:k], -1)
		if idx < 0 {
			continue // [RO]
		}
		d := IBDevice{Index: idx, Line: no}
		rest := t[k+1:]
		if s := bytes.IndexByte(rest, '/'); s >= 0 {
			d.LinkLayer = string(rest[s+1:])
			rest = rest[:s]
		}
		if c := bytes.LastIndexByte(rest, ':'); c >= 0 {
			d.Port = atoiOr(rest[c+1:], 0)
			rest = rest[:c]
		}
		d.Name = string(rest)
		if len(hs.ib) < maxSmallSet && a.hosts.spend() {
			hs.ib = append(hs.ib, d)
		}
	}
}

func (n *netTracker) ofiLine(p *procState, r, raw []byte, no int64) {
	switch {
	case bytes.HasPrefix(r, []byte("Selected Provider is ")):
		s := r[len("Selected Provider is "):]
		n.ofiProvider = string(firstToken(s))
		if i := bytes.Index(s, []byte("(found ")); i >= 0 {
			n.ofiNICs = atoiOr(firstToken(s[i+7:]), 0)
		}
	case bytes.HasPrefix(r, []byte("Initializing ")):
		if p != nil && p.ofiVersion == "" {
			p.ofiVersion = string(bytes.TrimSpace(r[len("Initializing "):]))
			p.ofiLine, p.ofiText = no, clip(raw)
		}
	case bytes.HasPrefix(r, []byte("Using Libfabric version ")):
		n.libfabric = string(firstToken(r[len("Using Libfabric version "):]))
	}
}

// hcaGDRLine reads "Enabled for HCA 0 'mlx5_0'" (after "GPU Direct RDMA ").
func (n *netTracker) hcaGDRLine(host int32, hostName, plugin string, r, raw []byte, no int64) {
	var enabled bool
	switch {
	case bytes.HasPrefix(r, []byte("Enabled")):
		enabled = true
	case bytes.HasPrefix(r, []byte("Disabled")):
	default:
		return
	}
	i := bytes.Index(r, []byte("HCA "))
	if i < 0 {
		return
	}
	s := r[i+4:]
	idx := atoiOr(firstToken(s), -1)
	name := ""
	if q := bytes.IndexByte(s, '\''); q >= 0 {
		if q2 := bytes.IndexByte(s[q+1:], '\''); q2 >= 0 {
			name = string(s[q+1 : q+1+q2])
		}
	}
	k := gpuGDRKey{host: host, gpu: plugin + "/" + name, hca: idx}
	if n.hcaSeen[k] || len(n.hcaGDR) >= maxHCAGDR {
		return
	}
	n.hcaSeen[k] = true
	e := HCAGDR{Plugin: plugin, Index: idx, Name: name, Enabled: enabled, Line: no, Text: clip(raw)}
	e.Host = hostName
	n.hcaGDR = append(n.hcaGDR, e)
}

// gpuGDRLine reads "GPU Direct RDMA Enabled for GPU 81000 / HCA 1 (distance
// 6 <= 7), read 0" and its Disabled form.
func (n *netTracker) gpuGDRLine(host int32, hostName string, m, raw []byte, no int64) {
	r := m[len(pfxGPUDirect):]
	var enabled bool
	switch {
	case bytes.HasPrefix(r, []byte("Enabled for GPU ")):
		enabled, r = true, r[len("Enabled for GPU "):]
	case bytes.HasPrefix(r, []byte("Disabled for GPU ")):
		r = r[len("Disabled for GPU "):]
	default:
		return
	}
	gpu := string(firstToken(r))
	hca := -1
	if i := bytes.Index(r, []byte("HCA ")); i >= 0 {
		hca = atoiOr(bytes.TrimRight(firstToken(r[i+4:]), ",)"), -1)
	}
	dist, lim := -1, -1
	if i := bytes.Index(r, []byte("distance ")); i >= 0 {
		f := bytes.Fields(r[i+9:])
		if len(f) >= 3 {
			dist = atoiOr(f[0], -1)
			lim = atoiOr(bytes.TrimRight(f[2], "),"), -1)
		}
	}
	k := gpuGDRKey{host: host, gpu: gpu, hca: hca}
	if n.gpuSeen[k] || len(n.gpuGDR) >= maxGPUGDR {
		return
	}
	n.gpuSeen[k] = true
	e := GPUGDR{GPU: gpu, HCA: hca, Enabled: enabled, Distance: dist, Limit: lim, Line: no, Text: clip(raw)}
	e.Host = hostName
	n.gpuGDR = append(n.gpuGDR, e)
}

// network is what the processes and the channel transports say about the
// network and its plugin.
func (n *netTracker) network(procs []*procState, transports []*transport, hosts []*hostState) Network {
	var nw Network
	sel := map[string]*Selected{}
	var selOrder []string
	for _, p := range procs {
		if p.network == "" {
			continue
		}
		if x := sel[p.network]; x != nil {
			x.Processes++
			if p.networkLine < x.Line {
				x.Line, x.Text = p.networkLine, p.networkText
			}
			continue
		}
		sel[p.network] = &Selected{Name: p.network, Processes: 1, Line: p.networkLine, Text: p.networkText}
		selOrder = append(selOrder, p.network)
	}
	for _, name := range selOrder {
		nw.Selected = append(nw.Selected, *sel[name])
	}
	sort.SliceStable(nw.Selected, func(i, j int) bool { return nw.Selected[i].Line < nw.Selected[j].Line })
	for _, t := range transports {
		if t.class == clNET && t.netName != "" {
			nw.NetTransports = addCapped(nw.NetTransports, "NET/"+t.netName, maxSmallSet)
		}
		if t.class == clCollNet && t.netName != "" {
			nw.NetTransports = addCapped(nw.NetTransports, "COLLNET/"+t.netName, maxSmallSet)
		}
	}
	nw.PluginMessages = n.pluginMsgs
	nw.PluginVersions = aggregate(procs, hosts, func(p *procState) (string, int64, string) { return p.ofiVersion, p.ofiLine, p.ofiText })
	nw.OFIProvider = n.ofiProvider
	nw.OFINICs = n.ofiNICs
	nw.Libfabric = n.libfabric
	nw.NonDevicePlugin = n.nonDevice
	return nw
}

// gdr is the GPU Direct RDMA lines with canonical host names, and the
// environment (NCCL_NET_GDR_LEVEL goes into the GDR part too).
func (n *netTracker) gdr(canonical map[string]string) (GDR, []EnvVar) {
	var g GDR
	for _, e := range n.hcaGDR {
		if e.Host != "" {
			e.Host = canonical[e.Host]
		}
		g.HCAs = append(g.HCAs, e)
	}
	for _, e := range n.gpuGDR {
		if e.Host != "" {
			e.Host = canonical[e.Host]
		}
		g.GPUs = append(g.GPUs, e)
	}
	g.DMABuf = n.dmabuf
	var env []EnvVar
	for _, k := range n.envOrder {
		v := n.env[k]
		env = append(env, EnvVar{Name: k.name, Value: k.value, Processes: v.procs, Line: v.line})
		if k.name == "NCCL_NET_GDR_LEVEL" && g.Level == "" {
			g.Level = k.value
		}
	}
	return g, env
}
