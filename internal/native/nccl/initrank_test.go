//go:build cgo

package nccl_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

// TestInitRankOfOne: a job of one rank through ncclGetUniqueId and
// ncclCommInitRank, split in two ways; bad arguments are refused before
// NCCL is called.
func TestInitRankOfOne(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICES", "1")
	t.Setenv("FAKENCCL_EXCHANGE_DIR", t.TempDir())
	rt, err := cuda.Open(fakelib.CUDART(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	lib, err := nccl.Open(fakelib.NCCL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lib.Close() })
	ctx := context.Background()
	id, err := lib.UniqueID(ctx, rt)
	if err != nil || len(id) != nccl.UniqueIDSize {
		t.Fatalf("UniqueID: %d bytes, %v", len(id), err)
	}
	for _, bad := range []struct {
		id          []byte
		rank, world int
		want        string
	}{
		{id[:10], 0, 1, "unique id of 10 bytes"},
		{id, 1, 1, "rank 1 of 1"},
		{id, -1, 2, "rank -1 of 2"},
	} {
		if _, err := lib.InitRank(ctx, rt, 0, bad.id, bad.rank, bad.world, time.Minute); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("InitRank(rank %d of %d): %v, want %q", bad.rank, bad.world, err, bad.want)
		}
	}
	c, err := lib.InitRank(ctx, rt, 0, id, 0, 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if c.World() != 1 || c.Size() != 1 || c.Rank(0) != 0 || c.Device(0) != 0 {
		t.Errorf("comms: world %d size %d rank %d device %d", c.World(), c.Size(), c.Rank(0), c.Device(0))
	}
	if !lib.HasSplit() {
		t.Fatal("the fake NCCL has ncclCommSplit")
	}
	if _, err := c.Split(ctx, -1, 0, time.Minute); err == nil {
		t.Error("a negative color was accepted")
	}
	sub, err := c.Split(ctx, 3, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if sub.World() != 1 || sub.Rank(0) != 0 {
		t.Errorf("split: world %d rank %d", sub.World(), sub.Rank(0))
	}
	if err := sub.Destroy(ctx); err != nil {
		t.Error(err)
	}
	if err := c.Destroy(ctx); err != nil {
		t.Error(err)
	}
	if _, err := c.Split(ctx, 0, 0, time.Minute); err == nil {
		t.Error("split of a destroyed communicator")
	}
}
