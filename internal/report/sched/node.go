package sched

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/printable"
)

// Node is what `scontrol show node NAME` says about one node, as far as
// resuming it goes.
type Node struct {
	Name string // NodeName=
	// State is State= as printed (IDLE+DRAIN, MIXED+DRAIN, DOWN+DRAIN,
	// DRAINED, IDLE*+DRAIN, ...); Base its first word, Flags the words
	// after each +.
	State string
	Base  string
	Flags []string
	// Reason is Reason= without the [user@time] scontrol appends; By is
	// that user@time ("" when absent). A reason of several lines is its
	// first line only.
	Reason string
	By     string
}

// ShowNodeArgv is the command that reads a node's state: scontrol show
// node NAME (program "" is Scontrol). A node that is not a valid node name
// (ValidNodeName) is refused.
func ShowNodeArgv(program, node string) ([]string, error) {
	if err := ValidNodeName(node); err != nil {
		return nil, err
	}
	if program == "" {
		program = Scontrol
	}
	return []string{program, "show", "node", node}, nil
}

// ResumeArgv is the command that returns a drained node to service:
// scontrol update NodeName=N State=RESUME.
func ResumeArgv(program, node string) ([]string, error) {
	if err := ValidNodeName(node); err != nil {
		return nil, err
	}
	if program == "" {
		program = Scontrol
	}
	return []string{program, "update", "NodeName=" + node, "State=RESUME"}, nil
}

// ParseShowNode reads the record of node out of `scontrol show node`'s
// output (its multi-line form: the record starts with a line NodeName=N,
// fields are space-separated Key=Value, State= is one word, Reason= runs
// to the end of its line and ends with " [user@time]" when Slurm knows
// who set it; records are separated by blank lines). It refuses what it
// cannot read with certainty: no record of that node or more than one, no
// State= or more than one in the record, an empty state word.
func ParseShowNode(out, node string) (Node, error) {
	var rec []string
	in, done, records := false, false, 0
	for _, line := range strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if strings.HasPrefix(trimmed, "NodeName=") && trimmed == line { // a record's first line is not indented
			name, _, _ := strings.Cut(strings.TrimPrefix(trimmed, "NodeName="), " ")
			if in { // the next record
				done = true
			}
			in = name == node
			if in {
				records++
			}
		}
		if in && !done {
			if strings.TrimSpace(line) == "" {
				done = true
				continue
			}
			rec = append(rec, line)
		}
	}
	switch {
	case records == 0:
		return Node{}, fmt.Errorf("no NodeName=%s in scontrol's output", printable.Line(node))
	case records > 1:
		// Which one is the node's state is not certain.
		return Node{}, fmt.Errorf("node %s: %d records in scontrol's output", printable.Line(node), records)
	}
	n := Node{Name: node}
	states, reasons := 0, 0
	for _, line := range rec {
		trimmed := strings.TrimLeft(line, " \t")
		if v, ok := strings.CutPrefix(trimmed, "Reason="); ok {
			reasons++
			if reasons == 1 {
				n.Reason, n.By = splitReason(v)
			}
			continue // a reason's text is not fields
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "State="); ok {
				states++
				n.State = v
			}
		}
	}
	switch {
	case states == 0:
		return Node{}, fmt.Errorf("node %s: no State= in scontrol's output", printable.Line(node))
	case states > 1:
		return Node{}, fmt.Errorf("node %s: %d State= fields in scontrol's output", printable.Line(node), states)
	case reasons > 1:
		return Node{}, fmt.Errorf("node %s: %d Reason= lines in scontrol's output", printable.Line(node), reasons)
	}
	words := strings.Split(n.State, "+")
	n.Base, n.Flags = words[0], words[1:]
	if n.Base == "" || slices.Contains(n.Flags, "") {
		return Node{}, fmt.Errorf("node %s: State=%s: an empty word", printable.Line(node), printable.Line(n.State))
	}
	return n, nil
}

// splitReason cuts the " [user@time]" scontrol appends off a reason.
func splitReason(v string) (reason, by string) {
	v = strings.TrimRight(v, " \t")
	if !strings.HasSuffix(v, "]") {
		return v, ""
	}
	i := strings.LastIndex(v, " [")
	if i < 0 || !strings.Contains(v[i:], "@") {
		return v, ""
	}
	return v[:i], v[i+2 : len(v)-1]
}

// OurDrainPrefix starts every reason gdrcheck health and prolog drain a
// node with (HealthLine of a node that is not ready). A drain by gdrcheck
// fleet (FleetReason, "gdrcheck: ") is not one: it judges a node against
// the others, which a node's own checks cannot undo.
const OurDrainPrefix = prefixFail

// The words of State= under which a drained node may be resumed: a base
// state that is up (or, in the forms older releases print, a drain
// state), and flags that say nothing against it. Anything else (DOWN,
// FAIL, a pending or issued reboot, not responding, powering, an invalid
// registration, a word this list does not know) leaves the node alone.
var (
	resumableBase  = []string{"IDLE", "ALLOCATED", "MIXED", "COMPLETING", "DRAINED", "DRAINING", "RESERVED", "MAINT", "PLANNED"}
	resumableFlags = []string{"DRAIN", "COMPLETING", "MAINTENANCE", "RESERVED", "PLANNED", "CLOUD", "DYNAMIC_NORM", "PERFCTRS"}
)

// baseWord is the base state without the mark node_state_string appends
// (* not responding, $ maintenance, @ reboot requested, ^ reboot issued,
// # % ~ ! power states, - planned), which older releases print in
// State=.
func (n Node) baseWord() string { return strings.TrimRight(n.Base, "*$@^#%~!-") }

// Drained is whether n is draining or drained.
func (n Node) Drained() bool {
	b := n.baseWord()
	return b == "DRAINED" || b == "DRAINING" || slices.Contains(n.Flags, "DRAIN")
}

// Down is whether n is DOWN (whatever its flags), not just drained.
func (n Node) Down() bool { return n.baseWord() == "DOWN" }

// ErrNotDrained is Resumable's answer for a node that is not drained:
// nothing to do, nothing to say.
var ErrNotDrained = errors.New("not drained")

// Resumable says whether gdrcheck may resume n, which passed its checks:
// nil when n is drained by gdrcheck (its reason starts OurDrainPrefix) and
// its state is only drained; ErrNotDrained when it is not drained; else
// why it is left as it is (down, drained by someone else or for another
// reason, a state it does not know). This is NHC's rule: bring back only
// the nodes whose note it set itself.
func Resumable(n Node) error {
	if n.Down() {
		return fmt.Errorf("node %s is %s, not just drained; gdrcheck resumes only nodes it drained", printable.Line(n.Name), printable.Line(n.State))
	}
	if !n.Drained() {
		return ErrNotDrained
	}
	if !strings.HasPrefix(n.Reason, OurDrainPrefix) {
		who := ""
		if n.By != "" {
			who = " [" + n.By + "]"
		}
		return fmt.Errorf("node %s is drained by someone else or for another reason: %s%s", printable.Line(n.Name), Reason(n.Reason), printable.Line(who))
	}
	if !slices.Contains(resumableBase, n.Base) {
		return fmt.Errorf("node %s is %s: state %s is not one gdrcheck resumes", printable.Line(n.Name), printable.Line(n.State), printable.Line(n.Base))
	}
	for _, f := range n.Flags {
		if !slices.Contains(resumableFlags, f) {
			return fmt.Errorf("node %s is %s: flag %s is not one gdrcheck resumes", printable.Line(n.Name), printable.Line(n.State), printable.Line(f))
		}
	}
	return nil
}
