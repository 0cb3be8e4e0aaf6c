package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

func majorOf(v string) int {
	n, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return n
}

// kernelAtLeast compares a release like "6.18.44-fc" with major.minor.
func kernelAtLeast(rel string, major, minor int) (bool, bool) {
	f := strings.FieldsFunc(rel, func(r rune) bool { return r == '.' || r == '-' || r == '+' || r == '_' })
	if len(f) < 2 {
		return false, false
	}
	a, err1 := strconv.Atoi(f[0])
	b, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return false, false
	}
	return a > major || a == major && b >= minor, true
}

type kernelModule struct{}

func (kernelModule) ID() string { return "gdr.kernel-module" }
func (kernelModule) Title() string {
	return "GPU Direct RDMA registration path (nvidia_peermem or dma-buf)"
}

// registration is how this node can register GPU memory with a NIC: the
// peer-memory module loaded (""), whether dma-buf is possible and why (not),
// and the evidence.
type registration struct {
	peermem string
	dmabuf  bool
	dmaWhy  string
	// known: both answers were read (the modules, and the driver and
	// kernel dma-buf depends on), so "neither" is a finding, not a guess.
	known bool
	evs   []result.Evidence
}

// GDRBlocked is why no GPU memory can be registered with any NIC on this
// node (neither nvidia_peermem nor dma-buf), for the GPU→NIC pairing's GDR
// column (topology.Pairing.WithGDRBlocked); "" when a path exists or
// either answer could not be read (the modules; the driver, or the kernel
// where dma-buf depends on it). gdr.kernel-module judges the same facts.
func GDRBlocked(env *Env) string {
	r := registrationOf(env)
	if r.peermem != "" || r.dmabuf || !r.known {
		return ""
	}
	return "neither nvidia_peermem is loaded nor dma-buf possible (" + r.dmaWhy + ")"
}

// registrationOf reads the node's GPU memory registration paths.
func registrationOf(env *Env) registration {
	mods := env.Facts.Modules
	drv := env.Facts.Driver
	var evs []result.Evidence
	peermem := ""
	for _, m := range []string{"nvidia_peermem", "nv_peer_mem"} {
		if mods.Has(m) {
			peermem = m
		}
	}
	if mods.Err != nil && !errors.Is(mods.Err, fs.ErrNotExist) {
		evs = append(evs, ev(mods.Source, "unreadable: "+mods.Err.Error()))
	} else {
		evs = append(evs, evNote(mods.Source, "nvidia_peermem/nv_peer_mem: "+yesno(peermem != ""), "also looked in /sys/module for built-in modules"))
	}
	// dma-buf: open kernel module (r515+), kernel >= 5.12, an RDMA driver
	// that implements dma-buf memory registration (mlx5_ib since 5.12; efa).
	dmabuf, dmaWhy := false, ""
	kernelOK, kernelKnown := kernelAtLeast(env.Host.Kernel, 5, 12)
	nicDrv := ""
	for _, d := range []string{"mlx5_ib", "efa", "irdma", "bnxt_re"} {
		if mods.Has(d) {
			nicDrv = d
			break
		}
	}
	switch {
	case drv.Err != nil:
		dmaWhy = "NVIDIA kernel driver version unknown (" + drv.Err.Error() + ")"
		evs = append(evs, ev(drv.Source, "unreadable: "+drv.Err.Error()))
	case !drv.Open:
		dmaWhy = "the proprietary NVIDIA kernel module does not export dma-buf for GPU memory; the open kernel module does (driver 515 and later)"
	case drv.Version != "" && majorOf(drv.Version) < 515:
		dmaWhy = "driver " + drv.Version + " predates dma-buf support (515)"
	case !kernelKnown:
		dmaWhy = "kernel version unknown"
	case !kernelOK:
		dmaWhy = "kernel " + env.Host.Kernel + " is older than 5.12 (no dma-buf memory registration in RDMA)"
	case nicDrv == "":
		dmaWhy = "no RDMA driver with dma-buf support (mlx5_ib, efa) is loaded"
	default:
		dmabuf = true
		dmaWhy = fmt.Sprintf("open kernel module %s, kernel %s, %s loaded", drv.Version, env.Host.Kernel, nicDrv)
	}
	if drv.Err == nil {
		evs = append(evs, ev(drv.Source, drv.Line))
	}
	evs = append(evs, ev("kernel release", env.Host.Kernel))
	known := mods.Err == nil && drv.Err == nil && (kernelKnown || !drv.Open || drv.Version != "" && majorOf(drv.Version) < 515)
	return registration{peermem: peermem, dmabuf: dmabuf, dmaWhy: dmaWhy, known: known, evs: evs}
}

func (kernelModule) Run(ctx context.Context, env *Env) []result.Result {
	reg := registrationOf(env)
	peermem, dmabuf, dmaWhy, evs := reg.peermem, reg.dmabuf, reg.dmaWhy, reg.evs
	dmaEnv := env.Facts.Environ.Vars["NCCL_DMABUF_ENABLE"]
	ncclDmabuf := ncclPath(reg, env) == GDRDMABuf
	summary := fmt.Sprintf("nvidia_peermem: %s; dma-buf: %s (%s)", loadedText(peermem), yesno(dmabuf), dmaWhy)
	uses := ""
	switch {
	case ncclDmabuf:
		uses = "NCCL will register GPU memory through dma-buf (it prefers dma-buf when the kernel, driver and NIC support it)"
	case peermem != "":
		uses = "NCCL will register GPU memory through " + peermem
		if dmabuf && dmaEnv == "0" {
			uses += " (NCCL_DMABUF_ENABLE=0 turns dma-buf off)"
		}
	}
	if len(env.Host.MatrixNICs()) == 0 {
		if len(env.Host.GPUs) == 0 {
			return []result.Result{res(result.Skip, "node", "NoRDMADevice", "no GPU and no RDMA NIC on this host: no GPU Direct RDMA path to judge", evs...)}
		}
		return noGDRPath(env, result.Warn, noNICRemedy, "GDRRequired", "NoRDMADevice",
			"this host has no RDMA NIC, so its GPUs have no GPU Direct RDMA path (inter-node NCCL traffic would go through sockets and host memory); "+summary, evs)
	}
	if e := env.Expect; e != nil && e.GDR != nil {
		switch e.GDR.Mode {
		case "peermem":
			if peermem == "" {
				return []result.Result{withRemedy(res(result.Fail, "node", "PeermemExpected", "the site profile requires nvidia_peermem, which is not loaded; "+summary, evs...), peermemRemedy)}
			}
		case "dmabuf":
			if !dmabuf {
				return []result.Result{withRemedy(res(result.Fail, "node", "DMABufExpected", "the site profile requires dma-buf, which is not possible here: "+dmaWhy, evs...), dmabufRemedy)}
			}
		}
	}
	switch {
	case peermem != "" && dmabuf:
		return []result.Result{res(result.Pass, "node", "PeermemAndDMABuf", summary+"; "+uses, evs...)}
	case dmabuf:
		return []result.Result{res(result.Pass, "node", "DMABufAvailable", summary+"; "+uses, evs...)}
	case peermem != "":
		return []result.Result{res(result.Pass, "node", "PeermemLoaded", summary+"; "+uses, evs...)}
	case !reg.known:
		// No path found, but one of the facts that decide it (the modules,
		// the driver, the kernel) could not be read: not known, not absent.
		return []result.Result{res(result.Unknown, "node", "CannotRead", "could not tell whether GPU memory can be registered with the NIC: "+summary, evs...)}
	}
	msg := "neither nvidia_peermem is loaded nor dma-buf possible: NCCL cannot register GPU memory with the NIC and will stage every network transfer through host memory; " + summary
	// RDMA NICs and no way to register GPU memory with them: the node was
	// built for GPU Direct RDMA and cannot use it, a fault, not a choice.
	return noGDRPath(env, result.Fail, peermemRemedy+"; or "+dmabufRemedy, "NoGDRPath", "NoGDRPath", msg, evs)
}

// noGDRPath judges a GPU node without a GPU Direct RDMA path by what the
// site profile says of gdr.required: true, the node is not ready (fail);
// false, it is not meant for GDR and is ready (skip, saying so); unset,
// unstated: a warn (DEGRADED) for a node with no RDMA NIC at all, which
// may be meant for work without GDR but is never simply READY, and a fail
// for a node whose RDMA NICs cannot register GPU memory.
func noGDRPath(env *Env, unstated result.Status, remedy, failReason, skipReason, msg string, evs []result.Evidence) []result.Result {
	required, stated := gdrRequired(env)
	switch {
	case required:
		return []result.Result{withRemedy(res(result.Fail, "node", failReason, "the site profile requires GPU Direct RDMA, but "+msg, evs...), remedy)}
	case stated:
		return []result.Result{res(result.Skip, "node", skipReason, msg+" (the site profile says gdr.required: false: this node is not meant for GPU Direct RDMA)", evs...)}
	}
	if unstated == result.Warn {
		msg = "not ready for GPU Direct RDMA: " + msg
	}
	return []result.Result{withRemedy(res(unstated, "node", "NoGDRPath", msg, evs...),
		remedy+"; if this node is not meant for GPU Direct RDMA, say so in the site profile (gdr: {required: false})")}
}

// The registration paths GDRPath names.
const (
	GDRDMABuf  = "dmabuf"
	GDRPeermem = "peermem"
	GDRNone    = "none"
)

// GDRPath is how NCCL would register GPU memory with a NIC on this node:
// GDRDMABuf (it prefers dma-buf where the driver, kernel and NIC allow it,
// unless NCCL_DMABUF_ENABLE=0), GDRPeermem, GDRNone (neither, or no RDMA
// NIC to register with), or "" when the modules or the driver could not
// be read. gdr.kernel-module judges the same facts.
func GDRPath(env *Env) string {
	if len(env.Host.MatrixNICs()) == 0 {
		return GDRNone
	}
	return ncclPath(registrationOf(env), env)
}

// ncclPath is the path NCCL takes given the registration paths r.
func ncclPath(r registration, env *Env) string {
	switch {
	case r.dmabuf && env.Facts.Environ.Vars["NCCL_DMABUF_ENABLE"] != "0":
		return GDRDMABuf
	case r.peermem != "":
		return GDRPeermem
	case !r.known:
		return ""
	}
	return GDRNone
}

// gdrRequired reads the site profile's gdr.required: whether GPU Direct
// RDMA is required, and whether the profile says at all.
func gdrRequired(env *Env) (required, stated bool) { return env.Expect.GDRRequired() }

const noNICRemedy = "check that the RDMA NICs are seated and their driver (mlx5_core/mlx5_ib, or efa) is loaded: ls /sys/class/infiniband should list them"

const peermemRemedy = "load the peer-memory module that ships with the NVIDIA driver: modprobe nvidia-peermem (it needs an ib_core with the peer-memory API, e.g. MLNX_OFED/DOCA-OFED), and add it to /etc/modules-load.d"
const dmabufRemedy = "use the NVIDIA open kernel module (driver 515 or later) on kernel 5.12 or later with mlx5_ib/efa loaded, so NCCL can use dma-buf"

func yesno(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func loadedText(m string) string {
	if m == "" {
		return "not loaded"
	}
	return m + " loaded"
}

// gdrLevel is the GPU Direct RDMA distance limit in force: NCCL's default
// (PXB) or NCCL_NET_GDR_LEVEL from the job's environment.
func gdrLevel(env *Env) (level.Level, string, error) {
	v, ok := env.Facts.Environ.Vars["NCCL_NET_GDR_LEVEL"]
	if !ok || v == "" {
		return level.DefaultGDR, "", nil
	}
	l, err := parseNCCLLevel(v)
	if err != nil {
		return level.DefaultGDR, v, err
	}
	return l, v, nil
}

// parseNCCLLevel reads NCCL's path-level settings (NCCL_NET_GDR_LEVEL,
// NCCL_P2P_LEVEL): names, or the legacy integers 0..4 (LOC, PIX, PXB, PHB, SYS).
func parseNCCLLevel(v string) (level.Level, error) {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "LOC", "0":
		return level.Self, nil
	case "NVL":
		return level.NVLink, nil
	case "PIX", "1":
		return level.PIX, nil
	case "PXB", "2":
		return level.PXB, nil
	case "PHB", "3":
		return level.PHB, nil
	case "NODE":
		return level.NODE, nil
	case "SYS", "4":
		return level.SYS, nil
	}
	return level.Unknown, fmt.Errorf("%q is not an NCCL path level (LOC, PIX, PXB, PHB, NODE, SYS)", v)
}

// gdrLevelRef names nccl.env's finding on NCCL_NET_GDR_LEVEL, the one
// cause the GPU–NIC pairs it narrows follow from.
const gdrLevelRef = "nccl.env NCCL_NET_GDR_LEVEL"

type nicAffinity struct{}

func (nicAffinity) ID() string { return "gdr.nic-affinity" }
func (nicAffinity) Title() string {
	return "Every GPU has an RDMA NIC within PXB (same PCIe switch tree)"
}

func (nicAffinity) Run(ctx context.Context, env *Env) []result.Result {
	h := env.Host
	if len(h.GPUs) == 0 {
		return []result.Result{res(result.Skip, "node", "NoGPU", "no GPU on this host")}
	}
	if len(h.MatrixNICs()) == 0 {
		if required, _ := gdrRequired(env); required {
			return []result.Result{withRemedy(res(result.Fail, "node", "GDRRequired", "the site profile requires GPU Direct RDMA, but this host has no RDMA NIC for its GPUs to pair with"), noNICRemedy)}
		}
		return []result.Result{res(result.Skip, "node", "NoRDMADevice", "no RDMA NIC on this host: there is no GPU Direct RDMA path to check (inter-node NCCL traffic would use sockets)")}
	}
	limit, setting, err := gdrLevel(env)
	if err != nil {
		return []result.Result{withRemedy(res(result.Fail, "node", "BadGDRLevel", "NCCL_NET_GDR_LEVEL: "+err.Error(), ev("environment", "NCCL_NET_GDR_LEVEL="+setting)), "set NCCL_NET_GDR_LEVEL to PIX, PXB, PHB or SYS, or unset it")}
	}
	var out []result.Result
	for _, e := range h.Pairing().GPUs {
		g := h.GPUs[e.GPU]
		subject := fmt.Sprintf("GPU%d-%s", e.GPU, e.NIC)
		evs := []result.Evidence{
			ev("topology", fmt.Sprintf("GPU%d %s -> %s %s: %s via %s", e.GPU, e.GPUAddress, e.NIC, e.NICAddress, e.Level, strings.Join(e.Path, " > "))),
		}
		if len(e.Nearest) > 1 {
			evs = append(evs, ev("topology", "NICs at the same distance: "+strings.Join(e.Nearest, ", ")))
		}
		if setting != "" {
			evs = append(evs, ev("environment", "NCCL_NET_GDR_LEVEL="+setting))
		}
		shared := ""
		if e.Shared {
			shared = " (the NIC also serves another GPU)"
		}
		switch {
		case e.Level <= level.DefaultGDR && e.Level > limit:
			// The NIC is where it should be; the job's setting keeps GDR
			// off. nccl.env reports that setting once, with its remedy.
			r := res(result.Skip, subject, "NarrowedByGDRLevel",
				fmt.Sprintf("%s reaches %s at %s, within PXB: the placement is right; NCCL_NET_GDR_LEVEL=%s keeps NCCL from using GPU Direct RDMA for it (follows from %s)", gpuLabel(g), e.NIC, e.Level, setting, gdrLevelRef), evs...)
			r.FollowsFrom = gdrLevelRef
			out = append(out, r)
		case e.Level <= level.DefaultGDR:
			out = append(out, res(result.Pass, subject, "NICAt"+e.Level.String(),
				fmt.Sprintf("%s reaches %s at %s: GPU Direct RDMA is used%s", gpuLabel(g), e.NIC, e.Level, shared), evs...))
		case e.Level <= limit:
			out = append(out, withRemedy(res(result.Warn, subject, "GDRForcedBeyondPXB",
				fmt.Sprintf("%s's nearest NIC %s is at %s, beyond PXB; NCCL_NET_GDR_LEVEL=%s forces GPU Direct RDMA across that path, which works but usually at lower bandwidth than a NIC under the GPU's own switch", gpuLabel(g), e.NIC, e.Level, setting), evs...),
				"put a NIC under each GPU's PCIe switch (rail-optimised layout), or accept the reduced bandwidth"))
		default:
			why := "beyond PXB, NCCL's default NCCL_NET_GDR_LEVEL"
			if setting != "" && limit >= level.DefaultGDR {
				why = "beyond NCCL_NET_GDR_LEVEL=" + setting
			}
			out = append(out, withRemedy(res(result.Fail, subject, "NICBeyondGDRLevel",
				fmt.Sprintf("%s's nearest RDMA NIC %s is at %s, %s: NCCL will not use GPU Direct RDMA for it and stages network traffic through host memory (extra PCIe crossings, lower bandwidth, CPU memory traffic)", gpuLabel(g), e.NIC, e.Level, why), evs...),
				"place a NIC under the GPU's PCIe switch; on a VM, give the guest a topology where GPU and NIC share a virtual switch (or an NCCL_TOPO_FILE describing the host); NCCL_NET_GDR_LEVEL="+e.Level.String()+" would force GDR across this path"))
		}
	}
	return out
}

// Registration is the node's GPU memory registration paths, as
// gdr.kernel-module reads them: the peer-memory module loaded ("" none),
// whether dma-buf is possible and why (not), and whether both answers could
// be read. bench rdma plans its --use_cuda runs from it.
func Registration(env *Env) (peermem string, dmabuf, known bool, why string) {
	r := registrationOf(env)
	return r.peermem, r.dmabuf, r.known, r.dmaWhy
}
