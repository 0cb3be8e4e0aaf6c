package checks

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/hw"
)

// TestNVLinksOfAgreesWithCatalogue: nvlink.state expects the catalogue's
// NVLink count of every SXM/HGX part, by the names drivers print
// (including every name the check's own table knew before the catalogue),
// and no count for bridged PCIe cards and GPUs without NVLink.
func TestNVLinksOfAgreesWithCatalogue(t *testing.T) {
	for _, g := range hw.GPUs() {
		want := g.NVLinks
		if g.NVLinkBridge {
			want = 0
		}
		if n, src := nvlinksOf(g.Name); n != want || (n > 0) != (src != "") {
			t.Errorf("%s: %d links (%q), catalogue %d", g.Name, n, src, want)
		}
	}
	for name, want := range map[string]int{"NVIDIA H100 80GB HBM3": 18, "NVIDIA H200": 18, "NVIDIA H800": 8, "NVIDIA H20": 18,
		"NVIDIA B200": 18, "NVIDIA B300 SXM6 AC": 18, "NVIDIA GB200": 18, "NVIDIA A100-SXM4-80GB": 12, "NVIDIA A800-SXM4-80GB": 8,
		"Tesla V100-SXM2-32GB": 6, "NVIDIA H100 PCIe": 0, "NVIDIA H100 NVL": 0, "NVIDIA L40S": 0, "NVIDIA GeForce RTX 4090": 0} {
		if n, _ := nvlinksOf(name); n != want {
			t.Errorf("nvlinksOf(%q) = %d, want %d", name, n, want)
		}
	}
}
