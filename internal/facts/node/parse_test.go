package node

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseXids(t *testing.T) {
	b := []byte("2026-12-01T11:30:00,123456+00:00 NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n[  12.3] NVRM: Xid (PCI:0000:3A:00): 13, pid=1, name=x\nnoise\n")
	x := ParseXids(b)
	if len(x) != 2 || x[0].Code != 79 || x[0].Bus != "0000:18:00" || x[0].When.IsZero() || x[1].Bus != "0000:3a:00" || !x[1].When.IsZero() {
		t.Errorf("parsed %+v", x)
	}
	// A line longer than any scanner buffer must not hide what follows.
	long := []byte(strings.Repeat("x", 2<<20) + "\n2026-12-01T11:30:00,123456+00:00 NVRM: Xid (PCI:0000:18:00): 48, pid=1, name=x\n")
	if x := ParseXids(long); len(x) != 1 || x[0].Code != 48 {
		t.Errorf("Xid after an overlong line: parsed %+v", x)
	}
}

func TestLibrariesFileRoundTrip(t *testing.T) {
	in := &Libraries{
		CUDARuntime: Library{Loaded: true, Version: "12.8", Path: "/usr/lib/libcudart.so.12"},
		NCCL:        Library{Path: "/usr/lib/libnccl.so.2", Error: "ncclGetVersion failed"},
	}
	b, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseLibraries(b)
	if err != nil || !reflect.DeepEqual(out, in) {
		t.Errorf("round trip: %+v %v\n%s", out, err, b)
	}
}
