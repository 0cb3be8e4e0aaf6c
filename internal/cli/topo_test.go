package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// The NVIDIA driver's version line of the proprietary kernel module (no
// dma-buf export of GPU memory) and of the open one.
const (
	proprietaryDriver = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.133.20  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Mar 13 19:01:23 UTC 2025\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
	openDriver        = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Mar 13 19:01:23 UTC 2025\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
)

// TestTopoGDRSeesModules: topo's pairing says "GDR yes" only where GPU
// memory can be registered with the NIC. On the HGX H200 with the
// proprietary driver and no nvidia_peermem, every NIC is within PXB of its
// GPU but nothing can register GPU memory: the column says "path only" and
// the note says why; the same host with peermem, or with the open module
// (dma-buf, kernel 5.15, mlx5_ib), says yes, and so does one whose driver
// could not be read.
func TestTopoGDRSeesModules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		peermem bool
		driver  string
		blocked bool
	}{
		{"proprietary, no peermem", false, proprietaryDriver, true},
		{"proprietary, peermem", true, proprietaryDriver, false},
		{"open module, no peermem", false, openDriver, false},
		// Without the driver's version dma-buf cannot be ruled out: the
		// pairing does not claim a block it could not see.
		{"driver unreadable, no peermem", false, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := fakehost.Load(repo + "/testdata/hosts/hgx-h200-8gpu-10nic.host")
			if err != nil {
				t.Fatal(err)
			}
			if !tc.peermem {
				spec.Modules = slices.DeleteFunc(spec.Modules, func(m string) bool { return m == "nvidia_peermem" })
			}
			if tc.driver != "" {
				if spec.Files == nil {
					spec.Files = map[string]string{}
				}
				spec.Files["proc/driver/nvidia/version"] = tc.driver
			}
			root := fakehost.MaterializeArchive(t, spec)
			out, errs, code := run(t, "topo", "--root", root)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			pairs := out[strings.Index(out, "GPU→NIC pairing"):]
			yes, pathOnly := strings.Count(pairs, "  yes  "), strings.Count(pairs, "  path only  ")
			note := strings.Contains(pairs, "GPU Direct RDMA cannot be used on this node: neither nvidia_peermem is loaded nor dma-buf possible (the proprietary NVIDIA kernel module")
			if tc.blocked && (yes != 0 || pathOnly != 8 || !note) || !tc.blocked && (yes != 8 || pathOnly != 0 || note) {
				t.Errorf("%d yes, %d path only, note %v:\n%s", yes, pathOnly, note, pairs)
			}
			out, _, code = run(t, "topo", "--root", root, "--format", "json")
			var s topology.Summary
			if code != ExitOK || json.Unmarshal([]byte(out), &s) != nil {
				t.Fatalf("json: exit %d: %s", code, out)
			}
			if (s.Pairing.GDRBlocked != "") != tc.blocked {
				t.Errorf("json gdr_blocked %q", s.Pairing.GDRBlocked)
			}
		})
	}
}
