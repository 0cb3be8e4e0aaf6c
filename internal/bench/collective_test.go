package bench

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collective"
)

func TestSizes(t *testing.T) {
	if got := Sizes(8, 64, 2, 0); len(got) != 4 || got[3] != 64 {
		t.Errorf("Sizes x2 = %v", got)
	}
	if got := Sizes(100, 400, 1, 100); len(got) != 4 || got[3] != 400 {
		t.Errorf("Sizes +100 = %v", got)
	}
}

// TestRowLine: the row layout is nccl-tests' own (same widths, N/A).
func TestRowLine(t *testing.T) {
	r := collective.Row{Bytes: 1073741824, Count: 268435456, Type: "float", RedOp: "sum", Root: new(-1),
		OutOfPlace: &collective.Measure{TimeUS: 508.32, AlgBW: 2112.3, BusBW: 0, Wrong: new(int64(0))},
		InPlace:    &collective.Measure{TimeUS: 0.70, AlgBW: 1.5e6, BusBW: 0}}
	want := "  1073741824     268435456     float     sum      -1   508.32  2112.3    0.00       0     0.70   2e+06    0.00    N/A"
	if got := RowLine(r); got != want {
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
