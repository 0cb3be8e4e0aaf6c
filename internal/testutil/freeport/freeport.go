// Package freeport gives tests a loopback TCP address to listen on.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"
)

// Addr is 127.0.0.1 with a port that was free a moment ago (listened on and
// closed again before Addr returns). The port is taken outside the kernel's
// ephemeral range (net.ipv4.ip_local_port_range), so no outgoing connection
// of a test running beside this one can be given it between Addr and the
// caller's own listen: a port the kernel chose with ":0" can (CI saw a
// rendezvous fail "address already in use" that way).
func Addr(t testing.TB) string {
	t.Helper()
	lo, hi := ephemeralRange()
	for range 200 {
		p := pick(lo, hi)
		a := fmt.Sprintf("127.0.0.1:%d", p)
		ln, err := net.Listen("tcp", a)
		if err != nil {
			continue
		}
		ln.Close()
		return a
	}
	t.Fatalf("freeport: no free loopback port outside the ephemeral range %d-%d in 200 tries", lo, hi)
	return ""
}

// pick draws a port from 10000-65000 outside lo-hi.
func pick(lo, hi int) int {
	const first, last = 10000, 65000
	var free [][2]int
	if lo > first {
		free = append(free, [2]int{first, lo - 1})
	}
	if hi < last {
		free = append(free, [2]int{hi + 1, last})
	}
	if len(free) == 0 { // the whole range is ephemeral: draw anyway
		return first + rand.IntN(last-first+1)
	}
	n := 0
	for _, r := range free {
		n += r[1] - r[0] + 1
	}
	k := rand.IntN(n)
	for _, r := range free {
		w := r[1] - r[0] + 1
		if k < w {
			return r[0] + k
		}
		k -= w
	}
	return free[0][0]
}

// ephemeralRange is the kernel's range for ports it assigns, or Linux's
// default when it cannot be read.
func ephemeralRange() (int, int) {
	lo, hi := 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	var l, h int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &l, &h); err == nil && l > 0 && h >= l {
		return l, h
	}
	return lo, hi
}
