package rendezvous

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/testutil/freeport"
)

// rawFrame reads one frame as it goes on the wire: its body (type,
// payload and whatever follows).
func rawFrame(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > 16<<20 {
		return nil, errors.New("frame too large")
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

func rawWrite(w io.Writer, body []byte) error {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	_, err := w.Write(append(b, body...))
	return err
}

// onPath is an attacker between the members and rank 0 who does not hold
// the secret: it forwards every frame, and edit may rewrite, drop, replay
// or add frames (down: rank 0 to the member; up: the member to rank 0).
// It returns the address members dial.
func onPath(t *testing.T, upstream string, edit func(down bool, body []byte) (toMember, toRank0 [][]byte)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			m, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				m.Close()
				continue
			}
			var mu sync.Mutex
			pipe := func(from net.Conn, down bool) {
				defer m.Close()
				defer u.Close()
				for {
					b, err := rawFrame(from)
					if err != nil {
						return
					}
					toM, toU := edit(down, b)
					mu.Lock()
					for _, f := range toM {
						_ = rawWrite(m, f)
					}
					for _, f := range toU {
						_ = rawWrite(u, f)
					}
					mu.Unlock()
				}
			}
			go pipe(u, true)
			go pipe(m, false)
		}
	}()
	return ln.Addr().String()
}

// pass forwards a frame unchanged.
func pass(down bool, b []byte) ([][]byte, [][]byte) {
	if down {
		return [][]byte{b}, nil
	}
	return nil, [][]byte{b}
}

// Frames after the handshake are authenticated: an on-path attacker
// without the secret cannot inject an abort, rewrite the id message,
// replay a relayed message or forge a member's result (the review's S3).
func TestOnPathAttackerRefused(t *testing.T) {
	t.Parallel() // waits on timeouts: overlapped with the others
	ctx := context.Background()
	t.Run("injected abort", func(t *testing.T) {
		t.Parallel()
		addr := freeport.Addr(t)
		proxy := onPath(t, addr, func(down bool, b []byte) ([][]byte, [][]byte) {
			if down && b[0] == tID {
				return [][]byte{b, append([]byte{tAbort}, "injected abort by an on-path attacker"...)}, nil
			}
			return pass(down, b)
		})
		_, m := pairUp(t, addr, proxy, false)
		select {
		case <-m.Lost():
		case <-time.After(3 * time.Second):
			t.Fatal("the member did not notice the forged frame")
		}
		if err := m.Err(); strings.Contains(err.Error(), "injected") || !strings.Contains(err.Error(), "authentic") {
			t.Errorf("member: %v", err)
		}
	})
	t.Run("tampered id message", func(t *testing.T) {
		t.Parallel()
		addr := freeport.Addr(t)
		proxy := onPath(t, addr, func(down bool, b []byte) ([][]byte, [][]byte) {
			if down && b[0] == tID {
				b = bytes.ReplaceAll(b, []byte(`"host0"`), []byte(`"MITM0"`))
			}
			return pass(down, b)
		})
		got := make(chan error, 1)
		go func() {
			c := cfg(proxy, 1, 2)
			c.JoinTimeout = 1500 * time.Millisecond
			m, _, err := Join(ctx, c)
			if err == nil {
				err = errors.New("joined with hosts " + strings.Join(m.Hosts(), ","))
				m.Close()
			}
			got <- err
		}()
		c0 := cfg(addr, 0, 2)
		c0.JoinTimeout = 1500 * time.Millisecond
		if c, err := Serve(ctx, c0, testID()); err == nil {
			defer c.Close()
		}
		if err := <-got; !strings.Contains(err.Error(), "authentic") {
			t.Errorf("member: %v", err)
		}
	})
	t.Run("replayed message", func(t *testing.T) {
		t.Parallel()
		addr := freeport.Addr(t)
		proxy := onPath(t, addr, func(down bool, b []byte) ([][]byte, [][]byte) {
			if down && b[0] == tMsg {
				return [][]byte{b, b}, nil
			}
			return pass(down, b)
		})
		c, m := pairUp(t, addr, proxy, true)
		if err := c.Send(1, []byte("go")); err != nil {
			t.Fatal(err)
		}
		if msg := recv(t, m.Inbox()); string(msg.Data) != "go" {
			t.Fatalf("first message %+v", msg)
		}
		if msg := recv(t, m.Inbox()); msg.Data != nil || !strings.Contains(msg.Lost, "authentic") {
			t.Errorf("the replay was taken: %+v", msg)
		}
	})
	t.Run("forged result", func(t *testing.T) {
		t.Parallel()
		addr := freeport.Addr(t)
		proxy := onPath(t, addr, func(down bool, b []byte) ([][]byte, [][]byte) {
			if down && b[0] == tID {
				return [][]byte{b}, [][]byte{append([]byte{tResult}, `{"forged":true}`...)}
			}
			return pass(down, b)
		})
		go func() {
			m, _, err := Join(ctx, cfg(proxy, 1, 2))
			if err != nil {
				return
			}
			defer m.Close()
			_ = m.Deliver(ctx, []byte("honest"), 3*time.Second)
		}()
		c, err := Serve(ctx, cfg(addr, 0, 2), testID())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		res, err := c.Gather(ctx, []byte("mine"), 3*time.Second)
		if bytes.Contains(res[1], []byte("forged")) || err == nil || !strings.Contains(err.Error(), "authentic") {
			t.Errorf("gather: %q %v", res[1], err)
		}
	})
}

// Rank 0 counts the connections it turned away and names them, and the
// rank they claimed, when ranks never arrive (the review's S1: "never
// arrived" blamed ranks that had been turned away in silence).
func TestTurnedAwayNamed(t *testing.T) {
	t.Parallel() // waits on timeouts: overlapped with the others
	addr := freeport.Addr(t)
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		c := cfg(addr, 0, 3)
		// The silent connection is judged after firstByte (2 s in a job).
		c.firstByte = 700 * time.Millisecond
		c.JoinTimeout = c.firstByte + 500*time.Millisecond
		_, err := Serve(ctx, c, testID())
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// Rank 1 arrives; a second process claims rank 1 too; rank 2 has the
	// wrong secret; a silent connection sits.
	go func() {
		if m, _, err := Join(ctx, cfg(addr, 1, 3)); err == nil {
			m.Close()
		}
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	_, _, err = Join(ctx, cfg(addr, 1, 3))
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "rank 1 has already joined") {
		t.Errorf("the second rank 1: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("an authenticated refusal is final, yet the second rank 1 retried for %s", d)
	}
	bad := cfg(addr, 2, 3)
	bad.Secret = []byte("another-secret-of-sixteen-bytes")
	bad.JoinTimeout = time.Second
	if _, _, err := Join(ctx, bad); !errors.Is(err, ErrRejected) {
		t.Errorf("wrong secret: %v", err)
	}
	err = <-done
	for _, want := range []string{
		"rank 2 (host2): never arrived", "connection(s) from 127.0.0.1 claiming it had the wrong secret",
		"rank 0 turned away", "had the wrong secret (from 127.0.0.1)",
		"1 claimed a rank another process holds (from 127.0.0.1)", "gave no answer in time",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rank 0's error lacks %q: %v", want, err)
		}
	}
}

// A member may not flood rank 0's inbox: past the budget it is failed,
// and in a job that relays nothing (bench nccl) one message is enough
// (the review's D7: 250 messages of 4 MiB stayed in rank 0's memory).
func TestRelayBudget(t *testing.T) {
	t.Parallel()
	for _, keepGoing := range []bool{true, false} {
		t.Run(fmt.Sprint("keepGoing=", keepGoing), func(t *testing.T) {
			addr := freeport.Addr(t)
			c, m := pairUp(t, addr, addr, keepGoing)
			big := make([]byte, 1<<20)
			for range 2 * inboxBytes >> 20 {
				if m.Send(0, big) != nil {
					break
				}
			}
			select {
			case <-c.Lost():
			case <-time.After(5 * time.Second):
				t.Fatal("the flood went on")
			}
			want := "more messages than it reads"
			if !keepGoing {
				want = "relays none"
			}
			if err := c.Err(); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("rank 0: %v", err)
			}
		})
	}
}

// A listen host whose name resolves to all interfaces is refused like
// 0.0.0.0 (the review's D11).
func TestListenNameOfAllInterfaces(t *testing.T) {
	defer func(f func(context.Context, string) ([]net.IPAddr, error)) { lookupIP = f }(lookupIP)
	lookupIP = func(_ context.Context, host string) ([]net.IPAddr, error) {
		switch host {
		case "anyhost":
			return []net.IPAddr{{IP: net.IPv4zero}}, nil
		case "anyhost6":
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}, {IP: net.IPv6unspecified}}, nil
		case "loop":
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	port := freeport.Addr(t)[len("127.0.0.1:"):]
	for _, h := range []string{"anyhost", "anyhost6", "0.0.0.0", "::", ""} {
		c := cfg(net.JoinHostPort(h, port), 0, 2)
		c.JoinTimeout = 200 * time.Millisecond
		if _, err := Serve(context.Background(), c, testID()); err == nil || !strings.Contains(err.Error(), "all interfaces") {
			t.Errorf("%q: %v", h, err)
		}
	}
	// A name of one address is listened on at that address.
	ln, err := listen(context.Background(), "loop:"+port, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if a := ln.Addr().String(); a != "127.0.0.1:"+port {
		t.Errorf("listening at %s", a)
	}
}

// pairUp forms a job of two: rank 0 serving at addr, rank 1 joining
// through join (addr itself, or an on-path proxy in front of it). Both are
// closed when the test ends; a failed join fails the test.
func pairUp(t *testing.T, addr, join string, keepGoing bool) (*Coordinator, *Member) {
	t.Helper()
	got := make(chan *Member, 1)
	go func() {
		c := cfg(join, 1, 2)
		c.KeepGoing = keepGoing
		m, _, err := Join(context.Background(), c)
		if err != nil {
			t.Error(err)
		}
		got <- m
	}()
	c0 := cfg(addr, 0, 2)
	c0.KeepGoing = keepGoing
	c, err := Serve(context.Background(), c0, testID())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	m := <-got
	if m == nil {
		t.FailNow()
	}
	t.Cleanup(m.Close)
	return c, m
}
