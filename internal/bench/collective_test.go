package bench

import (
	"math"
	"strings"
	"testing"
)

// TestLayoutsAndBandwidth pins nccl-tests' byte accounting and busbw
// factors on hand-computed cases (8 ranks, float, 1 GiB requested, 1 ms).
func TestLayoutsAndBandwidth(t *testing.T) {
	const size, elt, n, sec = 1 << 30, 4, 8, 1e-3
	cases := []struct {
		coll                    string
		count, send, recv, sOff uint64
		rOff, bytes             uint64
		algbw, busbw            float64
	}{
		// all_reduce: count = size/4; algbw = 1 GiB / 1 ms; busbw x 2*7/8
		{"all_reduce", 1 << 28, 1 << 28, 1 << 28, 0, 0, 1 << 30, 1073.741824, 1073.741824 * 14 / 8},
		// all_gather: per rank 1/8, aligned to 16 bytes; algbw counts all ranks' data
		{"all_gather", 1 << 25, 1 << 25, 1 << 28, 1 << 25 * 4, 0, 1 << 30, 1073.741824, 1073.741824 * 7 / 8},
		{"reduce_scatter", 1 << 25, 1 << 28, 1 << 25, 0, 1 << 25 * 4, 1 << 30, 1073.741824, 1073.741824 * 7 / 8},
		{"broadcast", 1 << 28, 1 << 28, 1 << 28, 0, 0, 1 << 30, 1073.741824, 1073.741824},
		{"reduce", 1 << 28, 1 << 28, 1 << 28, 0, 0, 1 << 30, 1073.741824, 1073.741824},
		{"alltoall", 1 << 25, 1 << 28, 1 << 28, 0, 0, 1 << 30, 1073.741824, 1073.741824 * 7 / 8},
		{"sendrecv", 1 << 28, 1 << 28, 1 << 28, 0, 0, 1 << 30, 1073.741824, 1073.741824},
	}
	for _, c := range cases {
		col, err := CollectiveByName(c.coll)
		if err != nil {
			t.Fatal(err)
		}
		l := col.LayoutFor(size, elt, n)
		if l.Count != c.count || l.SendCount != c.send || l.RecvCount != c.recv || l.SendInplaceOff != c.sOff || l.RecvInplaceOff != c.rOff || l.Bytes != c.bytes {
			t.Errorf("%s layout %+v", c.coll, l)
		}
		a, b := col.Bandwidths(l.Count, elt, sec, n)
		if math.Abs(a-c.algbw) > 1e-6 || math.Abs(b-c.busbw) > 1e-6 {
			t.Errorf("%s: algbw %v busbw %v, want %v %v", c.coll, a, b, c.algbw, c.busbw)
		}
	}
	// 16-byte alignment of per-rank counts: 1000 halves over 3 ranks -> 333 -> 328
	ag, _ := CollectiveByName("allgather")
	if l := ag.LayoutFor(2000, 2, 3); l.Count != 328 || l.Bytes != 328*3*2 {
		t.Errorf("aligned all_gather layout %+v", l)
	}
}

func TestSizesAndParsing(t *testing.T) {
	if got := Sizes(8, 64, 2, 0); len(got) != 4 || got[3] != 64 {
		t.Errorf("Sizes x2 = %v", got)
	}
	if got := Sizes(100, 400, 1, 100); len(got) != 4 || got[3] != 400 {
		t.Errorf("Sizes +100 = %v", got)
	}
	for in, want := range map[string]uint64{"8": 8, "64K": 64 << 10, "128M": 128 << 20, "8G": 8 << 30, "1T": 1 << 40} {
		if v, err := ParseSize(in); err != nil || v != want {
			t.Errorf("ParseSize(%q) = %d, %v", in, v, err)
		}
	}
	for _, bad := range []string{"", "lots", "-1", "8X"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	if _, err := CollectiveByName("gossip"); err == nil || !strings.Contains(err.Error(), "all_reduce") {
		t.Errorf("unknown collective: %v", err)
	}
}

// TestRowLine: the row layout is nccl-tests' own (same widths, N/A).
func TestRowLine(t *testing.T) {
	r := Row{Bytes: 1073741824, Count: 268435456, Type: "float", RedOp: "sum", Root: -1,
		OutOfPlace: Measure{TimeUS: 508.32, AlgBW: 2112.3, BusBW: 0, Checked: true},
		InPlace:    Measure{TimeUS: 0.70, AlgBW: 1.5e6, BusBW: 0, Checked: false}}
	want := "  1073741824     268435456     float     sum      -1   508.32  2112.3    0.00       0     0.70   2e+06    0.00    N/A"
	if got := r.Line(); got != want {
		t.Errorf("line\n got %q\nwant %q", got, want)
	}
}

// TestPatternExactness: for every type and reduction, the expected
// reduction is what any order of exact arithmetic gives, and values are
// never zero or the poison pattern.
func TestPatternExactness(t *testing.T) {
	for _, d := range DTypes() {
		for _, op := range RedOps() {
			for _, n := range []int{1, 2, 8, 64} {
				p := newPattern(d, op, n, 7)
				poison := make([]byte, d.Size)
				for i := range poison {
					poison[i] = poisonByte
				}
				for i := uint64(0); i < 64; i++ {
					for r := 0; r < n; r++ {
						v := p.value(i, r)
						if decode(d, v) == 0 || bytesEqual(v, poison) {
							t.Fatalf("%s %s n=%d: value %v at %d/%d", d.Name, op.Name, n, decode(d, v), i, r)
						}
					}
					if w, _ := p.reduced(i); bytesEqual(w, poison) {
						t.Fatalf("%s %s: expected value equals the poison", d.Name, op.Name)
					}
				}
			}
		}
	}
}
