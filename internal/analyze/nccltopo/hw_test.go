package nccltopo

import (
	"fmt"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/hw"
)

// TestLookupsAgreeWithCatalogue: the NVSwitch link counts and PCIe speeds
// the topology judge expects are the hardware catalogue's, by PCI device
// ID, else by SM where the SM's parts agree; and the NICs' are too, with
// every value of the judge's own table before the catalogue.
func TestLookupsAgreeWithCatalogue(t *testing.T) {
	for _, g := range hw.GPUs() {
		for _, id := range g.DeviceIDs() {
			x := GPU{VendorDevice: fmt.Sprintf("10de:%04x", id)}
			if n, ok := nvswitchLinks(x); n != g.NVLinks || ok != g.NVSwitchBoard {
				t.Errorf("%s (%s): %d NVSwitch links %v, catalogue %d %v", g.Key, x.VendorDevice, n, ok, g.NVLinks, g.NVSwitchBoard)
			}
			if s := gpuPCIeGTs(x); s != hw.PCIeGTs(g.PCIeGen) {
				t.Errorf("%s (%s): %g GT/s, catalogue Gen%d", g.Key, x.VendorDevice, s, g.PCIeGen)
			}
		}
		sm := g.ComputeCap
		x := GPU{VendorDevice: "10de:ffff", SM: &sm}
		wantN, wantOK := hw.NVSwitchLinksOfSM(sm)
		if n, ok := nvswitchLinks(x); n != wantN || ok != wantOK {
			t.Errorf("sm %d: %d NVSwitch links %v, catalogue %d %v", sm, n, ok, wantN, wantOK)
		}
		gen, _ := hw.PCIeGenOfSM(sm)
		if s := gpuPCIeGTs(x); s != hw.PCIeGTs(gen) || s == 0 || gen > g.PCIeGen {
			t.Errorf("sm %d: %g GT/s, catalogue Gen%d", sm, s, gen)
		}
	}
	// By SM alone: sm_90 and sm_80 have parts with 8 links (H800, A800)
	// besides those with 18 and 12, so nothing is expected of them.
	for sm, want := range map[int]int{80: 0, 90: 0, 100: 18, 103: 18, 75: 0} {
		if n, _ := nvswitchLinks(GPU{SM: &sm}); n != want {
			t.Errorf("sm %d: %d NVSwitch links, want %d", sm, n, want)
		}
	}
	for sm, want := range map[int]float64{70: 8, 75: 8, 80: 16, 86: 16, 89: 16, 90: 32, 100: 32, 103: 64, 120: 32, 61: 0} {
		if s := gpuPCIeGTs(GPU{SM: &sm}); s != want {
			t.Errorf("sm %d: %g GT/s, want %g", sm, s, want)
		}
	}
	for _, n := range hw.NICs() {
		if s := nicPCIeGTs(n.ID); s != hw.PCIeGTs(n.PCIeGen) {
			t.Errorf("%s: %g GT/s, catalogue Gen%d", n.ID, s, n.PCIeGen)
		}
	}
	for id, want := range map[string]float64{"15b3:1017": 8, "15b3:1019": 16, "15b3:101b": 16, "15b3:101d": 16, "15b3:101f": 16, "15b3:1021": 32, "15b3:101e": 0, "8086:1593": 0} {
		if s := nicPCIeGTs(id); s != want {
			t.Errorf("%s: %g GT/s, want %g", id, s, want)
		}
	}
}
