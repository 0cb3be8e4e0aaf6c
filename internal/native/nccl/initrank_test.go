//go:build cgo

package nccl_test

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
)

// TestInitRankOfOne: a job of one rank through ncclGetUniqueId and
// ncclCommInitRank, split in two ways; bad arguments are refused before
// NCCL is called.
func TestInitRankOfOne(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICES", "1")
	t.Setenv("FAKENCCL_EXCHANGE_DIR", t.TempDir())
	rt, lib := openLibs(t)
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

// TestInitRanksGroup: one process joins two GPUs to a multi-process
// communicator in one group (nccl-tests' -g under MPI), and a collective
// on them computes across both; a world whose other ranks never come
// fails at NCCL's bootstrap timeout with the ranks named, and bad
// arguments are refused before NCCL is called.
func TestInitRanksGroup(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICES", "2")
	t.Setenv("FAKENCCL_EXCHANGE_DIR", t.TempDir())
	t.Setenv("FAKENCCL_PEER_TIMEOUT_MS", "300")
	rt, lib := openLibs(t)
	ctx := context.Background()
	id, err := lib.UniqueID(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		devs         []int
		first, world int
		want         string
	}{
		{[]int{0, 1}, 1, 2, "ranks 1..2 of 2"},
		{[]int{0, 1}, -1, 4, "ranks -1..0 of 4"},
		{[]int{1, 1}, 0, 2, "device 1 given twice"},
		{nil, 0, 2, "no device"},
	} {
		if _, err := lib.InitRanks(ctx, rt, bad.devs, id, bad.first, bad.world, time.Minute); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("InitRanks(%v, %d of %d): %v, want %q", bad.devs, bad.first, bad.world, err, bad.want)
		}
	}
	c, err := lib.InitRanks(ctx, rt, []int{0, 1}, id, 0, 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if c.World() != 2 || c.Size() != 2 || c.Rank(1) != 1 || c.Device(1) != 1 {
		t.Fatalf("comms: world %d size %d rank %d device %d", c.World(), c.Size(), c.Rank(1), c.Device(1))
	}
	// An all-reduce of float32: rank i's input is i+1 everywhere, so every
	// output element is 3.
	const count = 64
	host, err := rt.HostAlloc(ctx, 0, 4*count)
	if err != nil {
		t.Fatal(err)
	}
	recvs := make([]cuda.DevPtr, 2)
	for i := range 2 {
		send, err := rt.Malloc(ctx, i, 4*count)
		if err != nil {
			t.Fatal(err)
		}
		if recvs[i], err = rt.Malloc(ctx, i, 4*count); err != nil {
			t.Fatal(err)
		}
		b := host.Bytes()
		for k := range count {
			binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(float32(i+1)))
		}
		if err := rt.Memcpy(ctx, i, send, host, 4*count); err != nil {
			t.Fatal(err)
		}
		if err := c.SetBuffers(i, send, recvs[i]); err != nil {
			t.Fatal(err)
		}
	}
	op := nccl.Op{Coll: collective.AllReduce, Count: count, DType: 7, Elt: 4, TotalBytes: 4 * count, MaxBytes: 4 * count}
	if err := c.Enqueue(ctx, op, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := rt.Memcpy(ctx, i, host, recvs[i], 4*count); err != nil {
			t.Fatal(err)
		}
		for k := range count {
			if v := math.Float32frombits(binary.LittleEndian.Uint32(host.Bytes()[4*k:])); v != 3 {
				t.Fatalf("rank %d element %d: %v, want 3", i, k, v)
			}
		}
	}
	if err := c.Destroy(ctx); err != nil {
		t.Error(err)
	}
	// Ranks 0 and 1 of 3: rank 2 never joins.
	id2, err := lib.UniqueID(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lib.InitRanks(ctx, rt, []int{0, 1}, id2, 0, 3, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "ncclCommInitRank(ranks 0..1 of 3, devices 0,1)") || !strings.Contains(err.Error(), "ncclRemoteError") {
		t.Errorf("a rank that never joins: %v", err)
	}
}
