//go:build !cgo

package live

import (
	"context"
	"fmt"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
)

// library stands for go-nvml's interface, which a build without cgo lacks.
type library interface{}

// noNVML is the NVML of a build without cgo: there is none.
type noNVML struct{}

func newLive(options) noNVML { return noNVML{} }

func (noNVML) Collect(context.Context) (*gpu.Facts, error) {
	return nil, fmt.Errorf("%w: this gdrcheck was built without cgo (CGO_ENABLED=0) and has no NVML binding; build with cgo for live NVML", ErrNoLibrary)
}
