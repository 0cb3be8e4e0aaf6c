package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/native/cudadrv"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

// TestJudgeNVLS runs the real probe against the fake libcuda, steered per
// case, and judges what it recorded.
func TestJudgeNVLS(t *testing.T) {
	const switches = "8 NVSwitch PCI function(s)"
	const none = "no NVSwitch PCI function and no GPU NVLink to a switch"
	cases := []struct {
		name            string
		env             map[string]string // nil: the probe does not run
		lib             string            // "old": the CUDA 12.0 fake; "missing": a path that is not there
		switches        bool
		forced          bool
		unknownSwitches bool // discovery failed
		status          result.Status
		reason          string
		msg             []string // every one in the message
		remedy          string   // in the remedy ("" none wanted)
	}{
		{name: "no NVSwitch: skipped without probing", switches: false, status: result.Skip, reason: "NoNVSwitch",
			msg: []string{"no NVSwitch on this host", none, "--force"}},
		{name: "bound on eight GPUs", env: map[string]string{"FAKECU_DEVICES": "8"}, switches: true, status: result.Pass, reason: "MulticastBound",
			msg: []string{"2 MiB", "8 GPU(s)", "0 (0000:18:00.0)", "7 (0000:1F:00.0)", "configured and bound", "no bandwidth measured"}},
		{name: "attribute 0 on an NVSwitch node", env: map[string]string{"FAKECU_DEVICES": "8", "FAKECU_MULTICAST": "0"}, switches: true, status: result.Fail, reason: "MulticastNotSupported",
			msg: []string{"CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 0 on GPU 0 (0000:18:00.0)", "GPU 7", "NCCL cannot use NVLS"}, remedy: "fabric manager running at exactly the driver's version"},
		{name: "forced without NVSwitch, attribute 0 (the one-GPU VM)", env: map[string]string{"FAKECU_DEVICES": "1", "FAKECU_MULTICAST": "0"}, forced: true, status: result.Skip, reason: "NoNVSwitch",
			msg: []string{"CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 0 on GPU 0", "as expected without NVSwitch"}},
		{name: "forced, discovery failed, attribute 0", env: map[string]string{"FAKECU_DEVICES": "2", "FAKECU_MULTICAST": "0"}, forced: true, unknownSwitches: true,
			status: result.Unknown, reason: "NVSwitchUnknown", msg: []string{"is 0 on GPU 0", "not known"}},
		{name: "bind not permitted", env: map[string]string{"FAKECU_DEVICES": "4", "FAKECU_FAIL": "cuMulticastBindMem@2=800"}, switches: true, status: result.Fail, reason: "StepFailed",
			msg: []string{"cuMulticastBindMem on GPU 2 failed", "CUDA_ERROR_NOT_PERMITTED (800)", "0000:1A:00.0"}, remedy: "fabric manager"},
		{name: "bind in the present state (fabric manager down)", env: map[string]string{"FAKECU_DEVICES": "8", "FAKECU_FAIL": "cuMulticastBindMem=401"}, switches: true, status: result.Fail, reason: "StepFailed",
			msg: []string{"cuMulticastBindMem on GPU 0 failed", "CUDA_ERROR_ILLEGAL_STATE (401): the operation cannot be performed in the present state"}, remedy: "reset the GPUs"},
		{name: "driver before CUDA 12.1", env: map[string]string{"FAKECU_DEVICES": "8"}, lib: "old", switches: true, status: result.Fail, reason: "StepFailed",
			msg: []string{"cuMulticastGetGranularity failed", "CUDA 12.1"}, remedy: "driver for CUDA 12.1 or later"},
		{name: "cuInit before fabric manager is up", env: map[string]string{"FAKECU_DEVICES": "8", "FAKECU_FAIL": "cuInit=802"}, switches: true, status: result.Fail, reason: "StepFailed",
			msg: []string{"cuInit failed: CUDA_ERROR_SYSTEM_NOT_READY (802): system not yet initialized"}, remedy: "fabric manager"},
		{name: "no GPU for the driver", env: map[string]string{"FAKECU_DEVICES": "0"}, switches: true, status: result.Fail, reason: "StepFailed",
			msg: []string{"cuInit failed", "CUDA_ERROR_NO_DEVICE"}, remedy: "nvidia-smi"},
		{name: "libcuda missing", env: map[string]string{}, lib: "missing", switches: true, status: result.Unknown, reason: "DriverNotLoaded",
			msg: []string{"whether a multicast object binds is unknown", "not found"}, remedy: "GDRCHECK_LIBCUDA"},
		{name: "a bind that hangs", env: map[string]string{"FAKECU_DEVICES": "2", "FAKECU_HANG": "cuMulticastBindMem@1"}, switches: true, status: result.Unknown, reason: "ProbeHung",
			msg: []string{"cuMulticastBindMem on GPU 1 did not return", "no answer within"}, remedy: "Xid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := bench.NVLSInput{NVSwitches: c.switches, NVSwitchWhy: none, Forced: c.forced, SwitchesUnknown: c.unknownSwitches}
			if c.switches {
				in.NVSwitchWhy = switches
			}
			if c.env != nil {
				fakelib.CUDADriverEnv(t, c.env)
				hang := filepath.Join(t.TempDir(), "hang")
				t.Setenv("FAKECU_HANG_FILE", hang)
				if c.env["FAKECU_HANG"] != "" {
					if err := os.WriteFile(hang, nil, 0o644); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { os.Remove(hang) })
				}
				lib := fakelib.CUDADriver(t)
				switch c.lib {
				case "old":
					lib = fakelib.CUDADriverOld(t)
				case "missing":
					lib = filepath.Join(t.TempDir(), "libcuda.so.1")
				}
				d, err := cudadrv.Open(lib, cudadrv.WithCallTimeout(300*time.Millisecond))
				if err != nil {
					in.Err = err
				} else {
					in.Probe, in.Err = d.ProbeMulticast(context.Background(), cudadrv.ProbeOptions{})
					d.Close()
				}
			}
			rs := bench.JudgeNVLS(in)
			if len(rs) != 1 {
				t.Fatalf("%d results: %+v", len(rs), rs)
			}
			r := rs[0]
			if r.ID != bench.JudgeNVLSID || r.Status != c.status || r.Reason != c.reason || r.Subject != "node" {
				t.Fatalf("%s %s %s: %s (err %v)", r.ID, r.Status, r.Reason, r.Message, in.Err)
			}
			for _, m := range c.msg {
				if !strings.Contains(r.Message, m) {
					t.Errorf("message %q lacks %q", r.Message, m)
				}
			}
			if (c.remedy == "") != (r.Remedy == "") || !strings.Contains(r.Remedy, c.remedy) {
				t.Errorf("remedy %q, want one with %q", r.Remedy, c.remedy)
			}
			if r.Status == result.Fail && len(r.Evidence) < 2 {
				t.Errorf("a failure without the probe's evidence: %+v", r.Evidence)
			}
			if r.Status == result.Pass && in.Err != nil {
				t.Errorf("pass with a probe error %v", in.Err)
			}
		})
	}
}
