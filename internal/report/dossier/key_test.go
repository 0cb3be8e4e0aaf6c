package dossier

import "testing"

// A measurement's key names everything that makes it another measurement:
// the collective, its size and its ranks; the copy's test, devices and size.
func TestMeasurementKeys(t *testing.T) {
	colls := []struct {
		m    CollectiveMeasurement
		key  string
		unit string
		v    float64
	}{
		{CollectiveMeasurement{Collective: "all_reduce", Bytes: 64 << 20, Ranks: 8, BusBW: 300, AlgBW: 170}, "all_reduce 64M (8 ranks)", UnitBusBW, 300},
		{CollectiveMeasurement{Collective: "all_reduce", Bytes: 64 << 20, Ranks: 16, BusBW: 300, AlgBW: 160}, "all_reduce 64M (16 ranks)", UnitBusBW, 300},
		{CollectiveMeasurement{Collective: "sendrecv", Bytes: 32, Ranks: 1, AlgBW: 0.004}, "sendrecv 32B (1 rank)", UnitAlgBW, 0.004},
		{CollectiveMeasurement{Collective: "broadcast", Bytes: 3000, Ranks: 2}, "broadcast 3000B (2 ranks)", UnitBusBW, 0},
		{CollectiveMeasurement{Collective: "all_gather", Bytes: 4 << 30, Ranks: 8}, "all_gather 4G (8 ranks)", UnitBusBW, 0},
	}
	for _, c := range colls {
		if got := c.m.Key(); got != c.key {
			t.Errorf("Key() = %q, want %q", got, c.key)
		}
		if v, unit := c.m.Compared(); v != c.v || unit != c.unit {
			t.Errorf("%s: Compared() = %g %s, want %g %s", c.key, v, unit, c.v, c.unit)
		}
	}
	copies := []struct {
		m   CopyMeasurement
		key string
	}{
		{CopyMeasurement{Test: "d2d", Device: 0, Peer: -1, Bytes: 64 << 20}, "copy d2d GPU0 64M"},
		{CopyMeasurement{Test: "d2d", Device: 0, Peer: -1, Bytes: 4 << 30}, "copy d2d GPU0 4G"},
		{CopyMeasurement{Test: "p2p_bidir", Device: 3, Peer: 5, Bytes: 1 << 30}, "copy p2p_bidir GPU3-GPU5 1G"},
		{CopyMeasurement{Test: "latency", Device: 1, Peer: -1, Bytes: 8}, "copy latency GPU1 8B"},
	}
	seen := map[string]bool{}
	for _, c := range copies {
		got := c.m.Key()
		if got != c.key {
			t.Errorf("Key() = %q, want %q", got, c.key)
		}
		if seen[got] {
			t.Errorf("two copies share the key %q", got)
		}
		seen[got] = true
	}
}
