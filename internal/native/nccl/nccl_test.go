package nccl_test

import (
	"strings"
	"testing"

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
