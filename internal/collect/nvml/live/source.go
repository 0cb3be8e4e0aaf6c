// Package live asks the NVIDIA driver for the GPU facts through NVML
// (go-nvml, cgo), each call under a deadline, and falls back to
// nvidia-smi -q -x when the library cannot be loaded. A build without cgo
// has no NVML binding: its source says so and uses nvidia-smi alone.
package live

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/collect/nvml"
	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/machine"
)

// ErrNoLibrary means NVML could not be loaded: no driver, the library off
// the loader path, or a build without cgo.
var ErrNoLibrary = errors.New("NVML library libnvidia-ml.so.1 could not be loaded")

// ErrHung means an NVML call did not return within its deadline. The
// driver is then treated as wedged: no further calls are made.
var ErrHung = errors.New("NVML call did not return within its deadline")

// DefaultCallTimeout bounds each NVML call. A healthy call takes
// microseconds to a few milliseconds; a GPU that fell off the bus can block
// for minutes.
const DefaultCallTimeout = 5 * time.Second

// Option configures New.
type Option func(*options)

type options struct {
	root    machine.Root
	lib     library // nil: the real libnvidia-ml.so.1
	timeout time.Duration
	noSMI   bool
	sensors bool
}

// WithRoot makes the source read a snapshot (or the live host for "/").
func WithRoot(r machine.Root) Option { return func(o *options) { o.root = r } }

// WithCallTimeout sets the deadline of each NVML call.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithoutSMIFallback stops a live source from falling back to nvidia-smi
// when NVML cannot be loaded.
func WithoutSMIFallback() Option { return func(o *options) { o.noSMI = true } }

// WithSensorsOnly makes a live NVML source read, per GPU, only its PCI
// address and what changes under load: SM clock and its maximum, power
// and its limit, temperature, clock-event reasons (a burn-in reads them
// every 2 s; the P2P matrix and the NVLinks' counters are not read).
func WithSensorsOnly() Option { return func(o *options) { o.sensors = true } }

// New returns the source that fits the root: live NVML (falling back to
// nvidia-smi -q -x) on "/", the snapshot's captured facts otherwise.
func New(opts ...Option) nvml.Source {
	o := options{root: machine.NewRoot("/"), timeout: DefaultCallTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if !o.root.Live() && o.lib == nil {
		return nvml.Replay(o.root)
	}
	s := &liveSource{nvml: newLive(o)}
	if !o.noSMI {
		s.smi = nvml.SMI(o.root)
	}
	return s
}

type liveSource struct {
	nvml nvml.Source
	smi  nvml.Source
}

func (s *liveSource) Collect(ctx context.Context) (*gpu.Facts, error) {
	f, err := s.nvml.Collect(ctx)
	if err == nil || s.smi == nil || !errors.Is(err, ErrNoLibrary) {
		return f, err
	}
	// No NVML: nvidia-smi may still be there (it links NVML too, so this
	// mostly helps when the library sits off the loader path).
	g, serr := s.smi.Collect(ctx)
	if serr != nil {
		return nil, fmt.Errorf("%w; %v", err, serr)
	}
	return g, nil
}
