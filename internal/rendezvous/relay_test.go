package rendezvous

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/testutil/freeport"
)

func recv(t *testing.T, in <-chan Message) Message {
	t.Helper()
	select {
	case m := <-in:
		return m
	case <-time.After(3 * time.Second):
		t.Fatal("no message within 3s")
	}
	return Message{}
}

// Messages between members go through rank 0; with KeepGoing a lost rank
// is told to the others, who carry on and deliver, and a message to a lost
// rank is answered with its loss.
func TestRelayAndKeepGoing(t *testing.T) {
	t.Parallel() // waits on timeouts: overlapped with the others
	addr := freeport.Addr(t)
	ctx := context.Background()
	const size = 4
	members := make([]*Member, size)
	var wg sync.WaitGroup
	errs := make([]error, size)
	for r := 1; r < size; r++ {
		wg.Go(func() {
			c := cfg(addr, r, size)
			c.KeepGoing = true
			members[r], _, errs[r] = Join(ctx, c)
		})
	}
	c0 := cfg(addr, 0, size)
	c0.KeepGoing = true
	c, err := Serve(ctx, c0, testID())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wg.Wait()
	for r := 1; r < size; r++ {
		if errs[r] != nil {
			t.Fatal(errs[r])
		}
		defer members[r].Close()
	}
	if ip := members[1].LocalIP(); ip != "127.0.0.1" || c.LocalIP() != "127.0.0.1" {
		t.Errorf("local IPs %q %q", ip, c.LocalIP())
	}
	// 2 -> 3 relayed, 3 -> 2 back, 1 -> 0, 0 -> 1.
	if err := members[2].Send(3, []byte("hello 3")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, members[3].Inbox()); m.From != 2 || string(m.Data) != "hello 3" {
		t.Errorf("rank 3 got %+v", m)
	}
	if err := members[3].Send(2, []byte("hello 2")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, members[2].Inbox()); m.From != 3 || string(m.Data) != "hello 2" {
		t.Errorf("rank 2 got %+v", m)
	}
	if err := members[1].Send(0, []byte("to 0")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, c.Inbox()); m.From != 1 || string(m.Data) != "to 0" {
		t.Errorf("rank 0 got %+v", m)
	}
	if err := c.Send(1, []byte("to 1")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, members[1].Inbox()); m.From != 0 || string(m.Data) != "to 1" {
		t.Errorf("rank 1 got %+v", m)
	}
	if err := members[1].Send(1, nil); err == nil {
		t.Error("a rank sent to itself")
	}
	// Rank 3 dies: rank 2 and rank 0 are told, nobody is aborted.
	members[3].Close()
	for _, in := range []<-chan Message{members[2].Inbox(), c.Inbox()} {
		if m := recv(t, in); m.From != 3 || !strings.Contains(m.Lost, "rank 3 (host3)") {
			t.Errorf("loss: %+v", m)
		}
	}
	if m := recv(t, members[1].Inbox()); m.From != 3 || m.Lost == "" {
		t.Errorf("rank 1: %+v", m)
	}
	// A message to the lost rank comes back as its loss.
	if err := members[2].Send(3, []byte("anyone?")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, members[2].Inbox()); m.From != 3 || m.Lost == "" {
		t.Errorf("send to a lost rank: %+v", m)
	}
	select {
	case <-members[1].Lost():
		t.Fatal("rank 1 was aborted by another rank's loss under KeepGoing")
	default:
	}
	// The survivors still deliver; the job's error names rank 3 only.
	for r := 1; r < 3; r++ {
		wg.Go(func() { _ = members[r].Deliver(ctx, fmt.Appendf(nil, "r%d", r), 3*time.Second) })
	}
	res, err := c.Gather(ctx, []byte("r0"), 3*time.Second)
	wg.Wait()
	if err == nil || !strings.Contains(err.Error(), "rank 3") || strings.Contains(err.Error(), "rank 1") || string(res[1]) != "r1" || string(res[2]) != "r2" {
		t.Errorf("gather: %v %q", err, res)
	}
}

// KeepGoing: a rank that never arrives is lost at the join deadline; the
// job goes on with the others, who are told; alone, rank 0 still fails.
func TestKeepGoingMissingRank(t *testing.T) {
	t.Parallel() // waits on timeouts: overlapped with the others
	addr := freeport.Addr(t)
	ctx := context.Background()
	const size = 4
	members := make([]*Member, size)
	var wg sync.WaitGroup
	for r := 1; r < 3; r++ {
		wg.Go(func() {
			c := cfg(addr, r, size)
			c.KeepGoing = true
			var err error
			if members[r], _, err = Join(ctx, c); err != nil {
				t.Error(err)
			}
		})
	}
	c0 := cfg(addr, 0, size)
	c0.KeepGoing, c0.JoinTimeout = true, time.Second
	start := time.Now()
	c, err := Serve(ctx, c0, testID())
	wg.Wait()
	if err != nil || members[1] == nil || members[2] == nil {
		t.Fatalf("serve: %v", err)
	}
	defer c.Close()
	defer members[1].Close()
	defer members[2].Close()
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %s", took)
	}
	for _, in := range []<-chan Message{members[2].Inbox(), members[1].Inbox(), c.Inbox()} {
		if m := recv(t, in); m.From != 3 || !strings.Contains(m.Lost, "rank 3 (host3): never arrived") {
			t.Errorf("%+v", m)
		}
	}
	if err := members[2].Send(1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, members[1].Inbox()); m.From != 2 {
		t.Errorf("%+v", m)
	}
	for r := 1; r < 3; r++ {
		wg.Go(func() { _ = members[r].Deliver(ctx, []byte("ok"), 3*time.Second) })
	}
	res, err := c.Gather(ctx, []byte("ok"), 3*time.Second)
	wg.Wait()
	if err == nil || !strings.Contains(err.Error(), "rank 3") || string(res[1]) != "ok" || string(res[2]) != "ok" || res[3] != nil {
		t.Errorf("gather: %v %q", err, res)
	}
	// Nobody came: an error, as without KeepGoing.
	alone := cfg(freeport.Addr(t), 0, 2)
	alone.KeepGoing, alone.JoinTimeout = true, 300*time.Millisecond
	if _, err := Serve(ctx, alone, testID()); err == nil || !strings.Contains(err.Error(), "never arrived") {
		t.Errorf("alone: %v", err)
	}
}
