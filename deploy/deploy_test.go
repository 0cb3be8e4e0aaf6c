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
	scripts := []string{"slurm/gdrcheck-nccl.sbatch", "slurm/gdrcheck-rdma.sbatch", "mpirun/gdrcheck-nccl-mpirun.sh", "../scripts/device/multinode.sh"}
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
