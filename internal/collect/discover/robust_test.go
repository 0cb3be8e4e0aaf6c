package discover_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// small is a two-socket host: GPU0 and mlx5_0 under one switch on socket 0,
// GPU1 on a root port of socket 1.
const small = `
numa 0 0-7
numa 1 8-15
hostbridge pci0000:00 numa=0
  0000:00:01.0 rootport
    0000:01:00.0 usp
      0000:02:00.0 dsp
        0000:03:00.0 gpu
      0000:02:01.0 dsp
        0000:04:00.0 nic
hostbridge pci0000:80 numa=1
  0000:80:01.0 rootport
    0000:81:00.0 gpu
rdma mlx5_0 0000:04:00.0
`

// smallTree builds the small host in memory, for a test to alter.
func smallTree(t *testing.T) fstest.MapFS {
	t.Helper()
	s, err := fakehost.Parse("small", strings.NewReader(small))
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := s.FS()
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

func file(content string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(content), Mode: 0o644} }

func symlink(target string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink | 0o777}
}

// resolve is where a path of the tree leads.
func resolve(t *testing.T, fsys fstest.MapFS, rel string) string {
	t.Helper()
	p, err := machine.NewRootFS(fsys, "small").Resolve(rel)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func devDir(t *testing.T, fsys fstest.MapFS, addr string) string {
	return resolve(t, fsys, "sys/bus/pci/devices/"+addr)
}

// writeAttr is a mutation that overwrites one sysfs attribute of a device.
func writeAttr(addr, attr, content string) func(t *testing.T, fsys fstest.MapFS) {
	return func(t *testing.T, fsys fstest.MapFS) {
		fsys[devDir(t, fsys, addr)+"/"+attr] = file(content)
	}
}

func TestDiscoverSurvivesBadInput(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(t *testing.T, fsys fstest.MapFS)
		problem string            // substring of some Host.Problems message
		cells   map[string]string // "GPU0/NIC0": level
		gpus    int
	}{
		{
			name:   "clean",
			mutate: func(t *testing.T, fsys fstest.MapFS) {},
			cells:  map[string]string{"GPU0/NIC0": "PIX", "GPU0/GPU1": "SYS", "GPU1/NIC0": "SYS"},
			gpus:   2,
		},
		{
			name: "broken device link",
			mutate: func(t *testing.T, fsys fstest.MapFS) {
				fsys["sys/bus/pci/devices/0000:00:09.0"] = symlink("../../../devices/pci0000:00/0000:00:09.0")
			},
			problem: "broken link",
			cells:   map[string]string{"GPU0/NIC0": "PIX"},
			gpus:    2,
		},
		{
			name: "symlink loop",
			mutate: func(t *testing.T, fsys fstest.MapFS) {
				fsys["sys/bus/pci/devices/0000:00:0a.0"] = symlink("0000:00:0b.0")
				fsys["sys/bus/pci/devices/0000:00:0b.0"] = symlink("0000:00:0a.0")
			},
			problem: "too many levels of symbolic links",
			cells:   map[string]string{"GPU0/NIC0": "PIX"},
			gpus:    2,
		},
		{
			name:    "garbage class",
			mutate:  writeAttr("0000:81:00.0", "class", "0xZZ0300\n"),
			problem: `hex value "0xZZ0300"`,
			gpus:    1,
		},
		{
			name: "missing vendor",
			mutate: func(t *testing.T, fsys fstest.MapFS) {
				delete(fsys, devDir(t, fsys, "0000:81:00.0")+"/vendor")
			},
			problem: "missing: every PCI function has it",
			gpus:    1,
		},
		{
			name:    "garbage numa_node",
			mutate:  writeAttr("0000:81:00.0", "numa_node", "banana\n"),
			problem: `integer value "banana"`,
			// numa unknown, and its CPUs (8-15) still place it on node 1
			cells: map[string]string{"GPU0/GPU1": "SYS"},
			gpus:  2,
		},
		{
			name:    "garbage link speed",
			mutate:  writeAttr("0000:03:00.0", "current_link_speed", "fast\n"),
			problem: `link speed "fast"`,
			cells:   map[string]string{"GPU0/NIC0": "PIX"},
			gpus:    2,
		},
		{
			name:    "reversed cpu range",
			mutate:  writeAttr("0000:03:00.0", "local_cpulist", "7-3\n"),
			problem: `cpu list "7-3"`,
			cells:   map[string]string{"GPU0/NIC0": "PIX"},
			gpus:    2,
		},
		{
			name: "attribute is a directory",
			mutate: func(t *testing.T, fsys fstest.MapFS) {
				fsys[devDir(t, fsys, "0000:03:00.0")+"/max_link_width"] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
			},
			problem: "max_link_width",
			cells:   map[string]string{"GPU0/NIC0": "PIX"},
			gpus:    2,
		},
		{
			name: "upstream bridge missing from the bus list",
			mutate: func(t *testing.T, fsys fstest.MapFS) {
				delete(fsys, "sys/bus/pci/devices/0000:01:00.0")
			},
			problem: "upstream bridge 0000:01:00.0 is not in sys/bus/pci/devices",
			// GPU0 and the NIC hang below the missing switch: not guessed.
			cells: map[string]string{"GPU0/NIC0": "N/A", "GPU1/NIC0": "N/A"},
			gpus:  2,
		},
		{
			name:   "truncated config space",
			mutate: writeAttr("0000:02:00.0", "config", "\x86\x80"),
			cells:  map[string]string{"GPU0/NIC0": "PIX"},
			gpus:   2,
		},
		{
			name: "config capability loop",
			mutate: func(t *testing.T, fsys fstest.MapFS) {
				f := fsys[devDir(t, fsys, "0000:02:00.0")+"/config"]
				b := slices.Clone(f.Data)
				b[0x41] = 0x40 // PCIe capability points at itself
				b[0x102] = 0x00
				b[0x103] = 0x10 // extended list points at itself
				f.Data = b
			},
			cells: map[string]string{"GPU0/NIC0": "PIX"},
			gpus:  2,
		},
		{
			name: "rdma device link broken",
			mutate: func(t *testing.T, fsys fstest.MapFS) {
				fsys[resolve(t, fsys, "sys/class/infiniband/mlx5_0")+"/device"] = symlink("../../../nowhere")
			},
			cells: map[string]string{"GPU0/GPU1": "SYS"},
			gpus:  2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys := smallTree(t)
			tc.mutate(t, fsys)
			h, err := discover.Discover(context.Background(), discover.WithRoot(machine.NewRootFS(fsys, "small")), discover.WithoutGPUFacts(), discover.WithoutNames())
			if err != nil {
				t.Fatal(err)
			}
			if len(h.GPUs) != tc.gpus {
				t.Errorf("found %d GPUs, want %d", len(h.GPUs), tc.gpus)
			}
			if tc.problem != "" {
				found := false
				for _, p := range h.Problems {
					if strings.Contains(p.Message, tc.problem) || strings.Contains(p.Path, tc.problem) {
						found = true
					}
				}
				if !found {
					t.Errorf("no problem mentioning %q; problems: %+v", tc.problem, h.Problems)
				}
			}
			m := h.BuildMatrix()
			for pair, want := range tc.cells {
				a, b, _ := strings.Cut(pair, "/")
				if got := cell(m, a, b); got != want {
					t.Errorf("%s→%s = %s, want %s", a, b, got, want)
				}
			}
		})
	}
}

func cell(m *topology.Matrix, a, b string) string {
	ia, ib := -1, -1
	for i, l := range m.Labels {
		if l == a {
			ia = i
		}
		if l == b {
			ib = i
		}
	}
	if ia < 0 || ib < 0 {
		return "absent"
	}
	return m.Cells[ia][ib].String()
}

// TestUnprivilegedMatchesRoot: with only 64 bytes of config space readable
// (a non-root run) the port types are inferred from the tree and every
// relation comes out the same; nothing claims to have read capabilities.
func TestUnprivilegedMatchesRoot(t *testing.T) {
	for _, f := range []string{"hgx-h200-8gpu-10nic.host", "epyc-genoa-4gpu-pcie.host", "gke-a4-b200-8gpu-8nic.host"} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			spec, err := fakehost.Load(filepath.Join(hostsDir, f))
			if err != nil {
				t.Fatal(err)
			}
			priv := fakehost.MaterializeRoot(t, spec)
			spec.Privileged = false
			unpriv := fakehost.MaterializeRoot(t, spec)
			hp, err := discover.Discover(context.Background(), discover.WithRoot(priv), discover.WithoutNames())
			if err != nil {
				t.Fatal(err)
			}
			hu, err := discover.Discover(context.Background(), discover.WithRoot(unpriv), discover.WithoutNames())
			if err != nil {
				t.Fatal(err)
			}
			var a, b strings.Builder
			hp.BuildMatrix().WriteText(&a, topology.RenderOptions{})
			hu.BuildMatrix().WriteText(&b, topology.RenderOptions{})
			if a.String() != b.String() {
				t.Errorf("unprivileged matrix differs:\n%s\nvs root:\n%s", b.String(), a.String())
			}
			for _, d := range hu.Devices {
				if d.PortTypeFrom == "config" {
					t.Errorf("%s: port type read from config space that was not readable", d.Address)
				}
				if d.Config != nil && d.Config.CapsReadable() {
					t.Errorf("%s: capabilities claimed readable from %d bytes", d.Address, d.Config.Len)
				}
				if d.IsBridge() && !strings.Contains(d.ConfigError, "needs root") {
					t.Errorf("%s: config error %q does not say it needs root", d.Address, d.ConfigError)
				}
			}
		})
	}
}

func TestDiscoverNoPCI(t *testing.T) {
	fsys := fstest.MapFS{}
	_, err := discover.Discover(context.Background(), discover.WithRoot(machine.NewRootFS(fsys, "empty")), discover.WithoutGPUFacts())
	if !errors.Is(err, discover.ErrNoPCI) {
		t.Fatalf("empty root: err = %v, want ErrNoPCI", err)
	}
	fsys["sys/bus/pci/devices"] = file("not a dir")
	_, err = discover.Discover(context.Background(), discover.WithRoot(machine.NewRootFS(fsys, "empty")), discover.WithoutGPUFacts())
	if !errors.Is(err, discover.ErrNoPCI) || !strings.Contains(err.Error(), "sys/bus/pci/devices") {
		t.Fatalf("devices is a file: err = %v", err)
	}
	// A directory root that holds nothing.
	_, err = discover.Discover(context.Background(), discover.WithRoot(machine.NewRoot(t.TempDir())), discover.WithoutGPUFacts())
	if !errors.Is(err, discover.ErrNoPCI) {
		t.Fatalf("empty directory: err = %v, want ErrNoPCI", err)
	}
}

// TestRDMAEntriesThatAreNoDevice: sys/class/infiniband/self -> . and a
// link loop are recorded as problems, not listed as NICs (review D22).
func TestRDMAEntriesThatAreNoDevice(t *testing.T) {
	fsys := smallTree(t)
	fsys["sys/class/infiniband/self"] = symlink(".")
	fsys["sys/class/infiniband/loopA"] = symlink("loopB")
	fsys["sys/class/infiniband/loopB"] = symlink("loopA")
	h, err := discover.Discover(context.Background(), discover.WithRoot(machine.NewRootFS(fsys, "small")), discover.WithoutGPUFacts(), discover.WithoutNames())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range h.NICs {
		names = append(names, n.Name)
	}
	if !slices.Equal(names, []string{"mlx5_0"}) {
		t.Errorf("NICs %v, want only mlx5_0", names)
	}
	for _, name := range []string{"self", "loopA", "loopB"} {
		if !slices.ContainsFunc(h.Problems, func(p topology.Problem) bool { return strings.HasSuffix(p.Path, "sys/class/infiniband/"+name) }) {
			t.Errorf("no problem for %s: %+v", name, h.Problems)
		}
	}
}
