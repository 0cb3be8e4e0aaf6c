// Package memtest measures what code allocates, for tests that hold a
// parser or a whole run to a memory bound. Bytes allocated (not wall time,
// not a sampled heap) are deterministic for a given input, and bound the
// peak heap from above.
package memtest

import "runtime"

// Allocated is the number of bytes f allocates on the heap (by every
// goroutine while it runs: run it alone).
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
