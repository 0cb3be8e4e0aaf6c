package nccl_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

func TestVersionString(t *testing.T) {
	for code, want := range map[int]string{22803: "2.28.3", 21805: "2.18.5", 2804: "2.8.4", 2708: "2.7.8"} {
		if got := nccl.VersionString(code); got != want {
			t.Errorf("VersionString(%d) = %s, want %s", code, got, want)
		}
	}
}

func TestFakeNCCL(t *testing.T) {
	t.Setenv("FAKENCCL_VERSION", "22105")
	l, err := nccl.Open(fakelib.NCCL(t))
	if err != nil {
		t.Fatal(err)
	}
	v, code, err := l.Version()
	if err != nil || v != "2.21.5" || code != 22105 {
		t.Errorf("version = %s %d %v", v, code, err)
	}
	if _, err := nccl.Open(fakelib.CUDART(t)); err == nil || !strings.Contains(err.Error(), "missing entry point ncclGetVersion") {
		t.Errorf("opening a non-NCCL library: %v", err)
	}
}

// TestCollNumbersMatchShim: every collective has a shim number; each
// GDR_<NAME> of shim.h's enum is the number CollNumber returns for the
// collective of that name; and shim.c runs every one of them.
func TestCollNumbersMatchShim(t *testing.T) {
	h, err := os.ReadFile("shim.h")
	if err != nil {
		t.Fatal(err)
	}
	c, err := os.ReadFile("shim.c")
	if err != nil {
		t.Fatal(err)
	}
	enum := regexp.MustCompile(`(?m)^\s*GDR_([A-Z][A-Z_]*)\s*=\s*(\d+),`).FindAllStringSubmatch(string(h), -1)
	if len(enum) != len(collective.All()) {
		t.Fatalf("shim.h numbers %d collectives, want %d: %v", len(enum), len(collective.All()), enum)
	}
	seen := map[collective.Collective]bool{}
	for _, e := range enum {
		coll, err := collective.Parse(strings.ToLower(e[1]))
		if err != nil {
			t.Errorf("shim.h GDR_%s: %v", e[1], err)
			continue
		}
		seen[coll] = true
		n, ok := nccl.CollNumber(coll)
		if want, _ := strconv.Atoi(e[2]); !ok || n != want {
			t.Errorf("CollNumber(%s) = %d, %v; shim.h says GDR_%s = %d", coll, n, ok, e[1], want)
		}
		if !strings.Contains(string(c), "case GDR_"+e[1]+":") {
			t.Errorf("shim.c does not run GDR_%s", e[1])
		}
	}
	for _, coll := range collective.All() {
		if _, ok := nccl.CollNumber(coll); !ok || !seen[coll] {
			t.Errorf("%s: no shim number", coll)
		}
	}
	if n, ok := nccl.CollNumber("gossip"); ok {
		t.Errorf("CollNumber(gossip) = %d", n)
	}
}
