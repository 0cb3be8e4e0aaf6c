package checks_test

import (
	"cmp"
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/profile"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// fullProfile is a site profile base meets in every field.
const fullProfile = `gpus:
  count: 2
  model: H100
  nvlinks: 18
  pcie_gen: 5
  pcie_width: 16
nics:
  count: 2
  rate_gbps: 400
  link_layer: InfiniBand
  pcie_gen: 5
  pcie_width: 16
versions:
  driver: "570.*"
  cuda: "12.8"
  kernel: 6.8.0-45-generic
  nic_firmware: "28.39.*"
  rdma_core: "50.*"
gdr:
  required: true
  mode: peermem
memlock_kb: unlimited
`

// TestProfileFields: base meets fullProfile; for every field of the site
// profile, a host that violates that field alone fails the named check
// with the reason given, where the same host under a profile it meets
// (good: fullProfile unless said) fails nothing. Most cases change the
// profile's field on base; where base cannot violate a field (it has
// both GDR paths, an unlimited memlock, InfiniBand rails) the host
// changes and the profile field stays.
func TestProfileFields(t *testing.T) {
	run := func(t *testing.T, fx fixture, profile string) []result.Result {
		t.Helper()
		fx.expect = profile
		env := fx.env(t)
		// base's libibverbs is not found; give it one, as collection would.
		env.Facts.RDMACore = node.RDMACore{Version: "50.0", Source: "/usr/lib/libibverbs.so.1.14.50.0"}
		return checks.Run(context.Background(), env, checks.All(), checks.Options{}).Results
	}
	for _, r := range run(t, fixture{}, fullProfile) {
		if r.Status == result.Fail || r.Status == result.Error {
			t.Fatalf("base does not meet the full profile: %s %s %s: %s", r.ID, r.Subject, r.Reason, r.Message)
		}
	}
	// Every field of the profile has a case below, or says here why not.
	notHere := map[string]string{
		// The layout places devices in NCCL's topology file for a VM; no
		// check judges it (internal/app's TestNCCLTopoLayout tests it,
		// including a layout naming a device the node does not have).
		"layout": "topo --nccl-topo-file --expect",
	}
	tested := map[string]bool{}
	defer func() {
		for _, f := range profileFields(reflect.TypeFor[profile.Profile](), "") {
			if !tested[f] && notHere[f] == "" {
				t.Errorf("site profile field %s has no test", f)
			}
		}
	}()
	noPeermem := map[string]string{"@peermem": ""}
	noNICs := map[string]string{"@rdma0": "", "@rdma1": ""}
	smallLock := map[string]string{"@memlock": "8589934592"}
	jumbo := map[string]string{"@rdma0": "rdma mlx5_0 0000:19:00.0 layer=Ethernet netdev=eth2 mtu=4200", "@rdma1": "rdma mlx5_1 0000:3b:00.0 layer=Ethernet netdev=eth3 mtu=4200"}
	nccl := map[string]string{"nccl": "2.28.3", "nccl_path": "/usr/lib/libnccl.so.2"}
	for _, c := range []struct {
		field, from, to string
		check, reason   string
		set             map[string]string // the host's change, if any
		libs            map[string]string
		good            string // the profile the host meets ("": fullProfile)
	}{
		{"gpus.count", "count: 2\n  model", "count: 3\n  model", "gpu.present", "GPUCountMismatch", nil, nil, ""},
		{"gpus.model", "model: H100", "model: H200", "gpu.present", "ModelMismatch", nil, nil, ""},
		{"gpus.nvlinks", "nvlinks: 18", "nvlinks: 20", "nvlink.state", "NVLinkDown", nil, nil, ""},
		{"gpus.pcie_gen", "pcie_gen: 5\n  pcie_width: 16\nnics", "pcie_gen: 6\n  pcie_width: 16\nnics", "pcie.link", "BelowSiteProfile", nil, nil, ""},
		{"gpus.pcie_width", "pcie_width: 16\nnics", "pcie_width: 32\nnics", "pcie.link", "BelowSiteProfile", nil, nil, ""},
		{"nics.count", "count: 2\n  rate_gbps", "count: 3\n  rate_gbps", "nic.port", "FewerRailsThanProfile", nil, nil, ""},
		{"nics.rate_gbps", "rate_gbps: 400", "rate_gbps: 800", "nic.port", "RateBelowExpected", nil, nil, ""},
		{"nics.link_layer", "link_layer: InfiniBand", "link_layer: Ethernet", "nic.port", "WrongLinkLayer", nil, nil, ""},
		{"nics.pcie_gen", "pcie_gen: 5\n  pcie_width: 16\nversions", "pcie_gen: 6\n  pcie_width: 16\nversions", "pcie.link", "BelowSiteProfile", nil, nil, ""},
		{"nics.pcie_width", "pcie_width: 16\nversions", "pcie_width: 32\nversions", "pcie.link", "BelowSiteProfile", nil, nil, ""},
		{"versions.driver", `driver: "570.*"`, `driver: "575.*"`, "inventory.versions", "VersionMismatch", nil, nil, ""},
		{"versions.cuda", `cuda: "12.8"`, `cuda: "13.0"`, "inventory.versions", "VersionMismatch", nil, nil, ""},
		{"versions.kernel", "kernel: 6.8.0-45-generic", "kernel: 6.8.0-50-generic", "inventory.versions", "VersionMismatch", nil, nil, ""},
		{"versions.nic_firmware", `nic_firmware: "28.39.*"`, `nic_firmware: "28.40.*"`, "inventory.versions", "VersionMismatch", nil, nil, ""},
		{"versions.rdma_core", `rdma_core: "50.*"`, `rdma_core: "52.*"`, "inventory.versions", "VersionMismatch", nil, nil, ""},
		{"versions.nccl", "gdr:", "  nccl: \"2.27.*\"\ngdr:", "inventory.versions", "VersionMismatch", nil, nccl, ""},
		{"gdr.mode", "mode: any", "mode: peermem", "gdr.kernel-module", "PeermemExpected", noPeermem, nil, strings.Replace(fullProfile, "mode: peermem", "mode: any", 1)},
		{"memlock_kb", "memlock_kb: 8388608", "memlock_kb: unlimited", "limits.memlock", "LimitBelowProfile", smallLock, nil, strings.Replace(fullProfile, "memlock_kb: unlimited", "memlock_kb: 8388608", 1)},
		{"gdr.required", "required: false", "required: true", "gdr.kernel-module", "GDRRequired", noNICs, nil, strings.Replace(fullProfile, "required: true", "required: false", 1)},
		{"nics.mtu", "nics: {}", "nics: {mtu: 9000}", "nic.port", "MTUBelowProfile", jumbo, nil, "nics: {}\n"},
	} {
		tested[c.field] = true
		t.Run(c.field, func(t *testing.T) {
			good := cmp.Or(c.good, fullProfile)
			if !strings.Contains(good, c.from) {
				t.Fatalf("the good profile has no %q", c.from)
			}
			fx := fixture{set: c.set, libs: c.libs}
			for _, r := range run(t, fx, good) {
				if r.ID == c.check && r.Status == result.Fail {
					t.Fatalf("the host fails %s under a profile it meets: %s %s", c.check, r.Reason, r.Message)
				}
			}
			var got []string
			for _, r := range run(t, fx, strings.Replace(good, c.from, c.to, 1)) {
				if r.Status != result.Fail {
					continue
				}
				got = append(got, r.ID+" "+r.Reason)
				if r.ID == c.check && (c.reason == "" || r.Reason == c.reason) {
					return
				}
			}
			t.Errorf("%s violated alone: no %s %s failure; failures: %q", c.field, c.check, c.reason, got)
		})
	}
}

// TestMissingGPUNamed: a GPU the driver saw that is gone from sysfs is
// named as a missing GPU (bus id, where the driver last saw it), and its
// NIC, left without a GPU to pair with, is not blamed as a missing rail.
func TestMissingGPUNamed(t *testing.T) {
	fx := fixture{
		extra: `hostbridge pci0000:5c numa=0
  0000:5c:01.0 rootport
    0000:5d:00.0 nic
rdma mlx5_2 0000:5d:00.0 rate=400
nvml-gpu 0000:5e:00.0 name="NVIDIA H100 80GB HBM3"
`,
		expect: "gpus: {count: 3}\nnics: {count: 3}\n",
	}
	rep := checks.Run(context.Background(), fx.env(t), checks.All(), checks.Options{})
	var count, rails bool
	for _, r := range rep.Results {
		switch {
		case r.ID == "gpu.present" && r.Reason == "GPUCountMismatch":
			count = true
			if r.Status != result.Fail || !strings.Contains(r.Message, "missing: GPU 2 at 0000:5e:00.0 (last seen by") {
				t.Errorf("gpu.present does not name the missing GPU: %s %s", r.Status, r.Message)
			}
			if !slices.ContainsFunc(r.Evidence, func(e result.Evidence) bool { return strings.HasSuffix(e.Value, "paired with: mlx5_2") }) {
				t.Errorf("gpu.present does not say which NIC lost its GPU: %+v", r.Evidence)
			}
		case r.ID == "gpu.present" && r.Reason == "NotInSysfs":
			if r.Subject != "0000:5e:00.0" || r.Status != result.Fail {
				t.Errorf("gpu.present: %s %s %s", r.Status, r.Subject, r.Message)
			}
		case r.ID == "nic.port" && r.Reason == "FewerRailsThanProfile":
			t.Errorf("a missing GPU is blamed on the NICs: %s", r.Message)
		case r.ID == "nic.port" && r.Reason == "RailsFollowMissingGPU":
			rails = true
			if r.Status != result.Warn || !strings.Contains(r.Message, "see gpu.present") {
				t.Errorf("nic.port: %s %s", r.Status, r.Message)
			}
		}
	}
	if !count || !rails {
		t.Errorf("GPUCountMismatch %v, RailsFollowMissingGPU %v:\n%v", count, rails, rep.Results)
	}
	if v := rep.Verdict; v.Status != checks.NotReady || !slices.Contains(v.Failing, "gpu.present") || slices.Contains(v.Failing, "nic.port") {
		t.Errorf("verdict %+v", v)
	}
}

// profileFields lists a profile type's YAML fields as dotted paths.
func profileFields(ty reflect.Type, prefix string) []string {
	var out []string
	for f := range ty.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			out = append(out, profileFields(ft, prefix+name+".")...)
			continue
		}
		out = append(out, prefix+name)
	}
	return out
}
