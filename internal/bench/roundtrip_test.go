package bench_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/analyze/nccltests"
	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/collective"
)

// TestTableRoundTrip: what bench prints in nccl-tests' layout, gdrcheck's
// own nccl-tests reader reads back into the same rows: sizes, counts,
// types, reductions, roots and #wrong exactly, times and bandwidths to the
// precision of their cells; and the footer's out-of-bounds count and
// average bus bandwidth. Checked and unchecked (#wrong N/A) runs, and a
// run with wrong elements.
func TestTableRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		check   int
		corrupt bool
	}{{"checked", 1, false}, {"unchecked", 0, false}, {"wrong", 1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			rt, lib := fakes(t, "4")
			cfg := config(t, allColls, "float", "sum", []int{0, 1, 2, 3})
			cfg.Check, cfg.CorruptAfterCheck = tc.check, tc.corrupt
			res, err := bench.RunNCCL(context.Background(), rt, lib, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				var b strings.Builder
				b.WriteString("# Collective test starting: " + string(r.Collective) + "_perf\n")
				if err := r.WriteTable(&b); err != nil {
					t.Fatal(err)
				}
				rep, _, err := nccltests.Analyze(string(r.Collective)+".txt", strings.NewReader(b.String()))
				if err != nil {
					t.Fatalf("%s: %v", r.Collective, err)
				}
				if len(rep.Tests) != 1 {
					t.Fatalf("%s: %d tests read\n%s", r.Collective, len(rep.Tests), b.String())
				}
				got := rep.Tests[0]
				if got.Collective != string(r.Collective) || len(got.Rows) != len(r.Rows) || len(got.Rows) == 0 {
					t.Fatalf("%s: read %q with %d rows, want %d\n%s", r.Collective, got.Collective, len(got.Rows), len(r.Rows), b.String())
				}
				for i, want := range r.Rows {
					sameRow(t, string(r.Collective), got.Rows[i], want)
				}
				if got.OutOfBounds == nil || *got.OutOfBounds != r.Wrong || (r.Wrong > 0) != tc.corrupt {
					t.Errorf("%s: out of bounds %v, want %d", r.Collective, got.OutOfBounds, r.Wrong)
				}
				if got.AvgFrom != "printed" || math.Abs(got.AvgBusBW-r.AvgBusBW) > 1e-5*r.AvgBusBW {
					t.Errorf("%s: avg busbw %v (%s), want %v", r.Collective, got.AvgBusBW, got.AvgFrom, r.AvgBusBW)
				}
			}
		})
	}
}

func sameRow(t *testing.T, coll string, got, want collective.Row) {
	t.Helper()
	line := bench.RowLine(want)
	if got.Bytes != want.Bytes || got.Count != want.Count || got.Type != want.Type || got.RedOp != want.RedOp ||
		got.Root == nil || want.Root == nil || *got.Root != *want.Root || got.Line == 0 {
		t.Errorf("%s: read %+v, want %+v\n%s", coll, got, want, line)
	}
	cells := strings.Fields(line)[5:]
	for k, h := range []struct{ got, want *collective.Measure }{{got.OutOfPlace, want.OutOfPlace}, {got.InPlace, want.InPlace}} {
		c := cells[4*k : 4*k+4]
		if h.got == nil || h.want == nil {
			t.Errorf("%s %d: half %d read as %v, written as %v", coll, want.Bytes, k, h.got, h.want)
			continue
		}
		for j, v := range [][2]float64{{h.got.TimeUS, h.want.TimeUS}, {h.got.AlgBW, h.want.AlgBW}, {h.got.BusBW, h.want.BusBW}} {
			if math.Abs(v[0]-v[1]) > cellPrecision(c[j]) {
				t.Errorf("%s %d: half %d cell %q read as %v, measured %v", coll, want.Bytes, k, c[j], v[0], v[1])
			}
		}
		if (h.got.Wrong == nil) != (h.want.Wrong == nil) || h.got.Wrong != nil && *h.got.Wrong != *h.want.Wrong {
			t.Errorf("%s %d: half %d #wrong read as %v, measured %v", coll, want.Bytes, k, h.got.Wrong, h.want.Wrong)
		}
	}
}

// cellPrecision is half a unit of a printed cell's last digit: 0.005 for
// "12.34", 0.5 for "1234", 5e+05 for "2e+06".
func cellPrecision(cell string) float64 {
	mant, exp, hasExp := strings.Cut(cell, "e")
	e := 0
	if hasExp {
		e, _ = strconv.Atoi(exp)
	}
	if _, frac, ok := strings.Cut(mant, "."); ok {
		e -= len(frac)
	}
	return 0.5 * math.Pow(10, float64(e)) * (1 + 1e-9)
}
