package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/report/sched"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// noPeermem is the HGX H200 fixture with the proprietary driver and no
// nvidia_peermem: no path registers GPU memory with the NICs.
func noPeermem(t *testing.T) string { return withoutPeermem(t, proprietaryDriver) }

// withoutPeermem is the HGX H200 fixture without nvidia_peermem, with the
// given driver version line.
func withoutPeermem(t *testing.T, driver string) string {
	t.Helper()
	spec, err := fakehost.Load(repo + "/testdata/hosts/hgx-h200-8gpu-10nic.host")
	if err != nil {
		t.Fatal(err)
	}
	spec.Modules = slices.DeleteFunc(spec.Modules, func(m string) bool { return m == "nvidia_peermem" })
	if spec.Files == nil {
		spec.Files = map[string]string{}
	}
	spec.Files["proc/driver/nvidia/version"] = driver
	return fakehost.MaterializeArchive(t, spec)
}

// fakeScontrol writes a stand-in scontrol that records its arguments, one
// a line, in the file it returns the path of (body: what else it does).
func fakeScontrol(t *testing.T, body string) (prog, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	prog, argsFile = filepath.Join(dir, "scontrol"), filepath.Join(dir, "args")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> " + argsFile + "; done\necho ---- >> " + argsFile + "\n" + body + "\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog, argsFile
}

func TestHealthCommand(t *testing.T) {
	good := fakehost.Archive(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	l40s := fakehost.Archive(t, repo+"/testdata/hosts/pcie-l40s-remote-nic.host")
	gdrless := noPeermem(t)
	missing := filepath.Join(t.TempDir(), "no-such-root")
	for _, tc := range []struct {
		name string
		args []string
		code int
		line string // the line's start
	}{
		{"ready", []string{"--root", good, "--only", "gdr.,pcie."}, 0, "gdrcheck OK: READY ("},
		{"ready, prolog", []string{"--root", good, "--only", "gdr.,pcie.", "--mode", "slurm-prolog"}, 0, "gdrcheck OK: READY ("},
		// A port down on a front-end NIC (a warning), and what the fixture
		// did not capture (the kernel log: unknown).
		{"degraded", []string{"--root", good}, 0, "gdrcheck DEGRADED: nic.port mlx5_1:1: mlx5_1 port 1 is DOWN"},
		{"degraded, strict", []string{"--root", good, "--strict"}, 1, "gdrcheck FAIL: gpu.health GPU0-xid: GPU0: cannot read the kernel log"},
		{"remote NIC", []string{"--root", l40s}, 1, "gdrcheck FAIL: gdr.nic-affinity GPU0-mlx5_0: "},
		{"no peermem, no dma-buf", []string{"--root", gdrless}, 1, "gdrcheck FAIL: gdr.kernel-module: neither nvidia_peermem is loaded nor dma-buf possible"},
		{"no peermem, prolog", []string{"--root", gdrless, "--mode", "slurm-prolog"}, 1, "gdrcheck FAIL: gdr.kernel-module: "},
		{"cannot run", []string{"--root", missing}, 2, "gdrcheck ERROR: "},
		{"cannot run, prolog", []string{"--root", missing, "--mode", "slurm-prolog"}, 0, "gdrcheck ERROR: "},
		{"cannot run, prolog, strict", []string{"--root", missing, "--mode", "slurm-prolog", "--strict"}, 2, "gdrcheck ERROR: "},
		{"bad mode", []string{"--root", good, "--mode", "pbs"}, 2, `gdrcheck ERROR: --mode pbs: want plain`},
		{"bad drain", []string{"--root", good, "--drain", "maybe"}, 2, "gdrcheck ERROR: --drain maybe: want none"},
		// A node name scontrol cannot be given does not stop the checks:
		// the node is judged, and a failing one fails (the review's D5:
		// exit 2 before any check, and a prolog let the node through).
		{"hostile node name", []string{"--root", good, "--drain", "print", "--node", "n1;reboot"}, 0, "gdrcheck DEGRADED: "},
		{"hostile node name, failing", []string{"--root", l40s, "--drain", "print", "--node", "n1;reboot"}, 1, "gdrcheck FAIL: gdr.nic-affinity GPU0-mlx5_0: "},
		{"hostile node name, prolog", []string{"--root", l40s, "--mode", "slurm-prolog", "--drain", "apply", "--node", "n1;reboot"}, 1, "gdrcheck FAIL: gdr.nic-affinity GPU0-mlx5_0: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := run(t, append([]string{"health"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			if strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, tc.line) || len(out) > sched.MaxReason+1 {
				t.Errorf("not one line starting %q:\n%s", tc.line, out)
			}
			if strings.ContainsAny(strings.TrimSuffix(out, "\n"), "\"'`\r\n\x1b") {
				t.Errorf("the line holds quotes or controls: %q", out)
			}
		})
	}
}

func TestHealthDrain(t *testing.T) {
	l40s := fakehost.Archive(t, repo+"/testdata/hosts/pcie-l40s-remote-nic.host")
	good := fakehost.Archive(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")

	// print: the command on stderr, one line on stdout.
	out, errs, code := run(t, "health", "--root", l40s, "--drain", "print", "--node", "gpu-07")
	if code != ExitFailed || !strings.HasPrefix(errs, "scontrol update NodeName=gpu-07 State=DRAIN Reason='gdrcheck FAIL: gdr.nic-affinity GPU0-mlx5_0: ") || strings.Count(out, "\n") != 1 {
		t.Errorf("print: exit %d\n%s%s", code, out, errs)
	}
	// A legal Slurm node name that is not a host name is drained too (the
	// review's D5); one scontrol cannot take as one argument is refused,
	// and the node still fails.
	out, errs, code = run(t, "health", "--root", l40s, "--drain", "print", "--node", "gpu_07")
	if code != ExitFailed || !strings.HasPrefix(errs, "scontrol update NodeName=gpu_07 State=DRAIN Reason=") {
		t.Errorf("underscore: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = run(t, "health", "--root", l40s, "--drain", "print", "--node", "gpu-07 -x")
	if code != ExitFailed || strings.Contains(errs, "scontrol") || !strings.Contains(errs, "gdrcheck: drain refused: --node: node name gpu-07 -x: ' ' is not a letter") {
		t.Errorf("refused name: exit %d\n%s%s", code, out, errs)
	}

	// A captured node (--root) is not this machine: without --node a
	// drain or resume would act on this machine, and is refused before
	// anything runs (the usability review's health-on-a-snapshot).
	prog, args := fakeScontrol(t, "exit 0")
	t.Setenv("SLURMD_NODENAME", "gpu-08")
	// (A prolog does not fail on what stopped gdrcheck from checking:
	// exit 0, and nothing drained.)
	for _, c := range []struct {
		args []string
		code int
	}{{[]string{"--mode", "slurm-health"}, ExitToolErr}, {[]string{"--drain", "print"}, ExitToolErr}, {[]string{"--mode", "slurm-prolog", "--drain", "apply"}, ExitOK}} {
		mode := c.args
		out, errs, code = run(t, append([]string{"health", "--root", l40s, "--scontrol", prog}, mode...)...)
		if got, _ := os.ReadFile(args); code != c.code || len(got) != 0 || !strings.Contains(out, "judges a captured node, not this machine (gpu-08)") {
			t.Errorf("%q without --node: exit %d, scontrol got %q\n%s%s", mode, code, got, out, errs)
		}
	}

	// apply: the stand-in scontrol gets the arguments, no shell between.
	out, errs, code = run(t, "health", "--root", l40s, "--mode", "slurm-prolog", "--drain", "apply", "--scontrol", prog, "--node", "gpu-08")
	got, _ := os.ReadFile(args)
	want := "update\nNodeName=gpu-08\nState=DRAIN\nReason=" + strings.TrimSuffix(out, "\n") + "\n----\n"
	if code != ExitFailed || string(got) != want || !strings.Contains(errs, "drained: ") {
		t.Errorf("apply: exit %d, scontrol got\n%s\nwant\n%s\n%s", code, got, want, errs)
	}
	// slurm-health applies by default; a ready node is not drained.
	prog, args = fakeScontrol(t, "exit 0")
	if _, errs, code = run(t, "health", "--root", good, "--mode", "slurm-health", "--scontrol", prog, "--node", "gpu-08"); code != ExitOK {
		t.Errorf("ready, slurm-health: exit %d %s", code, errs)
	}
	if got, _ := os.ReadFile(args); strings.Contains(string(got), "State=DRAIN") {
		t.Errorf("a ready node was drained: %q", got)
	}
	if _, _, code = run(t, "health", "--root", l40s, "--mode", "slurm-health", "--scontrol", prog, "--node", "gpu-08"); code != ExitFailed {
		t.Errorf("failing, slurm-health: exit %d", code)
	}
	if got, _ := os.ReadFile(args); !strings.Contains(string(got), "State=DRAIN") {
		t.Errorf("slurm-health did not drain: %q", got)
	}

	// scontrol fails: said on stderr, the node still exits 1.
	prog, _ = fakeScontrol(t, "echo 'slurm_update error: Invalid node name specified' >&2; exit 1")
	_, errs, code = run(t, "health", "--root", l40s, "--drain", "apply", "--node", "gpu-09", "--scontrol", prog)
	if code != ExitFailed || !strings.Contains(errs, "drain failed: ") || !strings.Contains(errs, "Invalid node name specified") {
		t.Errorf("failing scontrol: exit %d %s", code, errs)
	}

	// scontrol hangs: the deadline ends it, not the test's.
	prog, _ = fakeScontrol(t, "sleep 60")
	start := time.Now()
	_, errs, code = run(t, "health", "--root", l40s, "--drain", "apply", "--node", "gpu-10", "--scontrol", prog, "--drain-timeout", "300ms")
	if took := time.Since(start); took > 20*time.Second || code != ExitFailed || !strings.Contains(errs, "no answer within 300ms") {
		t.Errorf("hung scontrol: exit %d after %s: %s", code, took, errs)
	}
}

// showNodeOutput is a real-shaped scontrol show node gpu-07 (Slurm 23.11,
// drained by gdrcheck), its State= and Reason= values replaced.
func showNodeOutput(t *testing.T, state, reason string) string {
	t.Helper()
	b, err := os.ReadFile(repo + "/internal/report/sched/testdata/scontrol-show-node/slurm-23.11-idle-drain.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "   State=") {
			line = "   State=" + state + " ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A"
		}
		if strings.HasPrefix(line, "   Reason=") {
			line = "   Reason=" + reason
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// fakeScontrolShowing is fakeScontrol that prints show (a file) to
// scontrol show, and runs update as body says.
func fakeScontrolShowing(t *testing.T, show, update string) (prog, argsFile string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "show.txt")
	if err := os.WriteFile(file, []byte(show), 0o644); err != nil {
		t.Fatal(err)
	}
	return fakeScontrol(t, "if [ \"$1\" = show ]; then cat "+file+"; exit 0; fi\n"+update)
}

func TestHealthResume(t *testing.T) {
	good := fakehost.Archive(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")  // DEGRADED, exit 0
	l40s := fakehost.Archive(t, repo+"/testdata/hosts/pcie-l40s-remote-nic.host") // FAIL, exit 1
	const ours = "gdrcheck FAIL: gdr.kernel-module: neither nvidia_peermem is loaded nor dma-buf possible [root@2026-12-03T11:50:02]"
	const show = "show\nnode\ngpu-07\n----\n"
	const resume = "update\nNodeName=gpu-07\nState=RESUME\n----\n"
	for _, tc := range []struct {
		name     string
		show     string // what scontrol show prints ("" with update: the whole stand-in's body)
		update   string // what the stand-in does otherwise
		args     []string
		code     int
		scontrol string // the arguments scontrol got, calls separated by ----
		errs     string // stderr's one line contains this ("" stderr is empty)
	}{
		{"ours, degraded now", showNodeOutput(t, "IDLE+DRAIN", ours), "exit 0", []string{"--root", good}, 0, show + resume,
			"gdrcheck: resumed: SCONTROL update NodeName=gpu-07 State=RESUME (gdrcheck drained it: gdrcheck FAIL: gdr.kernel-module: neither"},
		{"ours, ready now, draining", showNodeOutput(t, "MIXED+DRAIN", ours), "exit 0", []string{"--root", good, "--only", "gdr.,pcie."}, 0, show + resume, "gdrcheck: resumed: "},
		{"ours, print", showNodeOutput(t, "DRAINED", ours), "exit 0", []string{"--root", good, "--drain", "print"}, 0, show,
			"SCONTROL update NodeName=gpu-07 State=RESUME"},
		{"ours, plain mode, --resume", showNodeOutput(t, "IDLE+DRAIN", ours), "exit 0", []string{"--root", good, "--mode", "plain", "--drain", "apply", "--resume"}, 0, show + resume, "resumed: "},
		{"someone else's drain", showNodeOutput(t, "IDLE+DRAIN", "replacing DIMM B3 [alice@2026-12-02T16:03:11]"), "exit 0", []string{"--root", good}, 0, show,
			"gdrcheck: not resuming: node gpu-07 is drained by someone else or for another reason: replacing DIMM B3 [alice@2026-12-02T16:03:11]"},
		{"a hostile reason", showNodeOutput(t, "IDLE+DRAIN", "x\x1b]0;pwned\x07 $(reboot) State=IDLE [eve@2026-12-02T16:03:11]"), "exit 0", []string{"--root", good}, 0, show,
			`someone else or for another reason: x\x1b]0;pwned\a $(reboot) State=IDLE [eve@`},
		{"ours, down", showNodeOutput(t, "DOWN+DRAIN+NOT_RESPONDING", ours), "exit 0", []string{"--root", good}, 0, show,
			"gdrcheck: not resuming: node gpu-07 is DOWN+DRAIN+NOT_RESPONDING, not just drained"},
		{"ours, reboot pending", showNodeOutput(t, "IDLE+DRAIN+REBOOT_REQUESTED", ours), "exit 0", []string{"--root", good}, 0, show, "flag REBOOT_REQUESTED is not one gdrcheck resumes"},
		{"not drained", showNodeOutput(t, "IDLE", "(null)"), "exit 0", []string{"--root", good}, 0, show, ""},
		{"a state that does not read", showNodeOutput(t, "IDLE++DRAIN", ours), "exit 0", []string{"--root", good}, 0, show,
			"gdrcheck: not resuming: reading the node's state: node gpu-07: State=IDLE++DRAIN: an empty word"},
		{"show fails", "", "echo 'Node gpu-07 not found' >&2; exit 1", []string{"--root", good}, 0, show,
			"gdrcheck: not resuming: reading the node's state: SCONTROL show node gpu-07: "},
		{"show hangs", "", "sleep 60", []string{"--root", good, "--drain-timeout", "300ms"}, 0, show, "no answer within 300ms"},
		{"resume fails", showNodeOutput(t, "IDLE+DRAIN", ours), "echo 'slurm_update error: Access/permission denied' >&2; exit 1", []string{"--root", good}, 0, show + resume,
			"gdrcheck: resume failed: SCONTROL update NodeName=gpu-07 State=RESUME: "},
		{"--resume=false", showNodeOutput(t, "IDLE+DRAIN", ours), "exit 0", []string{"--root", good, "--resume=false"}, 0, "", ""},
		{"--drain none", showNodeOutput(t, "IDLE+DRAIN", ours), "exit 0", []string{"--root", good, "--drain", "none"}, 0, "", ""},
		{"plain mode", showNodeOutput(t, "IDLE+DRAIN", ours), "exit 0", []string{"--root", good, "--mode", "plain", "--drain", "apply"}, 0, "", ""},
		// A failing node is drained, never looked at to resume.
		{"failing", showNodeOutput(t, "IDLE+DRAIN", ours), "exit 0", []string{"--root", l40s}, 1, "update\nNodeName=gpu-07\nState=DRAIN\n", "gdrcheck: drained: "},
		{"--resume without draining", "", "exit 0", []string{"--root", good, "--mode", "plain", "--resume"}, 2, "", ""},
		{"prolog", showNodeOutput(t, "IDLE+DRAIN", ours), "exit 0", []string{"--root", good, "--mode", "slurm-prolog", "--drain", "apply", "--resume"}, 0, "", "could not check the node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var prog, args string
			if tc.show != "" {
				prog, args = fakeScontrolShowing(t, tc.show, tc.update)
			} else {
				prog, args = fakeScontrol(t, tc.update)
			}
			start := time.Now()
			out, errs, code := run(t, append([]string{"health", "--mode", "slurm-health", "--node", "gpu-07", "--scontrol", prog}, tc.args...)...)
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %s", took)
			}
			got, _ := os.ReadFile(args)
			if code != tc.code || strings.Count(out, "\n") != 1 || !strings.HasPrefix(string(got), tc.scontrol) || tc.scontrol == "" && len(got) > 0 ||
				!strings.Contains(tc.scontrol, "DRAIN") && string(got) != tc.scontrol {
				t.Errorf("exit %d (want %d)\n%s%s\nscontrol got\n%s\nwant\n%s", code, tc.code, out, errs, got, tc.scontrol)
			}
			if code == ExitToolErr && !strings.HasPrefix(out, "gdrcheck ERROR: --resume") || tc.name == "prolog" && !strings.HasPrefix(out, "gdrcheck ERROR: --resume: not with --mode slurm-prolog") {
				t.Errorf("the refusal does not name --resume: %s", out)
			}
			want := strings.ReplaceAll(tc.errs, "SCONTROL", prog)
			if want == "" && errs != "" || want != "" && (!strings.Contains(errs, want) || strings.Count(errs, "\n") != 1) {
				t.Errorf("stderr\n%s\nwant one line containing %q", errs, want)
			}
			if strings.ContainsAny(errs, "\x1b\x07\r") {
				t.Errorf("stderr holds controls: %q", errs)
			}
		})
	}
}

func TestHealthNFD(t *testing.T) {
	good := fakehost.Archive(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	dir := t.TempDir()
	labels := func() map[string]string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, sched.FeaturesFile))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") {
				m[strings.TrimPrefix(k, sched.LabelPrefix)] = v
			}
		}
		if !strings.Contains(string(b), "\n# +expiry-time=2026-12-03T12:30:00Z\n") {
			t.Errorf("expiry:\n%s", b)
		}
		return m
	}
	if _, errs, code := run(t, "health", "--root", good, "--nfd", dir, "--nfd-ttl", "30m"); code != ExitOK {
		t.Fatalf("exit %d %s", code, errs)
	}
	l := labels()
	if l["verdict"] != "degraded" || l["gdr"] != "true" || l["gdr-path"] != "peermem" || l["gpu-count"] != "8" || l["nic-rate-gbps"] != "400" || l["version"] != "test" || !strings.HasPrefix(l["gpu-model"], "NVIDIA-H200") {
		t.Errorf("H200: %v", l)
	}
	if _, _, code := run(t, "health", "--root", noPeermem(t), "--nfd", dir, "--nfd-ttl", "30m"); code != ExitFailed {
		t.Errorf("no peermem: exit %d", code)
	}
	if l = labels(); l["verdict"] != "not-ready" || l["gdr"] != "false" || l["gdr-path"] != "none" || l["failing"] == "0" {
		t.Errorf("no GDR path: %v", l)
	}
	// The open kernel module on kernel 5.15 with mlx5_ib: dma-buf, which
	// NCCL prefers.
	if _, _, code := run(t, "health", "--root", withoutPeermem(t, openDriver), "--nfd", dir, "--nfd-ttl", "30m"); code != ExitOK {
		t.Errorf("open module: exit %d", code)
	}
	if l = labels(); l["gdr"] != "true" || l["gdr-path"] != "dmabuf" {
		t.Errorf("open module: %v", l)
	}
	// gdrcheck could not run: the labels say so rather than keep the last.
	if _, _, code := run(t, "health", "--root", filepath.Join(dir, "nope"), "--nfd", dir, "--nfd-ttl", "30m"); code != ExitToolErr {
		t.Errorf("cannot run: exit %d", code)
	}
	if l = labels(); l["verdict"] != "unknown" || len(l) != 2 {
		t.Errorf("cannot run: %v", l)
	}
	// Nothing but the file is left in the folder (no temporary file).
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("folder holds %d entries", len(es))
	}
	if _, errs, code := run(t, "health", "--root", good, "--nfd", filepath.Join(dir, "nope", "x")); code != ExitToolErr || !strings.Contains(errs, "--nfd") {
		t.Errorf("unwritable: exit %d %s", code, errs)
	}
}

func TestFleetDrainCommands(t *testing.T) {
	fl := fleetDir(t, 6, map[int]func(*dossier.Report){
		2: func(r *dossier.Report) {
			r.Verdict.Status, r.Verdict.Failing = "NOT READY", []string{"gdr.kernel-module"}
		},
		4: func(r *dossier.Report) {
			r.Inventory.Host, r.Verdict.Host = "node-4;reboot", "node-4;reboot"
			r.Verdict.Status, r.Verdict.Failing = "NOT READY", []string{"pcie.acs"}
		},
	})
	healthy := fleetDir(t, 6, nil)
	out, errs, code := run(t, "fleet", fl, "--drain-commands")
	if code != ExitToolErr || out != "scontrol update NodeName=node-2 State=DRAIN Reason='gdrcheck: failing checks: gdr.kernel-module'\n" ||
		!strings.Contains(errs, `not draining node-4;reboot: node name node-4;reboot: ';' is not`) {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
	if out, _, code = run(t, "fleet", healthy, "--drain-commands"); code != ExitOK || out != "" {
		t.Errorf("healthy: exit %d %q", code, out)
	}
	prog, args := fakeScontrol(t, "exit 0")
	out, errs, code = run(t, "fleet", fl, "--apply", "--scontrol", prog)
	got, _ := os.ReadFile(args)
	if code != ExitToolErr || !strings.HasPrefix(out, "drained  node-2: ") || string(got) != "update\nNodeName=node-2\nState=DRAIN\nReason=gdrcheck: failing checks: gdr.kernel-module\n----\n" {
		t.Errorf("apply: exit %d\n%s%s\nscontrol got %q", code, out, errs, got)
	}
	fl = fleetDir(t, 6, map[int]func(*dossier.Report){
		1: func(r *dossier.Report) {
			r.Verdict.Status, r.Verdict.Failing = "NOT READY", []string{"gdr.kernel-module"}
		},
	})
	if out, errs, code = run(t, "fleet", fl, "--apply", "--scontrol", prog); code != ExitFailed || !strings.HasPrefix(out, "drained  node-1: ") {
		t.Errorf("apply, all drained: exit %d\n%s%s", code, out, errs)
	}
	prog, _ = fakeScontrol(t, "sleep 60")
	start := time.Now()
	out, errs, code = run(t, "fleet", fl, "--apply", "--scontrol", prog, "--drain-timeout", "300ms")
	if took := time.Since(start); took > 20*time.Second || code != ExitToolErr || !strings.Contains(out, "FAILED   node-1: ") || !strings.Contains(out, "no answer within 300ms") {
		t.Errorf("hung scontrol: exit %d after %s\n%s%s", code, took, out, errs)
	}
}
