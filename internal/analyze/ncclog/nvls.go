package ncclog

import (
	"bytes"
	"fmt"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

var (
	pfxNVLSNot  = []byte("NVLS multicast support is not available")
	pfxNVLSEnv  = []byte("NCCL_NVLS_ENABLE set by environment to ")
	sNVLSSource = []byte("nvls.cc")
	sNVLSBind   = []byte("NVLS) Multicast memory")
	sNVLS       = []byte("NVLS")
)

// nvlsTracker follows NVLink SHARP (NVLS): whether NCCL found multicast
// support on each device, whether the environment switched it off, and
// the warnings and errors NVLS set-up raised (transport/nvls.cc, or the
// "Failed to bind NVLink SHARP (NVLS) Multicast memory" error NCCL 2.29+
// hands the application).
type nvlsTracker struct {
	avail, notAvail int64
	availLine       int64
	availText       string
	notLine         int64
	notText         string
	off             bool
	offLine         int64
	offText         string
	fails           int64
	failEv          []offender
}

func (t *nvlsTracker) supportLine(avail bool, raw []byte, no int64) {
	if avail {
		t.avail++
		if t.availLine == 0 {
			t.availLine, t.availText = no, clip(raw)
		}
		return
	}
	t.notAvail++
	if t.notLine == 0 {
		t.notLine, t.notText = no, clip(raw)
	}
}

func (t *nvlsTracker) envLine(m, raw []byte, no int64) {
	v := bytes.TrimSpace(m[len(pfxNVLSEnv):])
	t.off = len(v) > 0 && v[0] == '0'
	t.offLine, t.offText = no, clip(raw)
}

// failLine takes a warning or error line that NVLS raised.
func (t *nvlsTracker) failLine(raw []byte, no int64) {
	t.fails++
	if len(t.failEv) < maxOffenders {
		t.failEv = append(t.failEv, offender{line: no, text: clip(raw)})
	}
}

// isNVLSWarn says whether line b, whose headers are hs, is a warning
// from NVLS set-up (its source file, or NVLS multicast in its words).
// The headers are looked at first: most lines are INFO and are not
// searched at all.
func isNVLSWarn(hs []header, b []byte) bool {
	warn := false
	for _, h := range hs {
		warn = warn || h.level == 'W'
	}
	return warn && (bytes.Contains(b, sNVLSSource) || bytes.Contains(b, sNVLS) && bytes.Contains(b, []byte("ulticast")))
}

// NVLSRemedy is what makes NVLink SHARP's multicast objects bind on an
// NVSwitch node: the remedy of NCCL's NVLS set-up failures and of
// gdrcheck's own multicast probe (bench nvls).
const NVLSRemedy = "NVLS needs fabric manager running at exactly the driver's version (gdrcheck check: nvlink.state) and every GPU registered with the fabric; reset the GPUs (or reboot) after fabric manager was restarted; in a container, expose /dev/nvidia-caps."

// vNVLS judges NVLink SHARP from what the log says of it.
func (a *analyzer) vNVLS(r *Report) result.Result {
	const id = "nccl.nvls"
	t := &a.nvls
	nvlsCh := 0
	var chLine int64
	var chText string
	for _, c := range r.Channels.Counts {
		if c.NVLS > nvlsCh {
			nvlsCh, chLine, chText = c.NVLS, c.Line, c.Text
		}
	}
	switch {
	case t.fails > 0:
		out := titles.New(id, result.Fail, "job", "NVLSFailed",
			fmt.Sprintf("NVLink SHARP (NVLS) set-up failed (%d %s): NCCL could not create or bind a multicast object on the NVSwitches", t.fails, plural(t.fails, "warning or error line", "warning or error lines")),
			a.offEvidence(t.failEv, "NVLS"))
		out.Remedy = NVLSRemedy + " NCCL_NVLS_ENABLE=0 avoids the error at the cost of NVLS bandwidth."
		return out
	case t.off:
		return titles.New(id, result.Skip, "job", "NVLSDisabled", "NVLS switched off by the environment (NCCL_NVLS_ENABLE=0): not exercised",
			[]result.Evidence{a.ev(t.offLine, t.offText, "")})
	case nvlsCh > 0 || r.Channels.ConnectedNVLS > 0:
		msg := "NVLink SHARP set up (NCCL built NVLS channels; which collectives used them the log does not say)"
		var evs []result.Evidence
		if nvlsCh > 0 {
			msg += fmt.Sprintf(": %d nvls channels", nvlsCh)
			evs = append(evs, a.ev(chLine, chText, ""))
		}
		if r.Channels.ConnectedNVLS > 0 {
			msg += fmt.Sprintf("; %d %s", r.Channels.ConnectedNVLS, plural(r.Channels.ConnectedNVLS, "\"Connected NVLS\" line", "\"Connected NVLS\" lines"))
		}
		return titles.New(id, result.Pass, "job", "NVLSInUse", msg, evs)
	case t.avail > 0:
		return titles.New(id, result.Skip, "job", "NVLSAvailableNotUsed",
			fmt.Sprintf("NVLS multicast is available (%d %s) but NCCL built no NVLS channel here (one GPU per node, or too few GPUs on the switch): not exercised", t.avail, plural(t.avail, "device line", "device lines")),
			[]result.Evidence{a.ev(t.availLine, t.availText, "")})
	case t.notAvail > 0:
		out := titles.New(id, result.Skip, "job", "NVLSNotAvailable",
			fmt.Sprintf("NCCL found no NVLS multicast support (%d %s): no NVSwitch, or a driver or fabric manager that offers none", t.notAvail, plural(t.notAvail, "device line", "device lines")),
			[]result.Evidence{a.ev(t.notLine, t.notText, "")})
		out.Remedy = "on an NVSwitch system (HGX H100/H200/B200) this costs the NVLS all-reduce bandwidth: check fabric manager and the GPUs' fabric registration (gdrcheck check: nvlink.state)"
		return out
	}
	return titles.New(id, result.Skip, "job", "NoNVLSLines", "the log says nothing of NVLS (an NCCL before 2.17, or a log without the INIT lines): not exercised", nil)
}
