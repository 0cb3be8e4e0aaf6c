package app

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// A hierarchical all-reduce's rows are judged against the model's
// hierarchical prediction, as bench nccl's verdict judges it, not
// against NCCL's own all-reduce.
func TestMeasurementsOfTheHierarchicalVariant(t *testing.T) {
	nr, exp := hgxRun(t)
	// Two such nodes: the hierarchical all-reduce needs two or more.
	exp.Should.Nodes, exp.Found.Nodes = 2, 2
	const size = 1 << 30
	own, err := model.Expect(exp.Should, collective.AllReduce, size)
	if err != nil {
		t.Fatal(err)
	}
	hier, err := bench.Expectation(exp.Should, bench.NCCLResult{Collective: collective.AllReduce, Variant: bench.VariantHierarchical}, size)
	if err != nil {
		t.Fatal(err)
	}
	if abs(hier.BusBW-own.BusBW) < 1 {
		t.Fatalf("the model expects the same of both (%.1f, %.1f GB/s busbw): the test cannot tell them apart", hier.BusBW, own.BusBW)
	}
	t.Logf("expected busbw at 1 GiB on 2 nodes: NCCL's all_reduce %.1f GB/s, hierarchical %.1f GB/s", own.BusBW, hier.BusBW)
	w0 := int64(0)
	// Measured at the hierarchical expectation: a pass against it.
	busbw := hier.BusBW
	row := collective.Row{Bytes: size, OutOfPlace: &collective.Measure{TimeUS: 1, AlgBW: busbw / (2 * 15.0 / 16), BusBW: busbw, Wrong: &w0}}
	d := &dossierRun{nr: nr, exp: exp, nccl: []bench.NCCLResult{{Collective: collective.AllReduce, Ranks: 16, Variant: bench.VariantHierarchical, Rows: []collective.Row{row}}}}
	d.rep.Phases = append(d.rep.Phases, dossier.Phase{Name: PhaseModel, Status: dossier.PhaseDone})
	m := d.measurements()
	if len(m.Collectives) != 1 || m.Collectives[0].ExpectedBusBW == nil {
		t.Fatalf("%+v", m.Collectives)
	}
	x := m.Collectives[0]
	if got := *x.ExpectedBusBW; abs(got-hier.BusBW) > 1e-6 {
		t.Errorf("expected busbw %.1f GB/s, want the hierarchical %.1f (NCCL's own: %.1f)", got, hier.BusBW, own.BusBW)
	}
	verdict := bench.JudgeNCCL(exp.Basis, d.nccl, d.nr.judging.Pass)
	if len(verdict) != 1 || verdict[0].Status != x.Status || x.Status != result.Pass {
		t.Errorf("the row is %s, the verdict %+v: want both pass", x.Status, verdict)
	}
	if c := m.Curves; len(c) != 1 || len(c[0].Points) != 1 || c[0].Points[0].Algorithm != string(model.AlgoHierarchical) {
		t.Errorf("curve %+v, want the hierarchical prediction", c)
	}
}
