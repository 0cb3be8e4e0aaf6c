package checks

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/profile"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

type inventory struct{}

func (inventory) ID() string { return "inventory.versions" }
func (inventory) Title() string {
	return "Driver, CUDA, NCCL, kernel, rdma-core and NIC firmware versions (recorded for fleet consistency)"
}

func (inventory) Run(ctx context.Context, env *Env) []result.Result {
	h := env.Host
	var out []result.Result
	var want profile.Versions // what the site profile pins; "" where nothing
	if env.Expect != nil && env.Expect.Versions != nil {
		want = *env.Expect.Versions
	}
	item := func(subject, found, src, expect string) {
		switch {
		case found == "":
			out = append(out, res(result.Unknown, subject, "NotFound", subject+" version not found", ev(src, "not found")))
		case expect != "" && !profile.VersionMatches(found, expect):
			out = append(out, withRemedy(res(result.Fail, subject, "VersionMismatch", fmt.Sprintf("%s %s, the site profile expects %s", subject, found, expect), ev(src, found)),
				"install the fleet's version so every node runs the same stack"))
		default:
			out = append(out, res(result.Pass, subject, "Recorded", subject+" "+found, ev(src, found)))
		}
	}
	driver, dsrc := "", "nvml"
	if h.GPUFacts != nil && h.GPUFacts.DriverVersion != "" {
		driver, dsrc = h.GPUFacts.DriverVersion, h.GPUFacts.Source
	} else if d := env.Facts.Driver; d.Version != "" {
		driver, dsrc = d.Version, d.Source
	}
	if len(h.GPUs) > 0 || driver != "" {
		item("driver", driver, dsrc, want.Driver)
	}
	if h.GPUFacts != nil && h.GPUFacts.CUDADriverVersion != "" {
		item("cuda-driver", h.GPUFacts.CUDADriverVersion, h.GPUFacts.Source, want.CUDA)
	}
	lib := func(l node.Library, subject string, expect string) {
		v := l.Version
		src := "dlopen " + l.Path
		if v == "" {
			if why := l.Error; why != "" {
				out = append(out, res(result.Unknown, subject, "NotLoadable", subject+" could not be loaded: "+firstLines(why, 1), ev("dlopen", firstLines(why, 1))))
				return
			}
		}
		item(subject, v, src, expect)
	}
	if l := env.Facts.Libraries; l != nil {
		lib(l.CUDARuntime, "cuda-runtime", "")
		lib(l.NCCL, "nccl", want.NCCL)
	}
	item("kernel", h.Kernel, display(env, "proc/sys/kernel/osrelease"), want.Kernel)
	if len(h.NICs) > 0 {
		rc := env.Facts.RDMACore
		src := rc.Source
		if src == "" {
			src = "libibverbs.so.1.*"
		}
		item("rdma-core", rc.Version, src, want.RDMACore)
		if m := env.Facts.MLX5Core; m.Err == nil && m.Value != "" {
			item("mlx5_core", m.Value, m.Source, "")
		}
	}
	// NIC firmware: each NIC, and a warning when NICs of one model disagree.
	byModel := map[string]map[string][]string{}
	for _, n := range h.NICs {
		subject := "firmware:" + n.Name
		item(subject, n.FWVersion, display(env, "sys/class/infiniband/"+n.Name+"/fw_ver"), want.NICFirmware)
		if n.FWVersion == "" {
			continue
		}
		model := n.HCAType
		if model == "" && n.Dev != nil {
			model = fmt.Sprintf("%04x:%04x", n.Dev.Vendor, n.Dev.DeviceID)
		}
		if byModel[model] == nil {
			byModel[model] = map[string][]string{}
		}
		byModel[model][n.FWVersion] = append(byModel[model][n.FWVersion], n.Name)
	}
	models := make([]string, 0, len(byModel))
	for m := range byModel {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		fws := byModel[m]
		if len(fws) < 2 {
			continue
		}
		var parts []string
		var evs []result.Evidence
		for fw, names := range fws {
			parts = append(parts, fmt.Sprintf("%s on %s", fw, strings.Join(names, ",")))
			for _, n := range names {
				evs = append(evs, ev(display(env, "sys/class/infiniband/"+n+"/fw_ver"), fw))
			}
		}
		sort.Strings(parts)
		sort.Slice(evs, func(i, j int) bool { return evs[i].Source < evs[j].Source })
		out = append(out, withRemedy(res(result.Warn, "firmware:"+m, "MixedFirmware",
			fmt.Sprintf("NICs of model %s run different firmware: %s", m, strings.Join(parts, "; ")), evs...),
			"flash one firmware version on every NIC of a model (mlxfwmanager), so behaviour and tuning are the same across rails"))
	}
	return out
}
