package topology_test

import (
	"slices"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/topology"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// handBuilt is a Host built without discovery: a root port with a GPU and
// a NIC below it, and a device whose bridge is missing.
func handBuilt() (*topology.Host, map[string]*topology.Device) {
	dev := func(addr, parent string, class uint32, vendor uint16, pt pci.PortType) *topology.Device {
		return &topology.Device{Address: addr, Parent: parent, Class: class, Vendor: vendor, PortType: pt, HostBridge: "pci0000:00", NUMANode: 0}
	}
	devs := map[string]*topology.Device{
		"rp":     dev("0000:00:01.0", "", 0x060400, 0x8086, pci.PortRootPort),
		"gpu":    dev("0000:01:00.0", "0000:00:01.0", 0x030200, 0x10de, pci.PortEndpoint),
		"nic":    dev("0000:01:00.1", "0000:00:01.0", 0x020700, 0x15b3, pci.PortEndpoint),
		"orphan": dev("0000:02:00.0", "0000:99:00.0", 0x020000, 0x8086, pci.PortEndpoint),
	}
	h := &topology.Host{
		NUMANodes: []topology.NUMANode{{ID: 0}},
		Devices:   []*topology.Device{devs["rp"], devs["gpu"], devs["nic"], devs["orphan"]},
		GPUs:      []*topology.GPU{{Index: 0, Address: devs["gpu"].Address, Dev: devs["gpu"]}},
		NICs:      []*topology.NIC{{Name: "mlx5_0", Address: devs["nic"].Address, Dev: devs["nic"], Ports: []topology.Port{{Number: 1, State: "ACTIVE", RateGbps: 400}}}},
	}
	return h, devs
}

func TestLinkParents(t *testing.T) {
	h, d := handBuilt()
	if d["gpu"].ParentDevice() != nil {
		t.Fatal("a device is linked before LinkParents")
	}
	orphans := h.LinkParents()
	if !slices.Equal(orphans, []*topology.Device{d["orphan"]}) {
		t.Errorf("orphans = %v, want the device whose bridge is missing", orphans)
	}
	if d["gpu"].ParentDevice() != d["rp"] || d["nic"].ParentDevice() != d["rp"] || d["rp"].ParentDevice() != nil || d["orphan"].ParentDevice() != nil {
		t.Error("parent pointers do not follow Device.Parent")
	}
	if want := []string{"0000:01:00.0", "0000:01:00.1"}; !slices.Equal(d["rp"].Children, want) {
		t.Errorf("root port's children = %v, want %v", d["rp"].Children, want)
	}
	if got := h.PathToRoot(d["gpu"]); !slices.Equal(got, []*topology.Device{d["rp"]}) {
		t.Errorf("PathToRoot(gpu) = %v, want the root port", got)
	}
	if r := h.PCIeRelation(d["gpu"], d["nic"]); r.Level != level.PIX {
		t.Errorf("GPU-NIC relation = %v, want PIX", r)
	}
}

func TestFinishKeepsThePairing(t *testing.T) {
	h, _ := handBuilt()
	h.LinkParents()
	if first, again := h.Pairing(), h.Pairing(); first == again {
		t.Error("an unfinished Host keeps a pairing")
	}
	h.Finish()
	p := h.Pairing()
	if p != h.Pairing() {
		t.Error("Pairing computes again after Finish")
	}
	if len(p.GPUs) != 1 || p.GPUs[0].NIC != "mlx5_0" || p.GPUs[0].Level != level.PIX {
		t.Errorf("pairing = %+v, want GPU0 on mlx5_0 at PIX", p.GPUs)
	}
}

func TestNaturalLess(t *testing.T) {
	names := []string{"mlx5_10", "mlx5_2", "mlx5_1", "mlx4_0", "mlx5_01", "eth", "mlx5_"}
	slices.SortStableFunc(names, func(a, b string) int {
		switch {
		case topology.NaturalLess(a, b):
			return -1
		case topology.NaturalLess(b, a):
			return 1
		}
		return 0
	})
	want := []string{"eth", "mlx4_0", "mlx5_", "mlx5_1", "mlx5_01", "mlx5_2", "mlx5_10"}
	if !slices.Equal(names, want) {
		t.Errorf("sorted = %v, want %v", names, want)
	}
}
