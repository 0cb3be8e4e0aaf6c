package report

import (
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// The condensed table: one line for one finding on several subjects, a
// different number is another finding, passes counted, lines cut to a
// terminal's width.
func TestWriteCondensed(t *testing.T) {
	rs := []result.Result{
		{ID: "nvlink.state", Status: result.Fail, Subject: "GPU2", Reason: "Degraded", Message: "GPU2: 10 of 12 NVLinks active"},
		{ID: "nvlink.state", Status: result.Fail, Subject: "GPU5", Reason: "Degraded", Message: "GPU5: 10 of 12 NVLinks active"},
		{ID: "nvlink.state", Status: result.Fail, Subject: "GPU6", Reason: "Degraded", Message: "GPU6: 8 of 12 NVLinks active"},
		{ID: "gpu.health", Status: result.Unknown, Subject: "GPU0-xid", Reason: "KernelLogUnreadable", Message: "GPU0: cannot read the kernel log", Remedy: "run as root"},
		{ID: "gpu.health", Status: result.Unknown, Subject: "GPU1-xid", Reason: "KernelLogUnreadable", Message: "GPU1: cannot read the kernel log", Remedy: "run as root"},
		{ID: "pcie.link", Status: result.Pass, Subject: "GPU0"}, {ID: "pcie.link", Status: result.Pass, Subject: "GPU1"}, {ID: "iommu.mode", Status: result.Pass, Subject: "GPU0"},
	}
	var b strings.Builder
	if err := WriteCondensed(&b, rs, time.Millisecond, CondensedOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"GPU2 (+1)", "the same on GPU2, GPU5\n", "GPU6: 8 of 12 NVLinks active", "GPU0-xid (+1)", "the same on GPU0-xid, GPU1-xid\n",
		"3 passed (iommu.mode 1, pcie.link 2); --all lists them\n", "3 fail, 3 pass, 2 unknown in 1 ms\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "→ run as root") != 1 || strings.Count(out, "FAIL") != 2 {
		t.Errorf("not grouped:\n%s", out)
	}
	b.Reset()
	if err := WriteCondensed(&b, rs, time.Millisecond, CondensedOptions{Width: 40}); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if n := len([]rune(l)); n > 40 {
			t.Errorf("a line of %d at width 40: %q", n, l)
		}
	}
}
