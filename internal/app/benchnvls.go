package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/native/cudadrv"
	"github.com/gdrcheck/gdrcheck/internal/native/dl"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// NVLSOptions are a `bench nvls` run's.
type NVLSOptions struct {
	LibCUDA string // path of libcuda.so.1 ("" searches)
	Devices string // --devices: CUDA ordinals ("" every GPU)
	Bytes   uint64 // per GPU (0: cudadrv.DefaultBytes)
	// Force probes a node without NVSwitch too (there the attribute is
	// expected to be 0, and the verdict says so).
	Force bool
	// CallTimeout bounds each driver call (0: cudadrv.DefaultCallTimeout).
	CallTimeout time.Duration
	Out         string // output directory ("" chooses one)
	Warn        io.Writer
}

// BenchNVLS probes whether a multicast object (what NCCL's NVLS is built
// on) can be created and bound on this host's GPUs, through the CUDA
// driver API, and judges it (bench.JudgeNVLS). It runs on the live host
// only. On a node without NVSwitch nothing is loaded unless o.Force. The
// document is written to results.json in the output directory once the
// driver library has loaded. The error is a ToolError when libcuda could
// not be loaded (the envelope then says unknown), a Failure when the
// verdict fails.
func (s *Session) BenchNVLS(ctx context.Context, n NodeOptions, o NVLSOptions) (*report.Envelope, string, error) {
	if err := requireLive(n.Root); err != nil {
		return nil, "", err
	}
	started := s.Now()
	var devs []int
	if o.Devices != "" {
		var err error
		if devs, err = ParseDevices(o.Devices); err != nil {
			return nil, "", err
		}
	}
	h, cleanup, derr := Discover(ctx, n)
	if derr == nil {
		cleanup()
	} else if !o.Force {
		// Not knowing whether there are switches is not "none".
		return nil, "", toolErr(fmt.Errorf("bench nvls: %w (--force probes without discovery)", derr))
	}
	return s.nvls(ctx, started, h, derr, devs, o)
}

// nvls probes and judges the GPUs devs (nil: all) of host h (nil, with
// derr, when discovery failed): bench nvls, and run's phase.
func (s *Session) nvls(ctx context.Context, started time.Time, h *topology.Host, derr error, devs []int, o NVLSOptions) (*report.Envelope, string, error) {
	rep := &bench.NVLSReport{Forced: o.Force}
	if h != nil {
		rep.NVSwitches, rep.NVSwitchWhy = h.NVSwitchesSeen()
	} else {
		rep.NVSwitchWhy = "unknown: discovery failed: " + derr.Error()
	}
	in := bench.NVLSInput{NVSwitches: rep.NVSwitches, NVSwitchWhy: rep.NVSwitchWhy, SwitchesUnknown: h == nil, Forced: o.Force}
	if !rep.NVSwitches && !o.Force {
		return s.Envelope("bench-nvls", started, bench.JudgeNVLS(in), rep), "", nil
	}
	timeout := o.CallTimeout
	if timeout <= 0 {
		timeout = cudadrv.DefaultCallTimeout
	}
	d, err := cudadrv.Open(o.LibCUDA, cudadrv.WithCallTimeout(timeout))
	if err != nil {
		rep.Error, in.Err = err.Error(), err
		env := s.Envelope("bench-nvls", started, bench.JudgeNVLS(in), rep)
		if errors.Is(err, dl.ErrNotFound) {
			err = fmt.Errorf("cannot probe multicast: %w", err)
		}
		return env, "", toolErr(err)
	}
	dir := s.OutDir(o.Out, "bench-nvls")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		_ = d.Close()
		return nil, "", toolErr(err)
	}
	in.Probe, in.Err = d.ProbeMulticast(ctx, cudadrv.ProbeOptions{Devices: devs, Bytes: o.Bytes})
	if cerr := d.Close(); cerr != nil && o.Warn != nil {
		fmt.Fprintf(o.Warn, "gdrcheck: %s\n", printable.Line(cerr.Error()))
	}
	rep.Probe = in.Probe
	if in.Err != nil {
		rep.Error = in.Err.Error()
	}
	env := s.Envelope("bench-nvls", started, bench.JudgeNVLS(in), rep)
	path := filepath.Join(dir, "results.json")
	if err := WriteAtomic(path, env); err != nil && o.Warn != nil {
		fmt.Fprintf(o.Warn, "gdrcheck: writing %s: %s\n", printable.Line(path), printable.Line(err.Error()))
	}
	switch {
	case errors.Is(in.Err, context.Canceled):
		return env, dir, in.Err
	case in.Err != nil && in.Probe != nil && in.Probe.Failed() == nil:
		// Not a driver call that failed: a device the driver does not
		// have, or no GPU at all.
		return env, dir, toolErr(in.Err)
	}
	return env, dir, judged(env.Results)
}
