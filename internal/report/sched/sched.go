// Package sched is what gdrcheck tells a scheduler, as text: the one-line
// reason fit for Slurm's HealthCheckProgram, prolog and a node's drain
// reason; the scontrol command that drains a node, as an argument vector
// and as a shell line; and the Kubernetes Node Feature Discovery labels
// file (features.d). It is pure: the use-cases in internal/app run
// scontrol and write the file. docs/scheduler.md describes it, with its
// sources.
package sched

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/fleet"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// MaxReason bounds the health line and every drain reason, in bytes: one
// line a person reads in sinfo -R and a log, not a report.
const MaxReason = 256

// The health line's leading words.
const (
	prefixOK       = "gdrcheck OK: "
	prefixDegraded = "gdrcheck DEGRADED: "
	prefixFail     = "gdrcheck FAIL: "
	prefixError    = "gdrcheck ERROR: "
)

// HealthLine is a run of checks on one line, at most MaxReason bytes:
//
//	gdrcheck OK: READY (38 pass, 2 skip)
//	gdrcheck DEGRADED: nic.port mlx5_3:1: ...; +1 more (gdr.kernel-module)
//	gdrcheck FAIL: gdr.kernel-module: ...; +2 more (pcie.link)
//
// A FAIL line leads with the worst result that made the node not ready (a
// fail; with the verdict's Strict, an unknown or error result too), a
// DEGRADED line with the worst that degraded it; "+N more" counts the
// other such results and names their checks.
func HealthLine(rep *checks.Report) string {
	v := rep.Verdict
	switch v.Status {
	case checks.Ready:
		return Reason(prefixOK + v.Status + " (" + report.CountsLine(rep.Counts) + ")")
	case checks.NotReady:
		return lead(prefixFail, pick(rep.Results, func(r result.Result) bool { return failing(r, v.Strict) }))
	}
	return lead(prefixDegraded, pick(rep.Results, func(r result.Result) bool { return degrading(r, v.Strict) }))
}

// BurnLine is the one line of a node whose short burn-in (health --burn)
// found a fault: the failing verdicts (under strict, the unknown ones too),
// worst first.
func BurnLine(rs []result.Result, strict bool) string {
	return lead(prefixFail+"burn-in: ", pick(rs, func(r result.Result) bool { return failing(r, strict) }))
}

// failing is whether r makes the node not ready (checks.Judge's rule).
func failing(r result.Result, strict bool) bool {
	return r.Status == result.Fail || strict && (r.Status == result.Unknown || r.Status == result.Error)
}

// degrading is whether r makes the node degraded (checks.Judge's rule).
func degrading(r result.Result, strict bool) bool {
	return r.Status == result.Warn || !strict && (r.Status == result.Unknown || r.Status == result.Error)
}

// pick returns the results that match, worst first.
func pick(rs []result.Result, match func(result.Result) bool) []result.Result {
	var out []result.Result
	for _, r := range rs {
		if match(r) {
			out = append(out, r)
		}
	}
	result.Sort(out)
	return out
}

// lead writes prefix, the first result and how many more, within
// MaxReason: the list of the others' checks is shortened first, then the
// first result's message.
func lead(prefix string, rs []result.Result) string {
	if len(rs) == 0 { // a verdict with no result behind it: say so rather than invent one
		return Reason(prefix + "no result says why")
	}
	first := rs[0]
	head := first.ID
	if first.Subject != "" && first.Subject != "node" {
		head += " " + first.Subject
	}
	head = prefix + head + ": "
	var ids []string
	for _, r := range rs[1:] {
		if !slices.Contains(ids, r.ID) {
			ids = append(ids, r.ID)
		}
	}
	tail := ""
	if n := len(rs) - 1; n > 0 {
		tail = fmt.Sprintf("; +%d more", n)
		// Keep at least 64 bytes for the message.
		budget := MaxReason - len(clean(head)) - len(tail) - 64
		list := ""
		for i, id := range ids {
			next := list
			if i > 0 {
				next += ", "
			}
			next += clean(id)
			if len(next)+len(" (, ...)") > budget {
				list += ", ..."
				if i == 0 {
					list = "..."
				}
				break
			}
			list = next
		}
		tail += " (" + list + ")"
	}
	msg := first.Message
	if msg == "" {
		msg = first.Reason
	}
	room := MaxReason - len(clean(head)) - len(tail)
	return clean(head) + truncate(clean(msg), room) + tail
}

// ErrorLine is the health line when gdrcheck itself could not run.
func ErrorLine(err error) string { return Reason(prefixError + err.Error()) }

// Reason makes s a reason fit for Slurm and a log: one printable line
// (printable.Line), without quotation marks, at most MaxReason bytes.
func Reason(s string) string { return truncate(clean(s), MaxReason) }

// unquote drops the characters that would end or start a quoted string in
// a shell line a person pastes.
var unquote = strings.NewReplacer(`"`, "", "'", "", "`", "")

// clean is printable.Line without quotation marks.
func clean(s string) string { return unquote.Replace(printable.Line(s)) }

// truncate shortens s to at most n bytes, on a character boundary, ending
// in "..." when it cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 3 {
		return ""
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ;,") + "..."
}

// ValidHost says why name is not a host name Slurm and a shell can take
// as they are: RFC 1123 (letters, digits and hyphens in dot-separated
// labels of 1 to 63, not starting or ending with a hyphen, 253 in all).
// Slurm host lists (node[01-04]) and anything a shell would read are
// refused.
func ValidHost(name string) error {
	if name == "" {
		return errors.New("empty host name")
	}
	if len(name) > 253 {
		return fmt.Errorf("host name of %d bytes (at most 253)", len(name))
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("host name %s: a label is empty or longer than 63", printable.Line(name))
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("host name %s: a label starts or ends with a hyphen", printable.Line(name))
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("host name %s: %q is not a letter, digit, hyphen or dot", printable.Line(name), c)
			}
		}
	}
	return nil
}

// ValidNodeName says why name is not a Slurm node name gdrcheck gives
// scontrol (NodeName=N, one argument, no shell): letters, digits, '-',
// '_' and '.', 1 to 255 bytes, not starting with '-' or '.'. Slurm allows
// node names that are not host names (gpu_07); a host list (gpu[01-02]),
// white space, '=', a newline and shell syntax are refused.
func ValidNodeName(name string) error {
	switch {
	case name == "":
		return errors.New("empty node name")
	case len(name) > 255:
		return fmt.Errorf("node name of %d bytes (at most 255)", len(name))
	case name[0] == '-' || name[0] == '.':
		return fmt.Errorf("node name %s starts with %q", printable.Line(name), name[0])
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("node name %s: %q is not a letter, digit, '-', '_' or '.'", printable.Line(name), c)
		}
	}
	return nil
}

// Scontrol is the program DrainArgv names when none is given.
const Scontrol = "scontrol"

// DrainArgv is the command that drains node with reason (Reason is applied
// to it): scontrol update NodeName=N State=DRAIN Reason=R, as arguments,
// no shell between (program "" is Scontrol). A node that is not a valid
// node name (ValidNodeName) is refused.
func DrainArgv(program, node, reason string) ([]string, error) {
	if err := ValidNodeName(node); err != nil {
		return nil, err
	}
	if program == "" {
		program = Scontrol
	}
	return []string{program, "update", "NodeName=" + node, "State=DRAIN", "Reason=" + Reason(reason)}, nil
}

// ShellLine is argv as one line for a POSIX shell: every argument that is
// not made only of safe characters is single-quoted (a single quote
// inside it closes the quoting, is escaped and reopens it), so the shell
// passes each as it is.
func ShellLine(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if i == 0 && strings.Contains(a, "=") { // a command word with = would read as an assignment
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
			continue
		}
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !shellSafe(r) }) < 0 {
		return s
	}
	if k, v, ok := strings.Cut(s, "="); ok && k != "" && strings.IndexFunc(k, func(r rune) bool { return !shellSafe(r) }) < 0 {
		// k holds no "=" (Cut stops at the first), so only v needs quoting.
		// Reason='...' reads as scontrol's own examples do.
		return k + "=" + "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellSafe(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:,+@%=", r)
}

// FleetDrain is one node of a fleet's drain list as its drain command.
type FleetDrain struct {
	Host string
	// Reason is the worst of the node's reasons, with how many more.
	Reason string
	// Argv is the command; nil when the host was refused (Err says why).
	Argv []string
	Err  error
}

// FleetDrains are the drain commands of a fleet's drain list (each node
// with its reasons, worst first), in its order.
func FleetDrains(program string, ds []fleet.Drain) []FleetDrain {
	out := make([]FleetDrain, len(ds))
	for i, d := range ds {
		x := FleetDrain{Host: d.Host, Reason: FleetReason(d.Reasons)}
		x.Argv, x.Err = DrainArgv(program, d.Host, x.Reason)
		out[i] = x
	}
	return out
}

// FleetReason is a drain reason from a node's reasons, worst first:
// "gdrcheck: <worst>; +N more", at most MaxReason bytes.
func FleetReason(reasons []string) string {
	const head = "gdrcheck: "
	if len(reasons) == 0 {
		return head + "no reason given"
	}
	tail := ""
	if n := len(reasons) - 1; n > 0 {
		tail = fmt.Sprintf("; +%d more", n)
	}
	return head + truncate(clean(reasons[0]), MaxReason-len(head)-len(tail)) + tail
}
