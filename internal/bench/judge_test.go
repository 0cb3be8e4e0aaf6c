package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// TestJudgeCopies: copies on the captured H200 node are judged against the
// model and stated as a fraction of the hardware limit (HBM peak, PCIe
// Gen5 x16 per direction), with the limit named in the evidence.
func TestJudgeCopies(t *testing.T) {
	r, cleanup, err := snapshot.Open("../../testdata/snapshots/h200x1-vm.tgz")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	h, err := discover.Discover(context.Background(), discover.WithRoot(r))
	if err != nil || len(h.GPUs) != 1 {
		t.Fatalf("discover: %v", err)
	}
	s, err := model.FromHost(h)
	if err != nil {
		t.Fatal(err)
	}
	s.GPUsPerNode, s.Nodes = 1, 1
	res := []CopyResult{
		{Test: CopyD2D, Dev: 0, Peer: -1, GBps: 2137.9, ReadWriteGBps: 4275.8, Valid: true},
		{Test: CopyH2DPinned, Dev: 0, Peer: -1, GBps: 55.3, Valid: true},
		{Test: CopyBidirPinned, Dev: 0, Peer: -1, GBps: 99.2, Valid: true},
		{Test: CopyH2DPinned, Dev: 0, Peer: -1, GBps: 20, Valid: true},
	}
	got := JudgeCopies(s, map[int]*topology.GPU{0: h.GPUs[0]}, res, 0.85)
	want := []struct {
		status result.Status
		msg    string
		limit  string
	}{
		{result.Pass, "4275.8 GB/s, expected 4176.0 GB/s", "memory peak 4800 GB/s"},
		{result.Pass, "55.3 GB/s, expected 54.2 GB/s", "PCIe Gen5 x16, 63.0 GB/s per direction"},
		{result.Pass, "49.6 GB/s, expected 39.6 GB/s", "PCIe Gen5 x16, 63.0 GB/s per direction"},
		{result.Fail, "20.0 GB/s, expected 54.2 GB/s", "PCIe Gen5 x16, 63.0 GB/s per direction"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d judgements: %+v", len(got), got)
	}
	fractions := []string{"89% of the hardware limit", "88% of the hardware limit", "79% of the hardware limit", "32% of the hardware limit"}
	for i, w := range want {
		g := got[i]
		if g.Status != w.status || !strings.Contains(g.Message, w.msg) || !strings.Contains(g.Message, fractions[i]) {
			t.Errorf("%d: %s %s", i, g.Status, g.Message)
		}
		if len(g.Evidence) != 2 || g.Evidence[1].Source != "hardware limit" || g.Evidence[1].Value != w.limit {
			t.Errorf("%d: evidence %+v", i, g.Evidence)
		}
	}
}
