package topology

// ComputePairing computes the pairing again, for the benchmark (Pairing
// returns the one Discover computed).
func ComputePairing(h *Host) *Pairing { return h.pair() }
