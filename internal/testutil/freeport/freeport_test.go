package freeport

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// The address is on loopback and can be listened on again.
func TestAddr(t *testing.T) {
	a := Addr(t)
	if !strings.HasPrefix(a, "127.0.0.1:") || strings.HasSuffix(a, ":0") {
		t.Fatalf("address %q", a)
	}
	ln, err := net.Listen("tcp", a)
	if err != nil {
		t.Fatalf("listen on %s again: %v", a, err)
	}
	ln.Close()
}

// The port is outside the kernel's ephemeral range, where an outgoing
// connection could be given it before the caller listens.
func TestAddrOutsideEphemeral(t *testing.T) {
	lo, hi := ephemeralRange()
	for range 50 {
		a := Addr(t)
		_, p, _ := net.SplitHostPort(a)
		var n int
		if _, err := fmt.Sscan(p, &n); err != nil {
			t.Fatal(err)
		}
		if n >= lo && n <= hi {
			t.Fatalf("port %d is inside the ephemeral range %d-%d", n, lo, hi)
		}
	}
}

func TestPick(t *testing.T) {
	for _, tc := range []struct{ lo, hi int }{{32768, 60999}, {1024, 65535}, {10000, 30000}, {40000, 65535}} {
		for range 1000 {
			p := pick(tc.lo, tc.hi)
			if p < 10000 || p > 65000 {
				t.Fatalf("range %d-%d: port %d outside 10000-65000", tc.lo, tc.hi, p)
			}
			if tc.lo > 10000 || tc.hi < 65000 {
				if p >= tc.lo && p <= tc.hi {
					t.Fatalf("range %d-%d: port %d inside it", tc.lo, tc.hi, p)
				}
			}
		}
	}
}
