package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

type iommuMode struct{}

func (iommuMode) ID() string { return "iommu.mode" }
func (iommuMode) Title() string {
	return "IOMMU off or in passthrough for GPUs and NICs (no translated DMA)"
}

// cmdlineIOMMU reads the IOMMU settings of the kernel command line.
func cmdlineIOMMU(cmdline string) (params []string, passthrough, off, on bool) {
	for _, f := range strings.Fields(cmdline) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "iommu":
			params = append(params, f)
			switch v {
			case "pt":
				passthrough = true
			case "off":
				off = true
			case "nopt":
				on = true
			}
		case "iommu.passthrough":
			params = append(params, f)
			if v == "1" || v == "y" || v == "on" {
				passthrough = true
			}
		case "intel_iommu", "amd_iommu":
			params = append(params, f)
			switch {
			case v == "off":
				off = true
			case strings.Contains(v, "on"):
				on = true
			}
		}
	}
	return
}

func (iommuMode) Run(ctx context.Context, env *Env) []result.Result {
	h := env.Host
	cmdline := env.Facts.Cmdline
	params, pt, off, on := cmdlineIOMMU(cmdline.Value)
	cmdEv := ev(cmdline.Source, strings.Join(params, " "))
	if cmdline.Err != nil {
		cmdEv = ev(cmdline.Source, "unreadable: "+cmdline.Err.Error())
	} else if len(params) == 0 {
		cmdEv.Value = "no IOMMU parameters"
	}
	units, uerr := env.Facts.IOMMU.Units.Names, env.Facts.IOMMU.Units.Err
	unitEv := ev(env.Facts.IOMMU.Units.Source, "IOMMU units: "+strings.Join(units, " "))
	switch {
	case uerr != nil:
		unitEv.Value = "unreadable: " + uerr.Error()
	case len(units) == 0:
		unitEv.Value = "no IOMMU unit registered"
	}
	var devs []*topology.Device
	var labels []string
	for _, g := range h.GPUs {
		devs, labels = append(devs, g.Dev), append(labels, gpuLabel(g))
	}
	for _, n := range h.MatrixNICs() {
		devs, labels = append(devs, n.Dev), append(labels, n.Name)
	}
	if len(devs) == 0 {
		return []result.Result{res(result.Skip, "node", "NoDevices", "no GPU or RDMA NIC")}
	}
	var out []result.Result
	for i, d := range devs {
		label := labels[i]
		if d.IOMMUGroup == nil {
			switch {
			case uerr != nil:
				out = append(out, res(result.Unknown, label, "CannotRead", fmt.Sprintf("%s has no IOMMU group, but the IOMMU units cannot be listed: %v", label, uerr), cmdEv, unitEv))
				continue
			case len(units) > 0 && on && !pt:
				out = append(out, res(result.Unknown, label, "NoGroup", fmt.Sprintf("%s has no IOMMU group although IOMMU units exist", label), cmdEv, unitEv))
				continue
			}
			out = append(out, res(result.Pass, label, "IOMMUOff", fmt.Sprintf("%s is not behind an IOMMU: DMA goes to physical addresses", label), cmdEv, unitEv))
			continue
		}
		group, ok := env.Facts.IOMMU.Groups[*d.IOMMUGroup]
		if !ok {
			group = node.Text{Source: display(env, fmt.Sprintf("sys/kernel/iommu_groups/%d/type", *d.IOMMUGroup)), Err: errNotCollected}
		}
		typ, err := group.Value, group.Err
		gEv := ev(group.Source, typ)
		switch {
		case err != nil && errors.Is(err, fs.ErrNotExist):
			// Kernels before 5.11 have no type file: fall back to the command line.
			switch {
			case pt:
				out = append(out, res(result.Pass, label, "Passthrough", fmt.Sprintf("%s: IOMMU in passthrough per the kernel command line", label), cmdEv))
			case off:
				out = append(out, res(result.Pass, label, "IOMMUOff", fmt.Sprintf("%s: IOMMU off per the kernel command line", label), cmdEv))
			default:
				out = append(out, withRemedy(res(result.Unknown, label, "GroupTypeUnknown", fmt.Sprintf("%s is in IOMMU group %d but the kernel does not say whether it translates DMA", label, *d.IOMMUGroup), cmdEv),
					"boot with iommu=pt to be sure"))
			}
		case err != nil:
			out = append(out, res(result.Unknown, label, "CannotRead", fmt.Sprintf("%s: %v", label, err), gEv))
		case typ == "identity":
			out = append(out, res(result.Pass, label, "Passthrough", fmt.Sprintf("%s: IOMMU group %d in passthrough (identity)", label, *d.IOMMUGroup), gEv, cmdEv))
		case strings.HasPrefix(typ, "DMA"):
			out = append(out, withRemedy(res(result.Fail, label, "TranslatedDMA",
				fmt.Sprintf("%s: IOMMU group %d translates DMA (%s): every peer-to-peer and GPU Direct RDMA transfer goes through IOMMU page tables, which costs bandwidth and can break P2P", label, *d.IOMMUGroup, typ), gEv, cmdEv),
				"boot with iommu=pt (intel_iommu=on iommu=pt, or amd_iommu=on iommu=pt), or switch the group to identity: echo identity > /sys/kernel/iommu_groups/N/type with the device unbound"))
		case typ == "blocked" || typ == "unmanaged":
			reason := map[string]string{"blocked": "IOMMUBlocked", "unmanaged": "IOMMUUnmanaged"}[typ]
			out = append(out, res(result.Warn, label, reason, fmt.Sprintf("%s: IOMMU group %d is %s (bound to VFIO for a VM?)", label, *d.IOMMUGroup, typ), gEv))
		default:
			out = append(out, res(result.Unknown, label, "GroupTypeUnknown", fmt.Sprintf("%s: IOMMU group type %q", label, typ), gEv))
		}
	}
	return out
}

// errNotCollected: the facts hold no IOMMU group type for a device's group
// (facts collected for another host).
var errNotCollected = errors.New("the group type was not collected")

type memlock struct{}

func (memlock) ID() string { return "limits.memlock" }
func (memlock) Title() string {
	return "Locked-memory limit large enough for NCCL and verbs registrations"
}

// minMemlockKB: below this NCCL's host-memory registrations fail outright
// on a multi-NIC node.
const minMemlockKB = 64 << 10

func (memlock) Run(ctx context.Context, env *Env) []result.Result {
	m := env.Facts.Memlock
	kb, e, err := m.KB, ev(m.Source, m.Line), m.Err
	const where = "measured in gdrcheck's own process; the job's context (srun, the container runtime, systemd's LimitMEMLOCK, /etc/security/limits.conf for ssh sessions) can differ, so run gdrcheck check there"
	if err != nil {
		return []result.Result{res(result.Unknown, "node", "CannotRead", "cannot read the locked-memory limit: "+err.Error()+"; "+where)}
	}
	text := "unlimited"
	if kb >= 0 {
		text = fmt.Sprintf("%d KiB", kb)
	}
	if len(env.Host.MatrixNICs()) == 0 {
		return []result.Result{res(result.Skip, "node", "NoRDMADevice", "RLIMIT_MEMLOCK is "+text+"; no RDMA NIC here, so no verbs registrations depend on it; "+where, e)}
	}
	min := int64(minMemlockKB)
	if env.Expect != nil && env.Expect.MemlockKB != "" {
		if env.Expect.MemlockKB == "unlimited" {
			min = -1
		} else {
			min, _ = node.ParseKB(env.Expect.MemlockKB)
		}
	}
	remedy := "set the memlock limit to unlimited for the job: ulimit -l unlimited, LimitMEMLOCK=infinity for the slurmd/container service, --ulimit memlock=-1 for docker, PropagateResourceLimitsExcept for Slurm"
	switch {
	case kb < 0:
		return []result.Result{res(result.Pass, "node", "Unlimited", "RLIMIT_MEMLOCK is unlimited; "+where, e)}
	case min < 0:
		return []result.Result{withRemedy(res(result.Fail, "node", "LimitBelowProfile", "RLIMIT_MEMLOCK is "+text+", the site profile requires unlimited; "+where, e), remedy)}
	case kb < min:
		return []result.Result{withRemedy(res(result.Fail, "node", "LimitTooSmall", fmt.Sprintf("RLIMIT_MEMLOCK is %s, below %d KiB: NCCL's and verbs' memory registrations will fail (ibv_reg_mr: Cannot allocate memory); %s", text, min, where), e), remedy)}
	}
	return []result.Result{withRemedy(res(result.Warn, "node", "Finite", fmt.Sprintf("RLIMIT_MEMLOCK is %s: enough to start, but large registrations can fail; unlimited is the safe setting; %s", text, where), e), remedy)}
}
