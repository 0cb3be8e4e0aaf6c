package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
	"github.com/gdrcheck/gdrcheck/internal/native/cudadrv"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// JudgeNVLSID is the verdict of the multicast probe (bench nvls).
const JudgeNVLSID = "nvls.multicast"

// NVLSReport is the data of `gdrcheck bench nvls` (schema
// gdrcheck.bench-nvls/v1): whether the node has NVSwitches, and the
// multicast probe's every driver call.
type NVLSReport struct {
	// NVSwitches and NVSwitchWhy are what discovery saw of the switches.
	NVSwitches  bool   `json:"nvswitches"`
	NVSwitchWhy string `json:"nvswitch_evidence"`
	// Forced: the probe ran on a node without NVSwitch (--force).
	Forced bool `json:"forced,omitempty"`
	// Probe is nil when it did not run (no NVSwitch, or libcuda could not
	// be loaded: Error says why).
	Probe *cudadrv.Probe `json:"probe,omitempty"`
	Error string         `json:"error,omitempty"`
}

// NVLSInput is what the multicast verdict judges.
type NVLSInput struct {
	NVSwitches  bool
	NVSwitchWhy string
	// SwitchesUnknown: whether there are NVSwitches is not known
	// (discovery failed; NVSwitches is then false).
	SwitchesUnknown bool
	Forced          bool
	// Probe is the probe's record (nil: it did not run); Err its error,
	// or why it could not run.
	Probe *cudadrv.Probe
	Err   error
}

// driverRemedy is what to do when libcuda could not be loaded.
const driverRemedy = "install the NVIDIA driver (libcuda.so.1 comes with it), or name the library with --libcuda or GDRCHECK_LIBCUDA"

// JudgeNVLS judges whether a multicast object — what NCCL's NVLS
// algorithms are built on — can be created and bound on the node's GPUs.
// Only what the probe did is claimed: an object made and memory of each
// GPU bound to it, not data moved nor a bandwidth.
func JudgeNVLS(in NVLSInput) []result.Result {
	r := result.Result{ID: JudgeNVLSID, Source: "bench", Subject: "node"}
	set := func(st result.Status, reason, msg string) []result.Result {
		r.Status, r.Reason, r.Message = st, reason, msg
		return []result.Result{r}
	}
	r.Evidence = append(r.Evidence, result.Evidence{Source: "discovery", Value: in.NVSwitchWhy})
	if !in.NVSwitches && !in.Forced {
		return set(result.Skip, "NoNVSwitch", fmt.Sprintf("no NVSwitch on this host (%s): NVLink SHARP (NVLS) needs GPUs on NVSwitches, so no multicast object was probed (bench nvls --force probes anyway)", in.NVSwitchWhy))
	}
	p := in.Probe
	if p == nil {
		why := "the probe did not run"
		if in.Err != nil {
			why = in.Err.Error()
		}
		r.Remedy = driverRemedy
		return set(result.Unknown, "DriverNotLoaded", "whether a multicast object binds is unknown: "+why)
	}
	r.Evidence = append(r.Evidence, probeEvidence(p)...)
	f := p.Failed()
	switch {
	case errors.Is(in.Err, cudadrv.ErrHung) && f != nil:
		r.Remedy = "the driver is stuck: look for Xid errors (dmesg) and for fabric manager's state (journalctl -u nvidia-fabricmanager); reset the GPUs or reboot, then probe again"
		return set(result.Unknown, "ProbeHung", fmt.Sprintf("%s did not return (%s): whether a multicast object binds is unknown, and the driver was not called again", f.Where(), f.Error))
	case errors.Is(in.Err, context.Canceled) || errors.Is(in.Err, context.DeadlineExceeded):
		return set(result.Unknown, "Interrupted", "the probe was interrupted: "+in.Err.Error())
	case f != nil:
		switch {
		case f.Missing():
			r.Remedy = "install an NVIDIA driver for CUDA 12.1 or later (multicast objects came with it), with fabric manager of the same version"
		case f.Code == cudadrv.ErrNoDevice && f.Call == "cuInit":
			r.Remedy = "check that the NVIDIA driver sees the GPUs (nvidia-smi) and that CUDA_VISIBLE_DEVICES does not hide them"
		default:
			r.Remedy = ncclog.NVLSRemedy
		}
		return set(result.Fail, "StepFailed", fmt.Sprintf("%s failed: %s%s: NCCL's NVLS set-up makes this call too", f.Where(), f.Outcome(), busOf(p, f.GPU)))
	case in.Err != nil:
		return set(result.Unknown, "ProbeNotRun", "the multicast probe could not run: "+in.Err.Error())
	}
	if bad := p.Unsupported(); len(bad) > 0 {
		var gs []string
		for _, g := range bad {
			gs = append(gs, fmt.Sprintf("GPU %d (%s)", g.Ordinal, g.BusID))
		}
		msg := fmt.Sprintf("CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 0 on %s", strings.Join(gs, ", "))
		if in.SwitchesUnknown {
			return set(result.Unknown, "NVSwitchUnknown", msg+fmt.Sprintf(", and whether this host has NVSwitches is not known (%s)", in.NVSwitchWhy))
		}
		if !in.NVSwitches {
			return set(result.Skip, "NoNVSwitch", msg+fmt.Sprintf(", as expected without NVSwitch (%s): NVLS cannot be used on this host", in.NVSwitchWhy))
		}
		r.Remedy = ncclog.NVLSRemedy
		return set(result.Fail, "MulticastNotSupported", msg+": on this NVSwitch node the driver offers no multicast, so NCCL cannot use NVLS (fabric manager not running or not at the driver's version, GPUs not registered with the fabric, or multicast unavailable in this VM or container)")
	}
	var gs []string
	for _, g := range p.GPUs {
		gs = append(gs, fmt.Sprintf("%d (%s)", g.Ordinal, g.BusID))
	}
	msg := fmt.Sprintf("a multicast object of %s was created and memory of each of the %d GPU(s) bound to it (GPUs %s): the multicast set-up NVLS needs works here (configured and bound; no data was moved through the switches and no bandwidth measured)",
		sizeText(p.Bytes), len(p.GPUs), strings.Join(gs, ", "))
	if len(p.GPUs) == 1 {
		msg += "; with one GPU there is no team across the switches"
	}
	if bad := p.TeardownFailed(); len(bad) > 0 {
		var ws []string
		for _, s := range bad {
			ws = append(ws, s.Where()+": "+s.Outcome())
		}
		r.Remedy = "reset the GPUs (or reboot) to release what the probe could not"
		return set(result.Warn, "TeardownFailed", msg+"; but releasing it failed: "+strings.Join(ws, "; "))
	}
	return set(result.Pass, "MulticastBound", msg)
}

// busOf is ", GPU n is bus" for a step on a GPU, "" otherwise.
func busOf(p *cudadrv.Probe, gpu int) string {
	for _, g := range p.GPUs {
		if g.Ordinal == gpu && g.BusID != "" {
			return fmt.Sprintf(" (GPU %d is %s)", gpu, g.BusID)
		}
	}
	return ""
}

// probeEvidence is the probe's facts a verdict rests on: the library, the
// attribute of every GPU, and the calls that made, added and bound (or the
// one that failed).
func probeEvidence(p *cudadrv.Probe) []result.Evidence {
	ev := []result.Evidence{{Source: "libcuda", Value: p.Library + ", CUDA " + p.DriverVersion}}
	for _, s := range p.Steps {
		switch {
		case !s.OK() && !s.Teardown,
			strings.HasPrefix(s.Call, "cuDeviceGetAttribute"),
			s.Call == "cuMulticastCreate", s.Call == "cuMulticastBindMem":
			v := s.Outcome()
			if s.Value != "" {
				v += ": " + s.Value
			}
			ev = append(ev, result.Evidence{Source: "cuda:" + s.Where(), Value: v})
		}
	}
	return ev
}

// sizeText is a byte count in MiB or bytes.
func sizeText(n uint64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// WriteNVLSText is bench nvls's text view: every driver call with its
// CUresult, then the verdict.
func WriteNVLSText(w io.Writer, rep *NVLSReport, rs []result.Result) {
	fmt.Fprintf(w, "NVSwitches: %s\n", printable.Line(rep.NVSwitchWhy))
	if p := rep.Probe; p != nil {
		fmt.Fprintf(w, "CUDA driver: %s (CUDA %s)\n", printable.Line(p.Library), printable.Line(p.DriverVersion))
		for _, s := range p.Steps {
			line := s.Outcome()
			if s.Value != "" {
				line += "  " + s.Value
			}
			td := ""
			if s.Teardown {
				td = " (release)"
			}
			fmt.Fprintf(w, "  %-70s %s\n", printable.Line(s.Where()+td), printable.Line(line))
		}
	} else if rep.Error != "" {
		fmt.Fprintf(w, "probe not run: %s\n", printable.Line(rep.Error))
	}
	for _, r := range rs {
		fmt.Fprintf(w, "%s  %s  %s  %s  %s\n", strings.ToUpper(string(r.Status)), r.ID, printable.Line(r.Subject), r.Reason, printable.Line(r.Message))
		if r.Remedy != "" {
			fmt.Fprintf(w, "  remedy: %s\n", printable.Line(r.Remedy))
		}
	}
}
