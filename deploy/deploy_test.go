// Package deploy_test checks the deployment examples: the shell scripts
// pass bash -n, the Kubernetes manifests parse, and the indexed Job's pods
// are ranks gdrcheck recognises (their environment and arguments make a
// complete job for every index).
package deploy_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gdrcheck/gdrcheck/internal/launch"
)

func TestScriptsParse(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	scripts := []string{"slurm/gdrcheck-nccl.sbatch", "slurm/gdrcheck-rdma.sbatch", "mpirun/gdrcheck-nccl-mpirun.sh", "../scripts/device/multinode.sh",
		"slurm/gdrcheck-healthcheck.sh", "slurm/gdrcheck-prolog.sh", "../scripts/device/campaign.sh", "../scripts/device/fleet-health.sh"}
	for _, s := range scripts {
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
	}
}

// docs reads every YAML document of a manifest.
func docs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []map[string]any
	for {
		var d map[string]any
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, d)
	}
	return out
}

// get walks a path of map keys and list indexes.
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a map at %q", path, k)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%v: no item %d", path, k)
			}
			v = l[k]
		}
	}
	return v
}

func TestManifests(t *testing.T) {
	kinds := map[string][]string{
		"kubernetes/nccl-job.yaml":             {"Service", "Job"},
		"kubernetes/node-check-daemonset.yaml": {"DaemonSet"},
	}
	for path, want := range kinds {
		ds := docs(t, path)
		var got []string
		for _, d := range ds {
			got = append(got, d["kind"].(string))
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: kinds %v, want %v", path, got, want)
		}
	}
	// The indexed Job: every index is a complete rank, rank 0's address is
	// pod 0 of the headless Service, and the world size is the Job's.
	ds := docs(t, "kubernetes/nccl-job.yaml")
	svc, job := ds[0], ds[1]
	name := get(t, svc, "metadata", "name").(string)
	if get(t, svc, "spec", "clusterIP") != "None" || get(t, job, "spec", "template", "spec", "subdomain") != name {
		t.Fatalf("the Service is not the Job's headless subdomain")
	}
	if get(t, job, "spec", "completionMode") != "Indexed" {
		t.Fatal("not an indexed Job")
	}
	n := get(t, job, "spec", "completions").(int)
	c := get(t, job, "spec", "template", "spec", "containers", 0)
	var flags launch.Flags
	for _, a := range get(t, c, "args").([]any) {
		s, _ := a.(string)
		if v, ok := strings.CutPrefix(s, "--world-size="); ok {
			w, _ := strconv.Atoi(v)
			flags.WorldSize = &w
		}
		if v, ok := strings.CutPrefix(s, "--rendezvous="); ok {
			flags.Rendezvous = v
		}
	}
	jobName := get(t, job, "metadata", "name").(string)
	for i := range n {
		env := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i), "JOB_NAME": jobName}
		j, err := launch.Detect(env, flags)
		if err != nil {
			t.Fatalf("index %d: %v", i, err)
		}
		if j.Rank != i || j.Size != n || j.Launcher != launch.K8sJob {
			t.Errorf("index %d: %+v", i, j)
		}
		if want := jobName + "-0." + name + ":29517"; j.Rendezvous != want {
			t.Errorf("rendezvous %s, want pod 0 %s", j.Rendezvous, want)
		}
	}
	// The node check writes NFD labels into the host's features.d, which
	// it mounts writable at the path nfd-worker reads.
	const featuresD = "/etc/kubernetes/node-feature-discovery/features.d"
	ds = docs(t, "kubernetes/node-check-daemonset.yaml")
	pod := get(t, ds[0], "spec", "template", "spec")
	nc := get(t, pod, "containers", 0)
	if args := get(t, nc, "args", 0).(string); !strings.Contains(args, "gdrcheck --root /host health --nfd "+featuresD+"/gdrcheck --nfd-ttl ") {
		t.Errorf("the node check does not write NFD labels:\n%s", args)
	}
	var mounted, hostPath bool
	for _, m := range get(t, nc, "volumeMounts").([]any) {
		mounted = mounted || get(t, m, "mountPath") == featuresD && get(t, m, "readOnly") == nil && get(t, m, "name") == "nfd-features"
	}
	for _, v := range get(t, pod, "volumes").([]any) {
		hostPath = hostPath || get(t, v, "name") == "nfd-features" && get(t, v, "hostPath", "path") == featuresD
	}
	if !mounted || !hostPath {
		t.Errorf("features.d: mounted writable %v, the host's %v", mounted, hostPath)
	}
	var secret bool
	for _, e := range get(t, c, "env").([]any) {
		secret = secret || get(t, e, "name") == "GDRCHECK_SECRET"
	}
	if !secret {
		t.Error("the Job's pods get no GDRCHECK_SECRET")
	}
	if _, err := os.Stat(filepath.Join("..", "docs", "multinode.md")); err != nil {
		t.Error(err)
	}
}

// TestSlurmWrappers runs the HealthCheckProgram and prolog wrappers with a
// stand-in gdrcheck that records its arguments and exits as told, and a
// stand-in logger: the arguments gdrcheck gets, what is logged, and how
// the wrapper exits (the prolog passes when gdrcheck cannot run at all).
func TestSlurmWrappers(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	args, logged := filepath.Join(dir, "args"), filepath.Join(dir, "log")
	stub := filepath.Join(dir, "gdrcheck")
	write := func(path, body string) {
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(stub, `printf '%s ' "$@" > `+args+`; echo "gdrcheck FAIL: gdr.kernel-module: nvidia-peermem not loaded"; echo "drained: x" >&2; exit ${STUB_EXIT:-1}`)
	logger := filepath.Join(dir, "logger")
	write(logger, `shift 3; echo "$*" >> `+logged)
	profile := filepath.Join(dir, "site.yaml")
	if err := os.WriteFile(profile, []byte("gpus: {count: 8}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		script, gdrcheck, stubExit string
		code                       int
		args, log                  string
	}{
		{"gdrcheck-healthcheck.sh", stub, "1", 1,
			"--timeout 40s health --mode slurm-health --drain apply --resume=true --scontrol /usr/bin/scontrol --drain-timeout 8s --expect " + profile + " --node gpu-07 ",
			"exit 1: gdrcheck FAIL: gdr.kernel-module: nvidia-peermem not loaded\ndrained: x\n"},
		{"gdrcheck-prolog.sh", stub, "1", 1,
			"--timeout 30s health --mode slurm-prolog --drain none --scontrol /usr/bin/scontrol --drain-timeout 10s --expect " + profile + " --node gpu-07 ",
			"job 42: exit 1: gdrcheck FAIL: gdr.kernel-module: nvidia-peermem not loaded\n"},
		{"gdrcheck-prolog.sh", stub, "0", 0, "", ""},
		{"gdrcheck-prolog.sh", stub, "2", 0, "", "the prolog passes"},
		{"gdrcheck-prolog.sh", filepath.Join(dir, "nosuch"), "", 0, "", "could not run (exit 127)"},
	} {
		os.Remove(args)
		os.Remove(logged)
		cmd := exec.Command("bash", filepath.Join("slurm", tc.script))
		cmd.Env = append(os.Environ(), "GDRCHECK="+tc.gdrcheck, "STUB_EXIT="+tc.stubExit, "LOGGER="+logger,
			"GDRCHECK_EXPECT="+profile, "SLURMD_NODENAME=gpu-07", "SLURM_JOB_ID=42")
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		gotArgs, _ := os.ReadFile(args)
		gotLog, _ := os.ReadFile(logged)
		if code != tc.code || tc.args != "" && string(gotArgs) != tc.args || !strings.Contains(string(gotLog), tc.log) {
			t.Errorf("%s (gdrcheck exits %s): exit %d, want %d\nargs %q\nwant %q\nlog %q", tc.script, tc.stubExit, code, tc.code, gotArgs, tc.args, gotLog)
		}
	}
}
