package discover_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/analyze/nccltopo"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// TestNCCLTopoRoundTrip writes every fixture host's NCCL topology file,
// compares it with its golden file, and reads it back with gdrcheck's own
// NCCL topology reader: every GPU and RDMA NIC is in it, and each GPU's
// nearest NICs and their distance are the pairing's (NCCL has no NODE:
// through the CPU on one socket is PHB to it).
func TestNCCLTopoRoundTrip(t *testing.T) {
	hosts, _ := filepath.Glob(hostsDir + "/*.host")
	hosts = append(hosts, "../../../testdata/snapshots/h200x1-vm.tgz", "../../../testdata/snapshots/h200x1-live-gdrcheck.tgz")
	if len(hosts) < 10 {
		t.Fatalf("%d fixture hosts", len(hosts))
	}
	for _, path := range hosts {
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".host"), ".tgz")
		t.Run(name, func(t *testing.T) {
			h, _ := discoverHost(t, path)
			var b bytes.Buffer
			if err := h.WriteNCCLTopo(&b, "test of "+name); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "nccltopo", name+".xml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want, b.Bytes()) {
				t.Errorf("%s differs from the file written (run with -update and review the diff)", golden)
			}
			rep, _, err := nccltopo.Analyze(name+".xml", bytes.NewReader(b.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Truncated || rep.System == nil || len(rep.UnknownElements) > 0 {
				t.Fatalf("read back: truncated %v (%s), unknown %v", rep.Truncated, rep.Problem, rep.UnknownElements)
			}
			sys := rep.System
			if len(sys.GPUs) != len(h.GPUs) || len(sys.NICs) != len(h.NICs) {
				t.Errorf("read back %d GPUs, %d NICs; the host has %d, %d", len(sys.GPUs), len(sys.NICs), len(h.GPUs), len(h.NICs))
			}
			addr := map[string]string{}
			for _, n := range h.NICs {
				if n.Dev != nil {
					addr[n.Name] = n.Dev.Address
				}
			}
			paths := map[string]nccltopo.GPUPath{}
			for _, p := range sys.Paths {
				paths[p.GPU] = p
			}
			for _, e := range h.Pairing().GPUs {
				got, ok := paths[e.GPUAddress]
				if e.Level == level.Unknown || len(e.Nearest) == 0 {
					if ok {
						t.Errorf("GPU%d: no NIC paired, read back %s to %v", e.GPU, got.Type, got.NICs)
					}
					continue
				}
				wantLevel := e.Level
				if wantLevel == level.NODE {
					wantLevel = level.PHB
				}
				var wantNICs []string
				for _, n := range e.Nearest {
					wantNICs = append(wantNICs, addr[n])
				}
				slices.Sort(wantNICs)
				gotNICs := slices.Clone(got.NICs)
				slices.Sort(gotNICs)
				if got.Type != wantLevel.String() || !slices.Equal(gotNICs, wantNICs) {
					t.Errorf("GPU%d (%s): read back %s to %v; the pairing says %s to %v", e.GPU, e.GPUAddress, got.Type, gotNICs, e.Level, wantNICs)
				}
			}
		})
	}
}
