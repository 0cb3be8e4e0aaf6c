package nccltests

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/hw"
)

// TestNVLinkExpectAgreesWithCatalogue: the busbw floor uses the
// catalogue's per-direction NVLink rate of every NVSwitch part, by the
// names CUDA prints (including every name the reader's own table matched
// before the catalogue), and nothing for other GPUs.
func TestNVLinkExpectAgreesWithCatalogue(t *testing.T) {
	for _, g := range hw.GPUs() {
		gbps, label, ok := nvlinkExpect(g.Name)
		if ok != g.NVSwitchBoard || ok && (gbps != g.NVLinkGBps() || label == "") {
			t.Errorf("%s: %v GB/s %q %v; catalogue %v GB/s on NVSwitch %v", g.Name, gbps, label, ok, g.NVLinkGBps(), g.NVSwitchBoard)
		}
	}
	for name, want := range map[string]float64{"NVIDIA A100-SXM4-80GB": 300, "NVIDIA A800-SXM4-80GB": 200, "NVIDIA H100 80GB HBM3": 450,
		"NVIDIA H100 SXM5 80GB": 450, "NVIDIA H200": 450, "NVIDIA H200 141GB": 450, "NVIDIA H800": 200, "NVIDIA H20": 450,
		"NVIDIA B200": 900, "NVIDIA B300 SXM6 AC": 900, "NVIDIA GB200": 900, "NVIDIA GB300": 900,
		"NVIDIA H200 NVL": 0, "NVIDIA H100 PCIe": 0, "NVIDIA A100 80GB PCIe": 0, "Tesla V100-SXM2-32GB": 0, "NVIDIA L40S": 0} {
		if gbps, _, _ := nvlinkExpect(name); gbps != want {
			t.Errorf("nvlinkExpect(%q) = %v, want %v", name, gbps, want)
		}
	}
	if _, label, _ := nvlinkExpect("NVIDIA H100 80GB HBM3"); label != "H100 SXM, NVLink4: 450 GB/s per direction" {
		t.Errorf("label %q", label)
	}
}
