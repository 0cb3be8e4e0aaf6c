package ncclog

import (
	"bytes"
	"fmt"
)

// ResultCode is one value of NCCL's ncclResult_t: its name in nccl.h and
// what it means for the person reading the log.
type ResultCode struct {
	Code    int    `json:"code"`
	Name    string `json:"name"`
	Meaning string `json:"meaning"`
}

// resultCodes are ncclResult_t 0–7, after the comments of NCCL's nccl.h
// (src/nccl.h.in, https://github.com/NVIDIA/nccl).
var resultCodes = [...]ResultCode{
	{0, "ncclSuccess", "no error"},
	{1, "ncclUnhandledCudaError", "a call to a CUDA function failed (look for the CUDA error above it: a driver, Xid or memory fault)"},
	{2, "ncclSystemError", "a call to the system failed (sockets, ibverbs, shared memory, memory registration: look for the WARN above it)"},
	{3, "ncclInternalError", "an internal check in NCCL failed: a bug in NCCL or memory corruption"},
	{4, "ncclInvalidArgument", "an argument of an NCCL call is invalid"},
	{5, "ncclInvalidUsage", "an NCCL call is used wrongly (ranks that disagree on the collective, count or type, or a wrong call order)"},
	{6, "ncclRemoteError", "a call failed because of the network or a remote process that exited early (a peer crashed, a link went down)"},
	{7, "ncclInProgress", "the operation is still being progressed in the background (a non-blocking communicator): not an error"},
}

// ExplainResult is ncclResult_t code's name and meaning; false outside 0–7.
func ExplainResult(code int) (ResultCode, bool) {
	if code < 0 || code >= len(resultCodes) {
		return ResultCode{}, false
	}
	return resultCodes[code], true
}

// explainEvent says what the ncclResult_t a log message quotes means: the
// code of a propagation trace ("transport/net.cc:1302 -> 6"), or one
// named after "NCCL error"/"ncclResult" ("NCCL error 2", "(ncclResult 6)").
// "" when the message quotes none.
func explainEvent(m string) string {
	code, ok := quotedResult([]byte(m))
	if !ok {
		return ""
	}
	rc, ok := ExplainResult(code)
	if !ok || code == 0 {
		return ""
	}
	return fmt.Sprintf("ncclResult %d is %s: %s", rc.Code, rc.Name, rc.Meaning)
}

// quotedResult finds the ncclResult_t code a message quotes.
func quotedResult(m []byte) (int, bool) {
	if isPropagation(m) {
		if k := bytes.LastIndex(m, []byte(" [")); k > 0 && m[len(m)-1] == ']' {
			m = m[:k]
		}
		i := bytes.LastIndex(m, []byte(" -> "))
		return int(atoi64(m[i+4:])), true
	}
	for _, p := range [][]byte{[]byte("ncclResult "), []byte("NCCL error "), []byte("ncclResult_t ")} {
		i := bytes.Index(m, p)
		if i < 0 {
			continue
		}
		d := m[i+len(p):]
		n := 0
		for n < len(d) && isDigit(d[n]) {
			n++
		}
		if n > 0 && n <= 2 {
			return int(atoi64(d[:n])), true
		}
	}
	return 0, false
}
