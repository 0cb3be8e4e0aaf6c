package discover_test

import (
	"context"
	"testing"

	"github.com/NVIDIA/go-nvlib/pkg/pciids"

	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// BenchmarkDiscover8GPU10NIC: discovery of an HGX H200 node (8 GPUs, 10 NICs,
// 4 NVSwitches, ~70 PCI functions) from a materialised snapshot, driver
// facts included. The goal is under 50 ms (docs/performance.md). The
// fixture is written to disk, so the reads are real system calls.
func BenchmarkDiscover8GPU10NIC(b *testing.B) {
	root := machine.NewRoot(fakehost.Dir(b, hostsDir+"/hgx-h200-8gpu-10nic.host"))
	// with-pci-names reads the database through the root every time; its
	// parse is kept per process and text since 6659cde, so past the first
	// iteration this is discovery with the names already parsed (one
	// command still parses once: BenchmarkLoadPCINames/parse).
	b.Run("with-pci-names", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := discover.Discover(context.Background(), discover.WithRoot(root)); err != nil {
				b.Fatal(err)
			}
		}
	})
	db := pciids.NewDB()
	b.Run("shared-pci-db", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := discover.Discover(context.Background(), discover.WithRoot(root), discover.WithPCIDB(db)); err != nil {
				b.Fatal(err)
			}
		}
	})
	h, err := discover.Discover(context.Background(), discover.WithRoot(root), discover.WithPCIDB(db))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("matrix-and-pairing", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			h.BuildMatrix()
			h.Finish()
		}
	})
}
