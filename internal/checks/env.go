package checks

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

type ncclEnv struct{}

func (ncclEnv) ID() string { return "nccl.env" }
func (ncclEnv) Title() string {
	return "No NCCL environment variable disables or bends the data path"
}

// hcaEntry is one element of NCCL_IB_HCA: a device name prefix and an
// optional port.
type hcaEntry struct {
	name string
	port string
}

// parseHCAList reads NCCL_IB_HCA: "[^][=]name[:port],...". ^ excludes,
// = asks for exact names (else prefixes).
func parseHCAList(v string) (entries []hcaEntry, exclude, exact bool) {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "^") {
		exclude, v = true, v[1:]
	}
	if strings.HasPrefix(v, "=") {
		exact, v = true, v[1:]
	}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, p, _ := strings.Cut(part, ":")
		entries = append(entries, hcaEntry{n, p})
	}
	return
}

var reNumber = regexp.MustCompile(`^[0-9]+$`)

func (ncclEnv) Run(ctx context.Context, env *Env) []result.Result {
	if !env.Facts.Environ.Known {
		return []result.Result{res(result.Unknown, "node", "EnvironmentUnknown", "the job environment was not captured (run gdrcheck inside the job, or take a newer snapshot)")}
	}
	h := env.Host
	hasNIC := len(h.MatrixNICs()) > 0
	multiGPU := len(h.GPUs) > 1
	var out []result.Result
	get := func(k string) (string, bool) { v, ok := env.Facts.Environ.Vars[k]; return v, ok }
	e := func(k, v string) result.Evidence { return ev("environment", k+"="+v) }
	unset := func(k string) string { return "unset " + k }
	if v, ok := get("NCCL_IB_DISABLE"); ok && v == "1" {
		st := result.Warn
		msg := "NCCL_IB_DISABLE=1 turns off NCCL's InfiniBand/RoCE transport"
		if hasNIC {
			st = result.Fail
			msg += ": with RDMA NICs present, inter-node traffic falls back to TCP sockets"
		}
		out = append(out, withRemedy(res(st, "NCCL_IB_DISABLE", "IBDisabled", msg, e("NCCL_IB_DISABLE", v)), unset("NCCL_IB_DISABLE")))
	}
	if v, ok := get("NCCL_NET"); ok && strings.EqualFold(v, "Socket") && hasNIC {
		out = append(out, withRemedy(res(result.Fail, "NCCL_NET", "SocketForced", "NCCL_NET=Socket forces TCP sockets although RDMA NICs are present", e("NCCL_NET", v)), unset("NCCL_NET")))
	}
	if v, ok := get("NCCL_P2P_DISABLE"); ok && v == "1" {
		st := result.Warn
		if multiGPU {
			st = result.Fail
		}
		out = append(out, withRemedy(res(st, "NCCL_P2P_DISABLE", "P2PDisabled", "NCCL_P2P_DISABLE=1 turns off peer-to-peer (NVLink and PCIe) between GPUs: intra-node traffic goes through host memory", e("NCCL_P2P_DISABLE", v)), unset("NCCL_P2P_DISABLE")))
	}
	if v, ok := get("NCCL_P2P_LEVEL"); ok {
		l, err := parseNCCLLevel(v)
		switch {
		case err != nil:
			out = append(out, res(result.Fail, "NCCL_P2P_LEVEL", "BadValue", "NCCL_P2P_LEVEL: "+err.Error(), e("NCCL_P2P_LEVEL", v)))
		case l < level.NVLink || l == level.NVLink && multiGPU && !allNVLink(h):
			out = append(out, withRemedy(res(result.Fail, "NCCL_P2P_LEVEL", "P2PRestricted", "NCCL_P2P_LEVEL="+v+" keeps NCCL from using peer-to-peer between this host's GPUs", e("NCCL_P2P_LEVEL", v)), unset("NCCL_P2P_LEVEL")))
		default:
			out = append(out, res(result.Warn, "NCCL_P2P_LEVEL", "Overridden", "NCCL_P2P_LEVEL="+v+" overrides NCCL's own choice of P2P paths", e("NCCL_P2P_LEVEL", v)))
		}
	}
	if v, ok := get("NCCL_SHM_DISABLE"); ok && v == "1" {
		out = append(out, res(result.Warn, "NCCL_SHM_DISABLE", "SHMDisabled", "NCCL_SHM_DISABLE=1: where P2P is not possible, intra-node traffic goes through the network instead of shared memory", e("NCCL_SHM_DISABLE", v)))
	}
	if v, ok := get("NCCL_NET_GDR_LEVEL"); ok {
		l, err := parseNCCLLevel(v)
		switch {
		case err != nil:
			out = append(out, res(result.Fail, "NCCL_NET_GDR_LEVEL", "BadValue", "NCCL_NET_GDR_LEVEL: "+err.Error(), e("NCCL_NET_GDR_LEVEL", v)))
		case l <= level.Self:
			out = append(out, withRemedy(res(result.Fail, "NCCL_NET_GDR_LEVEL", "GDRDisabled", "NCCL_NET_GDR_LEVEL="+v+" disables GPU Direct RDMA: network traffic is staged through host memory (gdr.nic-affinity's pairs follow from this)", e("NCCL_NET_GDR_LEVEL", v)), unset("NCCL_NET_GDR_LEVEL")))
		case l > level.DefaultGDR:
			out = append(out, res(result.Warn, "NCCL_NET_GDR_LEVEL", "GDRWidened", "NCCL_NET_GDR_LEVEL="+v+" lets NCCL use GPU Direct RDMA across paths beyond PXB (see gdr.nic-affinity)", e("NCCL_NET_GDR_LEVEL", v)))
		default:
			out = append(out, res(result.Warn, "NCCL_NET_GDR_LEVEL", "GDRNarrowed", "NCCL_NET_GDR_LEVEL="+v+" is stricter than NCCL's default PXB", e("NCCL_NET_GDR_LEVEL", v)))
		}
	}
	if v, ok := get("NCCL_NET_GDR_READ"); ok && v == "0" {
		out = append(out, res(result.Warn, "NCCL_NET_GDR_READ", "GDRReadOff", "NCCL_NET_GDR_READ=0: sends are staged through host memory instead of read from GPU memory by the NIC", e("NCCL_NET_GDR_READ", v)))
	}
	if v, ok := get("NCCL_IB_HCA"); ok {
		out = append(out, checkHCA(h, v)...)
	}
	if v, ok := get("NCCL_SOCKET_IFNAME"); ok {
		out = append(out, checkIfname(env, v)...)
	}
	if v, ok := get("NCCL_TOPO_FILE"); ok && v != "" {
		out = append(out, checkTopoFile(env, v))
	}
	for _, k := range []string{"NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE", "NCCL_CROSS_NIC", "NCCL_IB_QPS_PER_CONNECTION", "NCCL_NCHANNELS_PER_NET_PEER"} {
		if v, ok := get(k); ok {
			out = append(out, res(result.Warn, k, "TuningOverride", k+"="+v+" overrides NCCL's tuning: benchmarks reflect this setting, not NCCL's defaults", e(k, v)))
		}
	}
	if v, ok := get("NCCL_NVLS_ENABLE"); ok && v == "0" {
		out = append(out, res(result.Pass, "NCCL_NVLS_ENABLE", "NVLSOff", "NCCL_NVLS_ENABLE=0: NVLink SHARP (multicast) off; all-reduce uses ring/tree over NVLink", e("NCCL_NVLS_ENABLE", v)))
	}
	if len(out) == 0 {
		var names []string
		for k := range env.Facts.Environ.Vars {
			if strings.HasPrefix(k, "NCCL_") {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		msg := "no NCCL variable disables or bends the data path"
		if len(names) > 0 {
			msg += " (set: " + strings.Join(names, ", ") + ")"
		}
		out = append(out, res(result.Pass, "node", "Clean", msg))
	}
	return out
}

func allNVLink(h *topology.Host) bool {
	for i, a := range h.GPUs {
		for _, b := range h.GPUs[i+1:] {
			if topology.NVLinksBetween(a, b) <= 0 {
				return false
			}
		}
	}
	return true
}

func checkHCA(h *topology.Host, v string) []result.Result {
	entries, exclude, exact := parseHCAList(v)
	evs := []result.Evidence{ev("environment", "NCCL_IB_HCA="+v)}
	if len(entries) == 0 {
		return []result.Result{res(result.Fail, "NCCL_IB_HCA", "Empty", "NCCL_IB_HCA is set but names no device", evs...)}
	}
	var missing, badPort []string
	matched := map[string]bool{}
	for _, en := range entries {
		hit := false
		for _, n := range h.NICs {
			if n.Name == en.name || !exact && strings.HasPrefix(n.Name, en.name) {
				hit = true
				matched[n.Name] = true
				if en.port != "" {
					found := false
					for _, p := range n.Ports {
						if fmt.Sprint(p.Number) == en.port {
							found = true
						}
					}
					if !found || !reNumber.MatchString(en.port) {
						badPort = append(badPort, en.name+":"+en.port)
					}
				}
			}
		}
		if !hit {
			missing = append(missing, en.name)
		}
	}
	var out []result.Result
	if exclude {
		if len(matched) == len(h.NICs) && len(h.NICs) > 0 {
			out = append(out, res(result.Fail, "NCCL_IB_HCA", "ExcludesAll", "NCCL_IB_HCA excludes every RDMA device of this host", evs...))
		}
		return append(out, res(result.Warn, "NCCL_IB_HCA", "Excludes", "NCCL_IB_HCA excludes "+strings.Join(keys(matched), ", "), evs...))
	}
	if len(missing) > 0 {
		st := result.Fail
		msg := "NCCL_IB_HCA names devices this host does not have: " + strings.Join(missing, ", ")
		if len(matched) > 0 {
			msg += " (it still matches " + strings.Join(keys(matched), ", ") + ")"
		} else {
			msg += ": NCCL will find no IB device and fall back to sockets"
		}
		out = append(out, withRemedy(res(st, "NCCL_IB_HCA", "AbsentDevice", msg, evs...), "fix NCCL_IB_HCA to name this host's devices (gdrcheck topo prints a suggested value)"))
	}
	if len(badPort) > 0 {
		out = append(out, res(result.Fail, "NCCL_IB_HCA", "AbsentPort", "NCCL_IB_HCA names ports that do not exist: "+strings.Join(badPort, ", "), evs...))
	}
	rails := h.Pairing().Rails
	var unused []string
	for _, r := range rails {
		if !matched[r] {
			unused = append(unused, r)
		}
	}
	if len(unused) > 0 && len(missing) == 0 {
		out = append(out, res(result.Warn, "NCCL_IB_HCA", "RailsLeftOut", "NCCL_IB_HCA leaves out rail NICs paired with GPUs: "+strings.Join(unused, ", "), evs...))
	}
	if !exact && len(out) == 0 {
		for _, en := range entries {
			for _, n := range h.NICs {
				if n.Name != en.name && strings.HasPrefix(n.Name, en.name) {
					out = append(out, res(result.Warn, "NCCL_IB_HCA", "PrefixMatch", fmt.Sprintf("NCCL_IB_HCA entry %s also matches %s (prefix match); prefix the list with = for exact names", en.name, n.Name), evs...))
				}
			}
		}
	}
	if len(out) == 0 {
		out = append(out, res(result.Pass, "NCCL_IB_HCA", "MatchesDevices", "NCCL_IB_HCA names this host's devices: "+strings.Join(keys(matched), ", "), evs...))
	}
	return out
}

// checkTopoFile: live, the file must be readable (collection reads it, a
// relative path from the current directory as NCCL in this process would);
// a snapshot does not hold it, so it is only reported.
func checkTopoFile(env *Env, v string) result.Result {
	e := ev("environment", "NCCL_TOPO_FILE="+v)
	t := env.Facts.TopoFile
	if !t.Checked {
		return res(result.Warn, "NCCL_TOPO_FILE", "TopoFileOverride", "NCCL_TOPO_FILE replaces NCCL's view of the PCI tree with "+v, e)
	}
	if err := t.Err; err != nil {
		return withRemedy(res(result.Fail, "NCCL_TOPO_FILE", "TopoFileMissing", "NCCL_TOPO_FILE names "+v+", which cannot be read: "+err.Error(), e), "fix the path or unset NCCL_TOPO_FILE")
	}
	return res(result.Warn, "NCCL_TOPO_FILE", "TopoFileOverride", "NCCL_TOPO_FILE replaces NCCL's view of the PCI tree with "+v+": make sure it matches this machine (gdrcheck analyze can read it)", e)
}

func checkIfname(env *Env, v string) []result.Result {
	evs := []result.Evidence{ev("environment", "NCCL_SOCKET_IFNAME="+v)}
	s := strings.TrimSpace(v)
	exclude := strings.HasPrefix(s, "^")
	s = strings.TrimPrefix(s, "^")
	exact := strings.HasPrefix(s, "=")
	s = strings.TrimPrefix(s, "=")
	if exclude {
		return []result.Result{res(result.Pass, "NCCL_SOCKET_IFNAME", "Excludes", "NCCL_SOCKET_IFNAME excludes "+s, evs...)}
	}
	// Every interface is listed there, virtual ones (lo, bonds, bridges)
	// too; Host.NetDevs holds only those on a PCI function.
	ifaces, err := env.Facts.NetInterfaces.Names, env.Facts.NetInterfaces.Err
	if err != nil {
		return []result.Result{res(result.Unknown, "NCCL_SOCKET_IFNAME", "CannotRead", "cannot list this host's interfaces: "+err.Error(), evs...)}
	}
	var missing []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		hit := false
		for _, name := range ifaces {
			if name == p || !exact && strings.HasPrefix(name, p) {
				hit = true
			}
		}
		if !hit {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return []result.Result{withRemedy(res(result.Fail, "NCCL_SOCKET_IFNAME", "AbsentInterface", "NCCL_SOCKET_IFNAME names interfaces this host does not have: "+strings.Join(missing, ", ")+" (NCCL's bootstrap will fail to find an interface)", evs...), "set it to an interface of this host")}
	}
	return []result.Result{res(result.Pass, "NCCL_SOCKET_IFNAME", "MatchesInterfaces", "NCCL_SOCKET_IFNAME names interfaces of this host", evs...)}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return topology.NaturalLess(out[i], out[j]) })
	return out
}
