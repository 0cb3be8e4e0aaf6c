package checks

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/hw"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

type nvlinkState struct{}

func (nvlinkState) ID() string { return "nvlink.state" }
func (nvlinkState) Title() string {
	return "Every NVLink up, the expected count per GPU, and the NVSwitch fabric healthy"
}

// nvlinksOf is the NVLink count of a GPU model on an SXM/HGX board, from
// the hardware catalogue, and where it comes from; 0 for GPUs without
// NVLink and for PCIe cards with bridges, which vary and are judged
// against their peers.
func nvlinksOf(name string) (int, string) {
	g, ok := hw.GPUByName(name)
	if !ok || g.NVLinks == 0 || g.NVLinkBridge {
		return 0, ""
	}
	return g.NVLinks, fmt.Sprintf("%s: %d NVLink %d links, %g GB/s; %s", g.Short, g.NVLinks, g.NVLinkGen, 2*g.NVLinkGBps(), g.Source)
}

func expectedNVLinks(env *Env, g *topology.GPU) (int, string) {
	if e := env.Expect; e != nil && e.GPUs != nil && e.GPUs.NVLinks > 0 {
		return e.GPUs.NVLinks, "site profile"
	}
	return nvlinksOf(g.Name)
}

func activeLinks(g *topology.GPU) (active int, down []int) {
	for _, l := range g.NVLinks {
		if l.Active {
			active++
		} else {
			down = append(down, l.Link)
		}
	}
	return
}

func (nvlinkState) Run(ctx context.Context, env *Env) []result.Result {
	h := env.Host
	if len(h.GPUs) == 0 {
		return []result.Result{res(result.Skip, "node", "NoGPU", "no GPU on this host")}
	}
	// The most links any GPU of this host has up: peers should match it.
	peerMax := 0
	for _, g := range h.GPUs {
		if a, _ := activeLinks(g); a > peerMax {
			peerMax = a
		}
	}
	fabricNeeded, _ := h.NVSwitchesSeen()
	var out []result.Result
	for _, g := range h.GPUs {
		label := gpuLabel(g)
		if !g.NVLinkKnown {
			why := h.GPUFactsError
			if why == "" {
				why = "the driver facts do not include NVLink (a snapshot from nvidia-smi -q -x)"
			}
			out = append(out, withRemedy(res(result.Unknown, label, "NoDriverFacts", label+": NVLink state unknown: "+why, factsEvidence(h)), "run with the NVIDIA driver loaded (NVML)"))
			continue
		}
		active, down := activeLinks(g)
		want, src := expectedNVLinks(env, g)
		evs := []result.Evidence{ev("nvml:nvmlDeviceGetNvLinkState", fmt.Sprintf("%d of %d links active%s", active, len(g.NVLinks), downText(down)))}
		if src != "" {
			evs = append(evs, ev("expected", fmt.Sprintf("%d links (%s)", want, src)))
		}
		switch {
		case len(g.NVLinks) == 0 && want == 0:
			out = append(out, res(result.Skip, label, "NoNVLink", label+" ("+g.Name+") has no NVLink: GPU peers use PCIe", evs...))
		case len(h.GPUs) == 1 && active == 0:
			links := "the driver reports no NVLink"
			if len(g.NVLinks) > 0 {
				links = fmt.Sprintf("%d links, none active", len(g.NVLinks))
			}
			out = append(out, res(result.Skip, label, "NVLinkDisabledSingleGPU",
				fmt.Sprintf("%s: NVLink is disabled (%s); this host has one GPU, so no NVLink traffic is possible here", label, links), evs...))
		case want > 0 && active < want:
			out = append(out, withRemedy(res(result.Fail, label, "NVLinkDown",
				fmt.Sprintf("%s: %d of %d expected NVLinks active%s: peer bandwidth drops by the missing share (NCCL sees NV%d instead of NV%d)", label, active, want, downText(down), active, want), evs...),
				"check nvidia-smi nvlink -s and -e for the links; on HGX boards, reseat/replace the baseboard or GPU tray (RMA), and make sure fabric manager is running"))
		case active < peerMax:
			out = append(out, withRemedy(res(result.Fail, label, "NVLinkBelowPeers",
				fmt.Sprintf("%s: %d NVLinks active, other GPUs of this host have %d%s", label, active, peerMax, downText(down)), evs...),
				"check the missing links with nvidia-smi nvlink -s; a bridge may be loose or a link faulty"))
		case len(down) > 0 && want == 0:
			out = append(out, res(result.Warn, label, "SomeLinksInactive",
				fmt.Sprintf("%s: %d of %d NVLinks active%s", label, active, len(g.NVLinks), downText(down)), evs...))
		default:
			out = append(out, res(result.Pass, label, "AllUp", fmt.Sprintf("%s: %d NVLinks active", label, active), evs...))
		}
	}
	if fabricNeeded {
		out = append(out, fabricResults(env)...)
	}
	return identifyGPUs(env.Host, out)
}

func downText(down []int) string {
	if len(down) == 0 {
		return ""
	}
	var s []string
	for _, l := range down {
		s = append(s, strconv.Itoa(l))
	}
	return " (inactive: " + strings.Join(s, ",") + ")"
}

// fabricResults judges NVSwitch fabric registration per GPU (NVML fabric
// info, driver 535+) or, failing that, whether fabric manager runs.
func fabricResults(env *Env) []result.Result {
	h := env.Host
	var out []result.Result
	known := false
	for _, g := range h.GPUs {
		if g.Facts == nil || !g.Facts.Fabric.Supported {
			continue
		}
		known = true
		f := g.Facts.Fabric
		e := ev("nvml:nvmlDeviceGetGpuFabricInfo", fmt.Sprintf("state %s, status %s", f.State, f.Status))
		if f.State == "completed" && (f.Status == "success" || f.Status == "") {
			out = append(out, res(result.Pass, gpuLabel(g)+"-fabric", "FabricRegistered", gpuLabel(g)+" is registered with the NVSwitch fabric", e))
			continue
		}
		out = append(out, withRemedy(res(result.Fail, gpuLabel(g)+"-fabric", "FabricNotReady",
			fmt.Sprintf("%s's NVSwitch fabric registration is %s (%s): until it completes, CUDA/NCCL cannot use NVLink between GPUs", gpuLabel(g), f.State, f.Status), e),
			"start nvidia-fabricmanager (systemctl enable --now nvidia-fabricmanager) with the same version as the driver, and read its log"))
	}
	if known {
		return append(out, fabricManagerVersion(env)...)
	}
	return append(fabricManagerState(env), fabricManagerVersion(env)...)
}

// fabricManagerState judges whether fabric manager runs, where the driver
// gives no per-GPU fabric state.
func fabricManagerState(env *Env) []result.Result {
	fm := env.Facts.FabricManager
	state, err := fm.Value, fm.Err
	e := ev("systemctl is-active nvidia-fabricmanager", state)
	switch {
	case state == "active":
		return []result.Result{res(result.Pass, "node", "FabricManagerActive", "NVSwitch system with nvidia-fabricmanager active", e)}
	case state == "":
		// Not captured, no systemctl, no systemd, a hung call: systemctl
		// said nothing, so nothing is known about fabric manager.
		why := "systemctl printed no state"
		if err != nil {
			why = err.Error()
		}
		return []result.Result{res(result.Unknown, "node", "FabricManagerUnknown", "NVSwitch system, but the fabric state could not be read: "+why, e)}
	}
	return []result.Result{withRemedy(res(result.Fail, "node", "FabricManagerDown",
		"NVSwitch system and nvidia-fabricmanager is "+state+": GPUs cannot use NVLink through the switches", e),
		"systemctl enable --now nvidia-fabricmanager (its version must match the driver)")}
}

// fabricManagerVersion judges fabric manager's version against the
// driver's: fabric manager refuses to start beside another driver version
// (and the GPUs stay unregistered), so a mismatch fails, naming both, from
// nv-fabricmanager --version or from the refusal in its journal. Nothing
// is said where fabric manager is neither installed nor logging here (a
// GB200 compute tray runs none: its switch trays do).
func fabricManagerVersion(env *Env) []result.Result {
	f := env.Facts
	driver := ""
	if gf := env.Host.GPUFacts; gf != nil {
		driver = gf.DriverVersion
	}
	fmv := node.ParseFabricManagerVersion(f.FabricManagerVersion.Value)
	refused := node.FabricManagerMismatch(f.FabricManagerLog.Value)
	remedy := "install the nvidia-fabricmanager package of exactly the driver's version (apt/dnf pin both to one version), then systemctl restart nvidia-fabricmanager; reset the GPUs (or reboot) after fabric manager was restarted"
	switch {
	case fmv != "" && driver != "" && fmv != driver:
		evs := []result.Evidence{ev(f.FabricManagerVersion.Source, "Fabric Manager version is : "+fmv), ev("driver", driver)}
		if refused != nil {
			evs = append(evs, ev(fmt.Sprintf("%s, line %d", f.FabricManagerLog.Source, refused.Line), refused.Text))
		}
		return []result.Result{withRemedy(res(result.Fail, "node", "FabricManagerVersionMismatch",
			fmt.Sprintf("fabric manager %s does not match driver %s: fabric manager will not start beside it, the GPUs stay unregistered and NVLink through the switches (NVLS too) is unusable", fmv, driver), evs...), remedy)}
	case fmv != "" && driver != "":
		msg := fmt.Sprintf("fabric manager %s matches driver %s", fmv, driver)
		evs := []result.Evidence{ev(f.FabricManagerVersion.Source, "Fabric Manager version is : "+fmv), ev("driver", driver)}
		if refused != nil {
			// An old refusal in the journal, from before an upgrade.
			msg += fmt.Sprintf("; its journal still holds an earlier refusal (%s against driver %s, line %d), from before the versions were aligned", refused.FabricManager, refused.Driver, refused.Line)
		}
		return []result.Result{res(result.Pass, "node", "FabricManagerVersionMatches", msg, evs...)}
	case refused != nil:
		return []result.Result{withRemedy(res(result.Fail, "node", "FabricManagerVersionMismatch",
			fmt.Sprintf("fabric manager refused to start: its version %s does not match driver %s (its journal, line %d); the GPUs stay unregistered and NVLink through the switches is unusable", refused.FabricManager, refused.Driver, refused.Line),
			ev(fmt.Sprintf("%s, line %d", f.FabricManagerLog.Source, refused.Line), refused.Text)), remedy)}
	case fmv != "" || f.FabricManager.Value == "active":
		why := "the driver version is unknown"
		if fmv == "" {
			why = "nv-fabricmanager --version printed no version"
			if err := f.FabricManagerVersion.Err; err != nil {
				why += " (" + err.Error() + ")"
			}
		}
		return []result.Result{res(result.Unknown, "node", "FabricManagerVersionUnknown", "fabric manager runs, but its version cannot be compared with the driver's: "+why,
			ev(f.FabricManagerVersion.Source, strings.TrimSpace(f.FabricManagerVersion.Value)))}
	}
	return nil
}

// factsEvidence says where the driver facts came from, or why there are none.
func factsEvidence(h *topology.Host) result.Evidence {
	if h.GPUFacts != nil {
		return ev("driver facts", h.GPUFacts.Source)
	}
	return ev("driver facts", "none: "+h.GPUFactsError)
}

type gpuHealth struct{}

func (gpuHealth) ID() string { return "gpu.health" }
func (gpuHealth) Title() string {
	return "GPU health: persistence, ECC, row remapping, retired pages, hardware slowdown, Xid events"
}

// xidInfo classifies Xid codes, after NVIDIA's "Xid Errors" documentation
// (docs.nvidia.com/deploy/xid-errors): hardware and driver faults fail, the
// ones an application usually causes warn.
var xidInfo = map[int]struct {
	fail bool
	what string
}{
	13:  {false, "graphics engine exception (usually the application)"},
	31:  {false, "GPU memory page fault (usually the application)"},
	43:  {false, "GPU stopped processing (channel reset)"},
	45:  {false, "preemptive cleanup after a previous error"},
	48:  {true, "double-bit ECC error"},
	61:  {true, "internal micro-controller breakpoint/warning"},
	62:  {true, "internal micro-controller halt"},
	63:  {false, "ECC page retirement or row remapping recorded"},
	64:  {true, "ECC page retirement or row remapper failure"},
	69:  {true, "graphics engine class error"},
	74:  {true, "NVLink error"},
	79:  {true, "GPU has fallen off the bus"},
	92:  {true, "high single-bit ECC error rate"},
	94:  {true, "contained ECC error"},
	95:  {true, "uncontained ECC error"},
	109: {false, "context switch timeout"},
	119: {true, "GSP RPC timeout"},
	120: {true, "GSP error"},
	121: {true, "C2C link error"},
	140: {true, "unrecovered ECC error"},
	143: {true, "GPU initialization failure"},
	145: {true, "NVLink remote translation error"},
	149: {true, "NVLink/fabric error"},
	154: {true, "GPU recovery action changed (reset or reboot required)"},
}

// xidBus is the bus id form the driver prints: 0000:18:00 (no function).
func xidBus(addr string) string {
	a, err := pci.ParseAddress(addr)
	if err != nil {
		return addr
	}
	return fmt.Sprintf("%04x:%02x:%02x", a.Domain, a.Bus, a.Device)
}

func (gpuHealth) Run(ctx context.Context, env *Env) []result.Result {
	h := env.Host
	if len(h.GPUs) == 0 {
		return []result.Result{res(result.Skip, "node", "NoGPU", "no GPU on this host")}
	}
	var out []result.Result
	logErr, xids := env.Facts.KernelLog.Err, env.Facts.KernelLog.Xids
	window := env.XidWindow
	if window <= 0 {
		window = 24 * time.Hour
	}
	for _, g := range h.GPUs {
		label := gpuLabel(g)
		bus := xidBus(g.Address)
		f := g.Facts
		var health []result.Result
		if f == nil {
			why := h.GPUFactsError
			if why == "" {
				why = "the driver does not list this GPU"
			}
			health = []result.Result{withRemedy(res(result.Unknown, label, "NoDriverFacts", label+": health unknown: "+why, factsEvidence(h)), "run with the NVIDIA driver loaded")}
		} else {
			health = healthOf(label, f)
		}
		// Xid events for this GPU within the window.
		var xid result.Result
		switch {
		case logErr != nil && len(xids) == 0:
			xid = withRemedy(res(result.Unknown, label+"-xid", "KernelLogUnreadable", label+": cannot read the kernel log for Xid events: "+logErr.Error(), ev("dmesg", logErr.Error())), "run as root (dmesg_restrict) or capture dmesg in the snapshot")
		default:
			var hits []node.Xid
			for _, x := range xids {
				if x.Bus == bus && (x.When.IsZero() || env.Now.Sub(x.When) <= window) {
					hits = append(hits, x)
				}
			}
			xid = xidResult(label, hits, window)
		}
		out = append(append(out, notHealthyBesideXid(health, xid)...), xid)
	}
	return identifyGPUs(env.Host, out)
}

// notHealthyBesideXid keeps a GPU from being called Healthy beside its own
// Xid events: clean driver facts then become a note that follows from the
// Xid result (Skip when the Xid is a hardware fault, whose GPU's facts
// cannot be trusted; Pass of the facts alone when it only warns).
func notHealthyBesideXid(health []result.Result, xid result.Result) []result.Result {
	if len(health) != 1 || health[0].Reason != "Healthy" || (xid.Status != result.Fail && xid.Status != result.Warn) {
		return health
	}
	r := health[0]
	xid.ID = gpuHealth{}.ID() // the framework stamps IDs after Run
	clean := strings.TrimPrefix(r.Message, r.Subject+": ")
	r.Reason = "NoFaultInDriverFacts"
	r.Message = fmt.Sprintf("%s: the driver's health fields show no fault (%s), but the GPU has Xid events (follows from %s)", r.Subject, clean, xid.Ref())
	if xid.Status == result.Fail {
		r.Status = result.Skip
	}
	r.FollowsFrom = xid.Ref()
	return []result.Result{r}
}

func xidResult(label string, hits []node.Xid, window time.Duration) result.Result {
	if len(hits) == 0 {
		return res(result.Pass, label+"-xid", "NoXid", fmt.Sprintf("%s: no Xid event in the kernel log within %s", label, window), ev("dmesg", "no NVRM: Xid line for this GPU"))
	}
	st := result.Warn
	codes := map[int]int{}
	var evs []result.Evidence
	for i, x := range hits {
		codes[x.Code]++
		if xidInfo[x.Code].fail {
			st = result.Fail
		}
		if i < 5 {
			evs = append(evs, ev("dmesg", x.Line))
		}
	}
	keys := make([]int, 0, len(codes))
	for c := range codes {
		keys = append(keys, c)
	}
	sort.Ints(keys)
	var parts []string
	for _, c := range keys {
		what := xidInfo[c].what
		if what == "" {
			what = "see NVIDIA's Xid documentation"
		}
		parts = append(parts, fmt.Sprintf("Xid %d ×%d (%s)", c, codes[c], what))
	}
	r := res(st, label+"-xid", "XidEvents", fmt.Sprintf("%s: %s within %s", label, strings.Join(parts, "; "), window), evs...)
	r.Remedy = "look up each Xid in NVIDIA's Xid documentation; hardware Xids (48, 64, 74, 79, 92-95, 119-121, 140...) need a GPU reset, a node drain or an RMA"
	return r
}

func healthOf(label string, f *gpu.GPU) []result.Result {
	src := "nvml"
	var out []result.Result
	add := func(st result.Status, reason, msg, remedy string, evs ...result.Evidence) {
		out = append(out, withRemedy(res(st, label, reason, label+": "+msg, evs...), remedy))
	}
	if f.Persistence != nil && !*f.Persistence {
		add(result.Warn, "PersistenceOff", "persistence mode is off: the driver tears down and re-initialises the GPU between jobs (slow starts, lost state)",
			"run nvidia-persistenced (or nvidia-smi -pm 1)", ev(src+":persistence_mode", "Disabled"))
	}
	if f.MIGEnabled != nil && *f.MIGEnabled {
		add(result.Warn, "MIGEnabled", "MIG is enabled: NCCL cannot use NVLink or P2P between MIG instances",
			"disable MIG for multi-GPU training (nvidia-smi -mig 0, then reset)", ev(src+":mig_mode", "Enabled"))
	}
	if e := f.ECC; e.Current != nil {
		if !*e.Current {
			add(result.Warn, "ECCDisabled", "ECC is off: memory errors go undetected", "enable ECC (nvidia-smi -e 1, then reset the GPU)", ev(src+":ecc_mode", "Disabled"))
		}
		if e.Pending != nil && *e.Pending != *e.Current {
			add(result.Warn, "ECCChangePending", "an ECC mode change is pending until the next GPU reset", "reset the GPU or reboot", ev(src+":ecc_mode.pending", fmt.Sprint(*e.Pending)))
		}
	}
	if v := f.ECC.VolatileUncorrected; v != nil && *v > 0 {
		add(result.Fail, "UncorrectableECC", fmt.Sprintf("%d uncorrectable ECC errors since the driver loaded", *v), "drain the node, reset the GPU; repeated errors mean RMA", ev(src+":ecc_errors.volatile.uncorrected", fmt.Sprint(*v)))
	} else if v := f.ECC.AggregateUncorrected; v != nil && *v > 0 {
		add(result.Warn, "PastUncorrectableECC", fmt.Sprintf("%d uncorrectable ECC errors over the GPU's life", *v), "watch for new errors; check row remapping", ev(src+":ecc_errors.aggregate.uncorrected", fmt.Sprint(*v)))
	}
	if r := f.Remapped; r.Pending != nil || r.Failure != nil {
		if r.Failure != nil && *r.Failure {
			add(result.Fail, "RowRemapFailure", "row remapping failed: the memory has faults it can no longer repair", "RMA the GPU", ev(src+":remapped_rows.failure", "Yes"))
		}
		if r.Pending != nil && *r.Pending {
			add(result.Fail, "RowRemapPending", "a row remap is pending: it takes effect at the next GPU reset, until then the faulty row is in use", "drain and reset the GPU (nvidia-smi -r) or reboot", ev(src+":remapped_rows.pending", "Yes"))
		}
	}
	if r := f.Retired; r.Pending != nil && *r.Pending {
		add(result.Fail, "PageRetirementPending", "retired pages are pending until the next GPU reset", "drain and reset the GPU", ev(src+":retired_pages.pending", "Yes"))
	}
	if r := f.Retired; r.DoubleBit != nil && *r.DoubleBit > 0 {
		add(result.Warn, "RetiredPages", fmt.Sprintf("%d pages retired for double-bit errors", *r.DoubleBit), "watch the count; many retirements mean RMA", ev(src+":retired_pages.double_bit", fmt.Sprint(*r.DoubleBit)))
	}
	for _, c := range f.ClockEvents {
		switch c {
		case "hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown":
			add(result.Fail, "HardwareSlowdown", "hardware slowdown is active ("+c+"): clocks are cut by the board (thermal, power brake, or a fault)", "check cooling, power supplies and the power brake signal; nvidia-smi -q -d PERFORMANCE", ev(src+":clocks_event_reasons", c))
		case "sw_thermal_slowdown":
			add(result.Warn, "ThermalSlowdown", "software thermal slowdown is active", "check cooling and inlet temperature", ev(src+":clocks_event_reasons", c))
		}
	}
	if len(out) == 0 {
		var parts []string
		if f.Persistence != nil {
			parts = append(parts, "persistence on")
		}
		if f.ECC.Current != nil {
			parts = append(parts, "ECC on")
		}
		if f.ECC.VolatileUncorrected != nil {
			parts = append(parts, "no uncorrectable ECC errors")
		}
		if f.Remapped.Pending != nil {
			parts = append(parts, "no pending row remap")
		}
		if f.ClockEvents != nil {
			parts = append(parts, "no hardware slowdown")
		}
		if len(parts) == 0 {
			return []result.Result{res(result.Unknown, label, "NothingReadable", label+": the driver reported none of the health fields")}
		}
		return []result.Result{res(result.Pass, label, "Healthy", label+": "+strings.Join(parts, ", "), ev("nvml", f.Name))}
	}
	return out
}

// identifyGPUs adds to each result about a GPU (subject GPUn, GPUn-xid,
// GPUn-fabric) the GPU's bus id, and its UUID and serial where the driver
// reports them: the index renumbers when a GPU drops off the bus, the bus
// id does not, so results of two runs compare by it.
func identifyGPUs(h *topology.Host, rs []result.Result) []result.Result {
	for _, g := range h.GPUs {
		label := gpuLabel(g)
		id := []string{g.Address}
		if g.UUID != "" {
			id = append(id, "UUID "+g.UUID)
		}
		if g.Facts != nil && g.Facts.Serial != "" {
			id = append(id, "serial "+g.Facts.Serial)
		}
		e := ev("pci", label+" is "+strings.Join(id, ", "))
		for i := range rs {
			if rs[i].Subject == label || strings.HasPrefix(rs[i].Subject, label+"-") {
				rs[i].Evidence = append(rs[i].Evidence, e)
			}
		}
	}
	return rs
}
