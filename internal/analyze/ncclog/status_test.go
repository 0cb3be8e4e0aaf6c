package ncclog

import (
	"strings"
	"testing"
)

// TestExplainEvent: a log line quoting an ncclResult_t code is explained
// (collective.ExplainResult), a code outside 0–7 or a success is not.
func TestExplainEvent(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"transport/net.cc:1302 -> 6", "ncclResult 6 is ncclRemoteError"},
		{"proxy.cc:878 -> 6 [Progress Thread]", "ncclResult 6 is ncclRemoteError"},
		{"init.cc:1234 -> 2", "ncclResult 2 is ncclSystemError"},
		{"bootstrap.cc:90 -> 3", "ncclResult 3 is ncclInternalError: an internal check"},
		{"all_reduce_perf: NCCL error 5 'invalid usage'", "ncclResult 5 is ncclInvalidUsage"},
		{"ncclCommInitAll: unhandled cuda error (ncclResult 1)", "ncclResult 1 is ncclUnhandledCudaError"},
		{"Got completion from peer with status=12 opcode=0", ""}, // an ibv_wc_status, not an ncclResult
		{"enqueue.cc:12 -> 0", ""},
		{"NCCL error 42", ""},
	} {
		got := explainEvent(tc.msg)
		if tc.want == "" && got != "" || tc.want != "" && !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.msg, got, tc.want)
		}
	}
}
