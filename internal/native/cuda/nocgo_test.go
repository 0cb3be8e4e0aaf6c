//go:build !cgo

package cuda_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/dl"
)

// A build without cgo has no GPU engine and says so, naming the library
// it could not load, instead of searching the disk for one.
func TestNoEngineWithoutCgo(t *testing.T) {
	rt, err := cuda.Open("")
	if rt != nil || !errors.Is(err, dl.ErrNoEngine) || !strings.HasPrefix(err.Error(), "CUDA runtime") || !strings.Contains(err.Error(), "built without cgo") {
		t.Fatalf("Open = %v, %v", rt, err)
	}
}
