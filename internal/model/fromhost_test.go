package model

import (
	"context"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

const repoRoot = "../.."

func discoverFixture(t *testing.T, name string) *topology.Host {
	t.Helper()
	var h *topology.Host
	var err error
	if strings.HasSuffix(name, ".tgz") {
		r, cleanup, oerr := snapshot.Open(repoRoot + "/testdata/snapshots/" + name)
		if oerr != nil {
			t.Fatal(oerr)
		}
		t.Cleanup(cleanup)
		h, err = discover.Discover(context.Background(), discover.WithRoot(r))
	} else {
		h, err = discover.Discover(context.Background(), discover.WithRoot(fakehost.Root(t, repoRoot+"/testdata/hosts/"+name+".host")))
	}
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestFromHost(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		want    System // the fields compared below
		notes   []string
		expect  float64 // all_reduce peak busbw at 16G, best algorithm, one node
		algo    Algorithm
	}{
		{"hgx-h200-8gpu-10nic", System{GPU: "h200-sxm", GPUsPerNode: 8, NVLinks: 18, NVLinkTopology: NVLinkSwitch, NVLinkPairLinks: 18, NVLS: true,
			PCIeGen: 5, PCIeWidth: 16, GPUPath: "SYS", NICsPerNode: 8, NICRateGbps: 400, NICLinkLayer: "InfiniBand", NICPCIeGen: 5, NICPCIeWidth: 16,
			GDR: true, NICSharesSwitch: true}, nil, 490.28, AlgoNVLS},
		{"pcie-l40s-remote-nic", System{GPU: "l40s", GPUsPerNode: 4, NVLinkTopology: NVLinkNone, PCIeGen: 4, PCIeWidth: 16, GPUPath: "NODE",
			NICsPerNode: 2, NICRateGbps: 400, NICLinkLayer: "InfiniBand", NICPCIeGen: 5, NICPCIeWidth: 16, NICRemoteSocket: true},
			[]string{"GDR off", "other socket"}, 22.7612, AlgoRing},
		{"h200x1-vm.tgz", System{GPU: "h200-sxm", GPUsPerNode: 1, NVLinkTopology: NVLinkNone, PCIeGen: 5, PCIeWidth: 16, GPUPath: "PIX"},
			[]string{"no RDMA NIC"}, 0, AlgoLocal}, // one rank: busbw 0
		{"a100sxm-4gpu-nvlink-degraded", System{GPU: "a100-sxm-40gb", GPUsPerNode: 4, NVLinks: 10, NVLinkTopology: NVLinkPartial, NVLinkPairLinks: 10,
			PCIeGen: 4, PCIeWidth: 16, GPUPath: "NODE", NICsPerNode: 2, NICRateGbps: 200, NICLinkLayer: "InfiniBand", NICPCIeGen: 4, NICPCIeWidth: 16},
			[]string{"GPU2 10/12", "GPU3 10/12"}, 2 * (16 * 16 * 128.0 / 130 / 8) * 0.86 * 0.84, AlgoRing},
		{"gke-a4-b200-8gpu-8nic", System{GPU: "b200", GPUsPerNode: 8, NVLinks: 18, NVLinkTopology: NVLinkSwitch, NVLinkPairLinks: 18, NVLS: true,
			PCIeGen: 5, PCIeWidth: 16, GPUPath: "SYS", NICsPerNode: 8, NICRateGbps: 400, NICLinkLayer: "Ethernet", NICPCIeGen: 5, NICPCIeWidth: 16,
			GDR: true, NICSharesSwitch: true}, nil, 0.74 * 18 * 40.1 * 8 / 9 * 1.75, AlgoNVLS},
		{"epyc-genoa-4gpu-pcie", System{GPU: "rtx6000-ada", GPUsPerNode: 4, NVLinkTopology: NVLinkNone, PCIeGen: 4, PCIeWidth: 16, GPUPath: "SYS"},
			[]string{"not active", "down"}, 22, AlgoRing}, // the CPU interconnect (SYS), 22 GB/s
		{"dell-h100-8gpu-12nic-pcie-only", System{GPU: "h100-sxm", GPUsPerNode: 8, NVLinks: 18, NVLinkTopology: NVLinkSwitch, NVLinkPairLinks: 18, NVLS: true,
			PCIeGen: 5, PCIeWidth: 16, GPUPath: "SYS", NICsPerNode: 8, NICRateGbps: 200, NICLinkLayer: "InfiniBand", NICPCIeGen: 5, NICPCIeWidth: 16,
			GDR: true, NICSharesSwitch: true}, nil, 490.28, AlgoNVLS},
		{"power9-4xv100-nv3-pairs", System{GPU: "v100-sxm2", GPUsPerNode: 4, NVLinks: 3, NVLinkTopology: NVLinkPartial, NVLinkPairLinks: 3,
			PCIeGen: 3, PCIeWidth: 16, GPUPath: "SYS", NICsPerNode: 4, NICRateGbps: 100, NICLinkLayer: "InfiniBand", NICPCIeGen: 4, NICPCIeWidth: 16},
			[]string{"3/6", "GDR off"}, 2 * (8 * 16 * 128.0 / 130 / 8) * 0.86 * 0.84, AlgoRing}, // 2 rings × Gen3 through the CPU
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			s, err := FromHost(discoverFixture(t, tc.fixture))
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			got := []any{s.GPU, s.GPUsPerNode, s.Nodes, s.NVLinks, s.NVLinkTopology, s.NVLinkPairLinks, s.NVLS, s.PCIeGen, s.PCIeWidth, s.GPUPath,
				s.NICsPerNode, s.NICRateGbps, s.NICLinkLayer, s.NICPCIeGen, s.NICPCIeWidth, s.GDR, s.NICSharesSwitch, s.NICRemoteSocket, s.SHARP}
			want := []any{w.GPU, w.GPUsPerNode, 1, w.NVLinks, w.NVLinkTopology, w.NVLinkPairLinks, w.NVLS, w.PCIeGen, w.PCIeWidth, w.GPUPath,
				w.NICsPerNode, w.NICRateGbps, w.NICLinkLayer, w.NICPCIeGen, w.NICPCIeWidth, w.GDR, w.NICSharesSwitch, w.NICRemoteSocket, false}
			names := []string{"GPU", "GPUsPerNode", "Nodes", "NVLinks", "NVLinkTopology", "NVLinkPairLinks", "NVLS", "PCIeGen", "PCIeWidth", "GPUPath",
				"NICsPerNode", "NICRateGbps", "NICLinkLayer", "NICPCIeGen", "NICPCIeWidth", "GDR", "NICSharesSwitch", "NICRemoteSocket", "SHARP"}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%s = %v, want %v", names[i], got[i], want[i])
				}
			}
			notes := strings.Join(s.Notes, "\n")
			for _, n := range tc.notes {
				if !strings.Contains(notes, n) {
					t.Errorf("notes lack %q:\n%s", n, notes)
				}
			}
			e, err := Expect(s, collective.AllReduce, 16*gib)
			if err != nil {
				t.Fatal(err)
			}
			if e.Algorithm != tc.algo || !near(e.PeakBusBW, tc.expect, 1e-4) {
				t.Errorf("all_reduce: %s peak %g, want %s %g", e.Algorithm, e.PeakBusBW, tc.algo, tc.expect)
			}
		})
	}
}

// The host is one node; extrapolating it to a cluster uses its rails.
func TestFromHostAsCluster(t *testing.T) {
	s, err := FromHost(discoverFixture(t, "hgx-h200-8gpu-10nic"))
	if err != nil {
		t.Fatal(err)
	}
	s.Nodes = 4
	ps, err := Predict(s, collective.AllReduce, 16*gib)
	if err != nil {
		t.Fatal(err)
	}
	// Eight 400G rails per node at the all_reduce network calibration.
	if r := algo(t, ps, AlgoRing); !near(r.PeakBusBW, 0.845*384, 1e-4) || r.Limit != ByNIC {
		t.Errorf("4 × HGX H200 ring %g %s, want %g NIC", r.PeakBusBW, r.Limit, 0.845*384)
	}
	// The VM has no NIC: it cannot be a cluster.
	one, err := FromHost(discoverFixture(t, "h200x1-vm.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	one.Nodes = 2
	if err := one.Validate(); err == nil || !strings.Contains(err.Error(), "need NICs") {
		t.Errorf("2 nodes of a NIC-less VM: %v", err)
	}
	if _, err := FromHost(&topology.Host{}); err == nil {
		t.Error("FromHost of an empty host succeeded")
	}
}

// A GB200 tray's GPUs registered in a multi-node NVLink fabric: the
// model of the host alone says it is one tray of a rack-scale domain and
// how to model the domain; an HGX board (a local fabric) says nothing of
// the kind, and --nvlink-domain's model no longer needs the note.
func TestFromHostMultiNodeFabric(t *testing.T) {
	h, err := discover.Discover(context.Background(), discover.WithRoot(fakehost.Root(t, repoRoot+"/internal/checks/testdata/gb200-tray-4gpu.host")))
	if err != nil {
		t.Fatal(err)
	}
	s, err := FromHost(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(s.Notes, "; "), "one tray of a rack-scale NVLink domain") || !strings.Contains(strings.Join(s.Notes, "; "), "--nvlink-domain N") {
		t.Errorf("GB200 tray: notes %q", s.Notes)
	}
	// Modelled as the domain, the note is answered.
	if d, err := s.InDomain(72); err != nil || strings.Contains(strings.Join(d.Notes, "; "), "--nvlink-domain N") || !strings.Contains(strings.Join(d.Notes, "; "), "one NVLink domain of 72 GPUs") {
		t.Errorf("as a domain: %v %q", err, d.Notes)
	}
	hgx, err := FromHost(discoverFixture(t, "hgx-h200-8gpu-10nic"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(hgx.Notes, "; "), "rack-scale") {
		t.Errorf("HGX: notes %q", hgx.Notes)
	}
}
