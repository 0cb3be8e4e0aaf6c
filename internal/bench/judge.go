package bench

import (
	"errors"
	"fmt"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// Judgement IDs.
const (
	JudgeNCCLID = "bench.nccl"
	JudgeCopyID = "bench.copy"
)

// NoModel is the judgement when there is no model of the node to judge
// against: unknown, never pass.
func NoModel(id string, err error) []result.Result {
	return []result.Result{{ID: id, Status: result.Unknown, Subject: "node", Reason: "NoModel", Message: "no expected performance: " + err.Error()}}
}

// JudgeNCCL compares the largest size of each collective with the model of
// the node as it should be (b.Should); pass is the fraction of expected
// that passes. Where the node as found falls short of it, the message adds
// what the node as found would reach, as the explanation.
func JudgeNCCL(b model.Basis, results []NCCLResult, pass float64) []result.Result {
	m := model.DefaultMargin()
	m.Pass = pass
	var out []result.Result
	for _, r := range results {
		if len(r.Rows) == 0 {
			continue
		}
		subject := string(r.Collective)
		if r.Variant != "" {
			subject += " (" + r.Variant + ")"
		}
		if r.Variant != "" && r.Variant != VariantHierarchical {
			out = append(out, result.Result{ID: JudgeNCCLID, Status: result.Unknown, Subject: subject, Reason: "NoModel",
				Message: "the model predicts NCCL's own " + string(r.Collective) + ", not a " + r.Variant + " one"})
			continue
		}
		row := r.Rows[len(r.Rows)-1]
		if row.OutOfPlace == nil {
			continue
		}
		p, err := expectVariant(b.Should, r, float64(row.Bytes))
		if err != nil {
			out = append(out, result.Result{ID: JudgeNCCLID, Status: result.Unknown, Subject: subject, Reason: "NoModel", Message: err.Error()})
			continue
		}
		st, ratio := p.Judge(row.OutOfPlace.AlgBW, m)
		msg := fmt.Sprintf("%s at %s: algbw %.1f GB/s (busbw %.1f), expected %.1f GB/s (busbw %.1f) for %s by %s, limited by %s: %.0f%% of expected",
			r.Collective, collective.FormatSize(row.Bytes), row.OutOfPlace.AlgBW, row.OutOfPlace.BusBW, p.AlgBW, p.BusBW, b.Should.Name(), p.Algorithm, p.Bottleneck, 100*ratio)
		ev := []result.Evidence{{Source: "model", Value: p.Formula}}
		if len(b.Deviations) > 0 {
			if f, err := expectVariant(b.Found, r, float64(row.Bytes)); err == nil && f.AlgBW < p.AlgBW {
				msg += "; " + b.Explain(f.AlgBW) + fmt.Sprintf(" (busbw %.1f)", f.BusBW)
				ev = append(ev, result.Evidence{Source: "model as found", Value: f.Formula})
			}
		}
		out = append(out, result.Result{ID: JudgeNCCLID, Status: st, Subject: subject, Reason: "MeasuredVsExpected", Message: msg, Evidence: ev})
	}
	return out
}

// expectVariant is the model's expectation for a result: NCCL's best
// algorithm, or for the hierarchical all-reduce the model's own
// three-phase prediction (NVLink reduce-scatter, all-reduce per rail
// across nodes, NVLink all-gather), which needs two nodes or more of two
// GPUs or more.
func expectVariant(s model.System, r NCCLResult, bytes float64) (model.Prediction, error) {
	if r.Variant != VariantHierarchical {
		return model.Expect(s, r.Collective, bytes)
	}
	ps, err := model.Predict(s, r.Collective, bytes)
	if err != nil {
		return model.Prediction{}, err
	}
	for _, p := range ps {
		if p.Algorithm == model.AlgoHierarchical {
			return p, nil
		}
	}
	return model.Prediction{}, fmt.Errorf("the model has no hierarchical %s for %s: it needs 2 nodes or more with 2 GPUs or more each", r.Collective, s.Name())
}

var copyModel = map[string]model.CopyTest{
	CopyD2D: model.CopyDeviceLocal, CopyH2DPinned: model.CopyH2DPinned, CopyD2HPinned: model.CopyD2HPinned,
	CopyBidirPinned: model.CopyBidirPinned, CopyH2DPageable: model.CopyH2DPageable, CopyD2HPageable: model.CopyD2HPageable,
}

// measuredForModel is the number the model's expectation is stated in.
func measuredForModel(r CopyResult) float64 {
	switch r.Test {
	case CopyD2D:
		return r.ReadWriteGBps
	case CopyBidirPinned:
		return r.GBps / 2 // the model states each direction
	}
	return r.GBps
}

// CopyExpected is what the model expects of the copy r on the node as it
// should be (b.Should) and the number measured in the same terms (a
// device-local copy counts read and write, a bidirectional one each
// direction); ok false when the model has no expectation for it. gpus
// maps CUDA ordinals to the discovered GPUs (to tell NVLink peers from
// PCIe peers).
func CopyExpected(b model.Basis, gpus map[int]*topology.GPU, r CopyResult) (x model.CopyExpectation, t model.CopyTest, measured float64, ok bool) {
	t, ok = copyModel[r.Test]
	if r.Test == CopyP2P || r.Test == CopyP2PBidir {
		t, ok = model.CopyP2PNVLink, true
		if r.Test == CopyP2PBidir {
			t = model.CopyP2PNVLinkBidir
		}
		if a, b := gpus[r.Dev], gpus[r.Peer]; a != nil && b != nil && topology.NVLinksBetween(a, b) <= 0 {
			t = model.CopyP2PPCIe
		}
	}
	if !ok || r.Error != "" {
		return x, t, 0, false
	}
	x, err := model.ExpectCopy(b.Should, t)
	if err != nil {
		return x, t, 0, false
	}
	return x, t, measuredForModel(r), true
}

// JudgeCopies compares copies with the model of the node as it should be
// (b.Should), adds what the node as found would reach where it falls
// short, and states each as a fraction of the hardware limit. gpus maps CUDA ordinals to the
// discovered GPUs (to tell NVLink peers from PCIe peers).
func JudgeCopies(b model.Basis, gpus map[int]*topology.GPU, res []CopyResult, pass float64) []result.Result {
	m := model.DefaultMargin()
	m.Pass = pass
	var out []result.Result
	for _, r := range res {
		x, t, got, ok := CopyExpected(b, gpus, r)
		if !ok {
			continue
		}
		st, ratio := x.Judge(got, m)
		subject := CopySubject(r)
		msg := fmt.Sprintf("%s: %.1f GB/s, expected %.1f GB/s (%s, limited by %s): %.0f%% of expected", subject, got, x.GBps, x.Description, x.Bottleneck, 100*ratio)
		ev := []result.Evidence{{Source: "model", Value: x.Formula}}
		if f, err := model.ExpectCopy(b.Found, t); err == nil && len(b.Deviations) > 0 && f.GBps < x.GBps {
			msg += "; " + b.Explain(f.GBps)
		}
		if x.PeakGBps > 0 {
			msg += fmt.Sprintf(", %.0f%% of the hardware limit", 100*got/x.PeakGBps)
			ev = append(ev, result.Evidence{Source: "hardware limit", Value: x.Limit})
		}
		out = append(out, result.Result{ID: JudgeCopyID, Status: st, Subject: subject, Reason: "MeasuredVsExpected", Message: msg, Evidence: ev})
	}
	return out
}

// CopySubject is the subject of a copy's judgement: "TEST GPUa" or "TEST
// GPUa->GPUb".
func CopySubject(r CopyResult) string {
	if r.Peer >= 0 {
		return fmt.Sprintf("%s GPU%d->GPU%d", r.Test, r.Dev, r.Peer)
	}
	return fmt.Sprintf("%s GPU%d", r.Test, r.Dev)
}

// NCCLFailed is the result of a run that NCCL ended with an error, for
// the collective that failed (subject; "node" when none had started): the
// ncclResult_t's nccl.h name as the reason, the message with its meaning
// (nccl.Error's), and the remedy where one fits (collective.ExplainResult).
// nil when err carries no NCCL result (a watchdog abort, an interrupt, a
// CUDA error: those say what they are themselves).
func NCCLFailed(subject string, err error) []result.Result {
	var ne *nccl.Error
	if !errors.As(err, &ne) {
		return nil
	}
	r := result.Result{ID: JudgeNCCLID, Status: result.Error, Subject: subject, Reason: "NCCLError", Message: err.Error()}
	if rc, ok := ne.Explain(); ok {
		r.Reason, r.Remedy = rc.Name, rc.Remedy
	}
	return []result.Result{r}
}
