package dcgmi

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze/verdict"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Verdict IDs.
const (
	IDDiag = "dcgmi.diag"
	IDRun  = "dcgmi.run"
)

// DCGM error code 44 (DCGM_FR_INTERNAL) and category 16
// (DCGM_FR_EC_INTERNAL_OTHER) in dcgm_errors.h mark the diagnostic's own
// failures; in text only the message says so.
const (
	errInternal      = 44
	categoryInternal = 16
)

var reInternal = textio.MustCompile(`(?i)internal error|child process \(\d+\) exited|couldn't be parsed|could not be parsed|syntax error: value, object or array expected|plugin .* (?:crashed|timed out)|failed to (?:load|launch) (?:the )?plugin|nvvs (?:crashed|exited)`)

func internal(m Message) bool {
	if m.ErrorID != nil && *m.ErrorID == errInternal || m.Category != nil && *m.Category == categoryInternal {
		return true
	}
	return reInternal.MatchString(m.Text)
}

func verdicts(name string, rep *Report) []result.Result {
	var out []result.Result
	for _, t := range rep.Tests {
		if t.Name == "(global)" {
			// Message rows before any test: only an Error row is a verdict.
			if e := errorRows(t); len(e) > 0 {
				out = append(out, errorVerdict(name, t, e, ""))
			}
			continue
		}
		out = append(out, testVerdict(name, t))
	}
	out = append(out, runVerdict(name, rep))
	return out
}

// errorRows are the test's "Error" message rows that are findings (not
// the diagnostic's own internal error).
func errorRows(t *Test) []Message {
	var out []Message
	for _, w := range t.Warnings {
		if w.Error && !internal(w) {
			out = append(out, w)
		}
	}
	return out
}

func errorVerdict(name string, t *Test, errs []Message, where string) result.Result {
	var ev []result.Evidence
	for i, e := range errs {
		if i == 6 {
			break
		}
		ev = append(ev, verdict.Ev(name, e.Line, e.Text, "error"))
	}
	res := t.Result
	if res == "" {
		res = "no result"
	}
	v := verdict.New(IDDiag, result.Fail, t.Name, "ErrorReported",
		fmt.Sprintf("dcgmi reported an error%s (the test's result says %s): %s", where, res, errs[0].Text), ev...)
	v.Remedy = remedyFor(t)
	return v
}

func gpuList(gs []GPUResult, res string) []string {
	var out []string
	for _, g := range gs {
		if g.Result == res {
			out = append(out, fmt.Sprintf("GPU%d", g.GPU))
		}
	}
	sort.Strings(out)
	return out
}

func testVerdict(name string, t *Test) result.Result {
	var ev []result.Evidence
	for i, w := range t.Warnings {
		if i == 6 {
			break
		}
		ev = append(ev, verdict.Ev(name, w.Line, w.Text, "warning"))
	}
	where := ""
	if t.Category != "" {
		where = " (" + t.Category + ")"
	}
	if e := errorRows(t); len(e) > 0 && t.Result != "Fail" && t.Result != "Error" {
		// An "Error" row fails the test even when its result says Pass or
		// Skip: dcgmi reports the error beside a result it could not change.
		return errorVerdict(name, t, e, where)
	}
	switch t.Result {
	case "Pass":
		msg := "passed" + where
		if n := len(t.GPUs); n > 0 {
			msg += fmt.Sprintf(" on %d GPU(s)", n)
		} else if t.AllGPUs {
			msg += " on all GPUs"
		}
		return verdict.New(IDDiag, result.Pass, t.Name, "Pass", msg, ev...)
	case "Skip":
		return verdict.New(IDDiag, result.Skip, t.Name, "Skipped", "skipped by the diagnostic"+where, ev...)
	case "Not Run":
		return verdict.New(IDDiag, result.Skip, t.Name, "NotRun", "not run at this level"+where)
	case "Warn":
		return verdict.New(IDDiag, result.Warn, t.Name, "Warn", "warning"+where+": "+firstText(t.Warnings), ev...)
	case "Fail", "Error":
	default:
		return verdict.New(IDDiag, result.Unknown, t.Name, "UnknownResult", fmt.Sprintf("result %q%s is not one dcgmi prints", t.Result, where), ev...)
	}
	failed := append(gpuList(t.GPUs, "Fail"), gpuList(t.GPUs, "Error")...)
	passed := gpuList(t.GPUs, "Pass")
	allInternal := len(t.Warnings) > 0
	for _, w := range t.Warnings {
		if !internal(w) {
			allInternal = false
		}
	}
	switch {
	case len(failed) == 0 && allInternal:
		msg := fmt.Sprintf("the test reports Fail%s but the failure is the diagnostic's own internal error, not a GPU finding: %s", where, firstText(t.Warnings))
		if len(passed) > 0 {
			msg += fmt.Sprintf("; every GPU row says Pass (%s)", strings.Join(passed, ", "))
		}
		v := verdict.New(IDDiag, result.Error, t.Name, "InternalError", msg, ev...)
		v.Remedy = "the diagnostic broke (a plugin child process exited or its output could not be parsed): check the DCGM logs (nv-hostengine, /var/log/nvidia-dcgm), make sure no other process holds the GPUs, restart nv-hostengine or the DCGM pod, and rerun before judging the hardware"
		return v
	case len(failed) > 0:
		v := verdict.New(IDDiag, result.Fail, t.Name, "TestFailed",
			fmt.Sprintf("failed%s on %s: %s", where, strings.Join(failed, ", "), firstText(t.Warnings)), ev...)
		v.Remedy = remedyFor(t)
		return v
	}
	msg := fmt.Sprintf("failed%s", where)
	if t.AllGPUs {
		msg += " on all GPUs"
	}
	if len(t.Warnings) > 0 {
		msg += ": " + firstText(t.Warnings)
	}
	v := verdict.New(IDDiag, result.Fail, t.Name, "TestFailed", msg, ev...)
	v.Remedy = remedyFor(t)
	return v
}

func remedyFor(t *Test) string {
	switch t.Canonical {
	case "software":
		return "fix the configuration the warning names (driver/library install, persistence mode, pending page retirement or row remap needing a GPU reset, other processes on the GPU), then rerun"
	case "pcie":
		return "check the GPU's PCIe link (lspci -vv LnkSta width/speed, AER and replay counters) and NVLink state (nvidia-smi nvlink -s / -e); reseat or replace the part if it repeats"
	case "memory", "memtest", "memory_bandwidth":
		return "GPU memory errors: check ECC/row-remap counters (nvidia-smi -q -d ECC,ROW_REMAPPER), reset the GPU and rerun; repeated failures mean an RMA"
	}
	return "read the warning, rerun the test alone at a higher level (dcgmi diag -r 3) and compare with the other GPUs; repeated failures on the same GPU mean a hardware fault"
}

func firstText(ms []Message) string {
	if len(ms) == 0 {
		return "no detail printed"
	}
	s := ms[0].Text
	if len(ms) > 1 {
		s += fmt.Sprintf(" (and %d more messages)", len(ms)-1)
	}
	return s
}

func runVerdict(name string, rep *Report) result.Result {
	switch {
	case len(rep.Errors) > 0 && len(rep.Tests) == 0:
		v := verdict.New(IDRun, result.Error, "run", "DiagError", "dcgmi could not run the diagnostic: "+rep.Errors[0].Text, verdict.Quotes(name, rep.Errors)...)
		v.Remedy = "check that nv-hostengine runs and the GPUs are visible to it (dcgmi discovery -l)"
		return v
	case rep.Headless:
		// Without the header the start of the table is not in the input:
		// the tests before it are unknown, closed table or not.
		end := "closed by its bottom border"
		if !rep.Complete {
			end = "not closed either: later tests may be missing too"
		}
		return verdict.New(IDRun, result.Unknown, "run", "Fragment",
			fmt.Sprintf("the table's start is not in the input (no '| Diagnostic | Result |' header: it begins at a section border or with bare rows), so the tests before it are not known; its end is %s%s", end, orphans(rep)))
	case !rep.Complete:
		last := 0
		if n := len(rep.Tests); n > 0 {
			last = rep.Tests[n-1].Line
		}
		return verdict.New(IDRun, result.Unknown, "run", "Truncated",
			fmt.Sprintf("the table ends without its closing border (last test at line %d): later tests may be missing from this output%s", last, orphans(rep)))
	}
	if o := orphans(rep); o != "" {
		return verdict.New(IDRun, result.Unknown, "run", "Fragment", "the table's end is here but not its start"+o)
	}
	return verdict.New(IDRun, result.Pass, "run", "Completed", fmt.Sprintf("%d tests reported", countTests(rep)))
}

func countTests(rep *Report) int {
	n := 0
	for _, t := range rep.Tests {
		if t.Name != "(global)" {
			n++
		}
	}
	return n
}

// WriteText prints the verdicts, then the table as read.
func (r *Report) WriteText(w io.Writer, vs []result.Result) error {
	var b strings.Builder
	if !r.Paste.Empty() {
		fmt.Fprintf(&b, "\n%s\n", r.Paste)
	}
	fmt.Fprintf(&b, "\ndcgmi diag (%s): DCGM %s, driver %s, %d GPU device id(s)\n", r.Format, r.DCGMVersion, r.DriverVersion, len(r.DeviceIDs))
	cat := "\x00"
	for _, t := range r.Tests {
		if t.Category != cat {
			cat = t.Category
			fmt.Fprintf(&b, "  %s\n", cat)
		}
		res := t.Result
		if t.AllGPUs {
			res += " (all GPUs)"
		}
		fmt.Fprintf(&b, "    %-28s %s\n", t.Name, res)
		for _, g := range t.GPUs {
			fmt.Fprintf(&b, "    %-28s GPU%d: %s\n", "", g.GPU, g.Result)
		}
		for _, m := range t.Warnings {
			fmt.Fprintf(&b, "    %-28s warning: %s\n", "", m.Text)
		}
		for _, m := range t.Info {
			fmt.Fprintf(&b, "    %-28s info: %s\n", "", m.Text)
		}
	}
	if !r.Complete {
		b.WriteString("  (table not closed: output cut off)\n")
	}
	return (verdict.Text{}).Page(w, "", vs, b.String())
}

// orphans says which rows before the table's first section were skipped.
func orphans(rep *Report) string {
	o := rep.Orphans
	switch len(o) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; the row at line %d comes before the first section and was not read (a fragment of a longer table)", o[0])
	}
	return fmt.Sprintf("; %d rows (lines %d-%d) come before the first section and were not read (a fragment of a longer table)", len(o), o[0], o[len(o)-1])
}
