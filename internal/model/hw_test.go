package model

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/hw"
)

// TestModelKnowsTheCatalogue: every GPU of the hardware catalogue (H20,
// A800, B300 included) is known to the model, by key and by the driver's
// name, and the system built from it carries the catalogue's numbers; and
// the model's PCIe link rate is the catalogue's.
func TestModelKnowsTheCatalogue(t *testing.T) {
	for _, g := range hw.GPUs() {
		for _, name := range []string{g.Key, g.Name} {
			s, err := NewSystem(Params{GPU: name, GPUsPerNode: 2})
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if s.GPU != g.Key || s.Arch != g.Arch || s.ComputeCap != g.ComputeCap || s.MemGBps != g.MemGBps || s.NVLinkGen != g.NVLinkGen ||
				s.NVLinks != g.NVLinks || s.NVLinkLinkGBps != g.NVLinkLinkGBps || s.PCIeGen != g.PCIeGen || s.PCIeWidth != g.PCIeWidth {
				t.Errorf("%s: system %+v disagrees with the catalogue %+v", name, s, g)
			}
			if s.NVLS != (g.NVLS && s.NVLinkTopology == NVLinkSwitch) {
				t.Errorf("%s: NVLS %v, catalogue %v on %s", name, s.NVLS, g.NVLS, s.NVLinkTopology)
			}
			if _, err := Expect(s, collective.AllReduce, 1<<30); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	for _, k := range []string{"h20", "a800", "b300"} {
		if _, err := NewSystem(Params{GPU: k}); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	s, err := NewSystem(Params{GPU: "h100"})
	if err != nil {
		t.Fatal(err)
	}
	p := newPaths(s)
	if want := hw.PCIeGBps(5, 16) * pcieDMAEfficiency; !near(p.pcie.gbps, want, 1e-12) {
		t.Errorf("PCIe %v GB/s, want %v", p.pcie.gbps, want)
	}
}
