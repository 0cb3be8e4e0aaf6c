package checks

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// The node verdicts: one word a person reads at a glance.
const (
	Ready    = "READY"
	Degraded = "DEGRADED"
	NotReady = "NOT READY"
)

// Verdict is the node's one answer, from its check results. The rule
// (Judge) is the only place that turns statuses into it.
type Verdict struct {
	Status string    `json:"status"` // READY, DEGRADED or NOT READY
	Host   string    `json:"host"`   // the judged host (from its snapshot when one was read)
	Time   time.Time `json:"time"`   // when the node was read (a snapshot's capture time)
	Strict bool      `json:"strict"` // unknown and error results counted as failures
	// Failing are the IDs of the checks that made the node not ready,
	// Degrading those that warned (and, without Strict, could not look or
	// broke), Unknown those that could not look or broke; each sorted, once.
	Failing   []string `json:"failing"`
	Degrading []string `json:"degrading,omitempty"`
	Unknown   []string `json:"unknown"`
	// NeedsRoot are the unknown results ("id subject") that a run as root
	// would read.
	NeedsRoot []string `json:"needs_root,omitempty"`
	// Proof is the weakest proof level of the segments the node's sign-off
	// requires (SignOff); "" when the verdict judged no data paths (check).
	Proof result.Proof `json:"proof,omitempty"`
	// NotMeasured names the required segments that were not measured
	// ("GPU0 fabric InfiniBand (not-exercised)"), in order.
	NotMeasured []string `json:"not_measured,omitempty"`
}

// SignOff records how the required segments of the node's data paths were
// established: proof is the weakest of their levels, notMeasured those not
// measured. Strict is the sign-off mode: a node whose required segments
// are not all measured is NOT READY, whatever its checks say.
func (v *Verdict) SignOff(proof result.Proof, notMeasured []string) {
	v.Proof, v.NotMeasured = proof, notMeasured
	if v.Strict && proof != result.ProofMeasured {
		v.Status = NotReady
	}
}

// Judge is the verdict rule: a fail makes the node NOT READY; a warn makes
// it DEGRADED; an unknown or error result (a check that could not look, or
// broke) makes it DEGRADED by default, because the node may be fine and a
// person must look, and NOT READY when strict, because a sign-off must not
// rest on what nobody saw. Pass and skip are ready.
func Judge(rs []result.Result, host string, at time.Time, strict bool) Verdict {
	v := Verdict{Host: host, Time: at, Strict: strict, Failing: []string{}, Unknown: []string{}}
	add := func(list *[]string, id string) {
		if !slices.Contains(*list, id) {
			*list = append(*list, id)
		}
	}
	for _, r := range rs {
		switch r.Status {
		case result.Fail:
			add(&v.Failing, r.ID)
		case result.Warn:
			add(&v.Degrading, r.ID)
		case result.Unknown, result.Error:
			add(&v.Unknown, r.ID)
			if strict {
				add(&v.Failing, r.ID)
			} else {
				add(&v.Degrading, r.ID)
			}
			if r.Status == result.Unknown && needsRoot(r) {
				v.NeedsRoot = append(v.NeedsRoot, r.ID+" "+r.Subject)
			}
		}
	}
	slices.Sort(v.Failing)
	slices.Sort(v.Degrading)
	slices.Sort(v.Unknown)
	switch {
	case len(v.Failing) > 0:
		v.Status = NotReady
	case len(v.Degrading) > 0:
		v.Status = Degraded
	default:
		v.Status = Ready
	}
	return v
}

// needsRoot reports whether a result could not look for want of root: a
// NeedsRoot reason, or a read the kernel refused with a remedy that says to
// run as root (not one a snapshot just lacked).
func needsRoot(r result.Result) bool {
	if r.Reason == "NeedsRoot" {
		return true
	}
	msg := strings.ToLower(r.Message)
	return strings.Contains(r.Remedy, "as root") && (strings.Contains(msg, "permission denied") || strings.Contains(msg, "not permitted"))
}

// NotReady reports whether the verdict should make the command exit 1.
func (v Verdict) NotReady() bool { return v.Status == NotReady }

// Line is the verdict on one line: "NOT READY  node1  2026-12-03T16:00:00Z
// failing: gpu.present, pcie.acs".
func (v Verdict) Line() string {
	host := v.Host
	if host == "" {
		host = "(host unnamed)"
	}
	s := fmt.Sprintf("%s  %s  %s", v.Word(), host, v.Time.UTC().Format(time.RFC3339))
	if len(v.Failing) > 0 {
		s += "  failing: " + strings.Join(v.Failing, ", ")
	}
	if len(v.Degrading) > 0 {
		s += "  degraded by: " + strings.Join(v.Degrading, ", ")
	}
	if v.Strict && len(v.NotMeasured) > 0 {
		s += "  not measured: " + listShort(v.NotMeasured, 4)
	}
	if v.Strict {
		s += "  (strict)"
	}
	return s
}

// Word is the verdict with its proof level when one was judged: "READY
// (checked, not measured)", "NOT READY (measured)", or the bare status.
func (v Verdict) Word() string {
	if v.Proof == "" {
		return v.Status
	}
	return v.Status + " (" + v.Proof.Phrase() + ")"
}

// listShort joins the first n of xs and says how many more there are.
func listShort(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return fmt.Sprintf("%s (+%d more)", strings.Join(xs[:n], ", "), len(xs)-n)
}

// RootHint says which results a run without root could not read and how
// to read them; "" when none.
func (v Verdict) RootHint() string {
	if len(v.NeedsRoot) == 0 {
		return ""
	}
	return fmt.Sprintf("%d result(s) unknown because PCIe config space or the kernel log needs root (%s): run as root or with sudo", len(v.NeedsRoot), strings.Join(v.NeedsRoot, ", "))
}
