package perftest

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gdrcheck/gdrcheck/internal/analyze/verdict"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Verdict IDs.
const (
	IDRun       = "perftest.run"
	IDBW        = "perftest.bw"
	IDLat       = "perftest.lat"
	IDMTU       = "perftest.mtu"
	IDGPUMemory = "perftest.gpu-memory"
)

// mibToGbps converts perftest's MB/sec (2^20 bytes per second, see
// format_factor in perftest_parameters.c) to Gb/s (10^9 bits per second).
const mibToGbps = 1048576 * 8 / 1e9

// LinkRates are the standard InfiniBand/Ethernet port rates (Gb/s).
var LinkRates = []float64{10, 25, 40, 50, 56, 100, 200, 400, 800, 1600}

// LinkRateShare: a bandwidth plateau below this share of the nearest
// standard rate at or above it is suspect (healthy ib_write_bw reaches
// 90-98% of line rate with large messages).
const LinkRateShare = 0.8

// bwMinBytes is the smallest message size at which a run measures
// bandwidth rather than message rate.
const bwMinBytes = 64 << 10

func finish(rep *Report) {
	f := 0.0
	switch strings.ToLower(rep.Unit) {
	case "gb/sec", "gb/s":
		f = 1
	case "mb/sec", "mib/sec", "mb/s", "mib/s":
		f = mibToGbps
	case "":
		f = inferUnit(rep)
	}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		r.PeakGbps, r.AvgGbps = round3(r.BWPeak*f), round3(r.BWAverage*f)
		if r.AvgGbps > rep.PeakAvgGbps {
			rep.PeakAvgGbps, rep.PeakAvgBytes = r.AvgGbps, r.Bytes
		}
		rep.PeakGbps = max(rep.PeakGbps, r.PeakGbps)
	}
	m := &rep.Memory
	switch {
	case m.Kind == "":
		m.Kind = "host"
	case m.Kind == "cuda" && m.Registration == "" && m.Integrated:
		m.Registration = "host-pinned"
	case m.Kind == "cuda" && m.Registration == "" && len(m.Evidence) > 0:
		m.Registration = "peermem"
	}
	if rep.Sides == 0 && (len(rep.Rows) > 0 || len(rep.LatRows) > 0) {
		rep.Sides = 1
	}
}

// inferUnit decides between Gb/s and MiB/s for JSON output, which does not
// say: BW_average must agree with MsgSize x MsgRate.
func inferUnit(rep *Report) float64 {
	gb, mib := 0, 0
	for _, r := range rep.Rows {
		if r.MsgRate <= 0 || r.Bytes <= 0 || r.BWAverage <= 0 {
			continue
		}
		bps := float64(r.Bytes) * r.MsgRate * 1e6
		dg := math.Abs(math.Log(r.BWAverage / (bps * 8 / 1e9)))
		dm := math.Abs(math.Log(r.BWAverage / (bps / 1048576)))
		if dg < dm {
			gb++
		} else {
			mib++
		}
	}
	if gb > mib {
		rep.Unit = "Gb/sec (inferred)"
		return 1
	}
	rep.Unit = "MiB/sec (inferred)"
	return mibToGbps
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// wcStatus names ibv_wc_status values (rdma-core verbs.h).
var wcStatus = []string{
	"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR", "IBV_WC_LOC_EEC_OP_ERR", "IBV_WC_LOC_PROT_ERR",
	"IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR", "IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR",
	"IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR", "IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
	"IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR", "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR",
	"IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR", "IBV_WC_TM_ERR", "IBV_WC_TM_RNDV_INCOMPLETE",
}

var wcRemedy = map[int]string{
	4:  "local protection error: the buffer's memory registration is wrong (for GPU memory: peermem/dma-buf registration failed silently)",
	5:  "work requests were flushed because the queue pair had already failed: look at the first error",
	8:  "local access error: the local memory key does not allow the access",
	10: "remote access error: the peer rejected the RDMA access (its buffer key or size did not match): run server and client with identical options, check the server did not exit, and for GPU memory check the remote side's peermem/dma-buf registration",
	12: "transport retries exceeded: packets are lost on the path (cable, port, switch; on RoCE check PFC/ECN lossless configuration and the GID index)",
	13: "receiver-not-ready retries exceeded: the receiver did not post buffers in time",
}

func subject(rep *Report) string {
	if rep.Device != "" {
		return rep.Device
	}
	return "run"
}

func verdicts(name string, rep *Report) []result.Result {
	out := []result.Result{runVerdict(name, rep)}
	if rep.Type == "lat" {
		out = append(out, latVerdict(name, rep))
	} else {
		out = append(out, bwVerdict(name, rep))
	}
	out = append(out, mtuVerdict(name, rep), memoryVerdict(name, rep))
	return out
}

func runVerdict(name string, rep *Report) result.Result {
	var path, tool []textio.Quote
	for _, e := range rep.Errors {
		if reFailPath.MatchString(e.Text) {
			path = append(path, e)
		} else {
			tool = append(tool, e)
		}
	}
	subj := subject(rep)
	rows := len(rep.Rows) + len(rep.LatRows)
	switch {
	case len(path) > 0:
		msg := "the RDMA transfer failed: " + path[0].Text
		remedy := "check the link and both sides' logs; rerun server and client with identical options"
		for _, e := range path {
			if m := reStatus.FindStringSubmatch(e.Text); m != nil {
				code, _ := strconv.Atoi(m[1])
				if code >= 0 && code < len(wcStatus) {
					msg += fmt.Sprintf(" (status %d = %s)", code, wcStatus[code])
				}
				if r, ok := wcRemedy[code]; ok {
					remedy = r
				}
				break
			}
		}
		if rows > 0 {
			msg += fmt.Sprintf("; %d sizes completed before it", rows)
			if len(rep.Rows) > 0 {
				last := rep.Rows[len(rep.Rows)-1]
				msg += fmt.Sprintf(", the last %d B at %s Gb/s", last.Bytes, fmtF(last.AvgGbps))
			}
		}
		reason := "TransferFailed"
		if reRegFail.MatchString(path[0].Text) {
			// The test never started: its buffers could not be
			// registered with the NIC.
			reason = "RegistrationFailed"
			msg = "the buffers could not be registered with the NIC: " + path[0].Text
			remedy = "for GPU memory load nvidia-peermem or use --use_cuda_dmabuf; for host memory check the locked-memory limit (ulimit -l) and the device's permissions"
		}
		v := verdict.New(IDRun, result.Fail, subj, reason, msg, verdict.Quotes(name, path)...)
		v.Remedy = remedy
		return v
	case len(tool) > 0:
		v := verdict.New(IDRun, result.Error, subj, "ToolError", "perftest could not run the test: "+tool[0].Text, verdict.Quotes(name, tool)...)
		v.Remedy = "fix the set-up the message names (device name, peer address, port, options) and rerun"
		return v
	case rows == 0:
		return verdict.New(IDRun, result.Unknown, subj, "NoResults", "no result rows: the output was cut off before the results")
	}
	return verdict.New(IDRun, result.Pass, subj, "Completed", fmt.Sprintf("%d result rows, no errors", rows))
}

func describe(rep *Report) string {
	var parts []string
	if rep.Device != "" {
		parts = append(parts, "device "+rep.Device)
	}
	if rep.LinkType != "" {
		parts = append(parts, "link "+rep.LinkType)
	}
	if rep.MTU > 0 {
		parts = append(parts, fmt.Sprintf("MTU %d", rep.MTU))
	}
	if rep.QPs > 0 {
		parts = append(parts, fmt.Sprintf("%d QP%s", rep.QPs, map[bool]string{true: "", false: "s"}[rep.QPs == 1]))
	}
	parts = append(parts, rep.Memory.Kind+" memory")
	return strings.Join(parts, ", ")
}

func bwVerdict(name string, rep *Report) result.Result {
	subj := subject(rep)
	if len(rep.Rows) == 0 {
		return verdict.New(IDBW, result.Unknown, subj, "NoResults", "no bandwidth rows")
	}
	best := rep.Rows[0]
	for _, r := range rep.Rows {
		if r.AvgGbps > best.AvgGbps {
			best = r
		}
	}
	printed := ""
	if !strings.HasPrefix(rep.Unit, "Gb") {
		printed = fmt.Sprintf(" (%s %s as printed)", fmtF(best.BWAverage), rep.Unit)
	}
	msg := fmt.Sprintf("best average %s Gb/s at %d B%s; %s", fmtF(rep.PeakAvgGbps), best.Bytes, printed, describe(rep))
	if rep.DurationMode {
		msg += "; duration mode (BW peak not measured)"
	}
	ev := []result.Evidence{verdict.Ev(name, best.Line, fmt.Sprintf("%d B: average %s Gb/s, %s Mpps", best.Bytes, fmtF(best.AvgGbps), fmtF(best.MsgRate)), "")}
	if best.Bytes < bwMinBytes {
		return verdict.New(IDBW, result.Pass, subj, "SmallMessages", msg+fmt.Sprintf("; messages under 64 KiB measure message rate (%s Mpps), not bandwidth", fmtF(best.MsgRate)), ev...)
	}
	rate := 0.0
	for _, r := range LinkRates {
		if rep.PeakAvgGbps <= r*1.05 {
			rate = r
			break
		}
	}
	if rate > 0 && rep.PeakAvgGbps < LinkRateShare*rate {
		v := verdict.New(IDBW, result.Warn, subj, "BelowLinkRate",
			msg+fmt.Sprintf("; that is %.0f%% of %s Gb/s, the nearest standard port rate at or above it: a healthy run reaches 90%% or more of line rate", 100*rep.PeakAvgGbps/rate, fmtF(rate)), ev...)
		v.Remedy = "compare with the port rate (ibstat) and with a host-memory run on the same pair; for GPU memory a low plateau points at the GPU-NIC PCIe path (topology, PCIe ACS/IOMMU, link width) or the registration method"
		return v
	}
	return verdict.New(IDBW, result.Pass, subj, "Measured", msg, ev...)
}

func latVerdict(name string, rep *Report) result.Result {
	subj := subject(rep)
	if len(rep.LatRows) == 0 {
		return verdict.New(IDLat, result.Unknown, subj, "NoResults", "no latency rows")
	}
	r := rep.LatRows[0]
	var parts []string
	for _, p := range []struct {
		n string
		v *float64
	}{{"typical", r.Typical}, {"average", r.Avg}, {"min", r.Min}, {"max", r.Max}, {"99.9%", r.P999}} {
		if p.v != nil {
			parts = append(parts, fmt.Sprintf("%s %s us", p.n, fmtF(*p.v)))
		}
	}
	return verdict.New(IDLat, result.Pass, subj, "Measured",
		fmt.Sprintf("%d B: %s; %d sizes; %s", r.Bytes, strings.Join(parts, ", "), len(rep.LatRows), describe(rep)),
		verdict.Ev(name, r.Line, fmt.Sprintf("%d B latency row", r.Bytes), ""))
}

func mtuVerdict(name string, rep *Report) result.Result {
	subj := subject(rep)
	switch {
	case rep.MTULowered:
		var ev []result.Evidence
		for _, w := range rep.Warnings {
			if reMTULow.MatchString(w.Text) {
				ev = append(ev, verdict.Ev(name, w.Line, w.Text, ""))
			}
		}
		v := verdict.New(IDMTU, result.Warn, subj, "MTULowered",
			fmt.Sprintf("the requested MTU is above the port's active MTU, so the test ran at %d: on RoCE the active MTU follows the netdev MTU, which is not set for jumbo frames", rep.MTU), ev...)
		v.Remedy = "set the netdev MTU to 9000 (or at least 4200 for a 4096 RoCE MTU) on both hosts and the switch ports"
		return v
	case rep.MTU > 0:
		return verdict.New(IDMTU, result.Pass, subj, "MTU", fmt.Sprintf("the test ran at MTU %d", rep.MTU))
	}
	return verdict.New(IDMTU, result.Unknown, subj, "NoMTU", "the output does not show the MTU")
}

func memoryVerdict(name string, rep *Report) result.Result {
	m := rep.Memory
	subj := subject(rep)
	ev := verdict.Quotes(name, m.Evidence)
	gpu := "GPU memory"
	if m.GPU != "" {
		gpu += " of " + m.GPU
	}
	if m.GPUBusID != "" {
		gpu += " at " + m.GPUBusID
	}
	var regFail []textio.Quote
	for _, e := range rep.Errors {
		if reRegFail.MatchString(e.Text) {
			regFail = append(regFail, e)
		}
	}
	switch {
	case m.Kind != "host" && m.Kind != "" && len(regFail) > 0:
		// The banner says which memory and how it would be registered;
		// the error says the registration failed: nothing was moved.
		how := "ibv_reg_mr (nvidia-peermem)"
		if m.Registration == "dma-buf" || m.DMABufRequested {
			how = "dma-buf"
		}
		v := verdict.New(IDGPUMemory, result.Fail, subj, "RegistrationFailed",
			fmt.Sprintf("%s could not be registered with the NIC through %s (%q): GPU Direct RDMA does not work on this host", gpu, how, regFail[0].Text),
			append(verdict.Quotes(name, regFail), ev...)...)
		v.Remedy = "load nvidia-peermem (modprobe nvidia-peermem; with the GPU Operator: its peermem option), or use a kernel, driver and perftest with dma-buf (--use_cuda_dmabuf); then rerun"
		return v
	case m.Kind == "host":
		return verdict.New(IDGPUMemory, result.Skip, subj, "HostMemory", "the buffers were in host memory: this run measures the NIC and the fabric, not GPU Direct RDMA")
	case m.Kind == "rocm":
		return verdict.New(IDGPUMemory, result.Pass, subj, "ROCm", "the buffers were in AMD GPU memory (ROCm)", ev...)
	case m.Registration == "dma-buf":
		return verdict.New(IDGPUMemory, result.Pass, subj, "DMABUF", gpu+" registered with ibv_reg_dmabuf_mr: GPU Direct RDMA through dma-buf (no nvidia-peermem needed)", ev...)
	case m.Registration == "host-pinned":
		return verdict.New(IDGPUMemory, result.Pass, subj, "IntegratedGPU", "integrated GPU: the buffers are pinned host memory shared with the GPU", ev...)
	case m.Registration == "peermem" && m.DMABufRequested:
		v := verdict.New(IDGPUMemory, result.Warn, subj, "DMABUFNotUsed",
			"--use_cuda_dmabuf was requested but the output shows no DMA-BUF registration: "+gpu+" was registered with plain ibv_reg_mr, which works only through nvidia-peermem (this perftest build probably lacks dma-buf support)", ev...)
		v.Remedy = "rebuild perftest against CUDA with dma-buf support (it then prints 'using DMA-BUF for GPU buffer'), or make sure nvidia-peermem is loaded"
		return v
	case m.Registration == "peermem":
		return verdict.New(IDGPUMemory, result.Pass, subj, "PeerMem", gpu+" registered with ibv_reg_mr: GPU Direct RDMA through nvidia-peermem", ev...)
	}
	return verdict.New(IDGPUMemory, result.Unknown, subj, "GPUMemoryUnclear", "GPU memory was requested but the output does not show how it was allocated or registered", ev...)
}

func fmtF(v float64) string { return textio.FormatFloat(v, 3) }

// WriteText prints the verdicts, then the test set-up and its rows.
func (r *Report) WriteText(w io.Writer, vs []result.Result) error {
	var b strings.Builder
	if !r.Paste.Empty() {
		fmt.Fprintf(&b, "\n%s\n", r.Paste)
	}
	title := r.Test
	if title == "" {
		title = r.Tool
	}
	fmt.Fprintf(&b, "\n%s (%s output, %d side(s))\n", title, r.Format, r.Sides)
	if r.Command != "" {
		fmt.Fprintf(&b, "  command: %s\n", r.Command)
	}
	fmt.Fprintf(&b, "  %s\n", describe(r))
	if r.Memory.Registration != "" {
		fmt.Fprintf(&b, "  GPU memory registration: %s\n", r.Memory.Registration)
	}
	if len(r.Rows) > 0 {
		fmt.Fprintf(&b, "  best average: %s Gb/s at %d B; best peak: %s Gb/s (unit printed: %s)\n", fmtF(r.PeakAvgGbps), r.PeakAvgBytes, fmtF(r.PeakGbps), r.Unit)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  bytes\titerations\tpeak\taverage\tavg Gb/s\tMpps\t")
		for _, row := range r.Rows {
			fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\t%s\t\n", row.Bytes, row.Iterations, fmtF(row.BWPeak), fmtF(row.BWAverage), fmtF(row.AvgGbps), fmtF(row.MsgRate))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.LatRows) > 0 {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  bytes\titerations\tmin us\ttypical us\tavg us\tmax us\t99.9% us\t")
		for _, row := range r.LatRows {
			fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", row.Bytes, row.Iterations, opt(row.Min), opt(row.Typical), opt(row.Avg), opt(row.Max), opt(row.P999))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "  error (line %d): %s\n", e.Line, e.Text)
	}
	for _, e := range r.Warnings {
		fmt.Fprintf(&b, "  warning (line %d): %s\n", e.Line, e.Text)
	}
	return (verdict.Text{}).Page(w, "", vs, b.String())
}

func opt(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmtF(*v)
}
