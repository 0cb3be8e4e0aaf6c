package sched

import (
	"errors"
	"flag"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/report/fleet"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/goldenfile"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func rep(strict bool, rs ...result.Result) *checks.Report {
	return &checks.Report{Results: rs, Counts: result.Count(rs), Verdict: checks.Judge(rs, "node1", time.Time{}, strict)}
}

func r(id string, st result.Status, subject, msg string) result.Result {
	return result.Result{ID: id, Status: st, Subject: subject, Reason: "Because", Message: msg}
}

func TestHealthLine(t *testing.T) {
	long := strings.Repeat("the NIC is far from the GPU and ", 20)
	var many []result.Result
	for _, id := range []string{"pcie.link", "pcie.acs", "pcie.mrr", "nic.port", "nvlink.state", "gpu.health", "gpu.present", "gdr.nic-affinity", "iommu.mode", "memlock", "nccl.env", "inventory", "discovery", "pcie.p2p", "a.very.long.check.identifier.that.goes.on.and.on.and.on"} {
		many = append(many, r(id, result.Fail, "GPU0", long))
	}
	for _, tc := range []struct {
		name string
		rep  *checks.Report
		want string // the whole line, or its prefix when it ends in "*"
	}{
		{"ready", rep(false, r("gdr.kernel-module", result.Pass, "node", "ok"), r("pcie.acs", result.Pass, "x", "ok"), r("nic.port", result.Skip, "node", "no NIC")),
			"gdrcheck OK: READY (2 pass, 1 skip)"},
		{"degraded by a warning", rep(false, r("a", result.Pass, "node", "ok"), r("nic.port", result.Warn, "mlx5_3:1", "port at 200 Gb/s, below 400"), r("pcie.mrr", result.Warn, "GPU1", "MaxReadReq 512")),
			"gdrcheck DEGRADED: nic.port mlx5_3:1: port at 200 Gb/s, below 400; +1 more (pcie.mrr)"},
		{"unknown degrades", rep(false, r("pcie.acs", result.Unknown, "0000:17:00.0", "config space needs root")),
			"gdrcheck DEGRADED: pcie.acs 0000:17:00.0: config space needs root"},
		{"unknown fails when strict", rep(true, r("pcie.acs", result.Unknown, "0000:17:00.0", "config space needs root"), r("nic.port", result.Warn, "mlx5_0:1", "slow")),
			"gdrcheck FAIL: pcie.acs 0000:17:00.0: config space needs root"},
		{"broken check degrades", rep(false, r("nvlink.state", result.Error, "GPU3", "panic: index out of range")),
			"gdrcheck DEGRADED: nvlink.state GPU3: panic: index out of range"},
		{"several fails, worst first", rep(false, r("pcie.link", result.Fail, "GPU2", "x8, want x16"), r("gdr.kernel-module", result.Fail, "node", "nvidia-peermem not loaded"),
			r("pcie.link", result.Fail, "GPU5", "Gen4, want Gen5"), r("nic.port", result.Warn, "mlx5_0:1", "slow")),
			"gdrcheck FAIL: gdr.kernel-module: nvidia-peermem not loaded; +2 more (pcie.link)"},
		{"hostile message", rep(false, r("nccl.env", result.Fail, "NCCL_IB_HCA", "value \"mlx5\x1b]0;pwned\x07\"\r\nPASS `rm -rf /` 'x' $(id)")),
			`gdrcheck FAIL: nccl.env NCCL_IB_HCA: value mlx5\x1b]0;pwned\a\r\nPASS rm -rf / x $(id)`},
		{"long message cut", rep(false, r("gdr.nic-affinity", result.Fail, "GPU0-mlx5_0", long)), "gdrcheck FAIL: gdr.nic-affinity GPU0-mlx5_0: the NIC is far*"},
		{"many checks", rep(false, many...), "gdrcheck FAIL: a.very.long.check.identifier.that.goes.on.and.on.and.on GPU0: the NIC*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := HealthLine(tc.rep)
			if p, ok := strings.CutSuffix(tc.want, "*"); ok {
				if !strings.HasPrefix(got, p) {
					t.Errorf("got  %s\nwant %s...", got, p)
				}
			} else if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			assertReason(t, got)
		})
	}
	// The long lines keep their tail: how many more, and which.
	got := HealthLine(rep(false, many...))
	if !strings.Contains(got, "...; +14 more (") || !strings.HasSuffix(got, ", ...)") || len(got) < MaxReason-8 {
		t.Errorf("%d bytes: %s", len(got), got)
	}
}

// assertReason: one line, printable, no quotation marks, at most
// MaxReason bytes, valid UTF-8.
func assertReason(t *testing.T, s string) {
	t.Helper()
	if len(s) > MaxReason || !utf8.ValidString(s) || strings.ContainsAny(s, "\"'`\n\r\t\x1b\x07") {
		t.Errorf("not a reason (%d bytes): %q", len(s), s)
	}
}

func TestReasonCutsOnCharacters(t *testing.T) {
	s := Reason(strings.Repeat("é", 200)) // 400 bytes
	if !utf8.ValidString(s) || len(s) > MaxReason || !strings.HasSuffix(s, "...") {
		t.Errorf("%d bytes %q", len(s), s)
	}
	if got := ErrorLine(errors.New("open /nope: no such file\nsecond line")); got != `gdrcheck ERROR: open /nope: no such file\nsecond line` {
		t.Errorf("error line %q", got)
	}
}

func TestValidHost(t *testing.T) {
	for _, ok := range []string{"node1", "gpu-a01.cluster.example", "N1", strings.Repeat("a", 63)} {
		if err := ValidHost(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "node[01-04]", "-n1", "n1-", "a..b", "n1;reboot", "n1 State=RESUME", "n$(id)", "n_1", "nödé", strings.Repeat("a", 64), strings.Repeat("a.", 127) + "a"} {
		if err := ValidHost(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestDrainArgvAndShellLine(t *testing.T) {
	for _, tc := range []struct {
		node, reason, line string
	}{
		{"n1", "gdrcheck FAIL: gdr.kernel-module: nvidia-peermem not loaded",
			"scontrol update NodeName=n1 State=DRAIN Reason='gdrcheck FAIL: gdr.kernel-module: nvidia-peermem not loaded'"},
		{"gpu-a01.example", "x=$(reboot); `id` \"q\" 'q' \\ \n end",
			`scontrol update NodeName=gpu-a01.example State=DRAIN Reason='x=$(reboot); id q q \ \n end'`},
		{"n2", "plain", "scontrol update NodeName=n2 State=DRAIN Reason=plain"},
	} {
		argv, err := DrainArgv("", tc.node, tc.reason)
		if err != nil {
			t.Fatal(err)
		}
		if len(argv) != 5 || argv[0] != "scontrol" || argv[2] != "NodeName="+tc.node || argv[3] != "State=DRAIN" || !strings.HasPrefix(argv[4], "Reason=") {
			t.Errorf("argv %q", argv)
		}
		assertReason(t, strings.TrimPrefix(argv[4], "Reason="))
		if got := ShellLine(argv); got != tc.line {
			t.Errorf("got  %s\nwant %s", got, tc.line)
		}
		// The shell reads the line back into the same arguments.
		if sh, err := exec.LookPath("sh"); err == nil {
			out, err := exec.Command(sh, "-c", `printf '%s\n' `+strings.TrimPrefix(ShellLine(argv), "scontrol ")).Output()
			if err != nil || string(out) != strings.Join(argv[1:], "\n")+"\n" {
				t.Errorf("sh reads %q (%v), want %q", out, err, argv[1:])
			}
		}
	}
	if _, err := DrainArgv("", "n1;reboot", "x"); err == nil {
		t.Error("a hostile node name was accepted")
	}
	if got := ShellLine([]string{"/opt/slurm/bin/scontrol", "it's"}); got != `/opt/slurm/bin/scontrol 'it'\''s'` {
		t.Errorf("quote in an argument: %s", got)
	}
	if got := ShellLine([]string{"A=b", "x"}); got != "'A=b' x" {
		t.Errorf("assignment-like command word: %s", got)
	}
}

func TestFleetDrains(t *testing.T) {
	ds := []fleet.Drain{
		{Rank: 1, Host: "n1", Reasons: []string{"failing checks: gdr.kernel-module", "outlier: all_reduce 20% below"}},
		{Rank: 2, Host: "n2;reboot", Reasons: []string{"missing 1 GPU"}},
		{Rank: 3, Host: "n3", Reasons: []string{strings.Repeat("slow port ", 40), "b", "c"}},
	}
	got := FleetDrains("/usr/bin/scontrol", ds)
	if len(got) != 3 || got[1].Err == nil || got[1].Argv != nil || got[0].Err != nil || got[2].Err != nil {
		t.Fatalf("%+v", got)
	}
	if got[0].Reason != "gdrcheck: failing checks: gdr.kernel-module; +1 more" || got[0].Argv[0] != "/usr/bin/scontrol" {
		t.Errorf("%+v", got[0])
	}
	if r := got[2].Reason; len(r) > MaxReason || !strings.HasSuffix(r, "...; +2 more") {
		t.Errorf("%d bytes: %s", len(r), r)
	}
}

// labelName and labelValue are Kubernetes' rules for a label's key
// (a DNS subdomain prefix, "/", a name of at most 63) and value.
var (
	labelName  = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelValue = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
)

func TestLabelValue(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA H200":                 "NVIDIA-H200",
		"NVIDIA H100 80GB HBM3":       "NVIDIA-H100-80GB-HBM3",
		"v0.4.0-3-gabcdef+dirty":      "v0.4.0-3-gabcdef-dirty",
		"(devel)":                     "devel",
		"--x--":                       "x",
		"":                            "",
		"ééé":                         "",
		"a\x1b[31mb":                  "a-31mb",
		strings.Repeat("ab-", 30):     strings.TrimSuffix(strings.Repeat("ab-", 21), "-"),
		"Tesla V100-SXM2-16GB (rev)!": "Tesla-V100-SXM2-16GB-rev",
	} {
		got := LabelValue(in)
		if got != want || !labelValue.MatchString(got) {
			t.Errorf("LabelValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFeaturesGolden(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for name, l := range map[string]Labels{
		"ready":                     {Verdict: checks.Ready, GDRPath: checks.GDRDMABuf, GPUModel: "NVIDIA H200", GPUs: 8, NICRateGbps: 400, Version: "v0.4.0"},
		"not-ready":                 {Verdict: checks.NotReady, GDRPath: checks.GDRNone, GPUModel: "NVIDIA L40S", GPUs: 2, NICRateGbps: 200, Failing: []string{"gdr.kernel-module", "gdr.nic-affinity"}, Version: "devel"},
		"peermem-failing-elsewhere": {Verdict: checks.NotReady, GDRPath: checks.GDRPeermem, GPUModel: "NVIDIA H100 80GB HBM3", GPUs: 7, NICRateGbps: 400, Failing: []string{"gpu.present"}, Version: "v1"},
		"unknown":                   {Version: "v0.4.0"},
		"no-gpu":                    {Verdict: checks.Degraded, GPUs: 0, Version: "v0.4.0"},
	} {
		t.Run(name, func(t *testing.T) {
			got := Features(l, now, 90*time.Minute)
			for _, line := range strings.Split(strings.TrimSpace(string(got)), "\n") {
				if strings.HasPrefix(line, "#") {
					continue
				}
				k, v, _ := strings.Cut(line, "=")
				if !strings.HasPrefix(k, LabelPrefix) || !labelName.MatchString(k) || !labelValue.MatchString(v) || v == "" {
					t.Errorf("not a label: %q", line)
				}
			}
			if !strings.Contains(string(got), "\n# +expiry-time=2026-12-03T13:30:00Z\n") {
				t.Errorf("no expiry directive:\n%s", got)
			}
			goldenfile.Check(t, filepath.Join("testdata", name+".features"), got, *update)
		})
	}
}
