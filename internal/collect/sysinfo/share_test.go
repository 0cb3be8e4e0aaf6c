package sysinfo_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/facts/node"
)

// TestEnvironKeepsNoSecrets is review row 132 (S4): the old filter kept
// NVIDIA_API_KEY, FI_EFA_TOKEN, UCX_PASSWORD and OMPI_MCA_pml_secret
// verbatim. Now only the allowlist is kept and secret-looking values are
// masked, live and on replay alike.
func TestEnvironKeepsNoSecrets(t *testing.T) {
	environ := []string{
		"NVIDIA_API_KEY=nvapi-SECRET123abcdefghijkl", "FI_EFA_TOKEN=tok-123", "UCX_PASSWORD=hunter2",
		"OMPI_MCA_pml_secret=s3cr3t", "LD_LIBRARY_PATH=/usr/local/cuda/lib64", "AWS_SECRET_ACCESS_KEY=abc",
		"HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz", "NGC_API_KEY=xyz", "NVIDIA_PRODUCT_NAME=CUDA",
		"NCCL_IB_HCA=mlx5_0,mlx5_1", "NCCL_DEBUG=INFO", "NCCL_TOPO_FILE=/opt/topo/ndv5-topo.xml",
		"CUDA_VISIBLE_DEVICES=0,1", "NVIDIA_VISIBLE_DEVICES=all", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
		"UCX_TLS=rc,cuda_copy", "NCCL_SOME_BLOB=0123456789abcdef0123456789abcdef01",
		"CUDA_CACHE_KEY_B64=QWxhZGRpbjpvcGVuIHNlc2FtZQ9876543210abcdef==",
		"NCCL_X=nvapi-0123456789abcdef", "RANK=3", "WORLD_SIZE=16", "LOCAL_RANK=3", "MASTER_ADDR=10.0.0.1",
		"MASTER_PORT=29500", "SLURM_PROCID=3", "SLURM_NODELIST=gpu[001-002]", "SLURM_JOB_NAME=alice-secret-run",
		"OMPI_COMM_WORLD_RANK=3", "PMI_RANK=3", "JOB_COMPLETION_INDEX=1", "HOME=/home/alice", "PATH=/usr/bin",
	}
	got := node.FilterEnviron(environ)
	want := map[string]string{
		"NVIDIA_VISIBLE_DEVICES": "all", "FI_EFA_TOKEN": "<set, 7 chars>", "UCX_PASSWORD": "<set, 7 chars>",
		"OMPI_MCA_pml_secret": "<set, 6 chars>", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
		"NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_DEBUG": "INFO", "NCCL_TOPO_FILE": "/opt/topo/ndv5-topo.xml",
		"CUDA_VISIBLE_DEVICES": "0,1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "UCX_TLS": "rc,cuda_copy",
		"NCCL_SOME_BLOB": "<set, 34 chars>", "CUDA_CACHE_KEY_B64": "<set, 44 chars>", "NCCL_X": "<set, 22 chars>",
		"RANK": "3", "WORLD_SIZE": "16", "LOCAL_RANK": "3", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500",
		"SLURM_PROCID": "3", "OMPI_COMM_WORLD_RANK": "3", "PMI_RANK": "3", "JOB_COMPLETION_INDEX": "1",
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			t.Errorf("%s = %q, want %q", k, got[k], want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("%s=%s kept", k, got[k])
		}
	}
	// On replay the masked values stay as they are.
	again := node.ParseEnviron(node.FormatEnviron(got))
	if !maps.Equal(again, got) {
		t.Errorf("read back: %v\nwritten: %v", again, got)
	}
}

// TestKernelLogKeepsOnlyXids: the kernel log of a snapshot keeps the lines
// ParseXids reads and nothing else (review row 133: the full dmesg, with
// the kernel command line, was kept).
func TestKernelLogKeepsOnlyXids(t *testing.T) {
	log := "2026-12-01T11:29:00,000000+00:00 Command line: root=/dev/sda1 nfsroot=10.0.0.1:/srv,user=bob,password=pw\n" +
		"2026-12-01T11:30:00,000000+00:00 NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n" +
		"2026-12-01T11:30:01,000000+00:00 mlx5_core 0000:1a:00.0: link up\n" +
		"[  12.3] NVRM: Xid (PCI:0000:3A:00): 13, pid=1, name=x"
	kept := node.KernelLogLines([]byte(log))
	if strings.Contains(string(kept), "Command line") || strings.Contains(string(kept), "mlx5_core") || strings.Count(string(kept), "\n") != 1 {
		t.Errorf("kept %q", kept)
	}
	if a, b := node.ParseXids([]byte(log)), node.ParseXids(kept); len(a) != 2 || !slices.EqualFunc(a, b, func(x, y node.Xid) bool { return x == y }) {
		t.Errorf("Xids of the log %v, of what is kept %v", a, b)
	}
	if got := string(sysinfo.ForSharing("commands/dmesg.txt", []byte(log))); got != string(kept) {
		t.Errorf("ForSharing(dmesg) = %q", got)
	}
}

// TestCmdlineKeepsOnlyIOMMU: the kernel command line keeps the IOMMU
// parameters the iommu.mode check reads; credentials and init's arguments
// are dropped.
func TestCmdlineKeepsOnlyIOMMU(t *testing.T) {
	in := "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro intel_iommu=on iommu=pt iommu.passthrough=1 amd_iommu=off " +
		"ip=10.1.2.3::10.1.2.1:255.255.255.0:node17 iscsi_password=pw -- --auth-token iommu=off\n"
	want := "intel_iommu=on iommu=pt iommu.passthrough=1 amd_iommu=off\n"
	if got := string(sysinfo.ForSharing("proc/cmdline", []byte(in))); got != want {
		t.Errorf("ForSharing(cmdline) = %q, want %q", got, want)
	}
	if got := string(sysinfo.ForSharing("proc/cmdline", []byte("quiet root=/dev/sda\n"))); got != "" {
		t.Errorf("no IOMMU parameters: %q", got)
	}
	if got := string(sysinfo.ForSharing("proc/meminfo", []byte(in))); got != in {
		t.Errorf("other files changed: %q", got)
	}
	if lo := sysinfo.LeftOut(); len(lo) != 3 {
		t.Errorf("LeftOut = %q", lo)
	}
}
