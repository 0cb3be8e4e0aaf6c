package rendezvous

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/testutil/freeport"
)

// Through Peer alone, ranks meet (rank 0 serving, the others joining and
// receiving the id), a member's Fail reaches rank 0 as a loss naming it
// and rank 0 aborts the others, and Finish ends the job: rank 0 gathers
// by rank, a member gets no results and the job's error.
func TestPeer(t *testing.T) {
	const size = 3
	addr := freeport.Addr(t)
	ctx := context.Background()
	peers := make([]Peer, size)
	ids := make([][]byte, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Go(func() { peers[r], ids[r], errs[r] = Meet(ctx, cfg(addr, r, size), testID()) })
	}
	wg.Wait()
	for r := range size {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
		defer peers[r].Close()
		if !bytes.Equal(ids[r], testID()) {
			t.Errorf("rank %d has another id", r)
		}
		if _, member := peers[r].(*Member); member != (r != 0) {
			t.Errorf("rank %d's peer is a %T", r, peers[r])
		}
	}
	peers[2].Fail("out of memory")
	select {
	case <-peers[0].Lost():
	case <-time.After(3 * time.Second):
		t.Fatal("rank 0 did not hear of rank 2's failure")
	}
	if err := peers[0].Err(); err == nil || !strings.Contains(err.Error(), "rank 2 (host2): out of memory") {
		t.Errorf("rank 0: %v", err)
	}
	for _, m := range peers[1:] {
		select {
		case <-m.Lost():
		case <-time.After(3 * time.Second):
			t.Fatal("a member was not told the job aborted")
		}
	}
	for r := 1; r < size; r++ {
		wg.Go(func() {
			res, err := peers[r].Finish(ctx, []byte{byte('0' + r)}, 3*time.Second)
			if res != nil || err == nil {
				t.Errorf("rank %d: Finish gave %q, %v", r, res, err)
			}
		})
	}
	res, err := peers[0].Finish(ctx, []byte("0"), 3*time.Second)
	wg.Wait()
	if err == nil || len(res) != size || string(res[0]) != "0" || string(res[1]) != "1" {
		t.Errorf("rank 0: Finish gave %q, %v", res, err)
	}
}
