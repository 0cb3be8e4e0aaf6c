package rendezvous

import (
	"os"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/waitbound"
)

// TestMain runs up to 8 parallel tests at once: this package's parallel
// tests wait on join deadlines and timeouts (0.7 CPU-s for the whole
// package); the scale tests, which use the CPU, stay serial.
func TestMain(m *testing.M) {
	waitbound.Parallel(8)
	os.Exit(m.Run())
}
