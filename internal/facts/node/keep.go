package node

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// What a snapshot keeps of the host's environment, kernel log and kernel
// command line: what collection and the checks read, and nothing else. The
// same filters apply live and on replay, so a check sees the same facts on a
// host and on its snapshot.

// EnvironPrefixes are the families of variables kept of the job
// environment: NCCL's, CUDA's, and those of the transports and libraries
// under it (UCX, libfabric, Open MPI's MCA parameters, NVSHMEM, PyTorch's
// NCCL settings).
var EnvironPrefixes = []string{"NCCL_", "CUDA_", "UCX_", "FI_", "OMPI_MCA_", "NVSHMEM_", "TORCH_NCCL_"}

// EnvironNames are the single variables kept: the container runtime's GPU
// selection, the library path, and the launchers' rank, size and node
// variables (Slurm, Open MPI, PMI/Hydra, torchrun, Kubernetes indexed
// jobs). Node lists and job names are not kept: they name hosts and
// people's work.
var EnvironNames = []string{
	"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "LD_LIBRARY_PATH",
	// Slurm
	"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_NNODES",
	"SLURM_JOB_NUM_NODES", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_STEP_NUM_TASKS",
	"SLURM_STEP_NUM_NODES", "SLURM_GPUS_ON_NODE", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS",
	// Open MPI
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
	"OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_NODE_RANK",
	// PMI, PMIx, MPICH's Hydra
	"PMI_RANK", "PMI_SIZE", "PMI_LOCAL_RANK", "PMI_LOCAL_SIZE", "PMIX_RANK", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
	// torchrun
	"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT",
	// Kubernetes indexed jobs
	"JOB_COMPLETION_INDEX",
}

// KeepEnviron reports whether a variable is kept of the job environment.
func KeepEnviron(name string) bool {
	return slices.Contains(EnvironNames, name) || slices.ContainsFunc(EnvironPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// secretWords in a variable's name (any case) mark its value as a secret.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"}

// secretPrefixes start well-known API tokens (NGC/NIM, GitHub, Hugging
// Face, GitLab, OpenAI-style, Slack, AWS access key ids).
var secretPrefixes = []string{"nvapi-", "ghp_", "gho_", "ghs_", "github_pat_", "hf_", "glpat-", "sk-", "xoxb-", "xoxp-", "AKIA"}

var (
	reHexBlob    = regexp.MustCompile(`^[0-9a-fA-F]{32,}$`)
	reBase64Blob = regexp.MustCompile(`^[A-Za-z0-9+/_-]{32,}={0,2}$`)
	reDigit      = regexp.MustCompile(`[0-9]`)
	reLetter     = regexp.MustCompile(`[A-Za-z]`)
	reMasked     = regexp.MustCompile(`^<set, [0-9]+ chars>$`)
)

// SecretName reports whether a variable's name says it holds a secret.
func SecretName(name string) bool {
	u := strings.ToUpper(name)
	return slices.ContainsFunc(secretWords, func(w string) bool { return strings.Contains(u, w) })
}

// SecretValue reports whether a value looks like a secret whatever its
// name: a known token prefix, or a long hex or base64 blob (32 characters
// or more, letters and digits mixed; a path is not a blob).
func SecretValue(v string) bool {
	if slices.ContainsFunc(secretPrefixes, func(p string) bool { return strings.HasPrefix(v, p) && len(v) > len(p)+8 }) {
		return true
	}
	if reHexBlob.MatchString(v) {
		return true
	}
	return reBase64Blob.MatchString(v) && !strings.HasPrefix(v, "/") && reDigit.MatchString(v) && reLetter.MatchString(v)
}

// Mask is what a snapshot and the checks see of a secret value.
func Mask(v string) string {
	if reMasked.MatchString(v) {
		return v // masked already (a snapshot read back)
	}
	return fmt.Sprintf("<set, %d chars>", len(v))
}

// FilterEnviron keeps the variables that shape the data path and the
// launchers' (KeepEnviron), with secret-looking values masked (SecretName,
// SecretValue). It is applied to the live environment and to a snapshot's.
func FilterEnviron(environ []string) map[string]string {
	out := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !KeepEnviron(k) {
			continue
		}
		if SecretName(k) || SecretValue(v) {
			v = Mask(v)
		}
		out[k] = v
	}
	return out
}

// XidMarker is in every kernel-log line ParseXids reads.
const XidMarker = "NVRM: Xid"

// KernelLogLines keeps of a kernel log only the lines collection reads
// (ParseXids): NVIDIA's Xid reports.
func KernelLogLines(b []byte) []byte {
	var out strings.Builder
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, XidMarker) {
			out.WriteString(line)
		}
	}
	return []byte(out.String())
}

// CmdlineParams are the kernel parameters the checks read (iommu.mode).
var CmdlineParams = []string{"iommu", "iommu.passthrough", "intel_iommu", "amd_iommu"}

// FilterCmdline keeps of a kernel command line only CmdlineParams, in
// their order; the others (root devices, NFS or iSCSI credentials, init's
// arguments) are dropped.
func FilterCmdline(s string) string {
	var kept []string
	for f := range strings.FieldsSeq(s) {
		if f == "--" {
			break // the rest is init's, not the kernel's
		}
		k, _, _ := strings.Cut(f, "=")
		if slices.Contains(CmdlineParams, k) {
			kept = append(kept, f)
		}
	}
	return strings.Join(kept, " ")
}
