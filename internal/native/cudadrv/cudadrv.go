// Package cudadrv calls the CUDA driver API (libcuda.so.1) through a small
// cgo shim that dlopens it at run time with our own prototypes, for what
// the runtime API does not say: whether a multicast object (the NVLink
// SHARP mechanism NCCL's NVLS algorithms use) can be created and bound on
// the GPUs. It does not go through the runtime's entry-point API (changed
// in CUDA 13): the driver library is loaded directly.
//
// Every call runs on one dedicated OS thread (the driver's current
// context is per thread, so "make the GPU's context current, then work"
// happens inside one C call on that thread) under a deadline (package
// watchdog): a call that does not return in time becomes an error naming
// the step and the GPU, and the driver is not called again.
package cudadrv

import (
	"errors"
	"fmt"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/native/dl"
)

// LibrarySpec is how the CUDA driver library is found. It comes with the
// NVIDIA driver, not the CUDA toolkit.
func LibrarySpec() dl.Spec {
	return dl.Spec{
		What:    "CUDA driver library (libcuda.so.1, installed with the NVIDIA driver)",
		Names:   []string{"libcuda.so.1"},
		EnvPath: "GDRCHECK_LIBCUDA",
		Dirs: []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
			"/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"},
	}
}

// AttrMulticastSupported is CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED ("Device
// supports switch multicast and reduction operations", cuda.h since CUDA
// 12.1; see README.md).
const AttrMulticastSupported = 132

// CUresult codes the probe's callers and tests name (cuda.h's cudaError_enum).
const (
	Success         = 0
	ErrNoDevice     = 100 // CUDA_ERROR_NO_DEVICE
	ErrIllegalState = 401 // CUDA_ERROR_ILLEGAL_STATE: "the operation cannot be performed in the present state"
	ErrNotPermitted = 800 // CUDA_ERROR_NOT_PERMITTED
	ErrNotSupported = 801 // CUDA_ERROR_NOT_SUPPORTED
)

// noSymbol is the shim's code for a multicast entry point the driver
// lacks (GDR_NOSYM; no CUresult has it).
const noSymbol = -3

// DefaultCallTimeout bounds one driver call (cuInit on a node of eight
// GPUs without persistence mode takes seconds).
const DefaultCallTimeout = 60 * time.Second

// DefaultBytes is the multicast object's size the probe asks for per GPU,
// rounded up to the driver's granularities.
const DefaultBytes = 2 << 20

// ErrHung is wrapped into the error of a call that did not return within
// its deadline, and of every later call.
var ErrHung = errors.New("CUDA driver call did not return within its deadline")

// ErrClosed is returned by calls on a closed Driver.
var ErrClosed = errors.New("CUDA driver closed")

// Option configures Open.
type Option func(*options)

type options struct{ timeout time.Duration }

// WithCallTimeout sets the deadline of each driver call.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// Step is one driver call of the probe and what it gave.
type Step struct {
	Call string `json:"call"` // the entry point: "cuMulticastBindMem"
	// GPU is the CUDA ordinal the call worked on; -1 for a call about no
	// one GPU (cuInit, cuMulticastCreate).
	GPU int `json:"gpu"`
	// Code and Result are the CUresult and its name (cuGetErrorName);
	// Result is "" when the call did not return (Error says why).
	Code    int    `json:"code"`
	Result  string `json:"result,omitempty"`
	Message string `json:"message,omitempty"` // cuGetErrorString, for a failure
	// Value is what a successful call gave that the verdict cites: the
	// attribute, a granularity, a bus id.
	Value string `json:"value,omitempty"`
	// Error is why the call gave no CUresult: it did not return in time,
	// was interrupted, or the driver lacks the entry point.
	Error string `json:"error,omitempty"`
	// Teardown marks the calls that release what the probe made.
	Teardown bool `json:"teardown,omitempty"`
}

// OK reports a call that returned CUDA_SUCCESS.
func (s Step) OK() bool { return s.Error == "" && s.Code == Success }

// Missing reports a call the driver has no entry point for.
func (s Step) Missing() bool { return s.Code == noSymbol && s.Error != "" }

// Where is the step and its GPU as a message names them.
func (s Step) Where() string {
	if s.GPU < 0 {
		return s.Call
	}
	return fmt.Sprintf("%s on GPU %d", s.Call, s.GPU)
}

// Outcome is the CUresult, or why there is none.
func (s Step) Outcome() string {
	if s.Error != "" {
		return s.Error
	}
	if s.Message != "" {
		return fmt.Sprintf("%s (%d): %s", s.Result, s.Code, s.Message)
	}
	return fmt.Sprintf("%s (%d)", s.Result, s.Code)
}

// GPU is one GPU of the probe.
type GPU struct {
	Ordinal int    `json:"ordinal"` // CUDA ordinal
	BusID   string `json:"bus_id"`
	// Multicast is CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED as the driver
	// gave it; -1 when it was not read.
	Multicast int `json:"multicast_supported"`
}

// Probe is what the multicast probe did and saw, step by step; it is kept
// whole when a step fails, so the verdict can name the step.
type Probe struct {
	Library       string `json:"library"`
	DriverVersion string `json:"driver_version,omitempty"` // cuDriverGetVersion: the CUDA version the driver supports
	GPUs          []GPU  `json:"gpus"`
	// Bytes is the multicast object's size, and of the memory bound to it
	// on each GPU (the request rounded up to the granularities); 0 before
	// it was known.
	Bytes uint64 `json:"bytes"`
	// Bound are the GPUs whose memory was bound to the multicast object.
	Bound []int  `json:"bound"`
	Steps []Step `json:"steps"`
}

// Unsupported are the GPUs whose multicast attribute is 0.
func (p *Probe) Unsupported() []GPU {
	var out []GPU
	for _, g := range p.GPUs {
		if g.Multicast == 0 {
			out = append(out, g)
		}
	}
	return out
}

// Failed is the first step that did not succeed outside the teardown,
// or nil.
func (p *Probe) Failed() *Step {
	for i := range p.Steps {
		if !p.Steps[i].OK() && !p.Steps[i].Teardown {
			return &p.Steps[i]
		}
	}
	return nil
}

// TeardownFailed are the releasing steps that did not succeed.
func (p *Probe) TeardownFailed() []Step {
	var out []Step
	for _, s := range p.Steps {
		if s.Teardown && !s.OK() {
			out = append(out, s)
		}
	}
	return out
}

// StepError is a step that returned a CUresult other than CUDA_SUCCESS, or
// none.
type StepError struct{ Step Step }

func (e *StepError) Error() string { return e.Step.Where() + ": " + e.Step.Outcome() }

// ProbeOptions say which GPUs the probe binds on and how much.
type ProbeOptions struct {
	// Devices are CUDA ordinals; nil: every GPU the driver sees.
	Devices []int
	// Bytes per GPU (DefaultBytes when 0), rounded up to the driver's
	// granularities.
	Bytes uint64
}

// VersionString writes a CUDA version number as the driver and the
// runtime report it (1000×major + 10×minor: 13000 is "13.0").
func VersionString(v int) string { return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10) }

// roundUp is n rounded up to a multiple of every granularity (powers of
// two in practice; any positive value is handled).
func roundUp(n uint64, grans ...uint64) uint64 {
	m := uint64(1)
	for _, g := range grans {
		if g == 0 {
			continue
		}
		m = m / gcd(m, g) * g
	}
	if n == 0 {
		n = 1
	}
	return (n + m - 1) / m * m
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
