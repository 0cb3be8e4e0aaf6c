package bench

import (
	"math"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collective"
)

func rankRows(rank int, times []float64, wrong int64) RankResult {
	var rows []collective.Row
	for i, t := range times {
		b := uint64(1024) << i
		rows = append(rows, collective.Row{Bytes: b, Count: b / 4, Type: "float",
			OutOfPlace: &collective.Measure{TimeUS: t, Wrong: new(wrong)}, InPlace: &collective.Measure{TimeUS: 2 * t}})
	}
	return RankResult{Rank: rank, Measurements: []NCCLResult{{Collective: collective.AllReduce, Ranks: 2, Rows: rows}}}
}

func TestCombineRanks(t *testing.T) {
	f, _ := DTypeByName("float")
	cases := []struct {
		name      string
		ranks     []RankResult
		wantTimes []float64 // out-of-place, per row
		wantWrong int64
		wantErr   string
	}{
		{name: "mean of the ranks' times", ranks: []RankResult{rankRows(0, []float64{10, 20}, 0), rankRows(1, []float64{30, 40}, 0)},
			wantTimes: []float64{20, 30}},
		{name: "wrong summed", ranks: []RankResult{rankRows(0, []float64{10}, 1), rankRows(1, []float64{10}, 2)},
			wantTimes: []float64{10}, wantWrong: 3},
		{name: "a rank short of rows is left out of the rows it lacks", ranks: []RankResult{rankRows(0, []float64{10, 20}, 0), rankRows(1, []float64{30}, 0)},
			wantTimes: []float64{20, 20}},
		{name: "a rank's error is the collective's", ranks: []RankResult{rankRows(0, []float64{10}, 0),
			func() RankResult { r := rankRows(1, []float64{10}, 0); r.Measurements[0].Error = "boom"; return r }()},
			wantTimes: []float64{10}, wantErr: "rank 1: boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CombineRanks(c.ranks, f)
			if len(got) != 1 || len(got[0].Rows) != len(c.wantTimes) {
				t.Fatalf("got %+v", got)
			}
			for i, w := range c.wantTimes {
				m := got[0].Rows[i].OutOfPlace
				if math.Abs(m.TimeUS-w) > 1e-9 {
					t.Errorf("row %d: time %g, want %g", i, m.TimeUS, w)
				}
				alg, bus := collective.AllReduce.Bandwidths(got[0].Rows[i].Count, 4, w/1e6, 2)
				if math.Abs(m.AlgBW-alg) > 1e-9 || math.Abs(m.BusBW-bus) > 1e-9 {
					t.Errorf("row %d: bandwidths %g %g, want %g %g", i, m.AlgBW, m.BusBW, alg, bus)
				}
				if in := got[0].Rows[i].InPlace; math.Abs(in.TimeUS-2*w) > 1e-9 || in.Wrong != nil {
					t.Errorf("row %d in-place: %+v", i, in)
				}
			}
			if got[0].Wrong != c.wantWrong || got[0].Error != c.wantErr {
				t.Errorf("wrong %d error %q", got[0].Wrong, got[0].Error)
			}
		})
	}
	if CombineRanks(nil, f) != nil {
		t.Error("no rank: want nil")
	}
}

// TestCombineRanksOfProcesses: where a process drives several GPUs, its
// one measurement is on its first rank's row: the time is the mean over
// the processes, #wrong counted once per process, the bandwidths those of
// every rank of the job.
func TestCombineRanksOfProcesses(t *testing.T) {
	f, _ := DTypeByName("float")
	p0, p1 := 0, 1
	a, b := rankRows(0, []float64{10}, 1), rankRows(2, []float64{30}, 2)
	a.Measurements[0].Ranks, b.Measurements[0].Ranks = 4, 4
	ranks := []RankResult{a, {Rank: 1}, b, {Rank: 3}}
	for i := range ranks {
		ranks[i].Process = &[]int{p0, p0, p1, p1}[i]
	}
	got := CombineRanks(ranks, f)
	if len(got) != 1 || got[0].Ranks != 4 || len(got[0].Rows) != 1 || got[0].Wrong != 3 {
		t.Fatalf("got %+v", got)
	}
	m := got[0].Rows[0].OutOfPlace
	alg, bus := collective.AllReduce.Bandwidths(got[0].Rows[0].Count, 4, 20e-6, 4)
	if math.Abs(m.TimeUS-20) > 1e-9 || math.Abs(m.AlgBW-alg) > 1e-9 || math.Abs(m.BusBW-bus) > 1e-9 || math.Abs(bus/alg-1.5) > 1e-9 {
		t.Errorf("measure %+v, want 20 us, %g and %g GB/s", m, alg, bus)
	}
}
