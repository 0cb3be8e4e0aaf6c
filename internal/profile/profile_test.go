package profile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/memtest"
)

func TestParse(t *testing.T) {
	good := "gpus:\n  count: 8\n  model: H100\n  nvlinks: 18\nnics:\n  count: 8\n  rate_gbps: 400\n  link_layer: InfiniBand\nversions:\n  driver: \"570.*\"\ngdr: {required: true, mode: dmabuf}\nmemlock_kb: unlimited\n"
	e, err := Parse("site.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if e.GPUs.Count != 8 || e.NICs.RateGbps != 400 || !VersionMatches("570.133.20", e.Versions.Driver) || VersionMatches("550.1", e.Versions.Driver) {
		t.Errorf("parsed %+v", e)
	}
	if _, err := Parse("site.json", []byte(`{"gpus": {"count": 4}}`)); err != nil {
		t.Errorf("JSON profile: %v", err)
	}
	for _, c := range []struct{ in, want string }{
		{"gpus:\n  count: 8\n  modle: H100\n", "site.yaml: line 3: field modle not found (gpus)"},
		{"nics:\n  rate_gbps: fast\n", "site.yaml: line 2: cannot unmarshal !!str `fast`"},
		{"nics: {link_layer: Ethernett}\n", "site.yaml: line 1: nics.link_layer: \"Ethernett\""},
		{"gdr: {mode: magic}\n", "site.yaml: line 1: gdr.mode"},
		{"memlock_kb: lots\n", "site.yaml: line 1: memlock_kb"},
		{"layout:\n  - gpus: [0000:18:00.0]\n    nics: [mlx5_0]\n  - gpus: [0000:3a:00.0, not-an-address]\n", "site.yaml: line 4: layout[1].gpus[1]: \"not-an-address\" is not a PCI address"},
		{"layout:\n  - gpus: [0000:18:00.0]\n  - nics: [mlx5_1]\n    gpus:\n      - 18:00.0\n", "site.yaml: line 5: layout[1].gpus[0]: 18:00.0 is in layout[0] already"},
		{"layout:\n  - {}\n", "site.yaml: line 2: layout[0]: names no GPU and no NIC"},
		{"layout:\n  - nics: [mlx5_0]\n    numa: -1\n", "site.yaml: line 3: layout[0].numa: must not be negative"},
		{"gpus:\n  count: 8\n  pcie_gen: 9\n", "site.yaml: line 3: gpus.pcie_gen: must be a PCIe generation"},
		{"nics:\n  count: -1\n", "site.yaml: line 2: nics.count: must not be negative"},
		{"nics:\n  rate_gbps: 400\n  mtu: -9000\n", "site.yaml: line 3: nics.mtu"},
		{"gpus: {count: 8}\nfoo: 1\n", "site.yaml: line 2: field foo not found"},
		{`{"gdr": {"mode": "magic"}}`, "site.yaml: line 1: gdr.mode"},
		{"", "empty site profile"},
		{"gpus: [1, 2\n", "site.yaml: line"},
	} {
		_, err := Parse("site.yaml", []byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want %q", c.in, err, c.want)
		}
	}
}

// An alias bomb (each level doubling the one before, a billion nodes at
// the end) is refused without being expanded: the profile's fields are
// scalars in structs of known names, so the decoder never descends into
// an alias's sequence.
func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x]\n")
	for i := 1; i < 30; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d]\n", i, i, i-1, i-1)
	}
	b.WriteString("gpus: {model: *a29}\n")
	var err error
	n := memtest.Allocated(func() { _, err = Parse("bomb.yaml", []byte(b.String())) })
	if err == nil || !strings.Contains(err.Error(), "cannot unmarshal !!seq") || n > 1<<20 {
		t.Errorf("alias bomb: %v, %d bytes allocated", err, n)
	}
}

// The review's D14: --expect /dev/zero grew by 0.5 GB a second until the
// process was killed. A device is refused before any read, and anything
// else is read to at most MaxBytes.
func TestLoadBounded(t *testing.T) {
	var err error
	n := memtest.Allocated(func() { _, err = Load("/dev/zero") })
	if err == nil || !strings.Contains(err.Error(), "not a file") || n > 4*MaxBytes {
		t.Errorf("/dev/zero: %v, %d bytes allocated", err, n)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, []byte("gpus: {count: 8}\n"+strings.Repeat("# padding\n", MaxBytes/10+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil {
		t.Error("a profile over MaxBytes accepted")
	}
	ok := filepath.Join(t.TempDir(), "site.yaml")
	if err := os.WriteFile(ok, []byte("gpus: {count: 8}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if e, err := Load(ok); err != nil || e.GPUs.Count != 8 {
		t.Errorf("small profile: %v", err)
	}
}
