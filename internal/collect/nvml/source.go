package nvml

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gdrcheck/gdrcheck/internal/machine"
)

// Source yields the GPU facts of one host.
type Source interface {
	Collect(ctx context.Context) (*Facts, error)
}

// Option configures New.
type Option func(*options)

type options struct {
	root    machine.Root
	lib     gonvml.Interface
	timeout time.Duration
	noSMI   bool
}

// WithRoot makes the source read a snapshot (or the live host for "/").
func WithRoot(r machine.Root) Option { return func(o *options) { o.root = r } }

// WithLibrary replaces the NVML library (go-nvml's mock in tests).
func WithLibrary(lib gonvml.Interface) Option { return func(o *options) { o.lib = lib } }

// WithCallTimeout sets the deadline of each NVML call.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithoutSMIFallback stops a live source from falling back to nvidia-smi
// when NVML cannot be loaded.
func WithoutSMIFallback() Option { return func(o *options) { o.noSMI = true } }

// New returns the source that fits the root: live NVML (falling back to
// nvidia-smi -q -x) on "/", the snapshot's captured facts otherwise.
func New(opts ...Option) Source {
	o := options{root: machine.NewRoot("/"), timeout: DefaultCallTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if !o.root.Live() && o.lib == nil {
		return &replay{root: o.root}
	}
	lib := o.lib
	if lib == nil {
		lib = gonvml.New()
	}
	s := &liveSource{nvml: &live{lib: lib, timeout: o.timeout}}
	if !o.noSMI {
		s.smi = &replay{root: o.root, smiOnly: true}
	}
	return s
}

type liveSource struct {
	nvml *live
	smi  *replay
}

func (s *liveSource) Collect(ctx context.Context) (*Facts, error) {
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

// replay reads facts a snapshot captured.
type replay struct {
	root    machine.Root
	smiOnly bool
}

// ErrNoFacts means a snapshot holds neither nvml.json nor nvidia-smi -q -x.
var ErrNoFacts = errors.New("no GPU facts captured (neither commands/nvml.json nor nvidia-smi -q -x)")

func (r *replay) Collect(ctx context.Context) (*Facts, error) {
	if !r.smiOnly {
		rel := machine.CommandsDir + "/" + FactsFile
		b, err := r.root.ReadFile(rel)
		switch {
		case err == nil:
			f, err := DecodeFacts(r.root.Display(rel), b)
			if err != nil {
				return nil, err
			}
			f.Source = "snapshot " + FactsFile + " (" + f.Source + ")"
			return f, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	b, err := r.root.Run(ctx, machine.CmdNvidiaSMIQuery)
	if err != nil {
		if errors.Is(err, machine.ErrNotCaptured) {
			return nil, fmt.Errorf("%w: %v", ErrNoFacts, err)
		}
		return nil, err
	}
	return ParseSMIQuery(r.root.Display(machine.CommandsDir+"/"+machine.CmdNvidiaSMIQuery.Key), b)
}
