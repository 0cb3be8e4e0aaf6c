package collective

import "testing"

// TestExplainResult: every ncclResult_t 0–7 has its nccl.h name and a
// meaning, the codes that point at the node have a remedy, and nothing
// outside 0–7 is explained.
func TestExplainResult(t *testing.T) {
	for code, tc := range []struct {
		name   string
		remedy bool
	}{
		{"ncclSuccess", false}, {"ncclUnhandledCudaError", true}, {"ncclSystemError", true}, {"ncclInternalError", true},
		{"ncclInvalidArgument", false}, {"ncclInvalidUsage", false}, {"ncclRemoteError", true}, {"ncclInProgress", false},
	} {
		rc, ok := ExplainResult(code)
		if !ok || rc.Code != code || rc.Name != tc.name || rc.Meaning == "" || (rc.Remedy != "") != tc.remedy {
			t.Errorf("%d: %+v %v", code, rc, ok)
		}
	}
	for _, code := range []int{-1, 8, 12, 1000} {
		if _, ok := ExplainResult(code); ok {
			t.Errorf("%d explained", code)
		}
	}
}
