// Package freeport gives tests a loopback TCP address to listen on.
package freeport

import (
	"net"
	"testing"
)

// Addr is 127.0.0.1 with a port that was free a moment ago (the kernel
// chose it; the listener is closed again before Addr returns).
func Addr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
