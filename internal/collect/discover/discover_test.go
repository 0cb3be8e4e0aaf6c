package discover_test

import (
	"bytes"
	"context"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gdrcheck/gdrcheck/internal/analyze/smitopo"
	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
	"github.com/gdrcheck/gdrcheck/internal/textio"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

var update = flag.Bool("update", false, "rewrite golden files")

const hostsDir = "../../../testdata/hosts"

// corpusBody returns an expected-output file without its source header
// and terminal escapes.
func corpusBody(t *testing.T, path string) string {
	t.Helper()
	return textio.StripANSI(string(readertest.Sample(t, path)))
}

// matrixLines is the header and rows of a matrix text (up to the blank
// line before the legend), plus the NIC legend lines.
func matrixLines(s string) []string {
	var out []string
	lines := strings.Split(s, "\n")
	i := 0
	for i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "GPU0") {
		i++
	}
	for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
		out = append(out, lines[i])
	}
	for ; i < len(lines); i++ {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "NIC") && strings.Contains(lines[i], ":") {
			out = append(out, strings.TrimSpace(lines[i]))
		}
	}
	return out
}

// discover reads a .host fixture (built in memory) or a snapshot archive.
func discoverHost(t *testing.T, path string) (*topology.Host, machine.Root) {
	t.Helper()
	var r machine.Root
	if strings.HasSuffix(path, ".host") {
		r = fakehost.Root(t, path)
	} else {
		var cleanup func()
		var err error
		if r, cleanup, err = snapshot.Open(path); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cleanup)
	}
	h, err := discover.Discover(context.Background(), discover.WithRoot(r))
	if err != nil {
		t.Fatal(err)
	}
	return h, r
}

// TestMatrixMatchesNvidiaSMI renders the matrix of real captures and of
// fixtures built after real machines, and compares it with what
// nvidia-smi printed on them.
func TestMatrixMatchesNvidiaSMI(t *testing.T) {
	cases := []struct {
		name  string
		root  string // .host fixture or snapshot archive
		want  string // expected nvidia-smi output
		exact bool   // byte-for-byte (tab layout) instead of cell-by-cell
		pcie  bool   // topo -mp
	}{
		{"h200x1-vm snapshot", "../../../testdata/snapshots/h200x1-vm.tgz", "", true, false},
		{"h200x1 gdrcheck snapshot", "../../../testdata/snapshots/h200x1-live-gdrcheck.tgz", "", true, false},
		{"hgx-h200 8 GPU 10 NIC", hostsDir + "/hgx-h200-8gpu-10nic.host", hostsDir + "/hgx-h200-8gpu-10nic.topo-m.txt", true, false},
		{"hgx-h100 8 GPU 12 NIC RoCE", hostsDir + "/hgx-h100-8gpu-12nic-roce.host", hostsDir + "/hgx-h100-8gpu-12nic-roce.topo-m.txt", true, false},
		{"dell h100 pcie-only", hostsDir + "/dell-h100-8gpu-12nic-pcie-only.host", hostsDir + "/dell-h100-8gpu-12nic-pcie-only.topo-m.txt", true, true},
		{"epyc genoa pcie", hostsDir + "/epyc-genoa-4gpu-pcie.host", hostsDir + "/epyc-genoa-4gpu-pcie.topo-m.txt", false, false},
		{"threadripper", hostsDir + "/threadripper-2gpu-pcie.host", hostsDir + "/threadripper-2gpu-pcie.topo-m.txt", false, false},
		{"gke a4 b200", hostsDir + "/gke-a4-b200-8gpu-8nic.host", hostsDir + "/gke-a4-b200-8gpu-8nic.topo-m.txt", false, false},
		{"power9 v100 pairs", hostsDir + "/power9-4xv100-nv3-pairs.host", hostsDir + "/power9-4xv100-nv3-pairs.topo-m.txt", false, false},
		{"a100 nvlink degraded", hostsDir + "/a100sxm-4gpu-nvlink-degraded.host", hostsDir + "/a100sxm-4gpu-nvlink-degraded.topo-m.txt", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, root := discoverHost(t, tc.root)
			m := h.BuildMatrix()
			if tc.pcie {
				m = h.BuildPCIeMatrix()
			}
			var buf bytes.Buffer
			if err := m.WriteText(&buf, topology.RenderOptions{}); err != nil {
				t.Fatal(err)
			}
			var want string
			if tc.want == "" {
				// The snapshot carries nvidia-smi's own output.
				b, err := root.ReadFile("commands/nvidia-smi-topo-m.txt")
				if err != nil {
					t.Fatal(err)
				}
				want = textio.StripANSI(string(b))
			} else {
				want = corpusBody(t, tc.want)
			}
			if tc.exact {
				if n := len(matrixLines(want)); n < 2 {
					t.Fatalf("expected output has no matrix (%d lines)", n)
				}
				if d := cmp.Diff(matrixLines(want), matrixLines(buf.String())); d != "" {
					t.Errorf("matrix differs from nvidia-smi's (-want +got):\n%s\ngot:\n%s", d, buf.String())
				}
				return
			}
			wm, err := smitopo.Parse(tc.want, strings.NewReader(want))
			if err != nil {
				t.Fatal(err)
			}
			gm, err := smitopo.Parse("ours", &buf)
			if err != nil {
				t.Fatalf("our own output does not parse: %v\n%s", err, buf.String())
			}
			compareParsed(t, wm, gm)
		})
	}
}

// compareParsed compares two parsed matrices by device: GPU labels, NICs
// by their device names (old layouts label NIC columns mlx5_N).
func compareParsed(t *testing.T, want, got *smitopo.Matrix) {
	t.Helper()
	key := func(m *smitopo.Matrix, i int) string {
		if m.IsGPU[i] {
			return m.Labels[i]
		}
		return m.NICNames[m.Labels[i]]
	}
	idx := func(m *smitopo.Matrix) map[string]int {
		out := map[string]int{}
		for i := range m.Labels {
			out[key(m, i)] = i
		}
		return out
	}
	wi, gi := idx(want), idx(got)
	if len(wi) != len(gi) {
		t.Fatalf("columns: want %v, got %v", want.Labels, got.Labels)
	}
	for k, i := range wi {
		gr, ok := gi[k]
		if !ok {
			t.Fatalf("no column for %s in our matrix (%v)", k, got.Labels)
		}
		for k2, j := range wi {
			gc := gi[k2]
			if w, g := want.Cells[i][j], got.Cells[gr][gc]; w != g {
				t.Errorf("%s→%s: nvidia-smi %s, gdrcheck %s", k, k2, w, g)
			}
		}
		if want.IsGPU[i] {
			if w, g := want.CPUAffinity[i], got.CPUAffinity[gr]; w != g {
				t.Errorf("%s CPU affinity: nvidia-smi %q, gdrcheck %q", k, w, g)
			}
			if w, g := want.NUMAAffinity[i], got.NUMAAffinity[gr]; w != g {
				t.Errorf("%s NUMA affinity: nvidia-smi %q, gdrcheck %q", k, w, g)
			}
		}
	}
}

// TestPairingGolden pins the full `gdrcheck topo` text and JSON of fixtures.
func TestPairingGolden(t *testing.T) {
	fixtures, err := filepath.Glob(hostsDir + "/*.host")
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range fixtures {
		name := strings.TrimSuffix(filepath.Base(f), ".host")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h, _ := discoverHost(t, f)
			var buf bytes.Buffer
			if err := h.BuildMatrix().WriteText(&buf, topology.RenderOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := h.Pairing().WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			readertest.Golden(t, filepath.Join("testdata", "golden", name+".topo.txt"), buf.Bytes(), *update)
		})
	}
}
