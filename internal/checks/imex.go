package checks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// nvlinkIMEX judges the IMEX daemon where the GPUs' NVLink domain spans
// nodes (GB200/GB300 NVL72): CUDA maps another node's GPU memory over
// NVLink only through IMEX, so a daemon down, a domain that is not whole
// or a missing channel device stops multi-node NVLink jobs while every
// GPU looks healthy.
type nvlinkIMEX struct{}

func (nvlinkIMEX) ID() string { return "nvlink.imex" }
func (nvlinkIMEX) Title() string {
	return "Multi-node NVLink: the IMEX daemon up, its domain whole, a channel for CUDA"
}

func (nvlinkIMEX) Run(_ context.Context, env *Env) []result.Result {
	h := env.Host
	var cluster string
	known := false
	for _, g := range h.GPUs {
		if g.Facts == nil || !g.Facts.Fabric.Supported {
			continue
		}
		known = true
		if g.Facts.Fabric.MultiNode() {
			cluster = g.Facts.Fabric.ClusterUUID
		}
	}
	switch {
	case len(h.GPUs) == 0:
		return []result.Result{res(result.Skip, "node", "NoGPU", "no GPU on this host")}
	case cluster == "" && known:
		return []result.Result{res(result.Skip, "node", "SingleNodeNVLink", "the GPUs' NVLink fabric is this node's own (cluster UUID all zeros): no IMEX domain to check")}
	case cluster == "":
		return []result.Result{res(result.Skip, "node", "NoFabricInfo", "the driver reports no NVLink fabric for these GPUs (no NVSwitch fabric, or a driver before 535): no multi-node NVLink domain")}
	}
	im := env.Facts.IMEX
	domain := ev("nvml:nvmlDeviceGetGpuFabricInfo", "cluster UUID "+cluster)
	const remedy = "start the IMEX daemon on every node of the NVLink domain (systemctl enable --now nvidia-imex, /etc/nvidia-imex/nodes_config.cfg listing every node's IP, the same IMEX version as the driver everywhere), and create the channel device (NVreg_CreateImexChannel0=1, or the DRA driver's ComputeDomain)"
	var out []result.Result
	// The service.
	switch st := strings.TrimSpace(im.Service.Value); {
	case st == "active":
	case st == "":
		why := "systemctl printed no state"
		if im.Service.Err != nil {
			why = im.Service.Err.Error()
		}
		out = append(out, res(result.Unknown, "node", "IMEXServiceUnknown", "multi-node NVLink domain, but the IMEX service state could not be read: "+why, domain, ev(im.Service.Source, st)))
	default:
		out = append(out, withRemedy(res(result.Fail, "node", "IMEXDown",
			"multi-node NVLink domain and nvidia-imex is "+st+": CUDA cannot map other nodes' GPU memory, multi-node NVLink jobs fail", domain, ev(im.Service.Source, st)), remedy))
	}
	// The domain as the daemon sees it.
	out = append(out, imexDomain(im, domain, remedy))
	// The channel.
	switch {
	case im.Channels.Err != nil:
		out = append(out, res(result.Unknown, "node", "IMEXChannelUnknown", "the IMEX channel devices could not be listed: "+im.Channels.Err.Error(), ev(im.Channels.Source, "")))
	case len(im.Channels.Names) == 0 && !env.Facts.Live:
		out = append(out, res(result.Unknown, "node", "IMEXChannelUnknown", "the snapshot holds no IMEX channel device ("+im.Channels.Source+"): not captured, or none on the node", ev(im.Channels.Source, "empty")))
	case len(im.Channels.Names) == 0:
		out = append(out, withRemedy(res(result.Fail, "node", "NoIMEXChannel",
			"no IMEX channel device: CUDA has no channel to import another node's memory through (cuMemImportFromShareableHandle fails)", ev(im.Channels.Source, "empty")), remedy))
	default:
		out = append(out, res(result.Pass, "node", "IMEXChannel", "IMEX channel device(s) present: "+strings.Join(im.Channels.Names, ", "), ev(im.Channels.Source, strings.Join(im.Channels.Names, " "))))
	}
	return out
}

// imexDomain judges nvidia-imex-ctl -N's view of the domain.
func imexDomain(im node.IMEX, domain result.Evidence, remedy string) result.Result {
	if strings.TrimSpace(im.Status.Value) == "" {
		why := "it printed nothing"
		if im.Status.Err != nil {
			why = im.Status.Err.Error()
		}
		return res(result.Unknown, "node", "IMEXDomainUnknown", "the IMEX domain could not be read ("+im.Status.Source+"): "+why, domain)
	}
	d, err := node.ParseIMEXStatus(im.Status.Value)
	if err != nil {
		return res(result.Unknown, "node", "IMEXDomainUnknown", "the IMEX domain could not be read: "+err.Error(), domain, ev(im.Status.Source, firstLines(strings.TrimSpace(im.Status.Value), 1)))
	}
	var bad []string
	var versions []string
	for _, n := range d.Nodes {
		if n.State != "READY" {
			bad = append(bad, fmt.Sprintf("node %d (%s) %s", n.Index, n.Address, n.State))
		}
		if n.Version != "" && !slices.Contains(versions, n.Version) {
			versions = append(versions, n.Version)
		}
	}
	if len(versions) > 1 {
		bad = append(bad, "IMEX versions differ: "+strings.Join(versions, ", "))
	}
	if len(d.NotConnected) > 0 {
		cells := d.NotConnected
		if len(cells) > 8 {
			cells = append(slices.Clone(cells[:8]), fmt.Sprintf("and %d more", len(d.NotConnected)-8))
		}
		bad = append(bad, "not connected: "+strings.Join(cells, ", "))
	}
	if d.State != "UP" {
		bad = append(bad, "domain state "+cmp.Or(d.State, "not printed"))
	}
	e := ev(im.Status.Source, fmt.Sprintf("%d node(s), domain state %s", len(d.Nodes), cmp.Or(d.State, "?")))
	if len(bad) > 0 {
		return withRemedy(res(result.Fail, "node", "IMEXDomainNotUp",
			"the IMEX domain is not whole: "+strings.Join(bad, "; ")+": multi-node NVLink jobs that span the missing nodes fail", domain, e), remedy)
	}
	return res(result.Pass, "node", "IMEXDomainUp", fmt.Sprintf("IMEX domain UP: %d node(s) READY, every pair connected", len(d.Nodes)), domain, e)
}
