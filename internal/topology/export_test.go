package topology

// Repair computes the pairing again, for the benchmark (Pairing returns the
// one Discover computed).
func Repair(h *Host) *Pairing { return h.pair() }
