//go:build !cgo

package cudadrv

import (
	"context"
	"fmt"

	"github.com/gdrcheck/gdrcheck/internal/native/dl"
)

// Driver stands for a loaded CUDA driver library; a build without cgo can
// load none (Open fails), so its methods are never reached on a real one.
type Driver struct{ Path string }

var errNoEngine = fmt.Errorf("%s: %w", LibrarySpec().What, dl.ErrNoEngine)

// Open: no GPU engine in a build without cgo.
func Open(path string, opts ...Option) (*Driver, error) { return nil, errNoEngine }

// Close: no GPU engine in a build without cgo.
func (d *Driver) Close() error { return errNoEngine }

// ProbeMulticast: no GPU engine in a build without cgo.
func (d *Driver) ProbeMulticast(ctx context.Context, o ProbeOptions) (*Probe, error) {
	return nil, errNoEngine
}
