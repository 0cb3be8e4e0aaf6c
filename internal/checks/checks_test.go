package checks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/profile"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/testutil/scratch"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

const hostsDir = "../../testdata/hosts"

// now anchors the Xid window of every fixture.
var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// The fixed parts of base's files that the fact tokens complete.
const (
	baseModules  = "nvidia nvidia_uvm @peermem mlx5_core mlx5_ib ib_core"
	baseCmdline  = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro @cmdline"
	baseLimits   = `Limit                     Soft Limit           Hard Limit           Units\nMax locked memory         @memlock            @memlock            bytes\n` // \n as fakehost writes it
	baseDmesgTop = "2026-12-01T10:00:00,000000+00:00 Linux version 6.8.0-45-generic"
)

// base is a healthy two-GPU node: each GPU under a PCIe switch with its
// 400G NIC, NVSwitch-connected GPUs, peermem and the open driver. The
// @tokens are where cases add attributes; extra lines are appended.
const base = `
hostname base
kernel 6.8.0-45-generic
numa 0 0-31
module ` + baseModules + `
file proc/driver/nvidia/version "@driver\n"
file proc/cmdline "` + baseCmdline + `\n"
file proc/self/limits "` + baseLimits + `"
command dmesg.txt <<END
` + baseDmesgTop + `
@dmesg
END
command environ.txt <<END
@environ
END
hostbridge pci0000:15 numa=0
  0000:15:01.0 rootport
    0000:16:00.0 usp
      0000:17:00.0 dsp @dsp0
        0000:18:00.0 gpu id=10de:2330 curgen=1 @gpu0
      0000:17:01.0 dsp @dsp1
        0000:19:00.0 nic @nic0
hostbridge pci0000:37 numa=0
  0000:37:01.0 rootport
    0000:38:00.0 usp
      0000:39:00.0 dsp
        0000:3a:00.0 gpu id=10de:2330 curgen=1
      0000:39:01.0 dsp
        0000:3b:00.0 nic
@rdma0
@rdma1
@nvml
@nvml0
@nvml1
`

var defaults = map[string]string{
	"@peermem": "nvidia_peermem",
	"@driver":  "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Mar 13 19:01:23 UTC 2025",
	"@cmdline": "iommu=pt",
	"@memlock": "unlimited",
	"@dmesg":   "2026-12-01T10:00:01,000000+00:00 mlx5_core 0000:19:00.0: firmware version: 28.39.1002",
	"@environ": "",
	"@dsp0":    "", "@dsp1": "", "@gpu0": "", "@nic0": "",
	"@rdma0": "rdma mlx5_0 0000:19:00.0 rate=400",
	"@rdma1": "rdma mlx5_1 0000:3b:00.0 rate=400",
	"@nvml":  "nvml driver=570.133.20 cuda=12.8 p2p=OK",
	"@nvml0": `nvml-gpu 0000:18:00.0 name="NVIDIA H100 80GB HBM3" nvswitch=18 fabric=completed fabric_status=success curgen=1`,
	"@nvml1": `nvml-gpu 0000:3a:00.0 name="NVIDIA H100 80GB HBM3" nvswitch=18 fabric=completed fabric_status=success curgen=1`,
}

type fixture struct {
	set    map[string]string // token -> replacement
	extra  string            // lines appended
	file   string            // a testdata/hosts fixture instead of base
	snap   string            // a snapshot archive instead of base
	expect string            // site profile YAML
	noEnv  bool              // environment not captured
	libs   map[string]string // libraries.json
}

// factTokens are base's tokens that only change node facts, not the
// topology: a case that sets them shares base's discovered host and gets
// its facts changed in memory, as collection would have read them from the
// file the token completes.
var factTokens = map[string]func(f *node.Facts, v string){
	"@peermem": func(f *node.Facts, v string) {
		f.Modules.Loaded = node.ParseModules([]byte(strings.ReplaceAll(strings.ReplaceAll(baseModules, "@peermem", v), " ", "\n")))
		f.Modules.BuiltIn = map[string]bool{}
	},
	"@driver": func(f *node.Facts, v string) { f.Driver = node.ParseDriver(f.Driver.Source, v) },
	"@cmdline": func(f *node.Facts, v string) {
		f.Cmdline.Value = strings.TrimSpace(strings.ReplaceAll(baseCmdline, "@cmdline", v))
	},
	"@memlock": func(f *node.Facts, v string) {
		m, ok := node.ParseLimits(f.Memlock.Source, strings.ReplaceAll(strings.ReplaceAll(baseLimits, "@memlock", v), "\\n", "\n"))
		if !ok {
			panic("base's limits have no locked-memory line")
		}
		f.Memlock = m
	},
	"@dmesg": func(f *node.Facts, v string) {
		f.KernelLog.Xids = node.ParseXids([]byte(baseDmesgTop + "\n" + v + "\n"))
	},
	"@environ": func(f *node.Facts, v string) {
		f.Environ = node.Environ{Vars: node.ParseEnviron([]byte(v + "\n")), Known: true}
	},
}

// source is the host description a fixture is discovered from, and the
// in-memory changes to its facts.
func (f fixture) source(t *testing.T) (key string, load func() (machine.Root, func(), error), change []func(*node.Facts)) {
	switch {
	case f.snap != "":
		return "snap " + f.snap, func() (machine.Root, func(), error) { return snapshot.Open(f.snap) }, nil
	case f.file != "":
		return "file " + f.file + "\n" + f.extra, func() (machine.Root, func(), error) {
			spec, err := fakehost.Load(f.file)
			if err != nil {
				return machine.Root{}, nil, err
			}
			if f.extra != "" {
				more, err := fakehost.Parse("extra", strings.NewReader(f.extra))
				if err != nil {
					return machine.Root{}, nil, err
				}
				for k, v := range more.Files {
					spec.Files[k] = v
				}
			}
			return materialize(spec)
		}, nil
	}
	src := base
	// Longest tokens first: @nvml must not eat @nvml0.
	toks := make([]string, 0, len(defaults))
	for k := range defaults {
		toks = append(toks, k)
	}
	sort.Slice(toks, func(i, j int) bool { return len(toks[i]) > len(toks[j]) })
	for _, k := range toks {
		v := defaults[k]
		if r, ok := f.set[k]; ok {
			if ch, isFact := factTokens[k]; isFact {
				change = append(change, func(fs *node.Facts) { ch(fs, r) })
			} else {
				v = r
			}
		}
		src = strings.ReplaceAll(src, k, v)
	}
	src += f.extra
	return "base\n" + src, func() (machine.Root, func(), error) {
		spec, err := fakehost.Parse("base", strings.NewReader(src))
		if err != nil {
			return machine.Root{}, nil, fmt.Errorf("%v\n%s", err, src)
		}
		return materialize(spec)
	}, change
}

// discovered is one host description, materialised, discovered and
// collected once for the whole package.
type discovered struct {
	once    sync.Once
	host    *topology.Host
	facts   *node.Facts
	cleanup func()
	err     error
}

var (
	hostsMu sync.Mutex
	hosts   = map[string]*discovered{}
	// fixturesDir holds every materialised description (TestMain).
	fixturesDir string
)

func TestMain(m *testing.M) {
	scratch.OnTmpfs()
	dir, err := os.MkdirTemp("", "checks-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fixturesDir = dir
	code := m.Run()
	for _, d := range hosts {
		if d.cleanup != nil {
			d.cleanup()
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func materialize(spec *fakehost.Spec) (machine.Root, func(), error) {
	dir, err := os.MkdirTemp(fixturesDir, "host-")
	if err != nil {
		return machine.Root{}, nil, err
	}
	if err := spec.Materialize(dir); err != nil {
		return machine.Root{}, nil, err
	}
	return machine.NewRoot(dir), nil, nil
}

// load discovers and collects the description under key once; every
// caller gets its own copy of the facts to change.
func load(t testing.TB, key string, open func() (machine.Root, func(), error)) (*topology.Host, node.Facts) {
	t.Helper()
	hostsMu.Lock()
	d, ok := hosts[key]
	if !ok {
		d = &discovered{}
		hosts[key] = d
	}
	hostsMu.Unlock()
	d.once.Do(func() {
		var root machine.Root
		root, d.cleanup, d.err = open()
		if d.err != nil {
			return
		}
		d.host, d.err = discover.Discover(context.Background(), discover.WithRoot(root))
		if d.err == nil {
			d.facts = sysinfo.Collect(context.Background(), root, d.host, sysinfo.Options{})
		}
	})
	if d.err != nil {
		t.Fatal(d.err)
	}
	return d.host, *d.facts
}

// env is what the checks judge for a fixture. The facts are a copy: the
// in-memory changes replace whole fields, never the shared maps and slices.
func (f fixture) env(t *testing.T) *checks.Env {
	t.Helper()
	key, open, change := f.source(t)
	h, facts := load(t, key, open)
	for _, c := range change {
		c(&facts)
	}
	if f.libs != nil {
		b, err := json.Marshal(f.libs)
		if err != nil {
			t.Fatal(err)
		}
		if facts.Libraries, err = node.ParseLibraries(b); err != nil {
			t.Fatal(err)
		}
	}
	if f.noEnv {
		facts.Environ = node.Environ{}
	} else if !facts.Environ.Known {
		facts.Environ = node.Environ{Vars: map[string]string{}, Known: true}
	}
	env := &checks.Env{Host: h, Facts: &facts, Now: now, XidWindow: 24 * time.Hour}
	if f.expect != "" {
		e, err := profile.Parse("expect.yaml", []byte(f.expect))
		if err != nil {
			t.Fatal(err)
		}
		env.Expect = e
	}
	return env
}

// TestChecks runs each check on fixtures that make it pass and fail, and
// asserts the status, reason and subject of a result it must give; a case
// that passes must give no fail, warn or error on any subject.
func TestChecks(t *testing.T) {
	for _, tc := range checkCases {
		t.Run(tc.check+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			env := tc.fx.env(t)
			rep := checks.Run(context.Background(), env, checks.All(), checks.Options{Only: []string{tc.check}})
			var got []string
			found := false
			for _, r := range rep.Results {
				if r.ID != tc.check {
					t.Errorf("result of %s in a run of %s", r.ID, tc.check)
				}
				if tc.status == result.Pass && (r.Status == result.Fail || r.Status == result.Warn || r.Status == result.Error) {
					t.Errorf("a pass case gives %s %s %s: %s", r.Status, r.Reason, r.Subject, r.Message)
				}
				if !found && r.Status == tc.status && r.Reason == tc.reason && r.Subject == tc.subject {
					if r.Message == "" || (r.Status != result.Pass && r.Status != result.Skip && len(r.Evidence) == 0 && r.Reason != "EnvironmentUnknown") {
						t.Errorf("result without message or evidence: %+v", r)
					}
					found = true
					continue
				}
				got = append(got, string(r.Status)+" "+r.Reason+" "+r.Subject+": "+r.Message)
			}
			if !found {
				t.Errorf("no %s %s %s; got:\n  %s", tc.status, tc.reason, tc.subject, strings.Join(got, "\n  "))
			}
		})
	}
}

// noFabricInfo: NVSwitch-connected GPUs whose driver facts hold no fabric
// registration (drivers before 535), so fabric manager is asked instead.
var noFabricInfo = map[string]string{
	"@nvml0": `nvml-gpu 0000:18:00.0 name="NVIDIA H100 80GB HBM3" nvswitch=18`,
	"@nvml1": `nvml-gpu 0000:3a:00.0 name="NVIDIA H100 80GB HBM3" nvswitch=18`,
}

// gpu0Dir is base's GPU0 in sysfs.
const gpu0Dir = "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0"

// gpu0Attr is the fixture line that replaces an attribute of base's GPU0.
func gpu0Attr(name, value string) string {
	return "file " + gpu0Dir + "/" + name + " \"" + value + "\\n\"\n"
}

// multiNode: base's GPUs in a multi-node NVLink domain (a GB200 NVL72
// rack's cluster UUID, as NVML reports it).
var multiNode = map[string]string{
	"@nvml0": `nvml-gpu 0000:18:00.0 name="NVIDIA H100 80GB HBM3" nvswitch=18 fabric=completed fabric_status=success fabric_clique=2 fabric_cluster=7d5b9d2f-0c1a-4e4b-9b1e-3f0a8c6d2e11`,
	"@nvml1": `nvml-gpu 0000:3a:00.0 name="NVIDIA H100 80GB HBM3" nvswitch=18 fabric=completed fabric_status=success fabric_clique=2 fabric_cluster=7d5b9d2f-0c1a-4e4b-9b1e-3f0a8c6d2e11`,
}

// imexUp is a healthy two-node IMEX domain: the service, nvidia-imex-ctl
// -N's report (the layout of a real one, internal/facts/node/testdata/imex)
// and the channel device.
func imexUp(service, report string, channel bool) string {
	if report == "" {
		report = "Nodes:\nNode #0   - 10.0.0.1        - READY                - Version: 570.133.20\nNode #1   - 10.0.0.2        - READY                - Version: 570.133.20\n\n Nodes From\\To  0   1\n       0        C   C\n       1        C   C\n\nDomain State: UP\n"
	}
	s := "command systemctl-nvidia-imex.txt " + strconv.Quote(service+"\n") + "\ncommand nvidia-imex-ctl-N.txt " + strconv.Quote(report) + "\n"
	if channel {
		s += "file dev/nvidia-caps-imex-channels/channel0 \"\"\n"
	}
	return s
}

type checkCase struct {
	name    string
	check   string
	fx      fixture
	status  result.Status
	reason  string
	subject string
}

var checkCases = []checkCase{
	// gdr.kernel-module
	{"peermem and dmabuf", "gdr.kernel-module", fixture{}, result.Pass, "PeermemAndDMABuf", "node"},
	{"dmabuf only", "gdr.kernel-module", fixture{set: map[string]string{"@peermem": ""}}, result.Pass, "DMABufAvailable", "node"},
	{"peermem with the proprietary module", "gdr.kernel-module", fixture{set: map[string]string{"@driver": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024"}}, result.Pass, "PeermemLoaded", "node"},
	// RDMA NICs that cannot register GPU memory: NOT READY, unless the
	// profile says GDR is not required (then ready, saying so). No RDMA
	// NIC at all (below): DEGRADED, NOT READY when the profile requires GDR.
	{"no GDR path", "gdr.kernel-module", fixture{set: map[string]string{"@peermem": "", "@driver": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024"}}, result.Fail, "NoGDRPath", "node"},
	{"no GDR path, required", "gdr.kernel-module", fixture{set: map[string]string{"@peermem": "", "@driver": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024"}, expect: "gdr: {required: true}\n"}, result.Fail, "NoGDRPath", "node"},
	{"no GDR path, not required", "gdr.kernel-module", fixture{set: map[string]string{"@peermem": "", "@driver": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024"}, expect: "gdr: {required: false}\n"}, result.Skip, "NoGDRPath", "node"},
	{"no GDR path, mode only", "gdr.kernel-module", fixture{set: map[string]string{"@peermem": "", "@driver": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024"}, expect: "gdr: {mode: any}\n"}, result.Fail, "NoGDRPath", "node"},
	// No path found, but the driver could not be read: whether dma-buf is
	// possible is not known, so neither is the path (never a fail, never a pass).
	{"driver unreadable, no peermem", "gdr.kernel-module", fixture{set: map[string]string{"@peermem": "", "@driver": ""}}, result.Unknown, "CannotRead", "node"},
	{"old kernel, no peermem", "gdr.kernel-module", fixture{set: map[string]string{"@peermem": ""}, extra: "kernel 5.4.0-150-generic\n"}, result.Fail, "NoGDRPath", "node"},
	{"profile wants peermem", "gdr.kernel-module", fixture{set: map[string]string{"@peermem": ""}, expect: "gdr: {mode: peermem}\n"}, result.Fail, "PeermemExpected", "node"},
	{"no NIC", "gdr.kernel-module", fixture{set: map[string]string{"@rdma0": "", "@rdma1": ""}}, result.Warn, "NoGDRPath", "node"},
	{"no NIC, required", "gdr.kernel-module", fixture{set: map[string]string{"@rdma0": "", "@rdma1": ""}, expect: "gdr: {required: true}\n"}, result.Fail, "GDRRequired", "node"},
	{"no NIC, not required", "gdr.kernel-module", fixture{set: map[string]string{"@rdma0": "", "@rdma1": ""}, expect: "gdr: {required: false}\n"}, result.Skip, "NoRDMADevice", "node"},
	// gdr.nic-affinity
	{"NIC under the GPU's switch", "gdr.nic-affinity", fixture{}, result.Pass, "NICAtPIX", "GPU0-mlx5_0"},
	{"NIC on the other socket", "gdr.nic-affinity", fixture{file: hostsDir + "/pcie-l40s-remote-nic.host"}, result.Fail, "NICBeyondGDRLevel", "GPU0-mlx5_0"},
	{"GDR forced by NCCL_NET_GDR_LEVEL", "gdr.nic-affinity", fixture{file: hostsDir + "/pcie-l40s-remote-nic.host", extra: "command environ.txt \"NCCL_NET_GDR_LEVEL=SYS\\n\"\n"}, result.Warn, "GDRForcedBeyondPXB", "GPU2-mlx5_0"},
	{"bad NCCL_NET_GDR_LEVEL", "gdr.nic-affinity", fixture{set: map[string]string{"@environ": "NCCL_NET_GDR_LEVEL=CLOSE"}}, result.Fail, "BadGDRLevel", "node"},
	{"no NIC at all", "gdr.nic-affinity", fixture{set: map[string]string{"@rdma0": "", "@rdma1": ""}}, result.Skip, "NoRDMADevice", "node"},
	// pcie.acs
	{"ACS present, not redirecting", "pcie.acs", fixture{}, result.Pass, "ACSAllowsP2P", "0000:17:00.0"},
	{"ACS redirecting on the GPU's port", "pcie.acs", fixture{set: map[string]string{"@dsp0": "acs=0x1d"}}, result.Fail, "ACSRedirectsP2P", "0000:17:00.0"},
	{"egress control on the NIC's port", "pcie.acs", fixture{set: map[string]string{"@dsp1": "acs=0x20"}}, result.Fail, "ACSRedirectsP2P", "0000:17:01.0"},
	{"no ACS capability", "pcie.acs", fixture{set: map[string]string{"@dsp0": "acs=none"}}, result.Pass, "NoACS", "0000:17:00.0"},
	{"not root", "pcie.acs", fixture{extra: "privileged no\n"}, result.Unknown, "NeedsRoot", "0000:17:00.0"},
	// pcie.link
	{"idle GPU at Gen1, trained for Gen5", "pcie.link", fixture{}, result.Pass, "IdleDownclock", "GPU0"},
	{"GPU trained narrow", "pcie.link", fixture{set: map[string]string{"@gpu0": "curwidth=8"}}, result.Fail, "LinkWidthDegraded", "GPU0"},
	{"GPU trained low per the driver", "pcie.link", fixture{set: map[string]string{"@nvml0": `nvml-gpu 0000:18:00.0 nvswitch=18 maxgen=4 curgen=1`}}, result.Fail, "LinkSpeedDegraded", "GPU0"},
	{"NIC trained low", "pcie.link", fixture{set: map[string]string{"@nic0": "curgen=4"}}, result.Fail, "LinkSpeedDegraded", "mlx5_0"},
	{"idle GPU without the driver", "pcie.link", fixture{set: map[string]string{"@nvml": "", "@nvml0": "", "@nvml1": ""}}, result.Unknown, "IdleDownclockPossible", "GPU0"},
	{"GPU behind a Gen4 port", "pcie.link", fixture{set: map[string]string{"@dsp0": "gen=4"}}, result.Warn, "SlotLimited", "GPU0"},
	{"profile wants Gen5", "pcie.link", fixture{set: map[string]string{"@dsp0": "gen=4"}, expect: "gpus: {pcie_gen: 5, pcie_width: 16}\n"}, result.Fail, "BelowSiteProfile", "GPU0"},
	{"NIC full speed", "pcie.link", fixture{}, result.Pass, "FullSpeed", "mlx5_0"},
	{"NIC link speed unknown", "pcie.link", fixture{extra: "file sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0/current_link_speed \"Unknown\\n\"\n"}, result.Unknown, "CurrentLinkUnknown", "mlx5_0"},
	// pcie.mrr
	{"NIC MRRS 512", "pcie.mrr", fixture{}, result.Pass, "Configured", "mlx5_0"},
	{"NIC MRRS 256", "pcie.mrr", fixture{set: map[string]string{"@nic0": "mrrs=256"}}, result.Warn, "SmallMaxReadReq", "mlx5_0"},
	{"NIC MPS above its port's", "pcie.mrr", fixture{set: map[string]string{"@nic0": "mps=512", "@dsp1": "mps=256"}}, result.Fail, "MaxPayloadMismatch", "mlx5_0"},
	{"MRRS not readable", "pcie.mrr", fixture{extra: "privileged no\n"}, result.Unknown, "NeedsRoot", "mlx5_0"},
	// iommu.mode
	{"no IOMMU", "iommu.mode", fixture{}, result.Pass, "IOMMUOff", "GPU0"},
	{"passthrough group", "iommu.mode", fixture{set: map[string]string{"@gpu0": "iommu=7"}, extra: "file sys/kernel/iommu_groups/7/type \"identity\\n\"\n"}, result.Pass, "Passthrough", "GPU0"},
	{"translated DMA", "iommu.mode", fixture{set: map[string]string{"@nic0": "iommu=9", "@cmdline": "intel_iommu=on"}, extra: "file sys/kernel/iommu_groups/9/type \"DMA-FQ\\n\"\n"}, result.Fail, "TranslatedDMA", "mlx5_0"},
	// limits.memlock
	{"unlimited", "limits.memlock", fixture{}, result.Pass, "Unlimited", "node"},
	{"64 KiB", "limits.memlock", fixture{set: map[string]string{"@memlock": "65536"}}, result.Fail, "LimitTooSmall", "node"},
	{"8 GiB", "limits.memlock", fixture{set: map[string]string{"@memlock": "8589934592"}}, result.Warn, "Finite", "node"},
	{"profile wants unlimited", "limits.memlock", fixture{set: map[string]string{"@memlock": "8589934592"}, expect: "memlock_kb: unlimited\n"}, result.Fail, "LimitBelowProfile", "node"},
	// pcie.p2p
	{"NVLink peers", "pcie.p2p", fixture{}, result.Pass, "P2PNVLink", "GPU0-GPU1"},
	{"chipset without P2P", "pcie.p2p", fixture{file: hostsDir + "/threadripper-2gpu-pcie.host"}, result.Fail, "ChipsetNotSupported", "GPU0-GPU1"},
	{"PCIe peers", "pcie.p2p", fixture{file: hostsDir + "/pcie-l40s-remote-nic.host"}, result.Pass, "P2PPCIe", "GPU0-GPU1"},
	{"one GPU", "pcie.p2p", fixture{snap: "../../testdata/snapshots/h200x1-vm.tgz"}, result.Skip, "SingleGPU", "node"},
	{"no driver", "pcie.p2p", fixture{set: map[string]string{"@nvml": "", "@nvml0": "", "@nvml1": ""}}, result.Unknown, "NoDriverFacts", "node"},
	// nic.port
	{"active rail", "nic.port", fixture{}, result.Pass, "Active", "mlx5_0:1"},
	{"rail port down", "nic.port", fixture{set: map[string]string{"@rdma0": "rdma mlx5_0 0000:19:00.0 state=DOWN phys=Disabled"}}, result.Fail, "PortDown", "mlx5_0:1"},
	{"rail at 200 among 400s", "nic.port", fixture{set: map[string]string{"@rdma1": "rdma mlx5_1 0000:3b:00.0 rate=200"}}, result.Fail, "RateBelowExpected", "mlx5_1:1"},
	{"profile wants 400", "nic.port", fixture{set: map[string]string{"@rdma0": "rdma mlx5_0 0000:19:00.0 rate=200", "@rdma1": "rdma mlx5_1 0000:3b:00.0 rate=200"}, expect: "nics: {rate_gbps: 400}\n"}, result.Fail, "RateBelowExpected", "mlx5_0:1"},
	{"symbol errors", "nic.port", fixture{set: map[string]string{"@rdma0": "rdma mlx5_0 0000:19:00.0 symbol_error=12 link_downed=1"}}, result.Warn, "ErrorCounters", "mlx5_0:1"},
	{"RoCE at MTU 1500", "nic.port", fixture{set: map[string]string{"@rdma0": "rdma mlx5_0 0000:19:00.0 layer=Ethernet netdev=eth2 mtu=1500"}}, result.Warn, "SmallMTU", "mlx5_0:1"},
	{"fewer rails than the profile", "nic.port", fixture{expect: "nics: {count: 8}\n"}, result.Fail, "FewerRailsThanProfile", "node"},
	{"rail rate unreadable", "nic.port", fixture{set: map[string]string{"@rdma0": "rdma mlx5_0 0000:19:00.0 rate=unknown"}}, result.Unknown, "RateUnknown", "mlx5_0:1"},
	{"front-end port down", "nic.port", fixture{file: hostsDir + "/hgx-h100-8gpu-12nic-roce.host"}, result.Warn, "PortDown", "mlx5_4:1"},
	// nvlink.state
	{"18 links up", "nvlink.state", fixture{}, result.Pass, "AllUp", "GPU0"},
	{"two links down", "nvlink.state", fixture{set: map[string]string{"@nvml0": `nvml-gpu 0000:18:00.0 name="NVIDIA H100 80GB HBM3" nvswitch=18 nvlink_down=2 fabric=completed fabric_status=success`}}, result.Fail, "NVLinkDown", "GPU0"},
	{"fabric not registered", "nvlink.state", fixture{set: map[string]string{"@nvml1": `nvml-gpu 0000:3a:00.0 name="NVIDIA H100 80GB HBM3" nvswitch=18 fabric=in-progress fabric_status=""`}}, result.Fail, "FabricNotReady", "GPU1-fabric"},
	{"degraded pair on a PCIe board", "nvlink.state", fixture{file: hostsDir + "/a100sxm-4gpu-nvlink-degraded.host"}, result.Fail, "NVLinkDown", "GPU2"},
	{"fabric manager inactive", "nvlink.state", fixture{set: noFabricInfo, extra: "command systemctl-nvidia-fabricmanager.txt \"inactive\\n\"\n"}, result.Fail, "FabricManagerDown", "node"},
	{"fabric manager said nothing", "nvlink.state", fixture{set: noFabricInfo, extra: "command systemctl-nvidia-fabricmanager.txt \"\"\n"}, result.Unknown, "FabricManagerUnknown", "node"},
	{"fabric manager at the driver's version", "nvlink.state", fixture{extra: "command nv-fabricmanager-version.txt \"Fabric Manager version is : 570.133.20\\n\"\n"}, result.Pass, "FabricManagerVersionMatches", "node"},
	{"fabric manager of another version", "nvlink.state", fixture{extra: "command nv-fabricmanager-version.txt \"Fabric Manager version is : 570.124.06\\n\"\n"}, result.Fail, "FabricManagerVersionMismatch", "node"},
	{"fabric manager refused the driver (journal)", "nvlink.state", fixture{set: noFabricInfo, extra: "command systemctl-nvidia-fabricmanager.txt \"failed\\n\"\ncommand journalctl-nvidia-fabricmanager.txt \"Starting NVIDIA fabric manager service...\\nfabric manager NVIDIA GPU driver interface version 570.124.06 don't match with driver version 570.133.20. Please update with matching NVIDIA driver package.\\n\"\n"}, result.Fail, "FabricManagerVersionMismatch", "node"},
	{"fabric manager active, version unread", "nvlink.state", fixture{set: noFabricInfo, extra: "command systemctl-nvidia-fabricmanager.txt \"active\\n\"\n"}, result.Unknown, "FabricManagerVersionUnknown", "node"},
	{"NVLink unknown", "nvlink.state", fixture{set: map[string]string{"@nvml0": `nvml-gpu 0000:18:00.0 nvlink=unknown`}}, result.Unknown, "NoDriverFacts", "GPU0"},
	{"PCIe GPUs", "nvlink.state", fixture{file: hostsDir + "/pcie-l40s-remote-nic.host"}, result.Skip, "NoNVLink", "GPU0"},
	// nvlink.imex
	{"single-node NVLink domain", "nvlink.imex", fixture{}, result.Skip, "SingleNodeNVLink", "node"},
	{"PCIe GPUs, no fabric", "nvlink.imex", fixture{file: hostsDir + "/pcie-l40s-remote-nic.host"}, result.Skip, "NoFabricInfo", "node"},
	{"IMEX domain up", "nvlink.imex", fixture{set: multiNode, extra: imexUp("active", "", true)}, result.Pass, "IMEXDomainUp", "node"},
	{"IMEX channel present", "nvlink.imex", fixture{set: multiNode, extra: imexUp("active", "", true)}, result.Pass, "IMEXChannel", "node"},
	{"IMEX daemon down", "nvlink.imex", fixture{set: multiNode, extra: imexUp("inactive", "", true)}, result.Fail, "IMEXDown", "node"},
	{"IMEX node with another version", "nvlink.imex", fixture{set: multiNode, extra: imexUp("active", "Node #0   - 10.0.0.1        - READY                - Version: 570.133.20\nNode #1   - 10.0.0.2        - READY                - Version: 575.57\n\n Nodes From\\To  0   1\n       0        C   !V!\n       1        !V! C\n\nDomain State: DEGRADED\n", true)}, result.Fail, "IMEXDomainNotUp", "node"},
	{"IMEX not reachable", "nvlink.imex", fixture{set: multiNode, extra: imexUp("active", "failed to connect to IMEX daemon\n", true)}, result.Unknown, "IMEXDomainUnknown", "node"},
	{"no IMEX channel (snapshot)", "nvlink.imex", fixture{set: multiNode, extra: imexUp("active", "", false)}, result.Unknown, "IMEXChannelUnknown", "node"},
	// A GB200-style tray: NVLink to switch trays, one 18-tray domain, IMEX up.
	{"GB200 tray: links up", "nvlink.state", fixture{file: "testdata/gb200-tray-4gpu.host"}, result.Pass, "AllUp", "GPU0"},
	{"GB200 tray: registered with the fabric", "nvlink.state", fixture{file: "testdata/gb200-tray-4gpu.host"}, result.Pass, "FabricRegistered", "GPU0-fabric"},
	{"GB200 tray: IMEX domain of 18", "nvlink.imex", fixture{file: "testdata/gb200-tray-4gpu.host"}, result.Pass, "IMEXDomainUp", "node"},
	{"GB200 tray: IMEX down", "nvlink.imex", fixture{file: "testdata/gb200-tray-4gpu.host", extra: "command systemctl-nvidia-imex.txt \"failed\\n\"\n"}, result.Fail, "IMEXDown", "node"},
	// gpu.health
	{"healthy", "gpu.health", fixture{}, result.Pass, "Healthy", "GPU0"},
	{"no Xid", "gpu.health", fixture{}, result.Pass, "NoXid", "GPU0-xid"},
	{"row remap pending", "gpu.health", fixture{set: map[string]string{"@nvml0": `nvml-gpu 0000:18:00.0 nvswitch=18 remap_pending=yes`}}, result.Fail, "RowRemapPending", "GPU0"},
	{"uncorrectable ECC", "gpu.health", fixture{set: map[string]string{"@nvml0": `nvml-gpu 0000:18:00.0 nvswitch=18 ecc_unc=2`}}, result.Fail, "UncorrectableECC", "GPU0"},
	{"hardware slowdown", "gpu.health", fixture{set: map[string]string{"@nvml1": `nvml-gpu 0000:3a:00.0 nvswitch=18 clock_events=gpu_idle,hw_slowdown`}}, result.Fail, "HardwareSlowdown", "GPU1"},
	{"persistence off", "gpu.health", fixture{set: map[string]string{"@nvml0": `nvml-gpu 0000:18:00.0 nvswitch=18 persistence=off`}}, result.Warn, "PersistenceOff", "GPU0"},
	{"Xid 79 this morning", "gpu.health", fixture{set: map[string]string{"@dmesg": "2026-12-01T11:30:00,000000+00:00 NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."}}, result.Fail, "XidEvents", "GPU0-xid"},
	{"Xid 13 from an application", "gpu.health", fixture{set: map[string]string{"@dmesg": "2026-12-01T11:30:00,000000+00:00 NVRM: Xid (PCI:0000:3a:00): 13, pid=4242, name=python, Graphics SM Warp Exception"}}, result.Warn, "XidEvents", "GPU1-xid"},
	{"Xid 79 last week", "gpu.health", fixture{set: map[string]string{"@dmesg": "2026-11-24T11:30:00,000000+00:00 NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."}}, result.Pass, "NoXid", "GPU0-xid"},
	// nccl.env
	{"clean environment", "nccl.env", fixture{}, result.Pass, "Clean", "node"},
	{"IB disabled", "nccl.env", fixture{set: map[string]string{"@environ": "NCCL_IB_DISABLE=1"}}, result.Fail, "IBDisabled", "NCCL_IB_DISABLE"},
	{"P2P disabled", "nccl.env", fixture{set: map[string]string{"@environ": "NCCL_P2P_DISABLE=1"}}, result.Fail, "P2PDisabled", "NCCL_P2P_DISABLE"},
	{"GDR level LOC", "nccl.env", fixture{set: map[string]string{"@environ": "NCCL_NET_GDR_LEVEL=LOC"}}, result.Fail, "GDRDisabled", "NCCL_NET_GDR_LEVEL"},
	{"HCA names an absent device", "nccl.env", fixture{set: map[string]string{"@environ": "NCCL_IB_HCA=mlx5_7"}}, result.Fail, "AbsentDevice", "NCCL_IB_HCA"},
	{"HCA names an absent port", "nccl.env", fixture{set: map[string]string{"@environ": "NCCL_IB_HCA==mlx5_0:2,mlx5_1:1"}}, result.Fail, "AbsentPort", "NCCL_IB_HCA"},
	{"HCA matches", "nccl.env", fixture{set: map[string]string{"@environ": "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1"}}, result.Pass, "MatchesDevices", "NCCL_IB_HCA"},
	{"HCA prefix leaves rails out", "nccl.env", fixture{file: hostsDir + "/hgx-h100-8gpu-12nic-roce.host", extra: "command environ.txt \"NCCL_IB_HCA=mlx5_1\\n\"\n"}, result.Warn, "RailsLeftOut", "NCCL_IB_HCA"},
	{"absent socket interface", "nccl.env", fixture{set: map[string]string{"@environ": "NCCL_SOCKET_IFNAME=eth9"}}, result.Fail, "AbsentInterface", "NCCL_SOCKET_IFNAME"},
	{"absent bond", "nccl.env", fixture{set: map[string]string{"@environ": "NCCL_SOCKET_IFNAME=bond0"}}, result.Fail, "AbsentInterface", "NCCL_SOCKET_IFNAME"},
	{"bond present", "nccl.env", fixture{set: map[string]string{"@environ": "NCCL_SOCKET_IFNAME=bond0"}, extra: "file sys/class/net/bond0/operstate \"up\\n\"\n"}, result.Pass, "MatchesInterfaces", "NCCL_SOCKET_IFNAME"},
	{"tuning override", "nccl.env", fixture{set: map[string]string{"@environ": "NCCL_ALGO=Ring"}}, result.Warn, "TuningOverride", "NCCL_ALGO"},
	{"environment not captured", "nccl.env", fixture{noEnv: true}, result.Unknown, "EnvironmentUnknown", "node"},
	// node.discovery
	{"every function identified", "node.discovery", fixture{}, result.Pass, "NoProblems", "node"},
	{"GPU vendor garbage", "node.discovery", fixture{extra: gpu0Attr("vendor", "garbage")}, result.Fail, "DeviceUnidentified", "0000:18:00.0"},
	{"GPU class empty", "node.discovery", fixture{extra: gpu0Attr("class", "")}, result.Fail, "DeviceUnidentified", "0000:18:00.0"},
	{"GPU NUMA node garbage", "node.discovery", fixture{extra: gpu0Attr("numa_node", "zero")}, result.Unknown, "Unreadable", "0000:18:00.0"},
	// gpu.present
	{"both GPUs visible", "gpu.present", fixture{}, result.Pass, "GPUsVisible", "node"},
	{"as many GPUs as the profile", "gpu.present", fixture{expect: "gpus: {count: 2}\n"}, result.Pass, "GPUsVisible", "node"},
	{"fewer GPUs than the profile", "gpu.present", fixture{expect: "gpus: {count: 4}\n"}, result.Fail, "GPUCountMismatch", "node"},
	{"GPU the driver lists, sysfs cannot identify", "gpu.present", fixture{extra: gpu0Attr("vendor", "garbage")}, result.Fail, "NotInSysfs", "0000:18:00.0"},
	{"no GPU, nothing expects one", "gpu.present", fixture{file: "testdata/no-gpu.host"}, result.Unknown, "NoGPU", "node"},
	{"no GPU, the driver is installed", "gpu.present", fixture{file: "testdata/no-gpu.host", extra: "file proc/driver/nvidia/version \"" + defaults["@driver"] + "\\n\"\n"}, result.Fail, "NoGPU", "node"},
	{"no GPU, the profile expects 8", "gpu.present", fixture{file: "testdata/no-gpu.host", expect: "gpus: {count: 8}\n"}, result.Fail, "GPUCountMismatch", "node"},
	// inventory.versions
	{"driver recorded", "inventory.versions", fixture{}, result.Pass, "Recorded", "driver"},
	{"driver differs from the fleet", "inventory.versions", fixture{expect: "versions: {driver: \"550.*\"}\n"}, result.Fail, "VersionMismatch", "driver"},
	{"mixed NIC firmware", "inventory.versions", fixture{file: hostsDir + "/epyc-genoa-4gpu-pcie.host"}, result.Warn, "MixedFirmware", "firmware:MT4129"},
	{"NCCL not loadable", "inventory.versions", fixture{libs: map[string]string{"nccl_error": "NCCL (libnccl.so.2) not found"}}, result.Unknown, "NotLoadable", "nccl"},
	{"NCCL recorded", "inventory.versions", fixture{libs: map[string]string{"nccl": "2.28.3", "nccl_path": "/usr/lib/libnccl.so.2"}}, result.Pass, "Recorded", "nccl"},
}

// TestNoFalsePassOnRealSnapshot: the H200 VM has no RDMA NIC and a snapshot
// without NVML: nothing that could not look may pass.
func TestNoFalsePassOnRealSnapshot(t *testing.T) {
	env := fixture{snap: "../../testdata/snapshots/h200x1-vm.tgz", noEnv: true}.env(t)
	rep := checks.Run(context.Background(), env, checks.All(), checks.Options{})
	want := map[string]result.Status{
		"gdr.kernel-module": result.Warn, "gdr.nic-affinity": result.Skip, "nic.port": result.Skip,
		"pcie.acs": result.Skip, "pcie.p2p": result.Skip, "nvlink.state": result.Unknown, "nccl.env": result.Unknown,
	}
	for _, r := range rep.Results {
		if w, ok := want[r.ID]; ok && r.Status != w {
			t.Errorf("%s %s: %s (%s), want %s", r.ID, r.Subject, r.Status, r.Reason, w)
		}
	}
	if rep.Counts.Failed() {
		t.Errorf("failures on a healthy machine: %s", report.CountsLine(rep.Counts))
	}
}

// TestLiveSnapshot: gdrcheck's own capture of the H200 VM, with NVML facts:
// NVLink is known to be absent, and the machine says so plainly.
func TestLiveSnapshot(t *testing.T) {
	env := fixture{snap: "../../testdata/snapshots/h200x1-live-gdrcheck.tgz"}.env(t)
	rep := checks.Run(context.Background(), env, checks.All(), checks.Options{})
	want := map[string]string{
		"nvlink.state": "NVLinkDisabledSingleGPU", "gdr.kernel-module": "NoGDRPath", "pcie.p2p": "SingleGPU",
		"gpu.health": "Healthy", "pcie.link": "FullSpeed", "iommu.mode": "IOMMUOff",
	}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		if w, ok := want[r.ID]; ok && r.Subject != "GPU0-xid" {
			seen[r.ID] = true
			if r.Reason != w {
				t.Errorf("%s %s: %s %s, want %s", r.ID, r.Subject, r.Status, r.Reason, w)
			}
		}
	}
	if len(seen) != len(want) {
		t.Errorf("results for %v, want %v", seen, want)
	}
	if rep.Counts.Failed() || rep.Counts[result.Unknown] != 0 {
		t.Errorf("counts on the healthy H200: %s", report.CountsLine(rep.Counts))
	}
}

// TestEveryCheckHasCases guards the table: each check has a case where it
// passes and one where it finds a problem (fail, or warn where a warn is
// the worst it says).
func TestEveryCheckHasCases(t *testing.T) {
	for _, id := range checks.IDs() {
		pass, bad := false, false
		for _, c := range checkCases {
			if c.check != id {
				continue
			}
			pass = pass || c.status == result.Pass
			bad = bad || c.status == result.Fail || c.status == result.Warn
		}
		if !pass || !bad {
			t.Errorf("%s: pass case %v, fail/warn case %v", id, pass, bad)
		}
	}
}

// BenchmarkChecks8GPU: every check on an 8-GPU, 10-NIC HGX node from a
// materialised snapshot (discovery excluded; it has its own benchmark).
// The goal for a whole `gdrcheck check` is under 1 s (docs/performance.md).
func BenchmarkChecks8GPU(b *testing.B) {
	root := fakehost.Root(b, hostsDir+"/hgx-h200-8gpu-10nic.host")
	h, err := discover.Discover(context.Background(), discover.WithRoot(root))
	if err != nil {
		b.Fatal(err)
	}
	facts := sysinfo.Collect(context.Background(), root, h, sysinfo.Options{})
	facts.Environ = node.Environ{Vars: map[string]string{}, Known: true}
	env := &checks.Env{Host: h, Facts: facts, Now: now}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep := checks.Run(context.Background(), env, checks.All(), checks.Options{})
		if len(rep.Results) == 0 {
			b.Fatal("no results")
		}
	}
}
