//go:build !cgo

package live

import (
	"errors"
	"strings"
	"testing"
)

// Without cgo there is no NVML binding: the source says so (and would fall
// back to nvidia-smi), never an empty set of facts.
func TestNoNVMLWithoutCgo(t *testing.T) {
	f, err := New(WithoutSMIFallback()).Collect(t.Context())
	if f != nil || !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), "built without cgo") {
		t.Fatalf("Collect = %v, %v", f, err)
	}
}
