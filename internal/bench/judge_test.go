package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// TestJudgeCopies: copies on the captured H200 node are judged against the
// model and stated as a fraction of the hardware limit (HBM peak, PCIe
// Gen5 x16 per direction), with the limit named in the evidence.
func TestJudgeCopies(t *testing.T) {
	r, cleanup, err := snapshot.Open("../../testdata/snapshots/h200x1-vm.tgz")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	h, err := discover.Discover(context.Background(), discover.WithRoot(r))
	if err != nil || len(h.GPUs) != 1 {
		t.Fatalf("discover: %v", err)
	}
	s, err := model.FromHost(h)
	if err != nil {
		t.Fatal(err)
	}
	s.GPUsPerNode, s.Nodes = 1, 1
	res := []CopyResult{
		{Test: CopyD2D, Dev: 0, Peer: -1, GBps: 2137.9, ReadWriteGBps: 4275.8, Valid: true},
		{Test: CopyH2DPinned, Dev: 0, Peer: -1, GBps: 55.3, Valid: true},
		{Test: CopyBidirPinned, Dev: 0, Peer: -1, GBps: 99.2, Valid: true},
		{Test: CopyH2DPinned, Dev: 0, Peer: -1, GBps: 20, Valid: true},
	}
	basis, gpus := model.Healthy(s, h, model.Want{}), map[int]*topology.GPU{0: h.GPUs[0]}
	got := JudgeCopies(basis, gpus, res, 0.85)
	// The rows the verdicts come from: one per copy, a failed copy and a
	// missing basis unknown.
	rows := JudgeCopyRows(&basis, gpus, append(res, CopyResult{Test: CopyD2D, Dev: 0, Peer: -1, Error: "boom"}), 0.85)
	if len(rows) != len(res)+1 || rows[len(res)].Expected != nil || rows[len(res)].Status != result.Unknown {
		t.Errorf("rows %+v", rows)
	}
	for i, r := range rows[:min(len(res), len(got))] {
		if r.Status != got[i].Status || r.Expected == nil {
			t.Errorf("row %d: %s, its verdict %s", i, r.Status, got[i].Status)
		}
	}
	for _, r := range JudgeCopyRows(nil, gpus, res, 0.85) {
		if r.Status != result.Unknown || r.Expected != nil {
			t.Errorf("without a basis: %+v", r)
		}
	}
	want := []struct {
		status result.Status
		msg    string
		limit  string
	}{
		{result.Pass, "4275.8 GB/s, expected 4176.0 GB/s", "memory peak 4800 GB/s"},
		{result.Pass, "55.3 GB/s, expected 54.2 GB/s", "PCIe Gen5 x16, 63.0 GB/s per direction"},
		{result.Pass, "49.6 GB/s, expected 39.6 GB/s", "PCIe Gen5 x16, 63.0 GB/s per direction"},
		{result.Fail, "20.0 GB/s, expected 54.2 GB/s", "PCIe Gen5 x16, 63.0 GB/s per direction"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d judgements: %+v", len(got), got)
	}
	fractions := []string{"89% of the hardware limit", "88% of the hardware limit", "79% of the hardware limit", "32% of the hardware limit"}
	for i, w := range want {
		g := got[i]
		if g.Status != w.status || !strings.Contains(g.Message, w.msg) || !strings.Contains(g.Message, fractions[i]) {
			t.Errorf("%d: %s %s", i, g.Status, g.Message)
		}
		if len(g.Evidence) != 2 || g.Evidence[1].Source != "hardware limit" || g.Evidence[1].Value != w.limit {
			t.Errorf("%d: evidence %+v", i, g.Evidence)
		}
	}
}

// TestJudgeNCCLAgainstHealthy: a node with 12 of 18 NVLinks that reaches
// what its damaged hardware allows fails: it is judged against the node as
// it should be, and the message says what the node as found would reach.
// The same node intact, measuring the same, passes with no explanation.
func TestJudgeNCCLAgainstHealthy(t *testing.T) {
	h, err := discover.Discover(context.Background(), discover.WithRoot(fakehost.Root(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")))
	if err != nil {
		t.Fatal(err)
	}
	intact, err := model.FromHost(h)
	if err != nil {
		t.Fatal(err)
	}
	damaged := intact
	damaged.NVLinks, damaged.NVLinkPairLinks = 12, 12
	const size = 8 << 30
	p, err := model.Expect(damaged, collective.AllReduce, size)
	if err != nil {
		t.Fatal(err)
	}
	res := []NCCLResult{{Collective: collective.AllReduce, Ranks: 8, Rows: []collective.Row{{Bytes: size,
		OutOfPlace: &collective.Measure{AlgBW: p.AlgBW, BusBW: p.BusBW}}}}}

	got := JudgeNCCL(model.Healthy(damaged, h, model.Want{}), res, 0.85)
	if len(got) != 1 || got[0].Status != result.Fail {
		t.Fatalf("damaged: %+v", got)
	}
	for _, want := range []string{"for 8×NVIDIA H200 with 18 NVLinks", "this node as found (12 NVLinks) would reach " + fmt.Sprintf("%.1f GB/s", p.AlgBW)} {
		if !strings.Contains(got[0].Message, want) {
			t.Errorf("message %q lacks %q", got[0].Message, want)
		}
	}
	// The model, its interval (the public runs of its class), the node as found.
	if len(got[0].Evidence) != 3 || got[0].Evidence[1].Source != "model interval" || got[0].Evidence[2].Source != "model as found" ||
		!strings.Contains(got[0].Message, "healthy range busbw") {
		t.Errorf("evidence %+v", got[0].Evidence)
	}

	ok := JudgeNCCL(model.Healthy(intact, h, model.Want{}), res, 0.5)
	if len(ok) != 1 || ok[0].Status != result.Pass || strings.Contains(ok[0].Message, "as found") || len(ok[0].Evidence) != 2 {
		t.Errorf("intact: %+v", ok)
	}
}

// TestJudgeHierarchical: the hierarchical all-reduce is judged against the
// model's three-phase prediction on two 8-GPU nodes (pass at it, fail at
// half of it), and is unknown, with the reason, on one GPU per node.
func TestJudgeHierarchical(t *testing.T) {
	h, err := discover.Discover(context.Background(), discover.WithRoot(fakehost.Root(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")))
	if err != nil {
		t.Fatal(err)
	}
	node, err := model.FromHost(h)
	if err != nil {
		t.Fatal(err)
	}
	two := node
	two.Nodes = 2
	const size = 1 << 30
	ps, err := model.Predict(two, collective.AllReduce, size)
	if err != nil {
		t.Fatal(err)
	}
	var hier model.Prediction
	for _, p := range ps {
		if p.Algorithm == model.AlgoHierarchical {
			hier = p
		}
	}
	if hier.AlgBW == 0 {
		t.Fatal("no hierarchical prediction for 2×8 GPUs")
	}
	judge := func(s model.System, algbw float64) result.Result {
		res := []NCCLResult{{Collective: collective.AllReduce, Ranks: 16, Variant: VariantHierarchical,
			Rows: []collective.Row{{Bytes: size, OutOfPlace: &collective.Measure{AlgBW: algbw}}}}}
		got := JudgeNCCL(model.Healthy(s, h, model.Want{}), res, 0.85)
		if len(got) != 1 {
			t.Fatalf("%d results", len(got))
		}
		return got[0]
	}
	if r := judge(two, hier.AlgBW); r.Status != result.Pass || r.Subject != "all_reduce (hierarchical)" || !strings.Contains(r.Message, "by hierarchical") {
		t.Errorf("at the prediction: %s %s: %s", r.Status, r.Subject, r.Message)
	}
	if r := judge(two, hier.AlgBW/2); r.Status != result.Fail {
		t.Errorf("at half the prediction: %s: %s", r.Status, r.Message)
	}
	one := two
	one.GPUsPerNode = 1
	if r := judge(one, 10); r.Status != result.Unknown || !strings.Contains(r.Message, "2 GPUs or more") {
		t.Errorf("one GPU per node: %s: %s", r.Status, r.Message)
	}
}

// TestJudgeRows: every row is judged once, against its size's expectation
// (the hierarchical variant's own for that variant); a row measured
// nothing out of place is unknown without a reason, a variant the model
// does not predict and a missing basis are unknown with one. JudgeNCCL's
// verdict is the largest row's.
func TestJudgeRows(t *testing.T) {
	h, err := discover.Discover(context.Background(), discover.WithRoot(fakehost.Root(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")))
	if err != nil {
		t.Fatal(err)
	}
	two, err := model.FromHost(h)
	if err != nil {
		t.Fatal(err)
	}
	two.Nodes = 2
	basis := model.Healthy(two, h, model.Want{})
	at := func(v string, bytes uint64, frac float64) collective.Row {
		p, err := Expectation(basis.Should, NCCLResult{Collective: collective.AllReduce, Variant: v}, float64(bytes))
		if err != nil {
			t.Fatal(err)
		}
		return collective.Row{Bytes: bytes, OutOfPlace: &collective.Measure{AlgBW: frac * p.AlgBW, BusBW: frac * p.BusBW}}
	}
	unmeasured := collective.Row{Bytes: 4 << 30}
	type want struct {
		status   result.Status
		algo     model.Algorithm // "": no expectation
		why      string
		verdicts int // JudgeNCCL's
	}
	cases := []struct {
		name    string
		basis   *model.Basis
		variant string
		rows    []collective.Row
		want    []want
	}{
		{"NCCL's own, each size", &basis, "", []collective.Row{at("", 1<<30, 1), at("", 2<<30, 0.5)},
			[]want{{status: result.Pass, algo: "*"}, {status: result.Fail, algo: "*", verdicts: 1}}},
		{"the largest size measured nothing out of place", &basis, "", []collective.Row{at("", 1<<30, 1), unmeasured},
			[]want{{status: result.Pass, algo: "*"}, {status: result.Unknown}}},
		{"hierarchical, against its own", &basis, VariantHierarchical, []collective.Row{at(VariantHierarchical, 1<<30, 1), at(VariantHierarchical, 2<<30, 0.5)},
			[]want{{status: result.Pass, algo: model.AlgoHierarchical}, {status: result.Fail, algo: model.AlgoHierarchical, verdicts: 1}}},
		{"a variant the model does not predict", &basis, "pipelined", []collective.Row{at("", 1<<30, 1), unmeasured},
			[]want{{status: result.Unknown, why: "not a pipelined one"}, {status: result.Unknown, why: "not a pipelined one", verdicts: 1}}},
		{"no basis", nil, "", []collective.Row{at("", 1<<30, 1)}, []want{{status: result.Unknown, why: "no model"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := []NCCLResult{{Collective: collective.AllReduce, Ranks: 16, Variant: tc.variant, Rows: tc.rows}}
			got := JudgeRows(tc.basis, res, 0.85)
			if len(got) != len(tc.want) {
				t.Fatalf("%d rows judged, want %d", len(got), len(tc.want))
			}
			verdicts := 0
			for i, w := range tc.want {
				g := got[i]
				verdicts += w.verdicts
				if g.Result != 0 || g.Row.Bytes != tc.rows[i].Bytes || g.Status != w.status || !strings.Contains(g.Why, w.why) || (w.why == "") != (g.Why == "") {
					t.Errorf("row %d: %s %q, want %s %q", i, g.Status, g.Why, w.status, w.why)
				}
				switch {
				case w.algo == "" && g.Expected != nil:
					t.Errorf("row %d: expected %+v, want none", i, g.Expected)
				case w.algo != "" && (g.Expected == nil || w.algo != "*" && g.Expected.Algorithm != w.algo):
					t.Errorf("row %d: expected %+v, want by %s", i, g.Expected, w.algo)
				}
			}
			if tc.basis == nil {
				return
			}
			vs := JudgeNCCL(*tc.basis, res, 0.85)
			if len(vs) != verdicts {
				t.Fatalf("JudgeNCCL gave %d verdicts, want %d: %+v", len(vs), verdicts, vs)
			}
			if len(vs) == 1 && vs[0].Status != got[len(got)-1].Status {
				t.Errorf("JudgeNCCL says %s, the largest row %s", vs[0].Status, got[len(got)-1].Status)
			}
		})
	}
}
