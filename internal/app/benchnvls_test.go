package app

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

// TestBenchNVLS: the use-case over fixture hosts (with NVSwitches: HGX
// H200, H100 and B200; without: two PCIe GPU servers) and the fake libcuda: where it probes, what it writes, how
// it exits.
func TestBenchNVLS(t *testing.T) {
	cases := []struct {
		name    string
		host    string
		env     map[string]string
		lib     string // "missing": a library that is not there
		force   bool
		status  result.Status
		reason  string
		probed  bool // a results.json with the probe's steps
		err     string
		toolErr bool
	}{
		{name: "HGX H200: bound on eight GPUs", host: "hgx-h200-8gpu-10nic", env: map[string]string{"FAKECU_DEVICES": "8"}, status: result.Pass, reason: "MulticastBound", probed: true},
		{name: "HGX H100: fabric manager down", host: "hgx-h100-8gpu-12nic-roce", env: map[string]string{"FAKECU_DEVICES": "8", "FAKECU_FAIL": "cuMulticastBindMem=401"},
			status: result.Fail, reason: "StepFailed", probed: true, err: "cuMulticastBindMem on GPU 0 failed"},
		{name: "B200: attribute 0", host: "gke-a4-b200-8gpu-8nic", env: map[string]string{"FAKECU_DEVICES": "8", "FAKECU_MULTICAST": "0"},
			status: result.Fail, reason: "MulticastNotSupported", probed: true, err: "CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 0"},
		{name: "PCIe GPUs: skipped, nothing loaded", host: "epyc-genoa-4gpu-pcie", env: map[string]string{"FAKECU_DEVICES": "4"}, lib: "missing", status: result.Skip, reason: "NoNVSwitch"},
		{name: "PCIe workstation forced: the attribute says why", host: "threadripper-2gpu-pcie", env: map[string]string{"FAKECU_DEVICES": "2", "FAKECU_MULTICAST": "0"}, force: true,
			status: result.Skip, reason: "NoNVSwitch", probed: true},
		{name: "libcuda missing on an NVSwitch node", host: "hgx-h200-8gpu-10nic", env: map[string]string{}, lib: "missing", status: result.Unknown, reason: "DriverNotLoaded",
			err: "cannot probe multicast", toolErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fakelib.CUDADriverEnv(t, c.env)
			lib := fakelib.CUDADriver(t)
			if c.lib == "missing" {
				lib = filepath.Join(t.TempDir(), "libcuda.so.1")
			}
			out := filepath.Join(t.TempDir(), "out")
			live := fakehost.Dir(t, "../../testdata/hosts/"+c.host+".host")
			s := &Session{Clock: time.Now}
			env, dir, err := s.BenchNVLS(t.Context(), NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live},
				NVLSOptions{LibCUDA: lib, Force: c.force, Out: out, CallTimeout: time.Second})
			if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("err %v, want one with %q", err, c.err)
			}
			var te *ToolError
			if errors.As(err, &te) != c.toolErr {
				t.Errorf("tool error %v: %v", c.toolErr, err)
			}
			if env == nil || len(env.Results) != 1 || env.Results[0].Status != c.status || env.Results[0].Reason != c.reason || env.Schema != "gdrcheck.bench-nvls/v1" {
				t.Fatalf("envelope %+v", env)
			}
			_, statErr := os.Stat(filepath.Join(out, "results.json"))
			if c.probed != (statErr == nil) || c.probed != (dir == out) {
				t.Errorf("results.json written %v (dir %q), want %v", statErr == nil, dir, c.probed)
			}
			if !c.probed {
				if _, err := os.Stat(out); err == nil {
					t.Errorf("an output folder for a probe that did not run")
				}
				return
			}
			b, _ := os.ReadFile(filepath.Join(out, "results.json"))
			var doc struct {
				Results []result.Result `json:"results"`
				Probe   struct {
					Steps []json.RawMessage `json:"steps"`
				} `json:"probe"`
			}
			if err := json.Unmarshal(b, &doc); err != nil || len(doc.Results) != 1 || len(doc.Probe.Steps) == 0 {
				t.Errorf("results.json: %v %s", err, b)
			}
			rep := env.Data.(*bench.NVLSReport)
			if rep.Probe == nil || len(rep.Probe.Steps) == 0 || rep.Forced != c.force {
				t.Errorf("report %+v", rep)
			}
		})
	}
}
