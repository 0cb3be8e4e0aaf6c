package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

// TestBenchNVLSCommand: bench nvls on the test live host (no GPU, no
// NVSwitch) with the fake libcuda: skipped unless forced, and forced, the
// verdict line and the exit code of each outcome.
func TestBenchNVLSCommand(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		lib  string // "missing"
		code int
		want []string
	}{
		{name: "no NVSwitch: skipped", args: nil, code: ExitOK,
			want: []string{"SKIP  nvls.multicast  node  NoNVSwitch  no NVSwitch on this host"}},
		{name: "forced, attribute 0", args: []string{"--force"}, env: map[string]string{"FAKECU_DEVICES": "1", "FAKECU_MULTICAST": "0"}, code: ExitOK,
			want: []string{"cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED) on GPU 0", "CUDA_SUCCESS (0)  0", "SKIP  nvls.multicast  node  NoNVSwitch  CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 0 on GPU 0", "Results: "}},
		{name: "forced, bound", args: []string{"--force", "--devices", "0,1"}, env: map[string]string{"FAKECU_DEVICES": "2"}, code: ExitOK,
			want: []string{"cuMulticastBindMem on GPU 1", "cuMulticastUnbind on GPU 1 (release)", "PASS  nvls.multicast  node  MulticastBound  a multicast object of 2 MiB"}},
		{name: "forced, bind refused", args: []string{"--force"}, env: map[string]string{"FAKECU_DEVICES": "2", "FAKECU_FAIL": "cuMulticastBindMem@1=800"}, code: ExitFailed,
			want: []string{"FAIL  nvls.multicast  node  StepFailed  cuMulticastBindMem on GPU 1 failed: CUDA_ERROR_NOT_PERMITTED (800)", "remedy: NVLS needs fabric manager"}},
		{name: "libcuda missing", args: []string{"--force"}, lib: "missing", code: ExitToolErr,
			want: []string{"probe not run: CUDA driver library", "UNKNOWN  nvls.multicast  node  DriverNotLoaded"}},
		{name: "bad size", args: []string{"--size", "0"}, code: ExitToolErr},
		{name: "a device the driver does not have", args: []string{"--force", "--devices", "0,5"}, env: map[string]string{"FAKECU_DEVICES": "2"}, code: ExitToolErr,
			want: []string{"UNKNOWN  nvls.multicast  node  ProbeNotRun", "GPU 5: the CUDA driver sees 2 GPU(s)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fakelib.CUDADriverEnv(t, c.env)
			lib := fakelib.CUDADriver(t)
			if c.lib == "missing" {
				lib = filepath.Join(t.TempDir(), "libcuda.so.1")
			}
			t.Setenv("GDRCHECK_LIBCUDA", lib)
			args := append([]string{"bench", "nvls", "--out", filepath.Join(t.TempDir(), "o")}, c.args...)
			out, errs, code := run(t, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s\n%s", code, c.code, errs, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	t.Setenv("FAKECU_DEVICES", "2")
	t.Setenv("FAKECU_MULTICAST", "")
	t.Setenv("FAKECU_FAIL", "")
	t.Setenv("GDRCHECK_LIBCUDA", fakelib.CUDADriver(t))
	out, errs, code := run(t, "bench", "nvls", "--force", "--format", "json", "--out", t.TempDir())
	var doc struct {
		Schema  string `json:"schema"`
		Results []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"results"`
		Probe struct {
			Bound []int `json:"bound"`
		} `json:"probe"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitOK || doc.Schema != "gdrcheck.bench-nvls/v1" || len(doc.Probe.Bound) != 2 || doc.Results[0].Status != "pass" {
		t.Errorf("json: exit %d, %v, %+v\n%s%s", code, err, doc, out, errs)
	}
}

// TestRunNVLSPhase: run on a live host with NVSwitches (the HGX H200
// fixture, eight fake GPUs) has the bench.nvls phase before NCCL's; its
// verdict joins the dossier's results and its document the raw outputs.
// Fabric manager down (401 at the first bind) fails the node.
func TestRunNVLSPhase(t *testing.T) {
	cases := []struct {
		name   string
		fail   string
		status result.Status
		code   int
	}{
		{"bound", "", result.Pass, -1},
		{"fabric manager down", "cuMulticastBindMem=401", result.Fail, ExitFailed},
	}
	live := fakehost.Dir(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fakeGPUs(t, "8")
			t.Setenv("FAKECUDA_MEM", "4294967296")
			t.Setenv("GDRCHECK_LIBCUDA", fakelib.CUDADriver(t))
			t.Setenv("FAKECU_DEVICES", "8")
			t.Setenv("FAKECU_MULTICAST", "")
			t.Setenv("FAKECU_FAIL", c.fail)
			out := t.TempDir()
			args := []string{"run", "--bench", "--bench-size", "64K", "--out", out}
			var o, e bytes.Buffer
			code := execute(args, &o, &e, testSession(args), live)
			if c.code >= 0 && code != c.code {
				t.Errorf("exit %d, want %d: %s", code, c.code, e.String())
			}
			r := readDossier(t, out)
			var names []string
			for _, p := range r.Phases {
				names = append(names, p.Name)
				if p.Name == "bench.nvls" && p.Status != dossier.PhaseDone {
					t.Errorf("phase %+v", p)
				}
			}
			if i, j := slices.Index(names, "bench.nvls"), slices.Index(names, "bench.nccl"); i < 0 || j < i {
				t.Errorf("phases %q: bench.nvls must run before bench.nccl", names)
			}
			found := false
			for _, res := range r.Results {
				if res.ID == "nvls.multicast" {
					found = true
					if res.Status != c.status {
						t.Errorf("nvls.multicast %s %s: %s", res.Status, res.Reason, res.Message)
					}
				}
			}
			if !found {
				t.Errorf("no nvls.multicast among the dossier's results")
			}
			if _, err := os.Stat(filepath.Join(out, "raw", "nvls", "results.json")); err != nil {
				t.Error(err)
			}
			if !strings.Contains(o.String(), "cuMulticastBindMem on GPU 7") && c.fail == "" {
				t.Errorf("the run's text lacks the probe's calls:\n%s", o.String())
			}
		})
	}
}
