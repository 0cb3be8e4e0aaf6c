// Package node holds the node facts that gdrcheck's readiness checks judge
// beyond the PCIe/NVLink topology, as types and their parsers: kernel
// modules, the kernel command line, the NVIDIA driver's version line, IOMMU
// units and group types, the locked-memory limit, Xid events in the kernel
// log, fabric manager's state, network interfaces, rdma-core and mlx5_core
// versions, the job environment (and what of it is kept) and the
// user-space libraries found.
//
// It reads nothing: collect/sysinfo reads these facts through a
// machine.Root. Every fact carries where it was read as a person should see
// it (a path or a command) and the error when it could not be read, so a
// check can cite its evidence or say why it does not know.
package node

import (
	"path"
	"strings"
	"time"
)

// Facts is what collection found on one node.
type Facts struct {
	// Paths shows root-relative paths as a person should see them.
	Paths Paths
	// Live is true when the facts come from the running host's own "/".
	Live bool
	// CapturedAt is when the snapshot the facts come from was taken (zero
	// when live or not recorded).
	CapturedAt time.Time

	Modules       Modules
	Cmdline       Text // /proc/cmdline
	Driver        Driver
	IOMMU         IOMMU
	Memlock       Memlock
	KernelLog     KernelLog
	FabricManager Text // systemctl is-active nvidia-fabricmanager
	// FabricManagerVersion is nv-fabricmanager --version; FabricManagerLog
	// its recent journal (ParseFabricManagerVersion, FabricManagerMismatch).
	FabricManagerVersion Text
	FabricManagerLog     Text
	// IMEX is collected where a GPU's NVLink domain spans nodes.
	IMEX IMEX
	// NetInterfaces lists /sys/class/net: every interface, virtual ones
	// (lo, bonds, bridges) too.
	NetInterfaces Listing
	RDMACore      RDMACore
	// MLX5Core is /sys/module/mlx5_core/version (collected when the host
	// has RDMA NICs).
	MLX5Core Text
	Environ  Environ
	TopoFile TopoFile
	// Libraries are the CUDA runtime and NCCL found (nil: not probed, not
	// captured).
	Libraries *Libraries
}

// Paths turns root-relative paths into the form a person sees: the host path
// when live, the path inside the snapshot otherwise.
type Paths struct {
	// Prefix goes before the cleaned root-relative path ("/" when live).
	Prefix string
}

// Display is rel as a person should see it in a message.
func (p Paths) Display(rel string) string {
	return p.Prefix + strings.TrimPrefix(path.Clean("/"+rel), "/")
}

// Text is one small file or command output.
type Text struct {
	// Source is where it was read: a displayed path, or a command line.
	Source string
	// Value is the text, white space trimmed.
	Value string
	// Err is why it could not be read (nil: read).
	Err error
}

// Listing is the entry names of one directory.
type Listing struct {
	Source string
	Names  []string
	Err    error
}

// Modules are the loaded kernel modules.
type Modules struct {
	// Source is /proc/modules as displayed.
	Source string
	// Loaded are the module names /proc/modules lists.
	Loaded map[string]bool
	// Err is why /proc/modules could not be read.
	Err error
	// BuiltIn are the ModulesOfInterest present under /sys/module, which
	// also holds modules built into the kernel.
	BuiltIn map[string]bool
}

// ModulesOfInterest are the modules whose /sys/module entry collection
// looks for: the peer-memory modules and the RDMA drivers with dma-buf
// memory registration.
var ModulesOfInterest = []string{"nvidia_peermem", "nv_peer_mem", "mlx5_ib", "efa", "irdma", "bnxt_re"}

// Has reports a module as loaded, or built in (for ModulesOfInterest).
func (m Modules) Has(name string) bool { return m.Loaded[name] || m.BuiltIn[name] }

// Driver is the first line of /proc/driver/nvidia/version.
type Driver struct {
	Source  string
	Line    string
	Version string // "570.133.20"; "" when the line names none
	// Open is true for the open kernel module.
	Open bool
	Err  error
}

// IOMMU is the host's IOMMU units and the type of the groups of its GPUs
// and RDMA NICs.
type IOMMU struct {
	// Units lists /sys/class/iommu.
	Units Listing
	// Groups holds /sys/kernel/iommu_groups/N/type by group number.
	Groups map[int]Text
}

// Memlock is the soft RLIMIT_MEMLOCK of gdrcheck's own process.
type Memlock struct {
	// KB is the limit in KiB; -1 means unlimited.
	KB int64
	// Source and Line are the evidence: the file or command and the line
	// the limit was read from (empty when nothing was found).
	Source string
	Line   string
	Err    error
}

// KernelLog is the Xid events of the kernel log.
type KernelLog struct {
	// Source is the command the log was read with.
	Source string
	Xids   []Xid
	// Err is why the log could not be read (wholly or in part).
	Err error
}

// Xid is one "NVRM: Xid" line of the kernel log.
type Xid struct {
	// When is the line's time stamp (zero when it has none).
	When time.Time
	// Bus is the bus id as the driver prints it: 0000:18:00.
	Bus  string
	Code int
	Line string
}

// RDMACore is the rdma-core release, found from libibverbs' file name.
type RDMACore struct {
	Version string // "50.0"; "" when not found
	Source  string // the displayed library path; "" when not found
}

// Environ is the environment of the process that will run the job: the
// variables that shape the data path and the launchers', secrets masked
// (see FilterEnviron).
type Environ struct {
	Vars map[string]string
	// Known is false when it could not be had (a snapshot without it).
	Known bool
}

// TopoFile is the file NCCL_TOPO_FILE names, read when live.
type TopoFile struct {
	// Checked is true when a read was tried (live, NCCL_TOPO_FILE set).
	Checked bool
	// Size is the file's length when it could be read.
	Size int
	Err  error
}
