package checks

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

type nicPort struct{}

func (nicPort) ID() string { return "nic.port" }
func (nicPort) Title() string {
	return "RDMA ports active and linked up at the expected rate, link layer and MTU, with clean error counters"
}

// roceMinMTU: RoCE's 4096-byte path MTU needs a netdev MTU of at least
// 4096 plus RoCE headers (NVIDIA recommends 4200 or jumbo frames).
const roceMinMTU = 4200

// countersWarn are the port counters whose growth means a bad link.
var countersWarn = map[string]bool{"symbol_error": true, "link_downed": true, "link_error_recovery": true, "port_rcv_errors": true,
	"port_rcv_remote_physical_errors": true, "local_link_integrity_errors": true, "excessive_buffer_overrun_errors": true}

func (nicPort) Run(ctx context.Context, env *Env) []result.Result {
	h := env.Host
	nics := h.MatrixNICs()
	if len(nics) == 0 {
		return []result.Result{res(result.Skip, "node", "NoRDMADevice", "no RDMA NIC on this host")}
	}
	railNames := h.Pairing().Rails
	rails := map[string]bool{}
	for _, r := range railNames {
		rails[r] = true
	}
	// The rate the rails run at: the site profile, else the fastest rail.
	want := 0.0
	if e := env.Expect; e != nil && e.NICs != nil && e.NICs.RateGbps > 0 {
		want = e.NICs.RateGbps
	} else {
		for _, n := range nics {
			if !rails[n.Name] {
				continue
			}
			for _, p := range n.Ports {
				if p.RateGbps > want {
					want = p.RateGbps
				}
			}
		}
	}
	var out []result.Result
	if e := env.Expect; e != nil && e.NICs != nil && e.NICs.Count > 0 && len(rails) < e.NICs.Count {
		if gone := missingGPUs(env); gone > 0 && len(nics) >= e.NICs.Count {
			// The NICs are there; a GPU is not, so its NIC has no GPU to pair with.
			out = append(out, res(result.Warn, "node", "RailsFollowMissingGPU",
				fmt.Sprintf("%d rail NIC(s) paired with GPUs (%s) of the %d the site profile expects: the NICs are all present, %d GPU(s) are missing (see gpu.present)", len(rails), strings.Join(railNames, ", "), e.NICs.Count, gone),
				ev("topology", fmt.Sprintf("%d RDMA NICs, %d paired with GPUs", len(nics), len(rails)))))
		} else {
			out = append(out, withRemedy(res(result.Fail, "node", "FewerRailsThanProfile",
				fmt.Sprintf("%d rail NIC(s) paired with GPUs (%s), the site profile expects %d", len(rails), strings.Join(railNames, ", "), e.NICs.Count),
				ev("topology", fmt.Sprintf("%d RDMA NICs, %d paired with GPUs", len(nics), len(rails)))),
				"check that every NIC is seated, its driver loaded and its PCIe link up"))
		}
	}
	for _, n := range nics {
		if len(n.Ports) == 0 {
			if p := problemAt(env, "sys/class/infiniband/"+n.Name+"/ports"); p != nil {
				out = append(out, res(result.Unknown, n.Name, "PortsUnreadable", fmt.Sprintf("the ports of %s could not be listed: %s", n.Name, p.Message), ev(p.Path, p.Message)))
				continue
			}
			out = append(out, res(result.Unknown, n.Name, "NoPorts", n.Name+" lists no ports", ev(display(env, "sys/class/infiniband/"+n.Name+"/ports"), "empty")))
			continue
		}
		for _, p := range n.Ports {
			out = append(out, judgePort(env, n, p, rails[n.Name], want)...)
		}
	}
	return out
}

func judgePort(env *Env, n *topology.NIC, p topology.Port, rail bool, want float64) []result.Result {
	subject := fmt.Sprintf("%s:%d", n.Name, p.Number)
	base := fmt.Sprintf("sys/class/infiniband/%s/ports/%d/", n.Name, p.Number)
	evs := []result.Evidence{
		ev(display(env, base+"state"), p.State),
		ev(display(env, base+"phys_state"), p.PhysState),
		ev(display(env, base+"rate"), p.RateText),
		ev(display(env, base+"link_layer"), p.LinkLayer),
	}
	role := "rail NIC (paired with a GPU)"
	downStatus := result.Fail
	if !rail {
		role = "not paired with any GPU (front-end or storage?)"
		downStatus = result.Warn
	}
	var out []result.Result
	if p.State == "" || p.PhysState == "" {
		why := "empty or missing"
		if pr := problemAt(env, base+"state", base+"phys_state"); pr != nil {
			why = pr.Message
		}
		return append(out, res(result.Unknown, subject, "StateUnknown",
			fmt.Sprintf("%s port %d: the port state could not be read (%s), so it cannot be judged", n.Name, p.Number, why), evs...))
	}
	if p.State != "ACTIVE" || p.PhysState != "LinkUp" {
		out = append(out, withRemedy(res(downStatus, subject, "PortDown",
			fmt.Sprintf("%s port %d is %s/%s; %s", n.Name, p.Number, p.State, p.PhysState, role), evs...),
			"check the cable and switch port; for InfiniBand, that a subnet manager runs (a port stuck in INIT has no SM); for RoCE, the netdev is up"))
		return out
	}
	if e := env.Expect; e != nil && e.NICs != nil && e.NICs.LinkLayer != "" && rail && p.LinkLayer != e.NICs.LinkLayer {
		out = append(out, withRemedy(res(result.Fail, subject, "WrongLinkLayer",
			fmt.Sprintf("%s port %d runs %s, the site profile expects %s", n.Name, p.Number, p.LinkLayer, e.NICs.LinkLayer), evs...),
			"set the port type with mlxconfig LINK_TYPE_P1 and reboot"))
	}
	if rail && p.RateGbps == 0 {
		out = append(out, res(result.Unknown, subject, "RateUnknown",
			fmt.Sprintf("%s port %d: the link rate could not be read (%q), so it cannot be judged", n.Name, p.Number, p.RateText), evs...))
	}
	if rail && want > 0 && p.RateGbps > 0 && p.RateGbps < want {
		out = append(out, withRemedy(res(result.Fail, subject, "RateBelowExpected",
			fmt.Sprintf("%s port %d runs at %g Gb/s, the rails run at %g Gb/s", n.Name, p.Number, p.RateGbps, want), evs...),
			"check the cable/transceiver and the switch port speed; a link that trains low is a cable or optics problem"))
	}
	if p.LinkLayer == "Ethernet" && p.NetDev != "" && p.MTU > 0 {
		mev := ev(display(env, "sys/class/net/"+p.NetDev+"/mtu"), fmt.Sprint(p.MTU))
		wantMTU := roceMinMTU
		if e := env.Expect; e != nil && e.NICs != nil && e.NICs.MTU > 0 {
			wantMTU = e.NICs.MTU
		}
		if e := env.Expect; e != nil && e.NICs != nil && e.NICs.MTU > 0 && p.MTU < e.NICs.MTU && rail {
			out = append(out, withRemedy(res(result.Fail, subject, "MTUBelowProfile",
				fmt.Sprintf("%s port %d (RoCE, netdev %s) has MTU %d, the site profile expects at least %d", n.Name, p.Number, p.NetDev, p.MTU, e.NICs.MTU), append(evs, mev, ev("site profile", fmt.Sprintf("nics.mtu %d", e.NICs.MTU)))...),
				fmt.Sprintf("ip link set %s mtu %d (and on the switch ports)", p.NetDev, e.NICs.MTU)))
		} else if p.MTU < wantMTU && rail {
			out = append(out, withRemedy(res(result.Warn, subject, "SmallMTU",
				fmt.Sprintf("%s port %d (RoCE, netdev %s) has MTU %d: below %d the RoCE path MTU drops from 4096 to 1024 or 2048 bytes, costing bandwidth", n.Name, p.Number, p.NetDev, p.MTU, wantMTU), append(evs, mev)...),
				fmt.Sprintf("ip link set %s mtu 9000 (and on the switch ports)", p.NetDev)))
		}
	}
	var bad []string
	keys := make([]string, 0, len(p.Counters))
	for k := range p.Counters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if countersWarn[k] && p.Counters[k] > 0 {
			bad = append(bad, fmt.Sprintf("%s=%d", k, p.Counters[k]))
		}
	}
	if len(bad) > 0 {
		out = append(out, withRemedy(res(result.Warn, subject, "ErrorCounters",
			fmt.Sprintf("%s port %d error counters are not zero: %s (cumulative since the counters were last cleared)", n.Name, p.Number, strings.Join(bad, ", ")),
			append(evs, ev(display(env, base+"counters/"), strings.Join(bad, " ")))...),
			"watch whether they grow under load (gdrcheck bench); growing symbol errors mean a bad cable or transceiver"))
	}
	if len(out) == 0 {
		out = append(out, res(result.Pass, subject, "Active",
			fmt.Sprintf("%s port %d: %s/%s, %s, %s; %s", n.Name, p.Number, p.State, p.PhysState, p.RateText, p.LinkLayer, role), evs...))
	}
	return out
}
