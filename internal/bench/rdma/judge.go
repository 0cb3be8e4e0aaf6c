package rdma

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Causes of a run that measured nothing, each a Reason.
const (
	CauseMissingBinary  = "MissingBinary"
	CauseRegistration   = "GPUMemoryNotRegistered"
	CausePortConflict   = "PortConflict"
	CauseServerDied     = "ServerDied"
	CauseClientFailed   = "ClientFailed"
	CauseTimeout        = "Timeout"
	CauseNoMeasurement  = "NoMeasurement"
	CauseServerNotReady = "ServerNotReady"
)

// Outcome is what one run (one memory kind on one pair) gave.
type Outcome struct {
	Memory string `json:"memory"`
	// Gbps is the best average bandwidth at bandwidth sizes (Gb/s); for a
	// latency test, LatencyUS is the typical latency at the smallest size.
	Gbps      float64 `json:"gbps,omitempty"`
	LatencyUS float64 `json:"latency_us,omitempty"`
	Bytes     int64   `json:"bytes,omitempty"`
	// Cause is set when the run measured nothing (a Cause* reason), with
	// Detail: the line that says why.
	Cause  string `json:"cause,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Raw outputs kept, relative to the output folder.
	ServerOut string `json:"server_output,omitempty"`
	ClientOut string `json:"client_output,omitempty"`
}

// PairResult is one entry's outcomes.
type PairResult struct {
	Entry    Entry     `json:"entry"`
	Outcomes []Outcome `json:"outcomes"`
	// Cause and Detail: a cross-node rail that did not run at all
	// (RailMismatch, PeerMissing).
	Cause  string `json:"cause,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Judging thresholds.
type Judging struct {
	// Pass: measured/expected at large sizes at least this passes.
	Pass float64
	// GPUvsHost: GPU memory under this fraction of the host control says
	// the GDR path is broken or staged.
	GPUvsHost float64
}

// DefaultJudging is 0.85 of expected, and GPU memory at 0.8 of host memory.
var DefaultJudging = Judging{Pass: 0.85, GPUvsHost: 0.8}

// ID of the results.
const ID = "bench.rdma"

// Judge gives each run of each pair a result: the GPU-memory runs against
// the line rate (or the model) and against the host control on the same
// pair, the control against the line rate.
func Judge(prs []PairResult, j Judging) []result.Result {
	var out []result.Result
	for _, pr := range prs {
		e := pr.Entry
		if e.Skip != "" {
			out = append(out, result.Result{ID: ID, Status: result.Skip, Subject: e.Subject(), Reason: "NotRun", Message: "not run: " + e.Skip})
			continue
		}
		if pr.Cause != "" {
			r := result.Result{ID: ID, Status: result.Fail, Subject: e.Subject(), Reason: pr.Cause, Message: pairText(&e, "") + ": " + causeText(pr.Cause) + detail(pr.Detail)}
			r.Remedy = remedy(pr.Cause)
			out = append(out, r)
			continue
		}
		host := pr.hostControl()
		for _, o := range pr.Outcomes {
			out = append(out, judgeOne(&e, o, host, j))
		}
	}
	return out
}

// hostControl is the pair's host-memory run that completed (the last, if
// several did), the control its GPU-memory runs are held against; nil if none.
func (pr PairResult) hostControl() *Outcome {
	var host *Outcome
	for i := range pr.Outcomes {
		if pr.Outcomes[i].Memory == MemHost && pr.Outcomes[i].Cause == "" {
			host = &pr.Outcomes[i]
		}
	}
	return host
}

func subjectOf(e *Entry, mem string) string { return e.Subject() + "/" + mem }

func judgeOne(e *Entry, o Outcome, host *Outcome, j Judging) result.Result {
	r := result.Result{ID: ID, Subject: subjectOf(e, o.Memory)}
	pair := pairText(e, o.Memory)
	ev := func(src, v string) {
		if src != "" {
			r.Evidence = append(r.Evidence, result.Evidence{Source: src, Value: v})
		}
	}
	ev(o.ClientOut, o.Detail)
	if o.Cause != "" {
		r.Status, r.Reason = result.Fail, o.Cause
		r.Message = pair + ": " + causeText(o.Cause) + detail(o.Detail)
		r.Remedy = remedy(o.Cause)
		if o.Cause == CauseMissingBinary || o.Cause == CausePortConflict {
			r.Status = result.Error
		}
		return r
	}
	if IsLatency(e.Runs0Test()) {
		// A latency has no line rate: a GPU-memory run is judged against
		// the host-memory control of the same pair, and only that.
		r.Message = fmt.Sprintf("%s: %.2f µs typical at %d B", pair, o.LatencyUS, o.Bytes)
		switch {
		case o.Memory == MemHost:
			r.Status, r.Reason = result.Pass, "Measured"
			r.Message += ": the host-memory control the GPU-memory runs are compared with"
		case host == nil || !(host.LatencyUS > 0):
			r.Status, r.Reason = result.Unknown, "NoHostControl"
			r.Message += ": no host-memory control measured to compare with, not judged"
		case o.LatencyUS > 2*host.LatencyUS:
			r.Status, r.Reason = result.Warn, "GPULatencyHigh"
			r.Message += fmt.Sprintf(", over twice host memory's %.2f µs: the GPU path is long (pcie.acs, gdr.nic-affinity)", host.LatencyUS)
		default:
			r.Status, r.Reason = result.Pass, "WithinTwiceHost"
			r.Message += fmt.Sprintf(", within twice host memory's %.2f µs", host.LatencyUS)
		}
		return r
	}
	// Against the pair's own expectation and its host-memory control: a
	// pasted perftest output (app's judgePerftest in analyze) has neither,
	// and is judged against the rate it is told instead.
	want, what := e.Expect.LineGbps, "line rate"
	if o.Memory == MemHost && e.Expect.HostGbps > 0 {
		want, what = e.Expect.HostGbps, "the model's host-memory figure"
	} else if o.Memory != MemHost && e.Expect.GPUGbps > 0 {
		want, what = e.Expect.GPUGbps, "the model's GPU-memory figure"
	}
	r.Message = fmt.Sprintf("%s: %.2f Gb/s (%.2f GB/s)", pair, o.Gbps, o.Gbps/8)
	status, reason := result.Unknown, "RateUnknown"
	if want > 0 {
		f := o.Gbps / want
		r.Message += fmt.Sprintf(", %.0f%% of %s (%.4g Gb/s)", 100*f, what, want)
		status, reason = result.Pass, "AtRate"
		if f < j.Pass {
			status, reason = result.Warn, "BelowRate"
		}
	} else {
		r.Message += ", the port's rate is unknown: not judged"
	}
	if o.Memory != MemHost && host != nil && host.Gbps > 0 {
		f := o.Gbps / host.Gbps
		r.Message += fmt.Sprintf(", %.0f%% of host memory on the same pair (%.2f Gb/s)", 100*f, host.Gbps)
		// Where the model itself expects GPU memory below host memory (a
		// path through the CPU), the bar is the model's ratio.
		ratio := 1.0
		if x := e.Expect; x.GPUGbps > 0 && x.HostGbps > 0 && x.GPUGbps < x.HostGbps {
			ratio = x.GPUGbps / x.HostGbps
			r.Message += fmt.Sprintf(" (the model expects %.0f%% on path %s)", 100*ratio, e.Level)
		}
		if f < ratio*j.GPUvsHost {
			status, reason = result.Fail, "GDRStaged"
			r.Message += ": the GPU Direct path is broken or staged through host memory or the CPU"
			r.Remedy = "see gdr.nic-affinity (the GPU and NIC should share a PCIe switch), pcie.acs (ACS redirects peer traffic to the root complex), iommu.mode and pcie.link"
		}
	} else if o.Memory != MemHost {
		r.Message += ", no host-memory control to compare"
	}
	if reason == "BelowRate" && o.Memory == MemHost {
		r.Remedy = "host memory below line rate: the NIC, its link or the cable (nic.port, pcie.link), not GPU Direct"
	}
	r.Status, r.Reason = status, reason
	return r
}

// pairText names a pair (and a memory kind) in messages.
func pairText(e *Entry, mem string) string {
	s := fmt.Sprintf("GPU%d (%s) ↔ %s port %d", e.GPU, e.GPUBusID, e.NIC, e.Port)
	if p := e.Peer; p != nil {
		end := func(host string, gpu int, bus, nic string, port int) string {
			if gpu < 0 { // the rail is missing on that side
				return host + " (no rail " + fmt.Sprint(e.Rail) + ")"
			}
			return fmt.Sprintf("%s GPU%d (%s) %s port %d", host, gpu, bus, nic, port)
		}
		s = fmt.Sprintf("rail %d: %s ↔ %s", e.Rail, end(e.Host, e.GPU, e.GPUBusID, e.NIC, e.Port), end(p.Host, p.GPU, p.GPUBusID, p.NIC, p.Port))
	}
	if mem != "" {
		s += ", " + mem
	}
	return s
}

func remedy(cause string) string {
	switch cause {
	case CauseMissingBinary:
		return "install perftest (built with CUDA for --use_cuda) or name its folder with --perftest-dir"
	case CauseRegistration:
		return "load nvidia_peermem (modprobe nvidia-peermem) or use dma-buf (open kernel module, kernel 5.12+); see gdr.kernel-module"
	case CausePortConflict:
		return "another process holds the TCP port; choose another with --tcp-port"
	case CauseTimeout, CauseServerNotReady:
		return "see the raw outputs; raise --pair-timeout if the sweep is long"
	case CausePeerMissing:
		return "see the peer rank's stderr and its rank-N/results.json; every rank of the job must run bench rdma --mode cross-node with the same options"
	case CauseRailMismatch:
		return "the two nodes of a pair must have the same rails (GPU–NIC pairs in order) on the same link layer: compare gdrcheck topo on both, or choose --rails"
	}
	return ""
}

// Runs0Test is the perftest tool of the entry's runs ("" none).
func (e *Entry) Runs0Test() string {
	if len(e.Runs) == 0 {
		return ""
	}
	return e.Runs[0].Server.Tool
}

func detail(d string) string {
	if d == "" {
		return ""
	}
	return ": " + d
}

func causeText(c string) string {
	switch c {
	case CauseMissingBinary:
		return "perftest binary not found"
	case CauseRegistration:
		return "GPU memory could not be registered with the NIC (no peer-memory path)"
	case CausePortConflict:
		return "the TCP port is in use"
	case CauseServerDied:
		return "the server exited before the client finished"
	case CauseClientFailed:
		return "the client failed"
	case CauseTimeout:
		return "deadline passed"
	case CauseServerNotReady:
		return "the server never started listening"
	case CauseNoMeasurement:
		return "the output holds no result row"
	case CausePeerMissing:
		return "the peer rank is missing"
	case CauseRailMismatch:
		return "the rail differs between the two nodes"
	}
	return c
}

// WriteText prints the plan: one block per pair with its commands.
func (p *Plan) WriteText(w io.Writer) error {
	bw := &errWriter{w: w}
	size := "all sizes (-a)"
	if p.Size > 0 {
		size = fmt.Sprintf("%d bytes", p.Size)
	}
	bw.printf("bench rdma plan: %s, %s, %s\n", p.Mode, p.Test, size)
	reg := "unknown"
	switch {
	case p.Registration.PeerMem != "" && p.Registration.DMABuf:
		reg = p.Registration.PeerMem + " and dma-buf"
	case p.Registration.PeerMem != "":
		reg = p.Registration.PeerMem
	case p.Registration.DMABuf:
		reg = "dma-buf"
	case p.Registration.Known:
		reg = "none (" + p.Registration.Why + ")"
	}
	bw.printf("registration: %s", printable.Line(reg))
	if p.NCCLPath != "" {
		bw.printf("; NCCL would use %s", MemoryText(p.NCCLPath))
	}
	bw.printf("\n")
	server, client := "server", "client"
	if p.Mode == ModeCrossNode {
		server, client = "server (even rank)", "client (odd rank)"
	}
	for _, e := range p.Entries {
		rail := ""
		if p.Mode == ModeCrossNode {
			rail = fmt.Sprintf("rail %d: ", e.Rail)
		}
		bw.printf("\n%sGPU%d %s  ↔  %s port %d (%s, %s, %g Gb/s)  path %s  %s\n", rail, e.GPU, printable.Line(e.GPUBusID), printable.Line(e.NIC), e.Port,
			printable.Line(e.LinkLayer), printable.Line(e.PortState), e.RateGbps, e.Level, e.Mode)
		if e.Skip != "" {
			bw.printf("  not run: %s\n", printable.Line(e.Skip))
		}
		for _, r := range e.Runs {
			tag := r.Memory
			if r.NCCL {
				tag += " (NCCL's path)"
			}
			bw.printf("  %s\n    %s: %s\n    %s: %s\n", tag, server, printable.Line(r.Server.Line()), client, printable.Line(r.Client.Line()))
		}
		bw.printf("  expect: %s\n", printable.Line(expectText(e.Expect)))
		for _, n := range e.Notes {
			bw.printf("  note: %s\n", printable.Line(n))
		}
	}
	if len(p.Notes) > 0 {
		bw.printf("\n")
	}
	for _, n := range p.Notes {
		bw.printf("Note: %s\n", printable.Line(n))
	}
	return bw.err
}

func expectText(x Expectation) string {
	var parts []string
	if x.LineGbps > 0 {
		parts = append(parts, fmt.Sprintf("line %g Gb/s", x.LineGbps))
	}
	if x.HostGbps > 0 {
		parts = append(parts, fmt.Sprintf("host memory %.4g Gb/s", x.HostGbps))
	}
	if x.GPUGbps > 0 {
		parts = append(parts, fmt.Sprintf("GPU memory %.4g Gb/s", x.GPUGbps))
	}
	parts = append(parts, "from "+x.Source)
	return strings.Join(parts, ", ")
}

// WriteTable prints the measured pairs: GPU, bus id, NIC, path level, mode,
// memory, GB/s and Gb/s, fractions, verdict.
func WriteTable(w io.Writer, prs []PairResult, rs []result.Result) error {
	verdict := map[string]result.Result{}
	for _, r := range rs {
		verdict[r.Subject] = r
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(prs) > 0 && prs[0].Entry.Peer != nil {
		writeCross(tw, prs, verdict)
		return tw.Flush()
	}
	fmt.Fprintln(tw, "GPU\tBUS ID\tNIC\tPATH\tMODE\tMEMORY\tGB/s\tGb/s\tOF LINE\tOF HOST\tVERDICT")
	for _, pr := range prs {
		e := pr.Entry
		head := fmt.Sprintf("%d\t%s\t%s\t%s\t%s", e.GPU, printable.Line(e.GPUBusID), printable.Line(e.NIC), printable.Line(string(e.Level)), printable.Line(e.Mode))
		if e.Skip != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\tskip: %s\n", head, printable.Line(e.Skip))
			continue
		}
		writeOutcomes(tw, head, pr, verdict)
	}
	return tw.Flush()
}

// writeOutcomes prints one table row per run of pr: head (the pair's own
// columns), then the memory, GB/s, Gb/s, the fractions of line rate and of
// host memory, and the run's verdict (its status, and its reason unless it
// passed).
func writeOutcomes(tw io.Writer, head string, pr PairResult, verdict map[string]result.Result) {
	e := pr.Entry
	var host float64
	if h := pr.hostControl(); h != nil {
		host = h.Gbps
	}
	for _, o := range pr.Outcomes {
		r := verdict[subjectOf(&e, o.Memory)]
		gb, gbit, line, ofHost := cells(e, o, host)
		v := string(r.Status)
		if r.Status != result.Pass {
			v += " " + r.Reason
		}
		// Text from a member's part: escaped, like every cell.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", head, printable.Line(o.Memory), gb, gbit, line, ofHost, printable.Line(v))
	}
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(f string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, f, a...)
	}
}

// MemoryText names a memory kind for people.
func MemoryText(mem string) string {
	switch mem {
	case MemPeerMem:
		return "nvidia-peermem (--use_cuda)"
	case MemDMABuf:
		return "dma-buf (--use_cuda --use_cuda_dmabuf)"
	case MemHost:
		return "host memory"
	}
	return mem
}

// writeCross is the cross-node table: one row per rail and memory, this
// (the server's) GPU and NIC, the peer's host and NIC, both path levels.
func writeCross(tw io.Writer, prs []PairResult, verdict map[string]result.Result) {
	fmt.Fprintln(tw, "GPU\tBUS ID\tNIC\tPEER\tRAIL\tPATH\tMEMORY\tGB/s\tGb/s\tOF LINE\tOF HOST\tVERDICT")
	for _, pr := range prs {
		e := pr.Entry
		peer := "-"
		path := string(e.Level)
		if e.Peer != nil {
			peer = e.Peer.Host + ":" + e.Peer.NIC
			path += "/" + string(e.Peer.Level)
		}
		head := fmt.Sprintf("%s:%d\t%s\t%s\t%s\t%d\t%s", printable.Line(e.Host), e.GPU, printable.Line(e.GPUBusID), printable.Line(e.NIC), printable.Line(peer), e.Rail, printable.Line(path))
		if e.Skip != "" || pr.Cause != "" {
			v := "skip: " + e.Skip
			if pr.Cause != "" {
				v = "fail " + pr.Cause
			}
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t%s\n", head, printable.Line(v))
			continue
		}
		writeOutcomes(tw, head, pr, verdict)
	}
}

// cells are a run's GB/s, Gb/s, fraction of line rate and of host memory.
func cells(e Entry, o Outcome, host float64) (gb, gbit, line, ofHost string) {
	gb, gbit, line, ofHost = "-", "-", "-", "-"
	if o.Cause == "" && o.Gbps > 0 {
		gb, gbit = fmt.Sprintf("%.2f", o.Gbps/8), fmt.Sprintf("%.2f", o.Gbps)
		if e.Expect.LineGbps > 0 {
			line = fmt.Sprintf("%.0f%%", 100*o.Gbps/e.Expect.LineGbps)
		}
		if o.Memory != MemHost && host > 0 {
			ofHost = fmt.Sprintf("%.0f%%", 100*o.Gbps/host)
		}
	} else if o.Cause == "" && o.LatencyUS > 0 {
		gb = fmt.Sprintf("%.2f µs", o.LatencyUS)
	}
	return
}
