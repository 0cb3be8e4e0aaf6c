//go:build !cgo

package nccl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/native/dl"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
)

// A build without cgo has no GPU engine and says so, naming the library
// it could not load.
func TestNoEngineWithoutCgo(t *testing.T) {
	l, err := nccl.Open("")
	if l != nil || !errors.Is(err, dl.ErrNoEngine) || !strings.HasPrefix(err.Error(), "NCCL") {
		t.Fatalf("Open = %v, %v", l, err)
	}
}
