package checks

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// discoveryProblems surfaces what discovery could not read (Host.Problems),
// so that a device left out of the topology is never a silent pass.
type discoveryProblems struct{}

func (discoveryProblems) ID() string { return "node.discovery" }
func (discoveryProblems) Title() string {
	return "Discovery identified every PCI function and read its attributes"
}

// rePCIAddress finds a PCI address (0000:18:00.0) in a path or message.
var rePCIAddress = regexp.MustCompile(`[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]`)

// problemDevice is the PCI function a problem is about: the last address in
// its path (sys/devices/.../0000:17:00.0/0000:18:00.0/vendor), else the
// first in its message; "" when it names none.
func problemDevice(p topology.Problem) string {
	if as := rePCIAddress.FindAllString(p.Path, -1); len(as) > 0 {
		return as[len(as)-1]
	}
	return rePCIAddress.FindString(p.Message)
}

// Run fails a PCI function that discovery could not identify (its class,
// vendor or device unreadable) or could not place at all: what it is — a
// GPU, a NIC, a switch — is missing from every other check. Any other
// unreadable attribute is unknown: the checks that need it say so too.
func (discoveryProblems) Run(ctx context.Context, env *Env) []result.Result {
	h := env.Host
	if len(h.Problems) == 0 {
		return []result.Result{res(result.Pass, "node", "NoProblems", fmt.Sprintf("%d PCI function(s) identified, every attribute read", len(h.Devices)))}
	}
	var out []result.Result
	for _, p := range h.Problems {
		e := ev(p.Path, p.Message)
		addr := problemDevice(p)
		i := slices.IndexFunc(h.Devices, func(d *topology.Device) bool { return d.Address == addr })
		switch {
		case addr == "":
			out = append(out, res(result.Unknown, p.Path, "Unreadable", fmt.Sprintf("%s could not be read: %s", p.Path, p.Message), e))
		case i < 0:
			out = append(out, withRemedy(res(result.Fail, addr, "DeviceLeftOut", fmt.Sprintf("PCI function %s is left out of the topology: %s", addr, p.Message), e),
				"read the device's entry under /sys/bus/pci/devices (lspci -vs "+addr+"); a device the kernel lists but sysfs cannot show needs a reboot or a hardware check"))
		case h.Devices[i].Incomplete:
			out = append(out, withRemedy(res(result.Fail, addr, "DeviceUnidentified", fmt.Sprintf("PCI function %s could not be identified, so no check judges it: %s: %s", addr, p.Path, p.Message), e),
				"read the device's class, vendor and device under /sys/bus/pci/devices/"+addr+" (lspci -vs "+addr+")"))
		default:
			out = append(out, res(result.Unknown, addr, "Unreadable", fmt.Sprintf("%s: %s could not be read: %s", addr, p.Path, p.Message), e))
		}
	}
	return out
}

// gpuPresent compares the GPUs sysfs shows with those the driver and the
// site profile name.
type gpuPresent struct{}

func (gpuPresent) ID() string { return "gpu.present" }
func (gpuPresent) Title() string {
	return "Every GPU the driver and the site profile name is visible in sysfs"
}

// Run fails a GPU the driver reports that sysfs does not show, a GPU
// count other than the site profile's, and no GPU at all where the NVIDIA
// driver is loaded; with no GPU, no driver and no profile it is unknown
// (nothing says this node should have GPUs), never a pass.
func (gpuPresent) Run(ctx context.Context, env *Env) []result.Result {
	h := env.Host
	var out []result.Result
	if f := h.GPUFacts; f != nil {
		for _, gf := range f.GPUs {
			if gf.BusID != "" && h.GPUByAddress(gf.BusID) == nil {
				out = append(out, withRemedy(res(result.Fail, gf.BusID, "NotInSysfs",
					fmt.Sprintf("GPU %d at %s is known to the driver but not visible in sysfs", gf.Index, gf.BusID), ev(f.Source, fmt.Sprintf("GPU %d at %s", gf.Index, gf.BusID))),
					"read /sys/bus/pci/devices/"+gf.BusID+" and the node.discovery results; reseat or replace the GPU if the kernel cannot read it"))
			}
		}
	}
	found := ev("sysfs", fmt.Sprintf("%d NVIDIA GPU(s)", len(h.GPUs)))
	if e := env.Expect; e != nil && e.GPUs != nil && e.GPUs.Model != "" {
		for _, g := range h.GPUs {
			if !strings.Contains(strings.ToLower(g.Name), strings.ToLower(e.GPUs.Model)) {
				name := g.Name
				if name == "" {
					name = "a GPU of unknown model"
				}
				out = append(out, withRemedy(res(result.Fail, g.Address, "ModelMismatch",
					fmt.Sprintf("%s at %s is %s, the site profile expects %s", gpuLabel(g), g.Address, name, e.GPUs.Model),
					ev(display(env, "sys/bus/pci/devices/"+g.Address), name), ev("site profile", "gpus.model "+e.GPUs.Model)),
					"install the GPU model the fleet expects, or fix the site profile"))
			}
		}
	}
	if e := env.Expect; e != nil && e.GPUs != nil && e.GPUs.Count > 0 {
		if len(h.GPUs) != e.GPUs.Count {
			msg := fmt.Sprintf("%d GPU(s) visible, the site profile expects %d", len(h.GPUs), e.GPUs.Count)
			if miss := goneFromSysfs(h); len(miss) > 0 {
				msg += "; missing: " + strings.Join(miss, ", ")
			}
			evs := []result.Evidence{found, ev("site profile", fmt.Sprintf("gpus.count %d", e.GPUs.Count))}
			if unused := h.Pairing().Unused; len(h.GPUs) < e.GPUs.Count && len(unused) > 0 {
				// Where a lost GPU sat: its rail NIC is left with no GPU.
				evs = append(evs, evNote("topology", "RDMA NICs no GPU is paired with: "+strings.Join(unused, ", "), "a missing GPU's rail NIC is among them; storage and front-end NICs are too"))
			}
			return append(out, withRemedy(res(result.Fail, "node", "GPUCountMismatch", msg, evs...),
				"find the missing GPU (nvidia-smi, lspci -d 10de:, the kernel log) before the node joins the fleet"))
		}
	} else if len(h.GPUs) == 0 {
		if why := driverEvidence(env); why != nil {
			return append(out, withRemedy(res(result.Fail, "node", "NoGPU", "no NVIDIA GPU visible in sysfs, yet the NVIDIA driver is present", found, *why),
				"check lspci -d 10de: and the kernel log for GPUs that fell off the bus"))
		}
		return append(out, res(result.Unknown, "node", "NoGPU", "no NVIDIA GPU on this host, and nothing (driver, site profile) says it should have one", found))
	}
	if len(out) > 0 {
		return out
	}
	msg := fmt.Sprintf("%d GPU(s) visible", len(h.GPUs))
	if h.GPUFacts != nil {
		msg += ", every one the driver reports"
	}
	if e := env.Expect; e != nil && e.GPUs != nil && e.GPUs.Count > 0 {
		msg += ", as the site profile expects"
	}
	return []result.Result{res(result.Pass, "node", "GPUsVisible", msg, found)}
}

// goneFromSysfs names the GPUs the driver's facts list that sysfs does not
// show ("GPU 3 at 0000:9a:00.0"): the driver last saw them there.
func goneFromSysfs(h *topology.Host) []string {
	var out []string
	if f := h.GPUFacts; f != nil {
		for _, gf := range f.GPUs {
			if gf.BusID != "" && h.GPUByAddress(gf.BusID) == nil {
				out = append(out, fmt.Sprintf("GPU %d at %s (last seen by %s)", gf.Index, gf.BusID, f.Source))
			}
		}
	}
	return out
}

// missingGPUs is how many GPUs the node lacks: the site profile's count
// less those visible, or those the driver knows that sysfs does not show,
// whichever is more.
func missingGPUs(env *Env) int {
	n := len(goneFromSysfs(env.Host))
	if e := env.Expect; e != nil && e.GPUs != nil && e.GPUs.Count > len(env.Host.GPUs) {
		n = max(n, e.GPUs.Count-len(env.Host.GPUs))
	}
	return n
}

// driverEvidence is what says this node has NVIDIA GPUs although sysfs
// shows none: the driver's facts listing GPUs, the driver's version file or
// its loaded module; nil when nothing does.
func driverEvidence(env *Env) *result.Evidence {
	if f := env.Host.GPUFacts; f != nil && len(f.GPUs) > 0 {
		return new(ev(f.Source, fmt.Sprintf("%d GPU(s)", len(f.GPUs))))
	}
	if d := env.Facts.Driver; d.Version != "" {
		return new(ev(d.Source, d.Line))
	}
	if env.Facts.Modules.Loaded["nvidia"] {
		return new(ev(env.Facts.Modules.Source, "nvidia loaded"))
	}
	return nil
}

// problemAt is the problem discovery recorded reading the first of rels
// (root-relative paths) that has one; nil when none has.
func problemAt(env *Env, rels ...string) *topology.Problem {
	for _, rel := range rels {
		at := display(env, rel)
		for i, p := range env.Host.Problems {
			if p.Path == at {
				return &env.Host.Problems[i]
			}
		}
	}
	return nil
}
