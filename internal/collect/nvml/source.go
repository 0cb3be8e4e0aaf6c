// Package nvml reads the GPU facts of one host (the types are in
// facts/gpu). This package reads them from what a root holds: a snapshot's
// commands/nvml.json, else nvidia-smi -q -x (captured, or run on the live
// host). It needs no cgo, so discovery and every test that builds a host
// through it link no NVML; the live NVML binding is collect/nvml/live,
// which the runners pass to discovery as its GPU-facts source.
package nvml

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/machine"
)

// Source yields the GPU facts of one host.
type Source interface {
	Collect(ctx context.Context) (*gpu.Facts, error)
}

// ErrNoFacts means a snapshot holds neither nvml.json nor nvidia-smi -q -x.
var ErrNoFacts = errors.New("no GPU facts captured (neither commands/nvml.json nor nvidia-smi -q -x)")

// Replay returns the source that reads the facts a root holds: on a
// snapshot, commands/nvml.json, else the captured nvidia-smi -q -x; on the
// live host ("/"), nvidia-smi -q -x run under the root's deadline.
func Replay(r machine.Root) Source { return &replay{root: r, smiOnly: r.Live()} }

// SMI returns the source that asks nvidia-smi -q -x only (through the
// root: run live, or read from a capture).
func SMI(r machine.Root) Source { return &replay{root: r, smiOnly: true} }

// replay reads facts a snapshot captured.
type replay struct {
	root    machine.Root
	smiOnly bool
}

func (r *replay) Collect(ctx context.Context) (*gpu.Facts, error) {
	if !r.smiOnly {
		rel := machine.CommandsDir + "/" + gpu.FactsFile
		b, err := r.root.ReadFile(rel)
		switch {
		case err == nil:
			f, err := gpu.DecodeFacts(r.root.Display(rel), b)
			if err != nil {
				return nil, err
			}
			f.Source = "snapshot " + gpu.FactsFile + " (" + f.Source + ")"
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
	f, err := gpu.ParseSMIQuery(r.root.Display(machine.CommandsDir+"/"+machine.CmdNvidiaSMIQuery.Key), b)
	if err != nil {
		return nil, err
	}
	nvlinkErrors(ctx, r.root, f)
	return f, nil
}

// nvlinkErrors adds the NVLink error counters nvidia-smi nvlink -e prints
// (run live, or captured) to facts read from nvidia-smi -q -x. When it
// cannot be run or read, the GPUs keep no counters (not read, never 0) and
// the facts' Errors say why.
func nvlinkErrors(ctx context.Context, r machine.Root, f *gpu.Facts) {
	b, err := r.Run(ctx, machine.CmdNvidiaSMINVLinkErrors)
	if err != nil {
		f.Errors = append(f.Errors, err.Error())
		return
	}
	parsed, err := gpu.ParseSMINVLinkErrors(r.Display(machine.CommandsDir+"/"+machine.CmdNvidiaSMINVLinkErrors.Key), b)
	if err != nil {
		f.Errors = append(f.Errors, err.Error())
		return
	}
	f.Errors = append(f.Errors, gpu.MergeSMINVLinkErrors(f, parsed)...)
}
