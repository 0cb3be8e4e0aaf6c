package topology_test

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/topology"
)

func TestParseCPUInfo(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     topology.CPU
		err      string
	}{
		{"intel", "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 1\n",
			topology.CPU{Arch: "x86_64", Vendor: "GenuineIntel", Family: 6, Model: 143}, ""},
		{"amd", "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n", topology.CPU{Arch: "x86_64", Vendor: "AuthenticAMD", Family: 25, Model: 17}, ""},
		{"arm64 (Grace)", "processor\t: 0\nBogoMIPS\t: 2000.00\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd4f\n", topology.CPU{Arch: "arm64"}, ""},
		{"power9", "processor\t: 0\ncpu\t\t: POWER9, altivec supported\n\ntimebase\t: 512000000\nplatform\t: PowerNV\nmodel\t\t: 8335-GTH\n", topology.CPU{Arch: "ppc64"}, ""},
		{"empty", "", topology.CPU{}, "no vendor_id"},
		{"family not a number", "vendor_id\t: GenuineIntel\ncpu family\t: six\nmodel\t: 1\n", topology.CPU{}, `"cpu family" "six"`},
		{"model missing", "vendor_id\t: GenuineIntel\ncpu family\t: 6\n", topology.CPU{}, `"model" ""`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := topology.ParseCPUInfo(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || *got != c.want {
				t.Fatalf("%+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// A topology file is written only where nothing has to be guessed.
func TestWriteNCCLTopoRefuses(t *testing.T) {
	cpu := &topology.CPU{Arch: "x86_64", Vendor: "GenuineIntel", Family: 6, Model: 143}
	for _, c := range []struct {
		name string
		edit func(h *topology.Host, devs map[string]*topology.Device)
		want string
	}{
		{"CPU unknown", func(h *topology.Host, _ map[string]*topology.Device) { h.CPU = nil }, "the CPU is unknown"},
		{"tree unread", func(_ *topology.Host, devs map[string]*topology.Device) { devs["rp"].TreeUnknown = true }, "GPU0 (0000:01:00.0): its place in the PCI tree could not be read at 0000:00:01.0"},
		{"NIC without a function", func(h *topology.Host, _ map[string]*topology.Device) { h.NICs[0].Dev = nil }, "mlx5_0 has no PCI function"},
		{"nothing to place", func(h *topology.Host, _ map[string]*topology.Device) { h.GPUs, h.NICs = nil, nil }, "nothing for NCCL to place"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, devs := handBuilt()
			h.LinkParents()
			h.CPU = cpu
			c.edit(h, devs)
			var b strings.Builder
			err := h.WriteNCCLTopo(&b, "test")
			if err == nil || !strings.Contains(err.Error(), c.want) || b.Len() != 0 {
				t.Errorf("err %v, %d bytes written; want %q and nothing", err, b.Len(), c.want)
			}
		})
	}
	// The hand-built host: one root port holding the GPU and the NIC, so
	// both hang off the CPU (NCCL keeps no root port), and the comment
	// cannot close early.
	h, _ := handBuilt()
	h.LinkParents()
	h.CPU = cpu
	var b strings.Builder
	if err := h.WriteNCCLTopo(&b, "from <x> -- y -->"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">` + "\n    <pci busid=\"0000:01:00.0\"", `<pci busid="0000:01:00.1" class="0x020700"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Count(b.String(), "-->") != 1 || strings.Contains(b.String(), "<x>") {
		t.Errorf("the comment is not closed once:\n%s", b.String())
	}
}
