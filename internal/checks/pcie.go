package checks

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// pathBridges lists the bridges peer traffic between two devices passes
// through, below their common ancestor: the ports whose ACS settings can
// redirect it. For devices on different roots it is every bridge up to
// the root ports.
func pathBridges(h *topology.Host, a, b *topology.Device) []*topology.Device {
	ua, ub := h.PathToRoot(a), h.PathToRoot(b)
	inB := map[*topology.Device]bool{}
	for _, d := range ub {
		inB[d] = true
	}
	var common *topology.Device
	for _, d := range ua {
		if inB[d] {
			common = d
			break
		}
	}
	var out []*topology.Device
	seen := map[*topology.Device]bool{}
	add := func(up []*topology.Device) {
		for _, d := range up {
			if d == common {
				return
			}
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	add(ua)
	add(ub)
	return out
}

type peerPair struct {
	label string
	a, b  *topology.Device
	why   string
}

// p2pPairs are the device pairs whose peer-to-peer traffic crosses PCIe:
// each GPU with its GDR NIC (within the GDR level), and GPU pairs with no
// NVLink between them.
func p2pPairs(env *Env) []peerPair {
	h := env.Host
	var out []peerPair
	limit, _, _ := gdrLevel(env)
	limit = max(limit, level.DefaultGDR) // a job setting that narrows GDR hides no bridge of the hardware's GDR paths
	if len(h.MatrixNICs()) > 0 {
		for _, e := range h.Pairing().GPUs {
			if e.NIC == "" || e.Level > limit {
				continue
			}
			n := h.NICByName(e.NIC)
			out = append(out, peerPair{fmt.Sprintf("GPU%d-%s", e.GPU, e.NIC), h.GPUs[e.GPU].Dev, n.Dev, "GPU Direct RDMA"})
		}
	}
	for i, a := range h.GPUs {
		for _, b := range h.GPUs[i+1:] {
			if topology.NVLinksBetween(a, b) > 0 {
				continue
			}
			out = append(out, peerPair{fmt.Sprintf("GPU%d-GPU%d", a.Index, b.Index), a.Dev, b.Dev, "GPU peer-to-peer over PCIe"})
		}
	}
	return out
}

type pcieACS struct{}

func (pcieACS) ID() string { return "pcie.acs" }
func (pcieACS) Title() string {
	return "ACS does not redirect peer-to-peer traffic on the bridges between GPUs and NICs"
}

func (pcieACS) Run(ctx context.Context, env *Env) []result.Result {
	pairs := p2pPairs(env)
	if len(pairs) == 0 {
		return []result.Result{res(result.Skip, "node", "NoPeerPaths", "no GPU–NIC pair within the GDR level and no GPU pair without NVLink: no peer-to-peer traffic crosses a PCIe bridge")}
	}
	type use struct {
		d     *topology.Device
		pairs []string
	}
	uses := map[string]*use{}
	var order []string
	for _, p := range pairs {
		for _, b := range pathBridges(env.Host, p.a, p.b) {
			u := uses[b.Address]
			if u == nil {
				u = &use{d: b}
				uses[b.Address] = u
				order = append(order, b.Address)
			}
			u.pairs = append(u.pairs, p.label+" ("+p.why+")")
		}
	}
	if len(order) == 0 {
		return []result.Result{res(result.Skip, "node", "NoBridges", "the peer paths cross no PCIe bridge (devices on the root bus)")}
	}
	sort.Strings(order)
	var out []result.Result
	for _, addr := range order {
		u := uses[addr]
		d := u.d
		carries := "carries " + strings.Join(u.pairs, ", ")
		cfg := sysPath(env, d, "config")
		switch {
		case d.Config == nil || !d.Config.Extended:
			why := d.ConfigError
			if why == "" {
				why = "extended config space not readable"
			}
			out = append(out, withRemedy(res(result.Unknown, d.Address, "NeedsRoot",
				fmt.Sprintf("cannot read the ACS capability of %s %s (%s); it %s", d.PortType, d.Address, why, carries), ev(cfg, why)),
				"run gdrcheck check as root (ACS lives in extended config space, past byte 256)"))
		case d.Config.ACS == nil:
			out = append(out, res(result.Pass, d.Address, "NoACS",
				fmt.Sprintf("%s %s has no ACS capability, so nothing redirects peer traffic; it %s", d.PortType, d.Address, carries),
				evNote(cfg, "extended capabilities "+extCapList(d.Config), "no capability 0x000d")))
		case d.Config.ACS.P2PBlocking() == 0:
			out = append(out, res(result.Pass, d.Address, "ACSAllowsP2P",
				fmt.Sprintf("%s %s: ACS enabled controls do not redirect peer traffic; it %s", d.PortType, d.Address, carries),
				evNote(cfg, fmt.Sprintf("ACSCtl %#04x: %s", d.Config.ACS.Control, pci.ACSFlags(d.Config.ACS.Control)), fmt.Sprintf("ECAP_ACS at %#x, control at +6", d.Config.ACS.Offset))))
		default:
			out = append(out, withRemedy(res(result.Fail, d.Address, "ACSRedirectsP2P",
				fmt.Sprintf("%s %s has ACS %s enabled: peer-to-peer requests are sent up to the root complex instead of across the switch, which cuts GPU Direct RDMA and P2P bandwidth or breaks it; it %s", d.PortType, d.Address, blockingNames(d.Config.ACS.P2PBlocking()), carries),
				evNote(cfg, fmt.Sprintf("ACSCtl %#04x: %s", d.Config.ACS.Control, pci.ACSFlags(d.Config.ACS.Control)), fmt.Sprintf("ECAP_ACS at %#x, control at +6", d.Config.ACS.Offset))),
				fmt.Sprintf("disable ACS redirect on this port: setpci -s %s ECAP_ACS+0x6.w=0000 (lasts until reboot; make it permanent in BIOS or a boot script). On a host that passes devices to VMs ACS isolation is deliberate: keep it and give the guest GPU and NIC behind one virtual switch", d.Address)))
		}
	}
	return out
}

func blockingNames(v uint16) string {
	var n []string
	if v&pci.ACSRequestRedirect != 0 {
		n = append(n, "P2P Request Redirect")
	}
	if v&pci.ACSCompletionRedirect != 0 {
		n = append(n, "P2P Completion Redirect")
	}
	if v&pci.ACSEgressControl != 0 {
		n = append(n, "P2P Egress Control")
	}
	return strings.Join(n, ", ")
}

func extCapList(c *pci.Config) string {
	if len(c.ExtCaps) == 0 {
		return "none"
	}
	var s []string
	for _, x := range c.ExtCaps {
		s = append(s, fmt.Sprintf("%#04x", x))
	}
	return strings.Join(s, " ")
}

type pcieLink struct{}

func (pcieLink) ID() string { return "pcie.link" }
func (pcieLink) Title() string {
	return "PCIe links of GPUs, NICs and the bridges between them trained at full speed and width"
}

// linkSubject is a device whose link is judged, and why.
type linkSubject struct {
	d     *topology.Device
	label string
	gpu   *topology.GPU
	nic   *topology.NIC
}

func (pcieLink) Run(ctx context.Context, env *Env) []result.Result {
	h := env.Host
	var subs []linkSubject
	seen := map[*topology.Device]bool{}
	addPath := func(d *topology.Device) {
		for _, p := range h.PathToRoot(d) {
			if !seen[p] {
				seen[p] = true
				subs = append(subs, linkSubject{d: p, label: p.Address})
			}
		}
	}
	for _, g := range h.GPUs {
		seen[g.Dev] = true
		subs = append(subs, linkSubject{d: g.Dev, label: gpuLabel(g), gpu: g})
		addPath(g.Dev)
	}
	for _, n := range h.MatrixNICs() {
		if seen[n.Dev] {
			continue
		}
		seen[n.Dev] = true
		subs = append(subs, linkSubject{d: n.Dev, label: n.Name, nic: n})
		addPath(n.Dev)
	}
	if len(subs) == 0 {
		return []result.Result{res(result.Skip, "node", "NoDevices", "no GPU or RDMA NIC to check")}
	}
	var out []result.Result
	for _, s := range subs {
		out = append(out, judgeLink(env, s)...)
	}
	return out
}

// gpuBelow is the GPU on a bridge's secondary link, or nil (the link's
// current speed then follows the GPU's power-saving changes).
func gpuBelow(h *topology.Host, d *topology.Device) *topology.GPU {
	var g *topology.GPU
	for _, c := range d.Children {
		if gg := h.GPUByAddress(c); gg != nil {
			g = gg
		}
	}
	return g
}

func judgeLink(env *Env, s linkSubject) []result.Result {
	d, l := s.d, s.d.Link
	h := env.Host
	evs := []result.Evidence{
		ev(sysPath(env, d, "current_link_speed"), l.CurSpeed.String()),
		ev(sysPath(env, d, "max_link_speed"), l.MaxSpeed.String()),
		ev(sysPath(env, d, "current_link_width"), fmt.Sprintf("x%d", l.CurWidth)),
		ev(sysPath(env, d, "max_link_width"), fmt.Sprintf("x%d", l.MaxWidth)),
	}
	if l.MaxSpeed == 0 || l.MaxWidth == 0 {
		// Garbage (a negative width, text) is unreadable, not "no link".
		attrs := []string{"max_link_speed", "max_link_width", "current_link_speed", "current_link_width"}
		for i, a := range attrs {
			attrs[i] = d.SysPath + "/" + a
		}
		if p := problemAt(env, attrs...); p != nil {
			return []result.Result{res(result.Unknown, s.label, "LinkUnreadable", fmt.Sprintf("%s %s: the PCIe link could not be read (%s: %s), so it cannot be judged", s.label, d.Address, p.Path, p.Message), append(evs, ev(p.Path, p.Message))...)}
		}
		return []result.Result{res(result.Skip, s.label, "NoLinkAttributes", fmt.Sprintf("%s %s reports no PCIe link (virtual or integrated device)", s.label, d.Address), evs...)}
	}
	// What the link can reach: the device's own maximum, capped by the port
	// above it (a Gen4 slot holds a Gen5 card to Gen4).
	capSpeed, capWidth := l.MaxSpeed, l.MaxWidth
	up := d.ParentDevice()
	if up != nil && up.Link.MaxSpeed > 0 && up.Link.MaxWidth > 0 {
		if up.Link.MaxSpeed < capSpeed {
			capSpeed = up.Link.MaxSpeed
		}
		if up.Link.MaxWidth < capWidth {
			capWidth = up.Link.MaxWidth
		}
		evs = append(evs, ev(sysPath(env, up, "max_link_speed"), fmt.Sprintf("upstream port %s max %s x%d", up.Address, up.Link.MaxSpeed, up.Link.MaxWidth)))
	}
	var out []result.Result
	want := func(gen, width int) {
		if gen > 0 && capSpeed.Gen() < gen || width > 0 && capWidth < width {
			out = append(out, withRemedy(res(result.Fail, s.label, "BelowSiteProfile",
				fmt.Sprintf("%s can reach at most Gen%d x%d, the site profile wants Gen%d x%d", s.label, capSpeed.Gen(), capWidth, gen, width), evs...),
				"move the card to a slot wired for the expected generation and width, or fix the profile"))
		}
	}
	if e := env.Expect; e != nil {
		if s.gpu != nil && e.GPUs != nil {
			want(e.GPUs.PCIeGen, e.GPUs.PCIeWidth)
		}
		if s.nic != nil && e.NICs != nil {
			want(e.NICs.PCIeGen, e.NICs.PCIeWidth)
		}
	}
	if capSpeed < l.MaxSpeed || capWidth < l.MaxWidth {
		out = append(out, withRemedy(res(result.Warn, s.label, "SlotLimited",
			fmt.Sprintf("%s (Gen%d x%d capable) sits behind a port that can do only Gen%d x%d", s.label, l.MaxSpeed.Gen(), l.MaxWidth, capSpeed.Gen(), capWidth), evs...),
			"use a slot or riser that matches the card"))
	}
	if l.CurWidth > 0 && l.CurWidth < capWidth {
		out = append(out, withRemedy(res(result.Fail, s.label, "LinkWidthDegraded",
			fmt.Sprintf("%s trained at x%d of x%d: a lane problem (seating, riser, cable, retimer) that cuts PCIe bandwidth to %d%%", s.label, l.CurWidth, capWidth, 100*l.CurWidth/capWidth), evs...),
			"reseat the card or riser and check the slot; a persistent narrow link needs a hardware fix"))
	}
	// The GPU this link leads to, if any: its speed follows the GPU's idling.
	g := s.gpu
	if g == nil && d.IsBridge() {
		g = gpuBelow(h, d)
	}
	if l.CurSpeed < capSpeed && l.CurSpeed > 0 {
		if g == nil {
			out = append(out, withRemedy(res(result.Fail, s.label, "LinkSpeedDegraded",
				fmt.Sprintf("%s runs at %s, below the %s both ends support", s.label, l.CurSpeed, capSpeed), evs...),
				"check BIOS PCIe speed settings, seating and retimers; a link that trains low under load is a hardware or firmware fault"))
		} else {
			out = append(out, judgeGPUSpeed(s.label, g, l, capSpeed, evs)...)
		}
	}
	if len(out) == 0 && (l.CurSpeed == 0 || l.CurWidth == 0) {
		// current_link_speed "Unknown" or an unreadable attribute: nothing
		// above could judge the trained link, so it is not full speed.
		out = append(out, res(result.Unknown, s.label, "CurrentLinkUnknown",
			fmt.Sprintf("%s %s: the current link speed or width could not be read (%s x%d)", s.label, d.Address, l.CurSpeed, l.CurWidth), evs...))
	}
	if len(out) == 0 {
		out = append(out, res(result.Pass, s.label, "FullSpeed",
			fmt.Sprintf("%s %s: Gen%d x%d, as far as both ends go", s.label, d.Address, l.CurSpeed.Gen(), l.CurWidth), evs...))
	}
	return out
}

// judgeGPUSpeed: GPUs drop their link speed when idle to save power, so a
// low current speed is not a fault by itself. NVML's "max link generation
// possible with this device and system" says what the link trained to be
// able to reach; without it the check cannot tell idle from broken.
func judgeGPUSpeed(label string, g *topology.GPU, l topology.Link, capSpeed pci.LinkSpeed, evs []result.Evidence) []result.Result {
	var f *gpu.GPU
	if g != nil {
		f = g.Facts
	}
	if f == nil || f.PCIe.MaxGen == nil {
		return []result.Result{withRemedy(res(result.Unknown, label, "IdleDownclockPossible",
			fmt.Sprintf("%s runs at %s below its %s, which GPUs do when idle; without the driver's view (NVML) this check cannot tell idle from downtrained", label, l.CurSpeed, capSpeed), evs...),
			"run gdrcheck check with the NVIDIA driver loaded, or look at the link under load (gdrcheck bench copy)")}
	}
	evs = append(evs, ev("nvml:nvmlDeviceGetMaxPcieLinkGeneration", fmt.Sprintf("Gen%d", *f.PCIe.MaxGen)))
	if f.PCIe.CurGen != nil {
		evs = append(evs, ev("nvml:nvmlDeviceGetCurrPcieLinkGeneration", fmt.Sprintf("Gen%d", *f.PCIe.CurGen)))
	}
	if *f.PCIe.MaxGen < capSpeed.Gen() {
		return []result.Result{withRemedy(res(result.Fail, label, "LinkSpeedDegraded",
			fmt.Sprintf("%s can reach only Gen%d with this system although it and its port support Gen%d: the link trained low", label, *f.PCIe.MaxGen, capSpeed.Gen()), evs...),
			"check BIOS PCIe generation settings, risers and retimers; reseat the GPU")}
	}
	return []result.Result{res(result.Pass, label, "IdleDownclock",
		fmt.Sprintf("%s is at %s now but the driver reports Gen%d reachable: the GPU lowers its link speed while idle, which is normal", label, l.CurSpeed, *f.PCIe.MaxGen), evs...)}
}

type pcieMRR struct{}

func (pcieMRR) ID() string { return "pcie.mrr" }
func (pcieMRR) Title() string {
	return "MaxReadReq and MaxPayload along the GPU–NIC paths"
}

// Thresholds: the kernel firmware test suite (fwts maxreadreq) calls a
// MaxReadReq below 256 bytes too low; NVIDIA's ConnectX tuning guidance
// ("Understanding PCIe Configuration for Maximum Performance") recommends
// raising it (up to 4096) on NICs for throughput. ConnectX firmware
// defaults to 512.
const (
	nicMinMRRS  = 512
	nicBestMRRS = 4096
	minMPS      = 256
)

func (pcieMRR) Run(ctx context.Context, env *Env) []result.Result {
	h := env.Host
	nics := h.MatrixNICs()
	if len(nics) == 0 {
		return []result.Result{res(result.Skip, "node", "NoRDMADevice", "no RDMA NIC: no GPU–NIC path to tune")}
	}
	var out []result.Result
	paired := map[string]bool{}
	for _, e := range h.Pairing().GPUs {
		if e.NIC != "" {
			paired[e.NIC] = true
		}
	}
	for _, n := range nics {
		d := n.Dev
		cfg := sysPath(env, d, "config")
		if d.Config == nil || d.Config.Express == nil {
			why := d.ConfigError
			if why == "" {
				why = "no PCI Express capability found"
			}
			out = append(out, withRemedy(res(result.Unknown, n.Name, "NeedsRoot", fmt.Sprintf("cannot read %s's device control register: %s", n.Name, why), ev(cfg, why)),
				"run gdrcheck check as root"))
			continue
		}
		x := d.Config.Express
		evs := []result.Evidence{evNote(cfg, fmt.Sprintf("DevCtl MaxPayload %d bytes, MaxReadReq %d bytes (supported payload up to %d)", x.MaxPayload, x.MaxReadReq, x.MaxPayloadCap), fmt.Sprintf("PCIe capability at %#x, device control at +8", x.Offset))}
		var findings []result.Result
		// MaxPayload larger than the port above accepts is a misconfiguration.
		for _, up := range h.PathToRoot(d) {
			if up.Config != nil && up.Config.Express != nil && up.Config.Express.MaxPayload < x.MaxPayload {
				findings = append(findings, withRemedy(res(result.Fail, n.Name, "MaxPayloadMismatch",
					fmt.Sprintf("%s's MaxPayload %d exceeds %s's %d on its path: TLPs larger than a port accepts are malformed", n.Name, x.MaxPayload, up.Address, up.Config.Express.MaxPayload), append(evs, ev(sysPath(env, up, "config"), fmt.Sprintf("MaxPayload %d", up.Config.Express.MaxPayload)))...),
					"boot with pci=pcie_bus_safe (or fix the BIOS setting) so MaxPayload is consistent along the path"))
				break
			}
		}
		if x.MaxPayload < minMPS {
			findings = append(findings, withRemedy(res(result.Warn, n.Name, "SmallMaxPayload",
				fmt.Sprintf("%s's MaxPayload is %d bytes: every TLP carries little data, which costs bandwidth on a fast NIC", n.Name, x.MaxPayload), evs...),
				"enable a larger MaxPayload in BIOS (pci=pcie_bus_perf)"))
		}
		if x.MaxReadReq < nicMinMRRS {
			findings = append(findings, withRemedy(res(result.Warn, n.Name, "SmallMaxReadReq",
				fmt.Sprintf("%s's MaxReadReq is %d bytes, below the %d ConnectX firmware sets by default: DMA reads (GPU Direct RDMA sends read GPU memory) are cut into small requests", n.Name, x.MaxReadReq, nicMinMRRS), evs...),
				fmt.Sprintf("raise it (NVIDIA recommends up to 4096): setpci -s %s CAP_EXP+8.w=5000:7000, or mlxconfig / BIOS", d.Address)))
		}
		if len(findings) > 0 {
			out = append(out, findings...)
			continue
		}
		msg := fmt.Sprintf("%s: MaxPayload %d, MaxReadReq %d bytes", n.Name, x.MaxPayload, x.MaxReadReq)
		if x.MaxReadReq < nicBestMRRS && paired[n.Name] {
			msg += fmt.Sprintf(" (NVIDIA's tuning guidance allows up to %d for the most read bandwidth)", nicBestMRRS)
		}
		out = append(out, res(result.Pass, n.Name, "Configured", msg, evs...))
	}
	return out
}

type pcieP2P struct{}

func (pcieP2P) ID() string    { return "pcie.p2p" }
func (pcieP2P) Title() string { return "GPU peer-to-peer access possible between every GPU pair" }

func (pcieP2P) Run(ctx context.Context, env *Env) []result.Result {
	h := env.Host
	switch len(h.GPUs) {
	case 0:
		return []result.Result{res(result.Skip, "node", "NoGPU", "no GPU on this host")}
	case 1:
		return []result.Result{res(result.Skip, "node", "SingleGPU", "1 GPU on this host: no GPU pair")}
	}
	f := h.GPUFacts
	if f == nil || len(f.P2P) == 0 {
		why := h.GPUFactsError
		if why == "" {
			why = "the driver facts hold no P2P status (a snapshot from nvidia-smi -q -x)"
		}
		return []result.Result{withRemedy(res(result.Unknown, "node", "NoDriverFacts", "cannot ask the driver for P2P support: "+why, factsEvidence(h)), "run with the NVIDIA driver loaded (NVML)")}
	}
	var out []result.Result
	idx := map[string]int{}
	for _, g := range f.GPUs {
		idx[g.BusID] = g.Index
	}
	for i, a := range h.GPUs {
		for _, b := range h.GPUs[i+1:] {
			subject := fmt.Sprintf("GPU%d-GPU%d", a.Index, b.Index)
			ia, oka := idx[a.Address]
			ib, okb := idx[b.Address]
			var ab, ba *gpu.P2P
			if oka && okb {
				ab, ba = f.PeerStatus(ia, ib), f.PeerStatus(ib, ia)
			}
			if ab == nil || ba == nil {
				out = append(out, res(result.Unknown, subject, "NotQueried", "the driver was not asked about this pair", factsEvidence(h)))
				continue
			}
			rel := h.GPURelation(a, b)
			evs := []result.Evidence{
				ev("nvml:nvmlDeviceGetP2PStatus", fmt.Sprintf("%s->%s read %s write %s nvlink %s; reverse read %s write %s", gpuLabel(a), gpuLabel(b), ab.Read, ab.Write, ab.NVLink, ba.Read, ba.Write)),
				ev("topology", fmt.Sprintf("%s–%s: %s", gpuLabel(a), gpuLabel(b), rel)),
			}
			worst := ""
			for _, s := range []string{ab.Read, ab.Write, ba.Read, ba.Write} {
				if s != gpu.P2POK {
					worst = s
					break
				}
			}
			switch {
			case worst == "" && ab.NVLink == gpu.P2POK:
				out = append(out, res(result.Pass, subject, "P2PNVLink", fmt.Sprintf("%s and %s reach each other's memory over NVLink (%s)", gpuLabel(a), gpuLabel(b), rel), evs...))
			case worst == "":
				out = append(out, res(result.Pass, subject, "P2PPCIe", fmt.Sprintf("%s and %s can access each other's memory over PCIe (%s)", gpuLabel(a), gpuLabel(b), rel), evs...))
			case worst == gpu.P2PUnknown:
				out = append(out, res(result.Unknown, subject, "P2PStatusUnknown", "the driver could not say", evs...))
			default:
				reason, msg, remedy := p2pExplain(worst, rel)
				out = append(out, withRemedy(res(result.Fail, subject, reason, fmt.Sprintf("%s and %s cannot use peer-to-peer: %s; NCCL falls back to staging through host memory (SHM)", gpuLabel(a), gpuLabel(b), msg), evs...), remedy))
			}
		}
	}
	return out
}

func p2pExplain(status string, rel topology.Relation) (string, string, string) {
	switch status {
	case gpu.P2PChipsetNotSupported:
		return "ChipsetNotSupported", "the platform's chipset or root complex does not support PCIe peer-to-peer between them (the driver disables it on such platforms)",
			"put the GPUs under one PCIe switch or link them with NVLink; check the BIOS for a P2P/ACS option"
	case gpu.P2PTopologyNotSupported:
		return "TopologyNotSupported", fmt.Sprintf("the path between them (%s) is one the driver does not allow P2P across (typically across CPU sockets)", rel.PCIe),
			"keep peer-to-peer traffic within one socket, or use GPUs joined by NVLink"
	case gpu.P2PDisabledByRegkey:
		return "DisabledByRegkey", "peer-to-peer is disabled by a driver registry key (NVreg_RegistryDwords)",
			"remove the P2P override from the nvidia module options (/etc/modprobe.d) and reload the driver"
	case gpu.P2PGPUNotSupported:
		return "GPUNotSupported", "the GPU does not support peer-to-peer", "use GPUs that support P2P"
	}
	return "P2PNotSupported", "the driver reports peer-to-peer as not supported", "check the platform's P2P support and the driver options"
}
