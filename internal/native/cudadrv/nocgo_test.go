//go:build !cgo

package cudadrv_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/native/cudadrv"
	"github.com/gdrcheck/gdrcheck/internal/native/dl"
)

// A build without cgo has no GPU engine and says so, naming the library.
func TestNoEngineWithoutCgo(t *testing.T) {
	d, err := cudadrv.Open("")
	if d != nil || !errors.Is(err, dl.ErrNoEngine) || !strings.HasPrefix(err.Error(), "CUDA driver library") {
		t.Fatalf("Open = %v, %v", d, err)
	}
}
