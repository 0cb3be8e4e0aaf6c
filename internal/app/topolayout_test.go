package app

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/analyze/nccltopo"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// A passthrough VM shows every GPU and NIC on a root port of its own: the
// topology file written from its tree puts each GPU's NICs behind the CPU
// (PHB). With the site profile's layout of the host below, each GPU and
// its NIC share a switch in the file, and NCCL's own reading of it (here
// gdrcheck's reader of NCCL topology files) pairs them at PIX, on the NUMA
// node the layout says. A layout naming a device the VM does not have is
// refused, naming the profile's field.
func TestNCCLTopoLayout(t *testing.T) {
	root := fakehost.Dir(t, "testdata/vm/flat-4gpu-4nic.host")
	n := NodeOptions{Root: root, Timeout: time.Minute}
	want := map[string]string{"0000:01:00.0": "0000:02:00.0", "0000:03:00.0": "0000:04:00.0", "0000:81:00.0": "0000:82:00.0", "0000:83:00.0": "0000:84:00.0"}
	for _, c := range []struct {
		expect, typ string
	}{{"", "PHB"}, {"testdata/vm/vm.yaml", "PIX"}} {
		_, xml, err := NCCLTopo(t.Context(), n, TopoOptions{Expect: c.expect})
		if err != nil {
			t.Fatal(err)
		}
		rep, _, err := nccltopo.Analyze("vm.xml", bytes.NewReader(xml))
		if err != nil || rep.System == nil {
			t.Fatalf("%s: read back: %v", c.expect, err)
		}
		if len(rep.System.GPUs) != 4 || len(rep.System.NICs) != 4 {
			t.Fatalf("%s: read back %d GPUs, %d NICs", c.expect, len(rep.System.GPUs), len(rep.System.NICs))
		}
		for _, p := range rep.System.Paths {
			if p.Type != c.typ {
				t.Errorf("%q: GPU %s to %v at %s, want %s", c.expect, p.GPU, p.NICs, p.Type, c.typ)
			}
			if c.typ == "PIX" && (len(p.NICs) != 1 || !strings.EqualFold(p.NICs[0], want[p.GPU])) {
				t.Errorf("GPU %s paired with %v, want %s", p.GPU, p.NICs, want[p.GPU])
			}
		}
		if c.expect != "" && (!bytes.Contains(xml, []byte(`<pci busid="ffff:ff:03.0" class="0x060400"`)) || !bytes.Contains(xml, []byte("site profile's layout (vm.yaml, 4 switch(es))"))) {
			t.Errorf("the layout's switches or its source are not in the file:\n%s", xml)
		}
		if c.expect != "" && bytes.Index(xml, []byte(`<cpu numaid="1"`)) > bytes.Index(xml, []byte(`busid="ffff:ff:03.0"`)) {
			t.Errorf("switch 3 (numa: 1) is not under NUMA node 1:\n%s", xml)
		}
	}
	bad := t.TempDir() + "/bad.yaml"
	if err := os.WriteFile(bad, []byte("layout:\n  - gpus: [0000:01:00.0]\n    nics: [mlx5_9]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := NCCLTopo(t.Context(), n, TopoOptions{Expect: bad}); err == nil || !strings.Contains(err.Error(), "layout[0].nics[0]: mlx5_9 is not an RDMA NIC of this host") {
		t.Errorf("a NIC the VM does not have: %v", err)
	}
}
