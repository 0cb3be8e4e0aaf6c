package counters

import (
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// BenchmarkRead8GPU10NIC: one counter sample of an HGX H200 node (8 GPUs,
// 10 NICs, their switches) from a fixture written to disk, so the reads are
// real system calls: what a burn-in pays at every window boundary.
func BenchmarkRead8GPU10NIC(b *testing.B) {
	root := machine.NewRoot(fakehost.Dir(b, "../../../testdata/hosts/hgx-h200-8gpu-10nic.host"))
	h := host(b, root)
	files := 0
	for b.Loop() {
		s := Read(root, h, "", time.Now)
		files = 0
		for _, p := range s.Ports {
			files += len(p.Values) + len(p.Missing)
		}
		for _, f := range s.Functions {
			files += len(f.Values) + len(f.Missing)
		}
	}
	b.ReportMetric(float64(files), "counters/sample")
}
