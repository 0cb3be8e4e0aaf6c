package ncclras

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// transient are the kinds RAS reports while a job runs that can pass by
// themselves: ranks at different operation counts (MISMATCH) and slow
// answers while RAS gathered its data (TIMEOUT). Everything else (DEAD,
// INCOMPLETE, and kinds this reader does not know) means a rank is gone
// or silent.
var transient = map[string]bool{"MISMATCH": true, "TIMEOUT": true}

// remedy is what to do when RAS reports a rank gone or silent.
const remedy = "find the process RAS names (node, PID, GPU): its kernel log (Xid), gdrcheck check on that node, the job's own log; a job that lost a rank does not recover: restart it without the node, and drain the node until it passes"

func verdicts(name string, rep *Report) []result.Result {
	var out []result.Result
	ev := func(line int, text string) result.Evidence {
		return result.Evidence{Source: fmt.Sprintf("%s:%d", name, line), Value: printable.Line(text)}
	}
	// The communicators.
	switch {
	case rep.Reports == 0:
		out = append(out, result.Result{ID: "nccl.ras.comms", Status: result.Unknown, Subject: "job", Reason: "NoCommunicators",
			Message: "the report has a job summary but no communicators table"})
	default:
		var bad, odd []string
		var evs []result.Evidence
		ranks := 0
		for _, g := range rep.Groups {
			ranks += g.RanksInGroup
			errs := slices.DeleteFunc(slices.Clone(g.Errors), func(e string) bool { return e == "OK" })
			what := fmt.Sprintf("group %d (%d communicator(s), %d rank(s)): %s", g.Index, g.Comms, g.RanksInGroup, g.Status)
			if len(errs) > 0 {
				what += " " + strings.Join(errs, ",")
			}
			switch {
			case g.Status != "RUNNING" || slices.ContainsFunc(errs, func(e string) bool { return !transient[e] }):
				bad = append(bad, what)
				evs = append(evs, ev(g.Line, what))
			case len(errs) > 0:
				odd = append(odd, what)
				evs = append(evs, ev(g.Line, what))
			}
		}
		switch {
		case len(rep.Groups) == 0:
			out = append(out, result.Result{ID: "nccl.ras.comms", Status: result.Unknown, Subject: "job", Reason: "NoGroups",
				Message: "the communicators table lists no group"})
		case len(bad) > 0:
			out = append(out, result.Result{ID: "nccl.ras.comms", Status: result.Fail, Subject: "job", Reason: "CommunicatorsNotRunning",
				Message: "communicators not running or missing ranks: " + strings.Join(bad, "; "), Evidence: evs, Remedy: remedy})
		case len(odd) > 0:
			out = append(out, result.Result{ID: "nccl.ras.comms", Status: result.Warn, Subject: "job", Reason: "CommunicatorsMismatch",
				Message: "communicators running, but their ranks disagree: " + strings.Join(odd, "; ") + " (ranks at different operation counts: a rank lagging, or a hang in the making; read the report again)", Evidence: evs,
				Remedy: "take the report again after a while: a count that stays apart names the ranks that are stuck"})
		default:
			out = append(out, result.Result{ID: "nccl.ras.comms", Status: result.Pass, Subject: "job", Reason: "AllRunning",
				Message: fmt.Sprintf("every communicator RUNNING with no error (%d group(s), %d rank(s)); RAS sees NCCL's state only: a hang outside NCCL, or inside a collective every rank entered, does not show here", len(rep.Groups), ranks)})
		}
	}
	// The findings: each error or warning RAS listed.
	for _, f := range rep.Errors {
		out = append(out, finding(f, ev, true))
	}
	for _, f := range rep.Warnings {
		out = append(out, finding(f, ev, false))
	}
	// Nodes that run another number of processes.
	if len(rep.Outliers) > 0 {
		evs := make([]result.Evidence, 0, len(rep.Outliers))
		var names []string
		for _, q := range rep.Outliers {
			evs = append(evs, ev(q.Line, q.Text))
			names = append(names, q.Text)
		}
		out = append(out, result.Result{ID: "nccl.ras.nodes", Status: result.Warn, Subject: "job", Reason: "OutlierNode",
			Message: "nodes run another number of processes than the others: " + strings.Join(names, "; "), Evidence: evs,
			Remedy: "check the launcher's placement (tasks per node) and whether a process on that node exited"})
	}
	return out
}

// finding is one RAS error or warning as a verdict: gone or silent ranks
// fail, transient kinds warn.
func finding(f Finding, ev func(int, string) result.Evidence, isErr bool) result.Result {
	id := "nccl.ras.errors"
	if !isErr {
		id = "nccl.ras.warnings"
	}
	subject := "job"
	if f.Comm != "" {
		subject = "comm " + f.Comm
	}
	reason, ok := reasons[f.Kind]
	if !ok {
		reason = "RAS" + camel(f.Kind)
	}
	msg := "RAS reports " + f.Kind
	if len(f.Details) > 0 {
		msg += ": " + strings.Join(f.Details, "; ")
	}
	r := result.Result{ID: id, Subject: subject, Reason: reason, Evidence: []result.Evidence{ev(f.Line, strings.TrimSpace(f.Comm+" "+f.Kind))}}
	if isErr && !transient[f.Kind] || f.Kind == "DEAD" {
		r.Status, r.Message, r.Remedy = result.Fail, msg, remedy
		return r
	}
	r.Status, r.Message = result.Warn, msg
	r.Remedy = "take the report again: a warning that stays names the ranks or nodes to look at"
	return r
}

// camel writes an upper-case kind (ASCII, "_" between words) as
// CamelCase: NO_COMM -> NoComm.
func camel(kind string) string {
	var b strings.Builder
	for _, w := range strings.Split(strings.ToLower(kind), "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// reasons names RAS's kinds as verdict reasons.
var reasons = map[string]string{
	"DEAD": "ProcessDead", "INCOMPLETE": "MissingData", "MISMATCH": "OperationMismatch", "TIMEOUT": "GatherTimeout",
}

// WriteText prints the report and the verdicts.
func (rep *Report) WriteText(w io.Writer, vs []result.Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "NCCL RAS report")
	if rep.NCCLVersion != "" {
		fmt.Fprintf(&b, " (NCCL %s)", printable.Line(rep.NCCLVersion))
	}
	if rep.Nodes > 0 {
		fmt.Fprintf(&b, ": %d node(s), %d process(es), %d GPU(s)", rep.Nodes, rep.Processes, rep.GPUs)
	}
	b.WriteString("\n")
	if rep.Reports > 1 {
		fmt.Fprintf(&b, "%d reports; the last one is the job's state\n", rep.Reports)
	}
	for _, g := range rep.Groups {
		fmt.Fprintf(&b, "  group %d: %d comm(s), %d rank(s), %s %s\n", g.Index, g.Comms, g.RanksInGroup, g.Status, strings.Join(g.Errors, ","))
	}
	for _, fs := range []struct {
		title string
		list  []Finding
	}{{"Errors", rep.Errors}, {"Warnings", rep.Warnings}} {
		for _, f := range fs.list {
			fmt.Fprintf(&b, "  %s: %s %s\n", fs.title, f.Kind, printable.Line(f.Comm))
			for _, d := range f.Details {
				fmt.Fprintf(&b, "    %s\n", printable.Line(d))
			}
		}
	}
	b.WriteString("\nVerdicts:\n")
	for _, v := range vs {
		fmt.Fprintf(&b, "  %-7s %s [%s] %s: %s\n", strings.ToUpper(string(v.Status)), v.ID, v.Reason, v.Subject, printable.Line(v.Message))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
