package nccltests

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze/verdict"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/hw"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Verdict IDs.
const (
	IDWrong = "nccltests.wrong"
	IDBusBW = "nccltests.busbw"
	IDRun   = "nccltests.run"
)

// Thresholds of the bus bandwidth judgement.
const (
	// CollapseRatio: a tail of at least two rows after the peak, all below
	// this share of the peak, is a large-size collapse.
	CollapseRatio = 0.7
	// Out-of-place and in-place busbw of one row disagreeing by more than
	// UnstableLarge (rows of 256 MiB and more) or UnstableMid (1 MiB and
	// more) make the measurement unstable.
	UnstableLarge = 0.30
	UnstableMid   = 0.50
	// ExpectedShare of a GPU's per-direction NVLink bandwidth is the least
	// busbw a single-node NVLink/NVSwitch run reaches at 1 GiB and more.
	ExpectedShare = 0.5
)

const (
	mib = uint64(1) << 20
	gib = uint64(1) << 30
)

// nvlinkExpect is the per-direction NVLink bandwidth (GB/s) of a GPU
// model, by the name CUDA prints, on an NVSwitch board, from the hardware
// catalogue, with a label naming it; false for other GPUs (PCIe cards,
// bridged pairs, unknown models).
func nvlinkExpect(name string) (float64, string, bool) {
	g, ok := hw.GPUByName(name)
	if !ok || !g.NVSwitchBoard {
		return 0, "", false
	}
	return g.NVLinkGBps(), fmt.Sprintf("%s, NVLink%d: %g GB/s per direction", g.Short, g.NVLinkGen, g.NVLinkGBps()), true
}

func verdicts(name string, rep *Report) []result.Result {
	var out []result.Result
	subj := subjects(rep.Tests)
	for i, t := range rep.Tests {
		out = append(out, wrongVerdict(name, t, subj[i]), busbwVerdict(name, t, subj[i]))
	}
	if rep.DroppedWrongRows > 0 {
		v := verdict.New(IDWrong, result.Fail, "rows not kept", "WrongResults",
			fmt.Sprintf("%d row(s) past the reader's caps (not kept in the report) have wrong elements: the collective returned corrupted data", rep.DroppedWrongRows),
			verdict.Ev(name, rep.FirstDroppedWrongLine, "the first such row", ""))
		v.Remedy = wrongRemedy
		out = append(out, v)
	}
	out = append(out, runVerdict(name, rep, subj))
	return out
}

// subjects names each test by its collective, numbered when repeated.
func subjects(ts []*Test) []string {
	count := map[string]int{}
	for _, t := range ts {
		count[t.Collective]++
	}
	seen := map[string]int{}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Collective
		if count[t.Collective] > 1 {
			seen[t.Collective]++
			out[i] = fmt.Sprintf("%s#%d", t.Collective, seen[t.Collective])
		}
	}
	return out
}

const wrongRemedy = "data was corrupted in transit: rerun to see whether it repeats, then check GPU memory (dcgmi diag -r 3), NVLink and PCIe error counters (nvidia-smi nvlink -e, AER) and the NICs' counters; NCCL_P2P_DISABLE=1 or NCCL_NET_GDR_LEVEL=LOC bisects the path that corrupts"

func wrongVerdict(name string, t *Test, subject string) result.Result {
	if len(t.Rows) == 0 {
		return verdict.New(IDWrong, result.Skip, subject, "NoRows", "the table has no result rows, so there is nothing to validate")
	}
	var bad []result.Evidence
	var badRows []string
	checked, unchecked := 0, 0
	for _, r := range t.Rows {
		var parts []string
		for _, h := range []struct {
			place string
			m     *collective.Measure
		}{{"out-of-place", r.OutOfPlace}, {"in-place", r.InPlace}} {
			switch {
			case h.m == nil:
			case h.m.Wrong == nil:
				unchecked++
			default:
				checked++
				if *h.m.Wrong > 0 {
					parts = append(parts, fmt.Sprintf("%s #wrong %d", h.place, *h.m.Wrong))
				}
			}
		}
		if len(parts) > 0 {
			badRows = append(badRows, Size(r.Bytes))
			bad = append(bad, verdict.Ev(name, r.Line, fmt.Sprintf("size %d: %s", r.Bytes, strings.Join(parts, ", ")), ""))
		}
	}
	oobBad := t.OutOfBounds != nil && (*t.OutOfBounds > 0 || (t.OutOfBoundsOK != nil && !*t.OutOfBoundsOK))
	remedy := wrongRemedy
	switch {
	case len(bad) > 0:
		v := verdict.New(IDWrong, result.Fail, subject, "WrongResults",
			fmt.Sprintf("%d of %d rows have wrong elements (sizes %s): the collective returned corrupted data", len(bad), len(t.Rows), strings.Join(firstN(badRows, 8), ", ")), bad...)
		v.Remedy = remedy
		return v
	case oobBad:
		v := verdict.New(IDWrong, result.Fail, subject, "OutOfBounds",
			fmt.Sprintf("nccl-tests reports %d out-of-bounds values: the collective wrote outside its buffers", *t.OutOfBounds))
		v.Remedy = remedy
		return v
	case checked == 0:
		return verdict.New(IDWrong, result.Unknown, subject, "ValidationDisabled",
			"#wrong is N/A in every row: the run had validation off (-c 0), so the data was not checked")
	}
	msg := fmt.Sprintf("#wrong is 0 in all %d checked cells of %d rows", checked, len(t.Rows))
	if unchecked > 0 {
		msg += fmt.Sprintf(" (%d cells N/A: not validated)", unchecked)
	}
	if t.OutOfBounds != nil {
		msg += fmt.Sprintf("; out-of-bounds values: %d", *t.OutOfBounds)
	}
	return verdict.New(IDWrong, result.Pass, subject, "NoWrongResults", msg)
}

type finding struct {
	reason, msg string
	ev          []result.Evidence
}

func busbwVerdict(name string, t *Test, subject string) result.Result {
	if len(t.Rows) == 0 {
		return verdict.New(IDBusBW, result.Unknown, subject, "NoRows",
			"the table header is there but no result row: the output was cut off or the run stopped before the first size")
	}
	summary := summaryLine(t)
	if t.PeakBusBW <= 0 {
		why := "the sizes are too small to measure bandwidth"
		if len(t.Devices) == 1 {
			why = "a single rank exchanges nothing, so busbw is 0 by definition"
		}
		return verdict.New(IDBusBW, result.Unknown, subject, "NoBandwidth", summary+": every busbw cell is 0: "+why)
	}
	var fs []finding
	ex, judged := expectation(name, t)
	if judged && ex.reason != "" {
		fs = append(fs, ex)
	}
	if f, ok := collapse(name, t); ok {
		fs = append(fs, f)
	}
	if f, ok := unstable(name, t); ok {
		fs = append(fs, f)
	}
	if len(fs) == 0 {
		if judged {
			return verdict.New(IDBusBW, result.Pass, subject, "AtExpected", summary+"; "+ex.msg+"; no large-size collapse and no out-of-place/in-place disagreement", ex.ev...)
		}
		// Numbers were present and none of the checks found fault; none
		// held them against what the hardware should reach either:
		// that is no pass (nccltests.hardware judges them when told).
		return verdict.New(IDBusBW, result.Skip, subject, "NotJudged", summary+"; no large-size collapse and no out-of-place/in-place disagreement, "+
			"but the numbers were not held against what the hardware should reach (a single node of NVLink GPUs the catalogue knows, or --expect / --gpu: nccltests.hardware)")
	}
	var msgs []string
	var ev []result.Evidence
	for _, f := range fs {
		msgs = append(msgs, f.msg)
		ev = append(ev, f.ev...)
	}
	v := verdict.New(IDBusBW, result.Warn, subject, fs[0].reason, summary+"; "+strings.Join(msgs, "; "), ev...)
	switch fs[0].reason {
	case "BelowExpected":
		v.Remedy = "check that NCCL uses NVLink (NCCL_DEBUG=INFO: P2P/CUMEM or P2P/IPC, NVLS), that every NVLink is up (nvidia-smi nvlink -s), and that the Fabric Manager runs on NVSwitch systems"
	case "BusbwCollapse":
		v.Remedy = "a collapse at large sizes points at a setting that differs between ranks (e.g. an NCCL_* variable not exported to every rank), memory pressure, or a path change at that size; compare the NCCL_DEBUG=INFO logs of the ranks"
	case "BusbwUnstable":
		v.Remedy = "rerun with more iterations (-n) and check for other jobs, clock throttling or link errors on these nodes"
	}
	return v
}

func summaryLine(t *Test) string {
	var b strings.Builder
	fmt.Fprintf(&b, "avg busbw %s GB/s", fmtF(t.AvgBusBW))
	if t.AvgFrom == "computed" {
		b.WriteString(" (computed from the rows: no summary line)")
	}
	fmt.Fprintf(&b, ", peak %s GB/s at %s", fmtF(t.PeakBusBW), Size(t.PeakSize))
	if t.PeakPlace != "" {
		fmt.Fprintf(&b, " (%s)", t.PeakPlace)
	}
	fmt.Fprintf(&b, ", %d rows from %s to %s", len(t.Rows), Size(t.Rows[0].Bytes), Size(t.Rows[len(t.Rows)-1].Bytes))
	if n := len(t.Devices); n > 0 {
		fmt.Fprintf(&b, ", %s on %s", plural(n, "rank"), plural(len(t.Hosts), "host"))
	}
	return b.String()
}

// expectation compares a single-node NVLink run with what the GPU's links
// give. judged: the run could be compared; then f.reason is
// "BelowExpected" when it fell short, "" when it reached the floor (f.msg
// says so).
func expectation(name string, t *Test) (f finding, judged bool) {
	if len(t.Hosts) != 1 || len(t.Devices) < 2 || !expectBusBW(t.Collective) {
		return finding{}, false
	}
	var largest uint64
	for _, r := range t.Rows {
		largest = max(largest, r.Bytes)
	}
	if largest < gib {
		return finding{}, false
	}
	model := t.Devices[0].Name
	for _, d := range t.Devices {
		if d.Name != model {
			return finding{}, false
		}
	}
	gbps, label, ok := nvlinkExpect(model)
	if !ok {
		return finding{}, false
	}
	floor := ExpectedShare * gbps
	if t.PeakBusBW >= floor {
		return finding{"", fmt.Sprintf("peak busbw %s GB/s reaches %s GB/s, half of what %d %s GPUs on one node should reach (%s)",
			fmtF(t.PeakBusBW), fmtF(floor), len(t.Devices), model, label),
			[]result.Evidence{verdict.Ev(name, t.Line, fmt.Sprintf("%d x %s on %s", len(t.Devices), model, t.Hosts[0]), "")}}, true
	}
	return finding{"BelowExpected", fmt.Sprintf("peak busbw %s GB/s is below %s GB/s, half of what %d %s GPUs on one node should reach (%s)",
		fmtF(t.PeakBusBW), fmtF(floor), len(t.Devices), model, label),
		[]result.Evidence{verdict.Ev(name, t.Line, fmt.Sprintf("%d x %s on %s", len(t.Devices), model, t.Hosts[0]), "")}}, true
}

// expectBusBW reports whether a single-node run of the collective should
// reach a share of NVLink bandwidth: every collective but sendrecv (one
// peer per rank) and those outside gdrcheck's vocabulary.
func expectBusBW(name string) bool {
	c := collective.Collective(name)
	return c.Known() && c != collective.SendRecv
}

// collapse finds a tail of rows after the peak that stays well below it.
func collapse(name string, t *Test) (finding, bool) {
	rows := sortedRows(t.Rows)
	peakIdx, peak := 0, 0.0
	for i, r := range rows {
		if bw, _ := bestBusBW(t, r); bw > peak {
			peakIdx, peak = i, bw
		}
	}
	start := len(rows)
	for i := len(rows) - 1; i > peakIdx; i-- {
		if bw, _ := bestBusBW(t, rows[i]); bw >= CollapseRatio*peak {
			break
		}
		start = i
	}
	if n := len(rows) - start; n < 2 {
		return finding{}, false
	}
	var tail []float64
	for _, r := range rows[start:] {
		bw, _ := bestBusBW(t, r)
		tail = append(tail, bw)
	}
	med := median(tail)
	return finding{"BusbwCollapse", fmt.Sprintf("busbw collapses from %s GB/s (peak at %s) to about %s GB/s (%.0f%% of peak) from %s on, over the last %d rows",
		fmtF(peak), Size(rows[peakIdx].Bytes), fmtF(med), 100*med/peak, Size(rows[start].Bytes), len(rows)-start),
		[]result.Evidence{
			verdict.Ev(name, rows[peakIdx].Line, fmt.Sprintf("size %d: busbw %s GB/s (peak)", rows[peakIdx].Bytes, fmtF(peak)), ""),
			verdict.Ev(name, rows[start].Line, fmt.Sprintf("size %d: busbw %s GB/s (collapse starts)", rows[start].Bytes, fmtF(tail[0])), ""),
		}}, true
}

// unstable finds rows whose out-of-place and in-place busbw disagree. A
// one-rank test is not judged: its in-place operation has nothing to move
// (the output is the input), so its time is a no-op's, not a measurement.
func unstable(name string, t *Test) (finding, bool) {
	if len(t.Devices) == 1 {
		return finding{}, false
	}
	var ev []result.Evidence
	var sizes []string
	for _, r := range t.Rows {
		if r.OutOfPlace == nil || r.InPlace == nil {
			continue
		}
		a, b := r.OutOfPlace.BusBW, r.InPlace.BusBW
		hi, lo := max(a, b), min(a, b)
		if hi <= 0 {
			continue
		}
		d := 1 - lo/hi
		if (r.Bytes >= 256*mib && d > UnstableLarge) || (r.Bytes >= mib && d > UnstableMid) {
			sizes = append(sizes, Size(r.Bytes))
			ev = append(ev, verdict.Ev(name, r.Line, fmt.Sprintf("size %d: out-of-place busbw %s vs in-place %s GB/s (%.0f%% apart)", r.Bytes, fmtF(a), fmtF(b), 100*d), ""))
		}
	}
	if len(ev) == 0 {
		return finding{}, false
	}
	return finding{"BusbwUnstable", fmt.Sprintf("out-of-place and in-place busbw disagree strongly at %s: the measurement is unstable (noisy neighbours, throttling or a flapping path)", strings.Join(firstN(sizes, 6), ", ")), ev}, true
}

func runVerdict(name string, rep *Report, subj []string) result.Result {
	if len(rep.Failures) > 0 {
		v := verdict.New(IDRun, result.Fail, "run", "TestFailure",
			fmt.Sprintf("the benchmark reported %d failure lines, first: %s", len(rep.Failures), rep.Failures[0].Text), verdict.Quotes(name, rep.Failures)...)
		v.Remedy = "read the NCCL WARN lines before the failure (rerun with NCCL_DEBUG=INFO) for the cause"
		return v
	}
	if f, ok := independentRuns(name, rep); ok {
		v := verdict.New(IDRun, result.Warn, "run", f.reason, f.msg, f.ev...)
		v.Remedy = "build nccl-tests with MPI=1 (make MPI=1 MPI_HOME=...) and run the _mpi binaries, or use one process with -g <gpus>"
		return v
	}
	var missing []string
	rows := 0
	for i, t := range rep.Tests {
		rows += len(t.Rows)
		if !t.summary {
			missing = append(missing, subj[i])
		}
	}
	dropped := ""
	if rep.DroppedTests > 0 {
		dropped = fmt.Sprintf("; %d further test(s) past the first %d were read but not kept", rep.DroppedTests, maxTests)
	}
	if len(missing) > 0 {
		names := strings.Join(missing[:min(len(missing), 16)], ", ")
		if len(missing) > 16 {
			names += fmt.Sprintf(" and %d more", len(missing)-16)
		}
		msg := fmt.Sprintf("no '# Out of bounds values' / '# Avg bus bandwidth' summary for %s: the output is an excerpt or the run did not finish", names)
		if len(rep.PartialRows) > 0 {
			msg += fmt.Sprintf("; %d row(s) started but never completed (last at line %d)", len(rep.PartialRows), rep.PartialRows[len(rep.PartialRows)-1].Line)
		}
		return verdict.New(IDRun, result.Unknown, "run", "NoSummary", msg+dropped)
	}
	msg := fmt.Sprintf("%d test(s), %d rows, every test printed its summary", len(rep.Tests), rows)
	if len(rep.PartialRows) > 0 {
		msg += fmt.Sprintf("; %d row(s) could not be reassembled", len(rep.PartialRows))
	}
	msg += dropped
	return verdict.New(IDRun, result.Pass, "run", "Completed", msg)
}

// independentRuns spots mpirun starting copies of a non-MPI build: several
// tests, each with a single rank.
func independentRuns(name string, rep *Report) (finding, bool) {
	if len(rep.Tests) < 2 {
		return finding{}, false
	}
	rank0 := 0
	var ev []result.Evidence
	for _, t := range rep.Tests {
		if len(t.Devices) == 0 && len(t.Rows) == 0 {
			continue // a header repeated by another copy, its rank lines elsewhere
		}
		// The copies' headers may interleave so that one test holds
		// several rank 0 lines, one per copy.
		if len(t.Devices) == 0 || t.Params.NGpus*max(t.Params.NThread, 1) != 1 {
			return finding{}, false
		}
		for _, d := range t.Devices {
			if d.Rank != 0 {
				return finding{}, false
			}
			rank0++
			if len(ev) < 4 {
				ev = append(ev, verdict.Ev(name, t.Line, fmt.Sprintf("rank 0 of a 1-rank run on %s device %d", d.Host, d.Device), ""))
			}
		}
	}
	if rank0 < 2 {
		return finding{}, false
	}
	return finding{"IndependentRuns", fmt.Sprintf("%d separate single-rank runs instead of one %d-rank run: the binary was started once per process but not built with MPI, so no GPU-to-GPU or network traffic was measured", rank0, rank0), ev}, true
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func sortedRows(rows []collective.Row) []collective.Row {
	out := append([]collective.Row(nil), rows...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Bytes < out[j].Bytes })
	return out
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(append([]string(nil), s[:n]...), fmt.Sprintf("and %d more", len(s)-n))
}

func fmtF(v float64) string { return textio.FormatFloat(v, 3) }

// Size prints a byte count the way people read nccl-tests sizes: 8 B, 64 KiB, 16 GiB.
func Size(b uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(b), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v == float64(uint64(v)) {
		return fmt.Sprintf("%d %s", uint64(v), units[u])
	}
	return fmt.Sprintf("%.2f %s", v, units[u])
}
