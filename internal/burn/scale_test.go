package burn

import (
	"context"
	"testing"
	"time"

	cc "github.com/gdrcheck/gdrcheck/internal/collect/counters"
	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// BenchmarkJudgeDay8GPU: the attribution, judging and timeline of a day's
// burn-in of an HGX H200 node (8 GPUs, 10 RDMA NICs; 288 windows of 5
// minutes, every GPU's PCIe path to the host and to its NIC and every
// port carrying traffic in every window). A burn-in judges every window
// again after each one, so this is its last and largest judging.
// docs/performance.md records the figures.
func BenchmarkJudgeDay8GPU(b *testing.B) {
	root := fakehost.Root(b, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	h, err := discover.Discover(context.Background(), discover.WithRoot(root), discover.WithoutGPUFacts(), discover.WithoutNames())
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	base := at(cc.Read(root, h, "baseline", func() time.Time { return t0 }), t0, "baseline")
	const windows = 288
	var s Schedule
	var ends []*cf.Sample
	prev := base
	pairing := h.Pairing()
	for i := range windows {
		start := t0.Add(time.Second + time.Duration(i)*5*time.Minute)
		w := Window{Start: start, End: start.Add(5*time.Minute - 2*time.Second)}
		for _, g := range h.GPUs {
			w.Traffic = append(w.Traffic, Traffic{Link: GPUHostLink(g.Address), Bytes: 1 << 40})
		}
		for _, e := range pairing.GPUs {
			for _, n := range e.Nearest {
				w.Traffic = append(w.Traffic, Traffic{Link: GPUNICLink(e.GPUAddress, n), Bytes: 1 << 40}, Traffic{Link: PortLink(n, 1), Bytes: 1 << 40})
			}
		}
		s.Windows = append(s.Windows, w)
		end := at(prev, w.End.Add(time.Second), "end")
		ends = append(ends, end)
		prev = end
	}
	b.ReportAllocs()
	for b.Loop() {
		ser, err := Attribute(h, s, []*cf.Sample{base}, ends)
		if err != nil {
			b.Fatal(err)
		}
		if len(Judge(ser, Options{})) == 0 || len(ser.Timeline()) == 0 {
			b.Fatal("no verdicts")
		}
	}
}
