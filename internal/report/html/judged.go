package html

import (
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// judged indexes the results by the parts their subjects name, and by
// reference (result.Result.Ref) for the dossier's evidence lists.
type judged struct {
	all   []result.Result
	byRef map[string]result.Result
}

func newJudged(rs []result.Result) *judged {
	j := &judged{all: rs, byRef: map[string]result.Result{}}
	for _, r := range rs {
		j.byRef[r.Ref()] = r
	}
	return j
}

// tokens splits a subject into the parts it names: "p2p GPU0->GPU1" is
// p2p, GPU0, GPU1; "GPU0-mlx5_0" is GPU0, mlx5_0; "GPU3-xid" is GPU3, xid.
func tokens(subject string) []string {
	return strings.FieldsFunc(subject, func(r rune) bool {
		return r == ' ' || r == '-' || r == '>' || r == ',' || r == '/' || r == '(' || r == ')'
	})
}

// forPart are the results about one part, named by any of its keys, and
// not about a pair with another part: "GPU0", "GPU0-xid", "d2d GPU0", but
// not "GPU0-mlx5_0".
func (j *judged) forPart(keys ...string) []result.Result {
	var out []result.Result
	for _, r := range j.all {
		ts := tokens(r.Subject)
		hit, other := false, false
		for _, t := range ts {
			switch {
			case contains(keys, t):
				hit = true
			case isPartName(t):
				other = true
			}
		}
		if hit && !other {
			out = append(out, r)
		}
	}
	return out
}

// isPartName reports whether a token names a device: GPUn, an RDMA
// device (mlx5_0, ibp…), a PCI address.
func isPartName(t string) bool {
	switch {
	case strings.HasPrefix(t, "GPU") && len(t) > 3 && t[3] >= '0' && t[3] <= '9':
		return true
	case strings.HasPrefix(t, "mlx") || strings.HasPrefix(t, "ibp") || strings.HasPrefix(t, "bnxt") || strings.HasPrefix(t, "irdma"):
		return true
	case strings.Count(t, ":") >= 1 && strings.Contains(t, "."):
		return true
	}
	return false
}

// worstFor is the worst status of a part's results, skips left out; ""
// when nothing judged it.
func (j *judged) worstFor(keys ...string) result.Status {
	return worst(j.forPart(keys...))
}

// worstID is the worst status of the results whose ID starts with prefix.
func (j *judged) worstID(prefix string) result.Status {
	var rs []result.Result
	for _, r := range j.all {
		if strings.HasPrefix(r.ID, prefix) {
			rs = append(rs, r)
		}
	}
	return worst(rs)
}

// worst is the most severe status of rs, skipped results left out; ""
// when none is left (nothing judged it: never shown as passing).
func worst(rs []result.Result) result.Status {
	var w result.Status
	for _, r := range rs {
		if r.Status == result.Skip {
			continue
		}
		if w == "" || r.Status.Severity() < w.Severity() {
			w = r.Status
		}
	}
	return w
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
