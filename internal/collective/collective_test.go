package collective

import (
	"math"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"8", 8}, {"4096", 4096}, {" 2M ", 2 << 20},
		{"1K", 1 << 10}, {"1k", 1 << 10}, {"64K", 64 << 10}, {"128M", 128 << 20}, {"8G", 8 << 30}, {"8g", 8 << 30}, {"1T", 1 << 40},
		{"4096B", 4096}, {"64MB", 64 << 20}, {"64mb", 64 << 20}, {"8GiB", 8 << 30}, {"8gib", 8 << 30}, {"1TiB", 1 << 40}, {"2KiB", 2048},
		{"1.5G", 3 << 29}, {"0.5K", 512}, {"1.0", 1}, {"007", 7},
		{"8388607T", 8388607 << 40}, {"9223372036854775807", math.MaxInt64},
	} {
		got, err := ParseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, err string }{
		{"", "empty"}, {"   ", "empty"},
		{"0", "at least 1 byte"}, {"0K", "at least 1 byte"}, {"0.0001K", "whole number"},
		{"1.5", "whole number"}, {"1.3K", "whole number"},
		{"8388608T", "too large"}, {"9223372036854775808", "too large"}, {"99999999999999999999999999G", "too large"},
		{"-1", "want a number"}, {"+8", "want a number"}, {"1e3", "want a number"}, {"1e400", "want a number"}, {"abc", "want a number"},
		{"lots", "want a number"}, {"8X", "want a number"}, {"8P", "want a number"}, {"G", "want a number"}, {"B", "want a number"},
		{"8 G", "want a number"}, {"1,024", "want a number"}, {".5K", "want a number"}, {"5.K", "want a number"}, {"1..5G", "want a number"},
		{"8iB", "needs a unit"}, {"8GG", "want a number"}, {"8BB", "want a number"}, {"NaN", "want a number"}, {"Inf", "want a number"},
	} {
		got, err := ParseSize(c.in)
		if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "size \""+c.in+"\"") {
			t.Errorf("ParseSize(%q) = %d, %v; want an error about %q quoting the input", c.in, got, err, c.err)
		}
	}
}

func TestParseSizesAndFormat(t *testing.T) {
	sz, err := ParseSizes("8,1M,,8G")
	if err != nil || len(sz) != 3 || sz[0] != 8 || sz[1] != 1<<20 || sz[2] != 8<<30 {
		t.Errorf("ParseSizes = %v, %v", sz, err)
	}
	for _, bad := range []string{"", " , ", "8,x"} {
		if got, err := ParseSizes(bad); err == nil {
			t.Errorf("ParseSizes(%q) = %v, want an error", bad, got)
		}
	}
	for b, want := range map[uint64]string{8: "8", 1024: "1K", 1536 << 20: "1536M", 8 << 30: "8G", 1000: "1000", 3 << 10: "3K", 1 << 40: "1T", 1<<40 + 1<<30: "1025G"} {
		if got := FormatSize(b); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", b, got, want)
		}
		if back, err := ParseSize(FormatSize(b)); err != nil || back != b {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", b, back, err)
		}
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]Collective{"all_reduce": AllReduce, "allreduce": AllReduce, "all_reduce_perf": AllReduce, "all-reduce": AllReduce,
		"All-Gather": AllGather, "reducescatter": ReduceScatter, "alltoall": AllToAll, "all_to_all": AllToAll, "sendrecv": SendRecv, " broadcast ": Broadcast, "REDUCE": Reduce} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "allreduce2", "gossip", "reduce_perf_perf"} {
		if got, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "all_reduce") {
			t.Errorf("Parse(%q) = %q, %v; want an error listing the collectives", bad, got, err)
		}
	}
	for _, c := range All() {
		if !c.Known() {
			t.Errorf("%s is not Known", c)
		}
		if got, err := Parse(string(c)); err != nil || got != c {
			t.Errorf("Parse(%q) = %q, %v", c, got, err)
		}
	}
	if Collective("gossip").Known() || Collective("gossip").BusFactor(8) != 0 {
		t.Error("an unknown collective has rules")
	}
}

func TestBusFactor(t *testing.T) {
	for _, tc := range []struct {
		c    Collective
		n    int
		want float64
		text string
	}{
		{AllReduce, 8, 1.75, "2(n-1)/n"}, {AllReduce, 2, 1, "2(n-1)/n"}, {AllReduce, 1, 0, "2(n-1)/n"}, {AllReduce, 64, 126.0 / 64, "2(n-1)/n"},
		{AllGather, 8, 0.875, "(n-1)/n"}, {ReduceScatter, 16, 15.0 / 16, "(n-1)/n"}, {AllToAll, 80, 79.0 / 80, "(n-1)/n"}, {AllToAll, 1, 0, "(n-1)/n"},
		{Broadcast, 8, 1, "1"}, {Reduce, 32, 1, "1"}, {SendRecv, 80, 1, "1"}, {Broadcast, 0, 0, "1"},
	} {
		if got := tc.c.BusFactor(tc.n); math.Abs(got-tc.want) > 1e-12 || tc.c.BusFactorText() != tc.text {
			t.Errorf("%s.BusFactor(%d) = %v %q, want %v %q", tc.c, tc.n, got, tc.c.BusFactorText(), tc.want, tc.text)
		}
	}
}

// TestLayoutsAndBandwidth pins nccl-tests' byte accounting and busbw
// factors on hand-computed cases (8 ranks, float, 1 GiB requested, 1 ms).
func TestLayoutsAndBandwidth(t *testing.T) {
	const size, elt, n, sec = 1 << 30, 4, 8, 1e-3
	cases := []struct {
		coll                    Collective
		count, send, recv, sOff uint64
		rOff, bytes             uint64
		algbw, busbw            float64
		reduces, rooted, check  bool
	}{
		// all_reduce: count = size/4; algbw = 1 GiB / 1 ms; busbw x 2*7/8
		{AllReduce, 1 << 28, 1 << 28, 1 << 28, 0, 0, 1 << 30, 1073.741824, 1073.741824 * 14 / 8, true, false, true},
		// all_gather: per rank 1/8, aligned to 16 bytes; algbw counts all ranks' data
		{AllGather, 1 << 25, 1 << 25, 1 << 28, 1 << 25 * 4, 0, 1 << 30, 1073.741824, 1073.741824 * 7 / 8, false, false, true},
		{ReduceScatter, 1 << 25, 1 << 28, 1 << 25, 0, 1 << 25 * 4, 1 << 30, 1073.741824, 1073.741824 * 7 / 8, true, false, true},
		{Broadcast, 1 << 28, 1 << 28, 1 << 28, 0, 0, 1 << 30, 1073.741824, 1073.741824, false, true, true},
		{Reduce, 1 << 28, 1 << 28, 1 << 28, 0, 0, 1 << 30, 1073.741824, 1073.741824, true, true, true},
		{AllToAll, 1 << 25, 1 << 28, 1 << 28, 0, 0, 1 << 30, 1073.741824, 1073.741824 * 7 / 8, false, false, false},
		{SendRecv, 1 << 28, 1 << 28, 1 << 28, 0, 0, 1 << 30, 1073.741824, 1073.741824, false, false, false},
	}
	if len(cases) != len(All()) {
		t.Fatalf("%d cases for %d collectives", len(cases), len(All()))
	}
	for _, c := range cases {
		col := c.coll
		l := col.LayoutFor(size, elt, n)
		if l.Count != c.count || l.SendCount != c.send || l.RecvCount != c.recv || l.SendInplaceOff != c.sOff || l.RecvInplaceOff != c.rOff || l.Bytes != c.bytes {
			t.Errorf("%s layout %+v", c.coll, l)
		}
		a, b := col.Bandwidths(l.Count, elt, sec, n)
		if math.Abs(a-c.algbw) > 1e-6 || math.Abs(b-c.busbw) > 1e-6 {
			t.Errorf("%s: algbw %v busbw %v, want %v %v", c.coll, a, b, c.algbw, c.busbw)
		}
		if col.Reduces() != c.reduces || col.Rooted() != c.rooted || col.CheckInPlace() != c.check {
			t.Errorf("%s: reduces %v rooted %v check in place %v", c.coll, col.Reduces(), col.Rooted(), col.CheckInPlace())
		}
	}
	// 16-byte alignment of per-rank counts: 1000 halves over 3 ranks -> 333 -> 328
	if l := AllGather.LayoutFor(2000, 2, 3); l.Count != 328 || l.Bytes != 328*3*2 {
		t.Errorf("aligned all_gather layout %+v", l)
	}
	if a, b := AllReduce.Bandwidths(1, 4, 0, 8); a != 0 || b != 0 {
		t.Errorf("zero time: %v %v", a, b)
	}
}

func TestBestBusBW(t *testing.T) {
	for _, c := range []struct {
		r     Row
		bw    float64
		place string
	}{
		{Row{}, 0, ""},
		{Row{OutOfPlace: &Measure{BusBW: 3}}, 3, "out-of-place"},
		{Row{InPlace: &Measure{BusBW: 4}}, 4, "in-place"},
		{Row{OutOfPlace: &Measure{BusBW: 5}, InPlace: &Measure{BusBW: 4}}, 5, "out-of-place"},
		{Row{OutOfPlace: &Measure{BusBW: 4}, InPlace: &Measure{BusBW: 5}}, 5, "in-place"},
	} {
		if bw, place := c.r.BestBusBW(); bw != c.bw || place != c.place {
			t.Errorf("%+v: %v %q, want %v %q", c.r, bw, place, c.bw, c.place)
		}
	}
}
