package sysinfo_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// nodeSpec has one facts of every kind: a GPU in IOMMU group 7, an RDMA NIC,
// efa built in (only under /sys/module), no locked-memory line in
// /proc/self/limits (so `ulimit -a` is read), an Xid in the kernel log.
const nodeSpec = `
hostname node
kernel 6.8.0-45-generic
module nvidia nvidia_peermem mlx5_ib
file sys/module/efa/initstate "live\n"
file proc/driver/nvidia/version "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build\nGCC version: gcc 12\n"
file proc/cmdline "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt\n"
file proc/self/limits "Limit                     Soft Limit           Hard Limit           Units\n"
file sys/class/iommu/dmar0/name "dmar0\n"
file sys/kernel/iommu_groups/7/type "identity\n"
file sys/class/net/bond0/operstate "up\n"
file sys/module/mlx5_core/version "24.10-1.1.4\n"
file usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0 ""
command ulimit-a.txt "max locked memory           (kbytes, -l) 8192\n"
command dmesg.txt "2026-12-01T11:30:00,000000+00:00 NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
command systemctl-nvidia-fabricmanager.txt "inactive\n"
command environ.txt "NCCL_IB_HCA=mlx5_0\nHOME=/root\n"
command libraries.json "{\"nccl\": \"2.28.3\", \"nccl_path\": \"/usr/lib/libnccl.so.2\", \"cudart_error\": \"libcudart.so not found\"}"
hostbridge pci0000:15 numa=0
  0000:15:01.0 rootport
    0000:18:00.0 gpu id=10de:2330 iommu=7
    0000:19:00.0 nic
rdma mlx5_0 0000:19:00.0 rate=400
`

func collectNode(t *testing.T) (machine.Root, *topology.Host, *node.Facts) {
	t.Helper()
	spec, err := fakehost.Parse("node", strings.NewReader(nodeSpec))
	if err != nil {
		t.Fatal(err)
	}
	root := fakehost.MaterializeRoot(t, spec)
	h, err := discover.Discover(context.Background(), discover.WithRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	return root, h, sysinfo.Collect(context.Background(), root, h, sysinfo.Options{})
}

func TestCollect(t *testing.T) {
	root, _, f := collectNode(t)
	at := func(rel string) string { return root.Display(rel) }
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %#v, want %#v", what, got, want)
		}
	}
	check("display", f.Paths.Display("sys/class/net/x/mtu"), at("sys/class/net/x/mtu"))
	check("display of a trailing slash", f.Paths.Display("a/b/"), at("a/b/"))
	check("modules", []bool{f.Modules.Has("nvidia_peermem"), f.Modules.Has("efa"), f.Modules.Has("mlx5_core"), f.Modules.BuiltIn["efa"]}, []bool{true, true, false, true})
	check("modules source", f.Modules.Source, at("proc/modules"))
	check("cmdline", f.Cmdline, node.Text{Source: at("proc/cmdline"), Value: "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt"})
	check("driver", []any{f.Driver.Version, f.Driver.Open, f.Driver.Source, f.Driver.Err}, []any{"570.133.20", true, at("proc/driver/nvidia/version"), error(nil)})
	check("iommu units", f.IOMMU.Units.Names, []string{"dmar0"})
	check("iommu group", f.IOMMU.Groups, map[int]node.Text{7: {Source: at("sys/kernel/iommu_groups/7/type"), Value: "identity"}})
	check("memlock", f.Memlock, node.Memlock{KB: 8192, Source: "ulimit -a", Line: "max locked memory           (kbytes, -l) 8192"})
	if len(f.KernelLog.Xids) != 1 || f.KernelLog.Xids[0].Code != 79 || f.KernelLog.Err != nil {
		t.Errorf("kernel log: %+v", f.KernelLog)
	}
	check("fabric manager", f.FabricManager, node.Text{Source: "systemctl is-active nvidia-fabricmanager", Value: "inactive"})
	if !strings.Contains(strings.Join(f.NetInterfaces.Names, " "), "bond0") {
		t.Errorf("net interfaces: %v", f.NetInterfaces.Names)
	}
	check("rdma-core", f.RDMACore, node.RDMACore{Version: "50.0", Source: at("usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0")})
	check("mlx5_core", f.MLX5Core.Value, "24.10-1.1.4")
	check("environ", f.Environ, node.Environ{Vars: map[string]string{"NCCL_IB_HCA": "mlx5_0"}, Known: true})
	check("libraries", f.Libraries, &node.Libraries{
		CUDARuntime: node.Library{Error: "libcudart.so not found"},
		NCCL:        node.Library{Loaded: true, Version: "2.28.3", Path: "/usr/lib/libnccl.so.2"},
	})
	check("topo file (not live)", f.TopoFile, node.TopoFile{})
}

// TestSnapshotHoldsWhatCollectionRead: collection through a recording root,
// written as a snapshot, collects the same facts again.
func TestSnapshotHoldsWhatCollectionRead(t *testing.T) {
	root, h, want := collectNode(t)
	rec := machine.NewRecorder()
	rr := root.WithRecorder(rec)
	hr, err := discover.Discover(context.Background(), discover.WithRoot(rr))
	if err != nil {
		t.Fatal(err)
	}
	sysinfo.Collect(context.Background(), rr, hr, sysinfo.Options{})
	out := filepath.Join(t.TempDir(), "snap")
	if _, err := snapshot.Write(context.Background(), root, rec, out, snapshot.Options{}); err != nil {
		t.Fatal(err)
	}
	sr, cleanup, err := snapshot.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	got := sysinfo.Collect(context.Background(), sr, h, sysinfo.Options{})
	if got.CapturedAt.IsZero() {
		t.Error("no capture time from the manifest")
	}
	// The sources name paths under each root; the values must be the same.
	if g, w := values(got), values(want); !reflect.DeepEqual(g, w) {
		t.Errorf("replayed facts differ:\n%#v\nwant:\n%#v", g, w)
	}
}

// values are the facts without where they were read.
func values(f *node.Facts) []any {
	var groups []string
	for n, g := range f.IOMMU.Groups {
		groups = append(groups, fmt.Sprint(n, g.Value, g.Err))
	}
	return []any{
		f.Modules.Loaded, f.Modules.BuiltIn, f.Modules.Err, f.Cmdline.Value, f.Cmdline.Err,
		f.Driver.Line, f.Driver.Err, f.IOMMU.Units.Names, f.IOMMU.Units.Err, groups,
		f.Memlock.KB, f.Memlock.Line, f.Memlock.Err, f.KernelLog.Xids, f.KernelLog.Err,
		f.FabricManager.Value, f.FabricManager.Err, f.NetInterfaces.Names, f.NetInterfaces.Err,
		f.RDMACore.Version, f.MLX5Core.Value, f.MLX5Core.Err, f.Environ, f.Libraries,
	}
}

// TestTopoFileReadThroughRoot: live, the file NCCL_TOPO_FILE names is read
// through the root; a missing one carries the error.
func TestTopoFileReadThroughRoot(t *testing.T) {
	topo := filepath.Join(t.TempDir(), "topo.xml")
	if err := os.WriteFile(topo, []byte("<system/>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file    string
		missing bool
	}{{topo, false}, {topo + ".missing", true}} {
		t.Setenv("NCCL_TOPO_FILE", c.file)
		f := sysinfo.Collect(context.Background(), machine.NewRoot("/"), &topology.Host{}, sysinfo.Options{})
		if !f.TopoFile.Checked || errors.Is(f.TopoFile.Err, fs.ErrNotExist) != c.missing || !c.missing && f.TopoFile.Size != 10 {
			t.Errorf("NCCL_TOPO_FILE=%s: %+v", c.file, f.TopoFile)
		}
	}
}
