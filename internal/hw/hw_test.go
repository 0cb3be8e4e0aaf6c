package hw_test

import (
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/hw"
)

func TestGPULookup(t *testing.T) {
	for name, key := range map[string]string{
		"NVIDIA H100 80GB HBM3": "h100-sxm", "h100": "h100-sxm", "H100-SXM": "h100-sxm", "NVIDIA H100 PCIe": "h100-pcie",
		"NVIDIA H100 NVL": "h100-nvl", "NVIDIA H200": "h200-sxm", "NVIDIA H200 NVL": "h200-nvl", "NVIDIA H800": "h800-sxm",
		"NVIDIA A100-SXM4-40GB": "a100-sxm-40gb", "NVIDIA A100-SXM4-80GB": "a100-sxm-80gb", "NVIDIA A100-SXM-80GB": "a100-sxm-80gb",
		"NVIDIA A100 80GB PCIe": "a100-pcie-80gb", "NVIDIA A100-PCIE-40GB": "a100-pcie-40gb", "NVIDIA B200": "b200",
		"NVIDIA L40S": "l40s", "NVIDIA RTX 6000 Ada Generation": "rtx6000-ada", "Tesla V100-SXM2-32GB": "v100-sxm2",
		"Tesla V100-PCIE-16GB": "v100-pcie", "Tesla T4": "t4", "NVIDIA RTX A6000": "rtx-a6000", "NVIDIA A40": "a40",
		// Known to the checks and the nccl-tests reader before the catalogue.
		"NVIDIA H20": "h20", "h20": "h20", "NVIDIA A800-SXM4-80GB": "a800-sxm", "a800": "a800-sxm", "NVIDIA B300 SXM6 AC": "b300",
		"NVIDIA GB200": "gb200", "NVIDIA GB300": "gb300", "NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtx-pro-6000",
	} {
		s, err := hw.LookupGPU(name)
		if err != nil || s.Key != key {
			t.Errorf("LookupGPU(%q) = %q, %v; want %q", name, s.Key, err, key)
		}
	}
	for id, key := range map[uint16]string{0x2330: "h100-sxm", 0x2335: "h200-sxm", 0x2901: "b200", 0x20b0: "a100-sxm-40gb", 0x26b9: "l40s", 0x3182: "b300"} {
		if s, ok := hw.GPUByDevice(id); !ok || s.Key != key {
			t.Errorf("GPUByDevice(%04x) = %q, %v; want %q", id, s.Key, ok, key)
		}
	}
	for _, bad := range []string{"NVIDIA GeForce RTX 4090", "", "NVIDIA H2", "NVIDIA A800 80GB PCIe"} {
		if g, err := hw.LookupGPU(bad); err == nil || !strings.Contains(err.Error(), "h100-sxm") {
			t.Errorf("LookupGPU(%q) = %q, %v; want an error listing the known GPUs", bad, g.Key, err)
		}
	}
}

// TestTablesCarryProvenance: every entry is complete, consistent and names
// a public source with an address.
func TestTablesCarryProvenance(t *testing.T) {
	url := regexp.MustCompile(`https://\S+`)
	keys := map[string]bool{}
	for _, s := range hw.GPUs() {
		if s.Source == "" || !url.MatchString(s.Source) || s.Name == "" || s.Short == "" || s.Arch == "" || s.MemGBps <= 0 || s.ComputeCap == 0 || hw.PCIeGBps(s.PCIeGen, s.PCIeWidth) <= 0 {
			t.Errorf("GPU %s incomplete: %+v", s.Key, s)
		}
		if (s.NVLinks > 0) != (s.NVLinkLinkGBps > 0 && s.NVLinkGen > 0) {
			t.Errorf("GPU %s: NVLink fields inconsistent", s.Key)
		}
		if s.NVLS && !s.NVSwitchBoard || s.NVSwitchBoard && (s.NVLinks == 0 || s.NVLinkBridge) {
			t.Errorf("GPU %s: NVLS, NVSwitch and bridge inconsistent", s.Key)
		}
		if keys[s.Key] {
			t.Errorf("GPU %s listed twice", s.Key)
		}
		keys[s.Key] = true
		if g, ok := hw.GPUByName(s.Name); !ok || g.Key != s.Key {
			t.Errorf("GPU %s: its own name %q finds %q", s.Key, s.Name, g.Key)
		}
		for _, id := range s.DeviceIDs() {
			if g, ok := hw.GPUByDevice(id); !ok || g.Key != s.Key {
				t.Errorf("GPU %s: its device ID %04x finds %q", s.Key, id, g.Key)
			}
		}
		for _, a := range append([]string{s.Key}, s.Aliases...) {
			if g, err := hw.LookupGPU(a); err != nil || g.Key != s.Key {
				t.Errorf("GPU %s: %q finds %q, %v", s.Key, a, g.Key, err)
			}
		}
	}
	for _, n := range hw.NICs() {
		if !url.MatchString(n.Source) || n.Name == "" || hw.PCIeGTs(n.PCIeGen) == 0 || n.PCIeWidth < 1 {
			t.Errorf("NIC %+v incomplete", n)
		}
		if got, ok := hw.NICByID(strings.ToUpper("0x" + strings.Replace(n.ID, ":", ":0x", 1))); !ok || got != n {
			t.Errorf("NICByID(%s) = %+v, %v", n.ID, got, ok)
		}
	}
	if !url.MatchString(hw.PCIeSource) {
		t.Error("PCIe rates have no source")
	}
}

// TestNVLinkRates: the per-direction NVLink rate of each NVSwitch part is
// what the datasheets quote (bidirectional totals halved).
func TestNVLinkRates(t *testing.T) {
	for key, want := range map[string]float64{"a100-sxm-80gb": 300, "a800-sxm": 200, "h100-sxm": 450, "h200-sxm": 450, "h800-sxm": 200,
		"h20": 450, "b200": 900, "b300": 900, "gb200": 900, "gb300": 900, "v100-sxm2": 150, "rtx-a6000": 56.25, "l40s": 0} {
		g, ok := hw.GPUByKey(key)
		if !ok || g.NVLinkGBps() != want {
			t.Errorf("%s: NVLink %v GB/s per direction, want %v", key, g.NVLinkGBps(), want)
		}
	}
}

func TestBySM(t *testing.T) {
	for sm, want := range map[int]int{100: 18, 103: 18, 90: 0, 80: 0, 89: 0, 70: 0, 1: 0} {
		n, ok := hw.NVSwitchLinksOfSM(sm)
		if n != want || ok != (want > 0) {
			t.Errorf("NVSwitchLinksOfSM(%d) = %d, %v; want %d", sm, n, ok, want)
		}
	}
	for sm, want := range map[int]int{70: 3, 75: 3, 80: 4, 86: 4, 89: 4, 90: 5, 100: 5, 103: 6, 120: 5, 1: 0} {
		if g, ok := hw.PCIeGenOfSM(sm); g != want || ok != (want > 0) {
			t.Errorf("PCIeGenOfSM(%d) = %d, %v; want %d", sm, g, ok, want)
		}
	}
}

// TestPCIe: rates and encodings by generation, and the PCI reader's
// generation table agrees with the catalogue.
func TestPCIe(t *testing.T) {
	for gen, want := range map[int][2]float64{1: {2.5, 0.25}, 2: {5, 0.5}, 3: {8, 8 * 128.0 / 130 / 8}, 4: {16, 16 * 128.0 / 130 / 8},
		5: {32, 32 * 128.0 / 130 / 8}, 6: {64, 64 * 236.0 / 256 / 8}, 7: {128, 128 * 236.0 / 256 / 8}, 0: {0, 0}, 8: {0, 0}} {
		if hw.PCIeGTs(gen) != want[0] || math.Abs(hw.PCIeLaneGBps(gen)-want[1]) > 1e-12 {
			t.Errorf("Gen%d: %v GT/s, %v GB/s per lane; want %v", gen, hw.PCIeGTs(gen), hw.PCIeLaneGBps(gen), want)
		}
		if gen >= 1 && gen <= hw.PCIeGenerations && hw.PCIeGenOfGTs(want[0]) != gen {
			t.Errorf("PCIeGenOfGTs(%v) = %d", want[0], hw.PCIeGenOfGTs(want[0]))
		}
	}
	if math.Abs(hw.PCIeGBps(5, 16)-63.015) > 0.001 {
		t.Errorf("Gen5 x16 = %v GB/s", hw.PCIeGBps(5, 16))
	}
	for gen := 0; gen <= hw.PCIeGenerations+1; gen++ {
		if float64(pci.SpeedOfGen(gen)) != hw.PCIeGTs(gen) {
			t.Errorf("Gen%d: pci says %v, the catalogue %v GT/s", gen, pci.SpeedOfGen(gen), hw.PCIeGTs(gen))
		}
		if s := pci.LinkSpeed(hw.PCIeGTs(gen)); s > 0 && s.Gen() != gen {
			t.Errorf("%v: pci says Gen%d", s, s.Gen())
		}
	}
}
