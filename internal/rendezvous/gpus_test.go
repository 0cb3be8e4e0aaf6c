package rendezvous

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/testutil/freeport"
)

// TestGPUCountsAnnounced: every rank learns every rank's GPU count, 1
// where a rank announced none (a job of one GPU per process, as before).
func TestGPUCountsAnnounced(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		gpus, want []int
	}{
		{[]int{0, 0, 0}, []int{1, 1, 1}},
		{[]int{2, 2}, []int{2, 2}},
		{[]int{2, 0, 3}, []int{2, 1, 3}},
		{[]int{1, 4}, []int{1, 4}},
	} {
		t.Run(fmt.Sprint(tc.gpus), func(t *testing.T) {
			addr := freeport.Addr(t)
			ctx := context.Background()
			size := len(tc.gpus)
			got := make([][]int, size)
			errs := make([]error, size)
			var wg sync.WaitGroup
			for r := 1; r < size; r++ {
				wg.Go(func() {
					c := cfg(addr, r, size)
					c.GPUs = tc.gpus[r]
					m, _, err := Join(ctx, c)
					if err != nil {
						errs[r] = err
						return
					}
					defer m.Close()
					got[r] = m.GPUs()
					errs[r] = m.Deliver(ctx, []byte("x"), 3*time.Second)
				})
			}
			c0 := cfg(addr, 0, size)
			c0.GPUs = tc.gpus[0]
			c, err := Serve(ctx, c0, testID())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got[0] = c.GPUs()
			if _, err := c.Gather(ctx, []byte("x"), 3*time.Second); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			for r := range size {
				if errs[r] != nil || !slices.Equal(got[r], tc.want) {
					t.Errorf("rank %d: GPUs %v, %v; want %v", r, got[r], errs[r], tc.want)
				}
			}
		})
	}
}

// TestOneGPUAnswerUnchanged: a member of one GPU answers as before the
// count existed (its tag is over the same parts), so a job of one GPU per
// process speaks the protocol it spoke; a count is covered by the tag.
func TestOneGPUAnswerUnchanged(t *testing.T) {
	ch, n, p := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 16)
	a := auth{Rank: 1, Size: 2, Host: "h", Node: "n", Process: p, Nonce: n}
	old := mac(secret, "gdrcheck-rendezvous/2 member", ch, n, []byte("1"), []byte("2"), []byte("h"), []byte("n"), p)
	if !bytes.Equal(a.tag(secret, ch), old) {
		t.Error("a one-GPU member's tag changed")
	}
	a.GPUs = 2
	if bytes.Equal(a.tag(secret, ch), old) {
		t.Error("the GPU count is not covered by the tag")
	}
}

// TestGPUCountRefused: a member announcing a count out of bounds (a
// garbage answer that proved the secret) is refused by rank 0, finally,
// with the reason; rank 0 names it among the connections it turned away.
func TestGPUCountRefused(t *testing.T) {
	t.Parallel()
	addr := freeport.Addr(t)
	ctx := context.Background()
	c0 := cfg(addr, 0, 2)
	c0.JoinTimeout = 2 * time.Second
	served := make(chan error, 1)
	go func() {
		c, err := Serve(ctx, c0, testID())
		if err == nil {
			c.Close()
		}
		served <- err
	}()
	if err := (&Config{Addr: addr, Rank: 1, Size: 2, Secret: secret, JoinTimeout: time.Second, GPUs: 65}).check(); err == nil {
		t.Error("a member's own count of 65 GPUs was accepted")
	}
	// The member's own check refuses such a count: this one goes around it.
	mc := cfg(addr, 1, 2)
	mc.GPUs, mc.MaxMessage = 1000, DefaultMaxMessage
	var err error
	var final bool
	for range 50 {
		var nc net.Conn
		if nc, err = net.Dial("tcp", addr); err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		m := &Member{cfg: mc, cn: newConn(nc, handshakeMax), lost: make(chan struct{}), done: make(chan struct{}), closed: make(chan struct{})}
		_, final, err = m.handshake(ctx, time.Now().Add(3*time.Second), nonce()[:16])
		m.cn.close()
		break
	}
	if !final || !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "it announced 1000 GPUs: want 1..64") {
		t.Errorf("member: final %v, %v", final, err)
	}
	if err := <-served; err == nil || !strings.Contains(err.Error(), "announced 1000 GPUs") {
		t.Errorf("rank 0: %v", err)
	}
}

// TestGPUsOfIDMessage: a member checks the counts rank 0 sent.
func TestGPUsOfIDMessage(t *testing.T) {
	for _, tc := range []struct {
		mine int
		sent []int
		want []int
		err  string
	}{
		{0, nil, []int{1, 1, 1}, ""},
		{1, nil, []int{1, 1, 1}, ""},
		{2, nil, nil, "did not take this process's 2 GPUs (it numbers one GPU per process: an older gdrcheck?)"},
		{2, []int{1, 2, 3}, []int{1, 2, 3}, ""},
		{2, []int{1, 2}, nil, "name 2 ranks, want 3"},
		{2, []int{0, 2, 3}, nil, "rank 0 drives 0 GPUs: want 1..64"},
		{2, []int{1, 2, 65}, nil, "rank 2 drives 65 GPUs"},
		{3, []int{1, 2, 3}, nil, "counts 2 GPUs for this rank (1), which drives 3"},
	} {
		t.Run(strconv.Itoa(tc.mine)+fmt.Sprint(tc.sent), func(t *testing.T) {
			m := &Member{cfg: Config{Addr: "a:1", Rank: 1, Size: 3, GPUs: tc.mine}}
			got, err := m.gpusOf(tc.sent)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want %q", err, tc.err)
			case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
				t.Errorf("%v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
