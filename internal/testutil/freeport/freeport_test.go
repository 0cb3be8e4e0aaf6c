package freeport

import (
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
