package collective

// ResultCode is one value of NCCL's ncclResult_t: its name in nccl.h, what
// it means for the person who meets it, and what to do where one thing
// usually helps ("" where the code names a caller's mistake, not the
// node's).
type ResultCode struct {
	Code    int    `json:"code"`
	Name    string `json:"name"`
	Meaning string `json:"meaning"`
	Remedy  string `json:"remedy,omitempty"`
}

// resultCodes are ncclResult_t 0–7, after the comments of NCCL's nccl.h
// (src/nccl.h.in, https://github.com/NVIDIA/nccl). Both the NCCL log
// reader (analyze/ncclog) and the native benchmark (bench, through
// native/nccl's errors) explain codes from this one table.
var resultCodes = [...]ResultCode{
	{0, "ncclSuccess", "no error", ""},
	{1, "ncclUnhandledCudaError", "a call to a CUDA function failed (look for the CUDA error above it: a driver, Xid or memory fault)",
		"look for Xid events in the kernel log (dmesg) and the GPU's state (nvidia-smi -q); gdrcheck check gpu.health judges both"},
	{2, "ncclSystemError", "a call to the system failed (sockets, ibverbs, shared memory, memory registration: look for the WARN above it)",
		"read NCCL's WARN lines in its NCCL_DEBUG=INFO log; common causes are a low locked-memory limit, a small /dev/shm in a container and GPU memory that cannot be registered (gdrcheck check limits.memlock gdr.kernel-module)"},
	{3, "ncclInternalError", "an internal check in NCCL failed: a bug in NCCL or memory corruption",
		"keep NCCL's NCCL_DEBUG=INFO log and try another NCCL release; report the log to NCCL if it persists"},
	{4, "ncclInvalidArgument", "an argument of an NCCL call is invalid", ""},
	{5, "ncclInvalidUsage", "an NCCL call is used wrongly (ranks that disagree on the collective, count or type, or a wrong call order)", ""},
	{6, "ncclRemoteError", "a call failed because of the network or a remote process that exited early (a peer crashed, a link went down)",
		"check the NICs' ports and links (ibstat; gdrcheck check nic.port) and the log of the peer that failed first"},
	{7, "ncclInProgress", "the operation is still being progressed in the background (a non-blocking communicator): not an error", ""},
}

// ExplainResult is ncclResult_t code's name, meaning and remedy; false
// outside 0–7.
func ExplainResult(code int) (ResultCode, bool) {
	if code < 0 || code >= len(resultCodes) {
		return ResultCode{}, false
	}
	return resultCodes[code], true
}
