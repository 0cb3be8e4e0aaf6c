package app

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze"
	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
	"github.com/gdrcheck/gdrcheck/internal/analyze/nccltests"
	"github.com/gdrcheck/gdrcheck/internal/analyze/perftest"
	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/hw"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/profile"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// HardwareID is the verdict of an nccl-tests measurement judged against
// what the hardware it ran on should reach (source nccl-tests);
// PerftestHardwareID that of a perftest bandwidth against the NIC's rate
// (source perftest).
const (
	HardwareID         = "nccltests.hardware"
	PerftestHardwareID = "perftest.hardware"
)

// Hardware is what analyze is told a job ran on: a zero field is not
// given (the site profile's, then the output's own, are used).
type Hardware struct {
	GPU         string  // --gpu: a GPU model the catalogue knows (H200, "H100 SXM", ...)
	Nodes       int     // --nodes
	GPUsPerNode int     // --gpus-per-node
	NICsPerNode int     // --nics-per-node
	NICRateGbps float64 // --nic-rate, Gb/s per NIC
	NICLayer    string  // InfiniBand or Ethernet (profile nics.link_layer)
	// given is true when a flag or a profile said anything: without it,
	// the numbers are not judged against hardware.
	given bool
}

func (h Hardware) validate() error {
	var errs []error
	if h.GPU != "" {
		if _, err := hw.LookupGPU(h.GPU); err != nil {
			errs = append(errs, fmt.Errorf("--gpu: %w", err))
		}
	}
	if h.Nodes < 0 || h.GPUsPerNode < 0 || h.NICsPerNode < 0 {
		errs = append(errs, errors.New("--nodes, --gpus-per-node and --nics-per-node must not be negative"))
	}
	if h.NICRateGbps < 0 || math.IsNaN(h.NICRateGbps) || math.IsInf(h.NICRateGbps, 0) {
		errs = append(errs, fmt.Errorf("--nic-rate %g: want a rate in Gb/s", h.NICRateGbps))
	}
	return errors.Join(errs...)
}

// with is h completed by the site profile p (nil: none), the flags taking
// precedence field by field.
func (h Hardware) with(p *profile.Profile) Hardware {
	h.given = h.GPU != "" || h.Nodes > 0 || h.GPUsPerNode > 0 || h.NICsPerNode > 0 || h.NICRateGbps > 0
	if p == nil {
		return h
	}
	w := model.WantOf(p)
	h.GPU = cmp.Or(h.GPU, w.Model)
	h.GPUsPerNode = cmp.Or(h.GPUsPerNode, w.GPUs)
	h.NICsPerNode = cmp.Or(h.NICsPerNode, w.NICs)
	h.NICRateGbps = cmp.Or(h.NICRateGbps, w.NICRateGbps)
	h.NICLayer = cmp.Or(h.NICLayer, w.NICLayer)
	h.given = true
	return h
}

// judgeHardware adds to every nccl-tests output one verdict per test: its
// largest size judged against the model of the hardware h describes
// (completed from the output: the GPU name, hosts and ranks it printed),
// or, when nothing was given, a skip that says the numbers were not judged
// against hardware.
func judgeHardware(outs []*analyze.Output, h Hardware) {
	logHosts := jobHosts(outs)
	for _, o := range outs {
		if rep, ok := o.Report.(*perftest.Report); ok {
			if v, ok := judgePerftest(rep, h); ok {
				v.Source = perftest.Kind
				if v.Reason == "MeasuredVsLinkRate" {
					ownRateGuess(o.Verdicts, v)
				}
				o.Verdicts = append(o.Verdicts, v)
			}
			continue
		}
		rep, ok := o.Report.(*nccltests.Report)
		if !ok || o.Kind != nccltests.Kind {
			continue
		}
		for _, t := range rep.Tests {
			if len(t.Rows) == 0 {
				continue
			}
			subject := cmp.Or(t.Collective, "test")
			var v result.Result
			if !h.given {
				v = result.Result{ID: HardwareID, Status: result.Skip, Subject: subject, Reason: "NoExpectation",
					Message: "the numbers were not judged against what the hardware should reach: give --expect PROFILE, or --gpu, --nodes and --nic-rate"}
			} else {
				v = judgeTest(t, h, logHosts)
			}
			v.Source = nccltests.Kind
			o.Verdicts = append(o.Verdicts, v)
		}
	}
}

// judgeTest judges one test on the system h describes, completed from the
// test: the GPU it printed, its hosts, its ranks per host, one NIC per GPU
// (the rail layout of HGX/DGX nodes) when neither flag nor profile says.
func judgeTest(t *nccltests.Test, h Hardware, logHosts int) result.Result {
	subject := cmp.Or(t.Collective, "test")
	printed := ""
	for _, d := range t.Devices {
		if d.Name != "" {
			printed = d.Name
			break
		}
	}
	if v, ok := hardwareMismatch(h.GPU, printed, subject); ok {
		return v
	}
	gpu := cmp.Or(h.GPU, printed)
	nodes := cmp.Or(h.Nodes, len(t.Hosts), logHosts)
	if nodes == 0 {
		return result.Result{ID: HardwareID, Status: result.Unknown, Subject: subject, Reason: "NoModel",
			Message: "neither the output (no \"# Rank ... on HOST\" lines) nor an NCCL log of the job names its hosts, so the number of nodes is not known: give --nodes"}
	}
	perNode := h.GPUsPerNode
	if perNode == 0 && len(t.Devices) > 0 {
		perNode = (len(t.Devices) + nodes - 1) / nodes
	}
	p := model.Params{GPU: gpu, Nodes: nodes, GPUsPerNode: perNode, NICRateGbps: h.NICRateGbps, NICLayer: h.NICLayer}
	s, err := model.NewSystem(model.Params{GPU: gpu, GPUsPerNode: perNode}) // one node: the board's defaults
	if err == nil && (nodes > 1 || h.NICRateGbps > 0) {
		// One NIC per GPU (the rails of HGX/DGX boards) unless told.
		p.NICsPerNode = cmp.Or(h.NICsPerNode, s.GPUsPerNode)
		s, err = model.NewSystem(p)
	} else if err == nil {
		s, err = model.NewSystem(p)
	}
	if err != nil {
		var missing []string
		if gpu == "" {
			missing = append(missing, "the GPU (--gpu)")
		}
		if nodes > 1 && h.NICRateGbps == 0 {
			missing = append(missing, "the NIC rate (--nic-rate)")
		}
		msg := "no model of the hardware: " + err.Error()
		if len(missing) > 0 {
			msg += "; give " + strings.Join(missing, " and ")
		}
		return result.Result{ID: HardwareID, Status: result.Unknown, Subject: subject, Reason: "NoModel", Message: msg}
	}
	c, err := collective.Parse(t.Collective)
	if err != nil {
		return result.Result{ID: HardwareID, Status: result.Unknown, Subject: subject, Reason: "NoModel", Message: err.Error()}
	}
	// The same judgement as bench nccl's (bench.JudgeRows, its largest
	// size), on the system described.
	js := bench.JudgeNCCL(model.Basis{Should: s, Found: s}, []bench.NCCLResult{{Collective: c, Rows: t.Rows}}, model.DefaultMargin().Pass)
	if len(js) == 0 {
		return result.Result{ID: HardwareID, Status: result.Unknown, Subject: subject, Reason: "NoBandwidth", Message: "the largest size has no out-of-place measurement"}
	}
	v := js[0]
	v.ID, v.Subject = HardwareID, subject
	v.Message = fmt.Sprintf("%d node(s): %s", s.Nodes, v.Message)
	if v.Status == result.Fail || v.Status == result.Warn {
		v.Remedy = "find what slows the path: run gdrcheck check on every node (GDR, NIC and PCIe links, NVLink), read the NCCL_DEBUG=INFO log of the run (gdrcheck analyze) for the transports used, and test each NIC pair with ib_write_bw --use_cuda"
	}
	return v
}

// hardwareMismatch: the output names a GPU (its "# Rank ... NAME" lines)
// that is not the one the profile or --gpu describes (an H100 run judged
// against an 8×H200 profile). Its numbers are not judged against the
// wrong hardware: that is a finding of its own. Only GPUs the catalogue
// knows are compared; a name it does not know is not a mismatch.
func hardwareMismatch(want, printed, subject string) (result.Result, bool) {
	if want == "" || printed == "" {
		return result.Result{}, false
	}
	w, err := hw.LookupGPU(want)
	if err != nil {
		return result.Result{}, false
	}
	p, ok := hw.GPUByName(printed)
	if !ok || p.Key == w.Key {
		return result.Result{}, false
	}
	return result.Result{ID: HardwareID, Status: result.Fail, Subject: subject, Reason: "HardwareMismatch",
		Message: fmt.Sprintf("the output ran on %s (%s), not on the %s the profile or --gpu describes: its numbers were not judged against hardware they did not run on", printed, p.Name, w.Name),
		Remedy:  "analyze the output of the nodes the profile describes, or give the profile (or --gpu) of the hardware this output ran on"}, true
}

// jobHosts is the number of hosts with ranks that the NCCL logs among outs
// name (the job's, when its logs were merged): the node count of an
// nccl-tests output of the same job that names none. 0: none named, or
// logs that disagree (several logs judged separately).
func jobHosts(outs []*analyze.Output) int {
	n := -1
	for _, o := range outs {
		rep, ok := o.Report.(*ncclog.Report)
		if !ok {
			continue
		}
		hosts := 0
		for _, hs := range rep.Hosts {
			if len(hs.Ranks) > 0 {
				hosts++
			}
		}
		if n >= 0 && hosts != n {
			return 0
		}
		n = hosts
	}
	return max(n, 0)
}

// ownRateGuess steps perftest.bw aside once the NIC's rate is given: that
// verdict holds the best average against "the nearest standard port rate"
// it guesses, and one number judged against two rates gave two verdicts
// that disagreed (140.95 Gb/s: "70% of 200" and "35% of 400"). The
// number stays in its message; hw, the judgement against the given rate,
// is the one verdict on it.
func ownRateGuess(vs []result.Result, hw result.Result) {
	for i := range vs {
		v := &vs[i]
		if v.ID != perftest.IDBW || v.Reason != "BelowLinkRate" && v.Reason != "Measured" {
			continue
		}
		if k := strings.Index(v.Message, "; that is "); k >= 0 {
			v.Message = v.Message[:k] // the guessed rate's share
		}
		v.Status, v.Reason, v.Remedy = result.Skip, "JudgedAgainstNICRate", ""
		v.Message += fmt.Sprintf("; judged against the NIC's given rate in %s (%s), not against a guessed port rate", hw.ID, hw.Status)
	}
}

// judgePerftest judges a perftest bandwidth run's best average against the
// NIC rate h gives (--nic-rate, the profile's nics.rate_gbps), with the
// model's margin: perftest moves bytes over one port, so its line rate is
// the expectation. false: not a bandwidth run with a size that measures
// bandwidth.
//
// This is deliberately not bench rdma's judgement (rdma.Judge), which
// knows the GPU–NIC pair it ran: it holds each run against the model's
// figure for that pair's path and its memory kind, and a GPU-memory run
// against the same pair's host-memory control (the GPU Direct test). A
// pasted perftest output has neither pair nor control, only a rate it is
// told, so here that rate is the whole expectation, with the model's
// pass and warn margins as for any line rate.
func judgePerftest(rep *perftest.Report, h Hardware) (result.Result, bool) {
	if rep.Type != "bw" || len(rep.Rows) == 0 || rep.PeakAvgBytes < perftest.BWMinBytes {
		return result.Result{}, false
	}
	subject := cmp.Or(rep.Device, "bw")
	v := result.Result{ID: PerftestHardwareID, Subject: subject}
	switch {
	case !h.given:
		v.Status, v.Reason = result.Skip, "NoExpectation"
		v.Message = "the bandwidth was not judged against the NIC's rate: give --nic-rate or --expect PROFILE (nics.rate_gbps)"
	case h.NICRateGbps == 0:
		v.Status, v.Reason = result.Unknown, "NoModel"
		v.Message = "the NIC's rate is not known: give --nic-rate or a profile's nics.rate_gbps"
	default:
		st, ratio := model.Judge(rep.PeakAvgGbps, h.NICRateGbps, model.DefaultMargin())
		v.Status, v.Reason = st, "MeasuredVsLinkRate"
		v.Message = fmt.Sprintf("best average %s Gb/s at %d B (%s memory): %.0f%% of the NIC's %g Gb/s", textio.FormatFloat(rep.PeakAvgGbps, 2), rep.PeakAvgBytes, cmp.Or(rep.Memory.Kind, "host"), 100*ratio, h.NICRateGbps)
		if st == result.Fail || st == result.Warn {
			v.Remedy = "compare with the port rate (ibstat) and a host-memory run on the same pair; for GPU memory a low plateau points at the GPU-NIC PCIe path (gdrcheck check: topology, ACS/IOMMU, link width) or the registration method"
		}
	}
	return v, true
}
