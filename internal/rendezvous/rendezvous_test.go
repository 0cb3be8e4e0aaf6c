package rendezvous

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/testutil/freeport"
)

var secret = []byte("0123456789abcdef-test-secret")

func cfg(addr string, rank, size int) Config {
	return Config{Addr: addr, Rank: rank, Size: size, Host: fmt.Sprintf("host%d", rank), Node: fmt.Sprintf("node%d", rank/2), Secret: secret, JoinTimeout: 3 * time.Second,
		Hosts: []string{"host0", "host1", "host2", "host3"}}
}

func testID() []byte { return bytes.Repeat([]byte{7, 1}, IDSize/2) }

func TestIDAndGather(t *testing.T) {
	t.Parallel() // waits on timeouts: overlapped with the others
	for _, size := range []int{2, 4} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			addr := freeport.Addr(t)
			ctx := context.Background()
			var wg sync.WaitGroup
			errs := make([]error, size)
			for r := 1; r < size; r++ {
				wg.Go(func() {
					m, id, err := Join(ctx, cfg(addr, r, size))
					if err != nil {
						errs[r] = err
						return
					}
					defer m.Close()
					if !bytes.Equal(id, testID()) {
						errs[r] = fmt.Errorf("rank %d got another id", r)
						return
					}
					if n := m.Nodes(); len(n) != size || n[size-1] != fmt.Sprintf("node%d", (size-1)/2) {
						errs[r] = fmt.Errorf("rank %d: nodes %v", r, n)
						return
					}
					errs[r] = m.Deliver(ctx, fmt.Appendf(nil, "result of %d", r), 3*time.Second)
				})
			}
			time.Sleep(100 * time.Millisecond) // members start first: they retry
			c, err := Serve(ctx, cfg(addr, 0, size), testID())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res, err := c.Gather(ctx, []byte("result of 0"), 3*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			for r := range size {
				if errs[r] != nil {
					t.Errorf("rank %d: %v", r, errs[r])
				}
				if want := fmt.Sprintf("result of %d", r); string(res[r]) != want {
					t.Errorf("result %d = %q", r, res[r])
				}
			}
			if h := c.Hosts(); h[size-1] != fmt.Sprintf("host%d", size-1) {
				t.Errorf("hosts %v", h)
			}
		})
	}
}

func TestWrongSecretRejected(t *testing.T) {
	t.Parallel() // waits on timeouts: overlapped with the others
	addr := freeport.Addr(t)
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		c := cfg(addr, 0, 2)
		c.JoinTimeout = time.Second
		_, err := Serve(ctx, c, testID())
		done <- err
	}()
	bad := cfg(addr, 1, 2)
	bad.Secret = []byte("another-secret-of-sixteen-bytes")
	// Rank 0's refusal is not authenticated: the member retries it until
	// its own deadline.
	bad.JoinTimeout = time.Second
	_, _, err := Join(ctx, bad)
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "wrong secret") {
		t.Fatalf("wrong secret: %v", err)
	}
	// Rank 0 still waits for the real rank 1, and names it when it never comes.
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "rank 1 (host1): never arrived") {
		t.Fatalf("rank 0: %v", err)
	}
}

func TestMissingRankNamed(t *testing.T) {
	t.Parallel() // waits on timeouts: overlapped with the others
	addr := freeport.Addr(t)
	ctx := context.Background()
	got := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		_, _, err := Join(ctx, cfg(addr, 1, 4))
		got <- err
	}()
	c := cfg(addr, 0, 4)
	c.JoinTimeout = time.Second
	start := time.Now()
	_, err := Serve(ctx, c, testID())
	if err == nil || !strings.Contains(err.Error(), "2 of 4 ranks never arrived") || !strings.Contains(err.Error(), "rank 2 (host2)") || !strings.Contains(err.Error(), "rank 3 (host3)") {
		t.Fatalf("rank 0: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s", d)
	}
	// The rank that came hears the same names.
	if err := <-got; err == nil || !strings.Contains(err.Error(), "rank 3 (host3)") {
		t.Fatalf("rank 1: %v", err)
	}
}

func TestRankZeroNeverComes(t *testing.T) {
	t.Parallel() // waits on timeouts: overlapped with the others
	c := cfg(freeport.Addr(t), 1, 2)
	c.JoinTimeout = 500 * time.Millisecond
	_, _, err := Join(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "rank 0 at") || !strings.Contains(err.Error(), "(host0) unreachable") {
		t.Fatal(err)
	}
}

func TestDeadMemberAbortsOthers(t *testing.T) {
	t.Parallel() // waits on timeouts: overlapped with the others
	addr := freeport.Addr(t)
	ctx := context.Background()
	members := make(chan *Member, 2)
	for r := 1; r < 3; r++ {
		go func() {
			m, _, err := Join(ctx, cfg(addr, r, 3))
			if err != nil {
				t.Error(err)
			}
			members <- m
		}()
	}
	c, err := Serve(ctx, cfg(addr, 0, 3), testID())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, b := <-members, <-members
	a.Close() // a dies
	select {
	case <-c.Lost():
	case <-time.After(3 * time.Second):
		t.Fatal("rank 0 did not notice")
	}
	dead := a.cfg.Rank
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("rank %d (host%d): connection lost", dead, dead)) {
		t.Fatalf("Err = %v", err)
	}
	c.Abort("rank " + fmt.Sprint(dead) + " died")
	select {
	case <-b.Lost():
	case <-time.After(3 * time.Second):
		t.Fatal("the survivor was not told")
	}
	if err := b.Err(); err == nil || !strings.Contains(err.Error(), "rank 0 aborted the job") {
		t.Fatalf("survivor: %v", err)
	}
	res, err := c.Gather(ctx, []byte("mine"), time.Second)
	if err == nil || string(res[0]) != "mine" {
		t.Fatalf("gather: %v %q", err, res)
	}
}

func TestHostileConnections(t *testing.T) {
	t.Parallel() // waits on timeouts: overlapped with the others
	cases := []struct {
		name string
		send func(net.Conn)
	}{
		{"oversized frame", func(c net.Conn) { binary.Write(c, binary.BigEndian, uint32(1<<30)) }},
		{"garbage", func(c net.Conn) { c.Write([]byte("GET / HTTP/1.0\r\n\r\n")) }},
		{"silent", func(c net.Conn) {}},
		{"bad json", func(c net.Conn) { c.Write([]byte{0, 0, 0, 3, tAuth, '{', '{'}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeport.Addr(t)
			ctx := context.Background()
			done := make(chan error, 1)
			go func() {
				c, err := Serve(ctx, cfg(addr, 0, 2), testID())
				if c != nil {
					c.Close()
				}
				done <- err
			}()
			time.Sleep(100 * time.Millisecond)
			// Many hostile connections at once, then the real member.
			var conns []net.Conn
			for range maxPending - 2 {
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					continue
				}
				tc.send(nc)
				conns = append(conns, nc)
			}
			m, id, err := Join(ctx, cfg(addr, 1, 2))
			for _, nc := range conns {
				nc.Close()
			}
			if err != nil {
				t.Fatalf("the real member: %v", err)
			}
			if !bytes.Equal(id, testID()) {
				t.Error("wrong id")
			}
			m.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}
