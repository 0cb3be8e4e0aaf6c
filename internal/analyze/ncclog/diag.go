package ncclog

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// sDiag marks the lines of NCCL's own readiness diagnostics (NCCL 2.31+:
// NCCL_RUN_DIAGNOSTICS=1 at communicator init, NCCL_RUN_RAS_DIAGNOSTICS=1
// or `ncclras -D`): "NCCL DIAG [OK]   check: text", "NCCL DIAG [INFO] check: text".
var sDiag = []byte("NCCL DIAG ")

// diagTracker keeps what NCCL's diagnostics found, check by check. NCCL
// prints them as information and goes on; gdrcheck judges them.
type diagTracker struct {
	lines  int64
	ok     map[string]int
	issues map[string][]offender // the first maxOffenders lines of each check
	count  map[string]int        // every finding line of each check
	order  []string
}

// line reads one diagnostics line (b holds sDiag).
func (t *diagTracker) line(b []byte, no int64) {
	t.lines++
	r := bytes.TrimSpace(b[bytes.Index(b, sDiag)+len(sDiag):])
	if len(r) == 0 || r[0] != '[' {
		return // a banner or the closing "completed in" line
	}
	end := bytes.IndexByte(r, ']')
	if end < 0 {
		return
	}
	tag := string(r[1:end])
	rest := string(bytes.TrimSpace(r[end+1:]))
	check, _, ok := strings.Cut(rest, ":")
	if !ok {
		check = "diagnostics"
	}
	check = strings.TrimSpace(check)
	if t.ok == nil {
		t.ok, t.issues, t.count = map[string]int{}, map[string][]offender{}, map[string]int{}
	}
	if _, seen := t.ok[check]; !seen && t.count[check] == 0 {
		t.order = append(t.order, check)
	}
	if tag == "OK" {
		t.ok[check]++
		return
	}
	t.count[check]++
	if len(t.issues[check]) < maxOffenders {
		t.issues[check] = append(t.issues[check], offender{line: no, text: clip(bytes.TrimSpace(b))})
	}
}

// diagWarnOnly are the checks whose findings are a warning: settings
// that differ between ranks. Every other check's finding (P2P access not
// verified, a GPU inventory, driver, ECC, Xid, NVLink or RDMA topology
// inconsistent, a rank's bandwidth off the others') fails.
var diagWarnOnly = []string{"NCCL environment"}

// vDiag judges NCCL's diagnostics.
func (a *analyzer) vDiag(r *Report) result.Result {
	const id = "nccl.diag"
	t := &a.diag
	if t.lines == 0 {
		return a.noDiag(r)
	}
	var bad, warn []string
	var evs []result.Evidence
	passed := 0
	for _, c := range t.order {
		if t.count[c] == 0 {
			passed++
			continue
		}
		what := fmt.Sprintf("%s (%d line(s))", c, t.count[c])
		if slices.Contains(diagWarnOnly, c) {
			warn = append(warn, what)
		} else {
			bad = append(bad, what)
		}
		evs = append(evs, a.offEvidence(t.issues[c], "NCCL diagnostics")...)
	}
	switch {
	case len(bad) > 0:
		out := titles.New(id, result.Fail, "job", "DiagnosticsFailed",
			fmt.Sprintf("NCCL's diagnostics found problems it only reports: %s", strings.Join(append(bad, warn...), ", ")), evs)
		out.Remedy = "treat each as a failure: a GPU pair without verified P2P, ranks whose GPUs, drivers, ECC, NVLink or RDMA topology differ, or a rank off the others' bandwidth; gdrcheck check on the nodes named, and bench rdma / bench copy for the pairs"
		return out
	case len(warn) > 0:
		out := titles.New(id, result.Warn, "job", "DiagnosticsWarnings",
			fmt.Sprintf("NCCL's diagnostics report settings that differ between ranks: %s", strings.Join(warn, ", ")), evs)
		out.Remedy = "make the NCCL_* variables the same on every rank (the job's environment, not each node's)"
		return out
	}
	return titles.New(id, result.Pass, "job", "DiagnosticsOK", fmt.Sprintf("NCCL's diagnostics passed %d check(s): %s", passed, strings.Join(t.order, ", ")), nil)
}

// diagSince is the first NCCL release with its own readiness diagnostics.
var diagSince = [3]int{2, 31, 0}

// noDiag is nccl.diag on a log without a diagnostics line: which NCCL ran
// says whether there could have been any. An NCCL that has them and was
// asked for them (NCCL_RUN_DIAGNOSTICS or NCCL_RUN_RAS_DIAGNOSTICS set to
// 1, as gdrcheck's bench sets it) prints them on rank 0's standard output
// (NCCL's diagnostics guide), not through its debug logger: a debug log
// without them says nothing of their result, and the verdict says where
// they are.
func (a *analyzer) noDiag(r *Report) result.Result {
	const id = "nccl.diag"
	var old, current []string
	for _, v := range r.Versions {
		if n, ok := ncclRelease(v.Version); ok && compareRelease(n, diagSince) < 0 {
			old = append(old, v.Version)
		} else if ok {
			current = append(current, v.Version)
		}
	}
	var asked *EnvVar
	for i, e := range r.Env {
		if (e.Name == "NCCL_RUN_DIAGNOSTICS" || e.Name == "NCCL_RUN_RAS_DIAGNOSTICS") && strings.TrimSpace(e.Value) == "1" {
			asked = &r.Env[i]
		}
	}
	switch {
	case len(current) > 0 && asked != nil:
		out := titles.New(id, result.Skip, "job", "DiagnosticsNotInLog",
			fmt.Sprintf("%s=1 was set and NCCL %s has diagnostics, but they print on rank 0's standard output, not in this log: not judged here", asked.Name, strings.Join(current, ", ")),
			[]result.Evidence{a.ev(asked.Line, asked.Name+" set by environment to "+asked.Value, "")})
		out.Remedy = "run gdrcheck analyze on rank 0's standard output (the \"NCCL DIAG\" lines printed at communicator set-up)"
		return out
	case len(old) > 0 && len(current) == 0:
		return titles.New(id, result.Skip, "job", "NoDiagnostics",
			fmt.Sprintf("the NCCL in use (%s) predates NCCL's own diagnostics (2.31 and later): not exercised", strings.Join(old, ", ")), nil)
	}
	return titles.New(id, result.Skip, "job", "NoDiagnostics", "the log holds no \"NCCL DIAG\" line (NCCL_RUN_DIAGNOSTICS / NCCL_RUN_RAS_DIAGNOSTICS off, or an NCCL before 2.31): not exercised", nil)
}

// ncclRelease reads "2.28.3+cuda13.0" (a "NCCL version" line's version)
// as its three numbers.
func ncclRelease(v string) ([3]int, bool) {
	v, _, _ = strings.Cut(v, "+")
	parts := strings.Split(strings.TrimSpace(v), ".")
	var n [3]int
	if len(parts) < 2 || len(parts) > 3 {
		return n, false
	}
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 || x > 1<<20 {
			return n, false
		}
		n[i] = x
	}
	return n, true
}

func compareRelease(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			return cmp.Compare(a[i], b[i])
		}
	}
	return 0
}
