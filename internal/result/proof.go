package result

import "strings"

// Proof is how a segment of a data path (GPU memory, the PCIe path to its
// NIC, the registration of GPU memory with the NIC, the NIC's port, the
// fabric, a GPU-to-GPU link) was established. It is the one vocabulary of
// the sign-off: the dossier's hops, the node verdict and every output use
// these words.
type Proof string

// Proof levels, from the weakest. A segment is only as proven as its best
// passing evidence, and failed whatever else it has.
const (
	// ProofFailed: a result or a measurement it cites failed.
	ProofFailed Proof = "failed"
	// ProofNotExercised: nothing judged it (no evidence, or only skips,
	// unknowns and errors).
	ProofNotExercised Proof = "not-exercised"
	// ProofChecked: its configuration was read and judged (a check passed
	// or warned), but no traffic crossed it.
	ProofChecked Proof = "checked"
	// ProofMeasured: traffic crossed it, was validated and judged (a
	// measurement, or NCCL's own log of a run, passed or warned).
	ProofMeasured Proof = "measured"
)

// Rank orders the proof levels, weakest (failed) first; -1 for a word
// that is none of them.
func (p Proof) Rank() int {
	switch p {
	case ProofFailed:
		return 0
	case ProofNotExercised:
		return 1
	case ProofChecked:
		return 2
	case ProofMeasured:
		return 3
	}
	return -1
}

// Weakest is the weakest of ps; ProofNotExercised when there are none
// (nothing proven).
func Weakest(ps ...Proof) Proof {
	if len(ps) == 0 {
		return ProofNotExercised
	}
	w := ps[0]
	for _, p := range ps[1:] {
		if p.Rank() < w.Rank() {
			w = p
		}
	}
	return w
}

// Phrase is the proof level as a verdict says it, in parentheses after the
// verdict word: "measured", "checked, not measured", "not exercised",
// "failed".
func (p Proof) Phrase() string {
	switch p {
	case ProofChecked:
		return "checked, not measured"
	case ProofNotExercised:
		return "not exercised"
	}
	return strings.ReplaceAll(string(p), "-", " ")
}
