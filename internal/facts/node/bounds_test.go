package node_test

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/testutil/memtest"
)

// /proc/modules of the door's 4 MiB in two-byte lines named two million
// modules; the parser keeps MaxModules, and always the modules the checks
// ask about, wherever they are.
func TestParseModulesBounded(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < machine.DefaultMaxRead-64; i++ {
		b.WriteString(strings.Repeat("m", i%40+1))
		b.WriteString(string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26)) + string(rune('a'+i/17576%26)) + " 1 0 - Live\n")
	}
	b.WriteString("nvidia_peermem 16384 0 - Live 0x0\n" + strings.Repeat("x", 100) + " 1 0 - Live\n")
	var mods map[string]bool
	n := memtest.Allocated(func() { mods = node.ParseModules([]byte(b.String())) })
	if len(mods) != node.MaxModules+1 || !mods["nvidia_peermem"] {
		t.Errorf("%d modules kept, nvidia_peermem %v", len(mods), mods["nvidia_peermem"])
	}
	// The string of the file, and the map.
	if limit := uint64(b.Len()) + 2<<20; n > limit {
		t.Errorf("%d bytes allocated, want at most %d", n, limit)
	}
	if m := node.ParseModules([]byte("mlx5_ib\t4096 0 - Live\n")); !m["mlx5_ib"] {
		t.Errorf("a tab after the name: %v", m)
	}
}

// A line of the driver version, the limits or the kernel log is quoted to
// at most MaxLine bytes, however long it is.
func TestLinesClipped(t *testing.T) {
	pad := strings.Repeat("é", 40000)
	d := node.ParseDriver("version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.133.20 "+pad+"\n")
	x := node.ParseXids([]byte("NVRM: Xid (PCI:0000:18:00): 79, " + pad + "\n"))
	l, _ := node.ParseLimits("limits", "Max locked memory 65536 65536"+strings.Repeat(" ", 80000)+"bytes\n")
	u := node.ParseUlimit("ulimit", "max locked memory (kbytes, -l) "+strings.Repeat("9", 80000)+"\n")
	if d.Version != "570.133.20" || len(x) != 1 || x[0].Code != 79 || l.KB != 64 {
		t.Fatalf("parsed %q %+v %+v", d.Version, x, l)
	}
	for _, line := range []string{d.Line, x[0].Line, l.Line, u.Line} {
		if len(line) > node.MaxLine+32 || !strings.Contains(line, "... (") {
			t.Errorf("a line of %d bytes: %.80q", len(line), line)
		}
	}
}
