package ncclog

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// nccl.nvls on real public logs (testdata/nvls: each file says where it
// was published and what it shows), and on the logs the other tests read.
func TestNVLSVerdict(t *testing.T) {
	for _, c := range []struct {
		file   string
		status result.Status
		reason string
	}{
		{"nvls/nccl-nvls-available-per-dev-info-nccl-1538.txt", result.Skip, "NVLSAvailableNotUsed"},
		{"nvls/nccl-nvls-in-use-connected-nvls-tree-16-channels-nccl-1814.txt", result.Pass, "NVLSInUse"},
		{"nvls/nccl-nvls-bind-multicast-401-fabric-manager-h100-pytorch-177472.txt", result.Fail, "NVLSFailed"},
		{"nvls/nccl-nvls-cuda-failure-401-h100-nccl-1788.txt", result.Fail, "NVLSFailed"},
		{"nvls/nccl-nvls-invalid-argument-8gpu-h100-driver550-nccl-1705.txt", result.Fail, "NVLSFailed"},
		{"nvls/nccl-nvls-invalid-argument-after-fm-restart-h100-nccl-1488.txt", result.Fail, "NVLSFailed"},
		{"nvls/nccl-nvls-invalid-argument-container-no-nvidia-caps-h200-pie-500.txt", result.Fail, "NVLSFailed"},
		{"nvls/nccl-nvls-not-available-then-init-error-nccl-1029.txt", result.Fail, "NVLSFailed"},
		// A one-GPU VM: NCCL says nothing of NVLS.
		{"h200x1-vm-single-rank-socket-fallback-all-subsys.txt", result.Skip, "NoNVLSLines"},
	} {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			if _, body, ok := strings.Cut(string(b), "\n---\n"); ok {
				b = []byte(body)
			}
			_, vs, err := Analyze(filepath.Base(c.file), bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			var got *result.Result
			for i := range vs {
				if vs[i].ID == "nccl.nvls" {
					got = &vs[i]
				}
			}
			if got == nil || got.Status != c.status || got.Reason != c.reason {
				t.Fatalf("nccl.nvls %+v; want %s %s", got, c.status, c.reason)
			}
			if c.status == result.Fail && (len(got.Evidence) == 0 || got.Remedy == "") {
				t.Errorf("a failure without evidence or remedy: %+v", got)
			}
		})
	}
	// Switched off by the environment: not exercised, whatever else.
	log := "h:1:2 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0.\nh:1:2 [0] NCCL INFO NVLS multicast support is available on dev 0\n"
	_, vs, _ := Analyze("off.log", strings.NewReader(log))
	for _, v := range vs {
		if v.ID == "nccl.nvls" && (v.Status != result.Skip || v.Reason != "NVLSDisabled") {
			t.Errorf("NCCL_NVLS_ENABLE=0: %s %s", v.Status, v.Reason)
		}
	}
}
