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

// Judged is one row of an NCCL result judged against the model: the
// expectation at its size for the node as it should be, the node as
// found's where that falls short, and the verdict on the row's
// out-of-place algbw.
type Judged struct {
	// Result is the index of the row's result among those judged.
	Result int
	Row    collective.Row
	// Expected is the model's for the row's size (the hierarchical
	// variant's own where the row is one); nil when the row has no
	// out-of-place measurement or the model has no expectation (Why).
	Expected *model.Prediction
	// Found is what the node as found would reach, when it deviates from
	// the node as it should be and reaches less; nil otherwise.
	Found *model.Prediction
	// Status and Ratio are the measured algbw against Expected (Unknown
	// and 0 without it).
	Status result.Status
	Ratio  float64
	// Why the model has no expectation ("" when it has one, or the row
	// measured nothing).
	Why string
}

// JudgeRows judges every row of every result, once, against the model of
// the node as it should be (b.Should); pass is the fraction of expected
// that passes. Rows come in the results' order. Without a basis (b nil)
// every row is unknown. JudgeNCCL's verdicts and the dossier's rows are
// both made from these.
func JudgeRows(b *model.Basis, results []NCCLResult, pass float64) []Judged {
	m := model.DefaultMargin()
	m.Pass = pass
	var out []Judged
	for i, r := range results {
		for _, row := range r.Rows {
			j := Judged{Result: i, Row: row, Status: result.Unknown}
			switch {
			case b == nil:
				j.Why = "no model of the node"
			case r.Variant != "" && r.Variant != VariantHierarchical:
				_, err := Expectation(b.Should, r, float64(row.Bytes))
				j.Why = err.Error()
			case row.OutOfPlace == nil:
			default:
				j.judge(*b, r, m)
			}
			out = append(out, j)
		}
	}
	return out
}

func (j *Judged) judge(b model.Basis, r NCCLResult, m model.Margin) {
	bytes := float64(j.Row.Bytes)
	p, err := Expectation(b.Should, r, bytes)
	if err != nil {
		j.Why = err.Error()
		return
	}
	j.Expected = &p
	j.Status, j.Ratio = p.Judge(j.Row.OutOfPlace.AlgBW, m)
	if len(b.Deviations) > 0 {
		if f, err := Expectation(b.Found, r, bytes); err == nil && f.AlgBW < p.AlgBW {
			j.Found = &f
		}
	}
}

// JudgeNCCL compares the largest size of each collective with the model of
// the node as it should be (b.Should), as JudgeRows judged it; pass is the
// fraction of expected that passes. Where the node as found falls short of
// it, the message adds what the node as found would reach, as the
// explanation.
func JudgeNCCL(b model.Basis, results []NCCLResult, pass float64) []result.Result {
	rows := JudgeRows(&b, results, pass)
	var out []result.Result
	for i, j := range rows {
		if i+1 < len(rows) && rows[i+1].Result == j.Result {
			continue // not its result's largest size (its last row)
		}
		r := results[j.Result]
		subject := string(r.Collective)
		if r.Variant != "" {
			subject += " (" + r.Variant + ")"
		}
		switch {
		case j.Why != "":
			out = append(out, result.Result{ID: JudgeNCCLID, Status: result.Unknown, Subject: subject, Reason: "NoModel", Message: j.Why})
			continue
		case j.Expected == nil:
			continue // the largest size measured nothing out of place
		}
		row, p := j.Row, j.Expected
		msg := fmt.Sprintf("%s at %s: algbw %.1f GB/s (busbw %.1f), expected %.1f GB/s (busbw %.1f) for %s by %s, limited by %s: %.0f%% of expected",
			r.Collective, collective.FormatSize(row.Bytes), row.OutOfPlace.AlgBW, row.OutOfPlace.BusBW, p.AlgBW, p.BusBW, b.Should.Name(), p.Algorithm, p.Bottleneck, 100*j.Ratio)
		ev := []result.Evidence{{Source: "model", Value: p.Formula}}
		if iv := p.Interval; iv.Class != "" && iv.HighBusBW > 0 {
			// Where a healthy node lies, and what that is known from.
			msg += fmt.Sprintf("; healthy range busbw %.1f–%.1f GB/s (%s: %s)", iv.LowBusBW, iv.HighBusBW, iv.Class, iv.Basis)
			ev = append(ev, result.Evidence{Source: "model interval", Value: fmt.Sprintf("±%.0f%%, %s, %d public run(s)", 100*iv.HalfWidth, iv.Class, iv.Runs)})
		}
		if f := j.Found; f != nil {
			msg += "; " + b.Explain(f.AlgBW) + fmt.Sprintf(" (busbw %.1f)", f.BusBW)
			ev = append(ev, result.Evidence{Source: "model as found", Value: f.Formula})
		}
		out = append(out, result.Result{ID: JudgeNCCLID, Status: j.Status, Subject: subject, Reason: "MeasuredVsExpected", Message: msg, Evidence: ev})
	}
	return out
}

// Expectation is the model's expectation for a result at a size: NCCL's
// best algorithm, or for the hierarchical all-reduce the model's own
// three-phase prediction (NVLink reduce-scatter, all-reduce per rail
// across nodes, NVLink all-gather), which needs two nodes or more of two
// GPUs or more. The model predicts no other variant.
func Expectation(s model.System, r NCCLResult, bytes float64) (model.Prediction, error) {
	switch r.Variant {
	case "":
		return model.Expect(s, r.Collective, bytes)
	case VariantHierarchical:
	default:
		return model.Prediction{}, fmt.Errorf("the model predicts NCCL's own %s, not a %s one", r.Collective, r.Variant)
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

// copyExpected is what the model expects of the copy r on the node as it
// should be (b.Should) and the number measured in the same terms (a
// device-local copy counts read and write, a bidirectional one each
// direction); ok false when the model has no expectation for it. gpus
// maps CUDA ordinals to the discovered GPUs (to tell NVLink peers from
// PCIe peers).
func copyExpected(b model.Basis, gpus map[int]*topology.GPU, r CopyResult) (x model.CopyExpectation, t model.CopyTest, measured float64, ok bool) {
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

// CopyJudged is one copy judged against the model.
type CopyJudged struct {
	// Expected is the model's for the copy on the node as it should be;
	// nil when the model has none (or the copy failed).
	Expected *model.CopyExpectation
	// Found is what the node as found would reach, when it deviates from
	// the node as it should be and reaches less; nil otherwise.
	Found *model.CopyExpectation
	// Measured is the copy's bandwidth in the terms the model states it
	// (a device-local copy counts read and write, a bidirectional one
	// each direction); 0 without Expected.
	Measured float64
	// Status and Ratio are Measured against Expected (Unknown and 0
	// without it).
	Status result.Status
	Ratio  float64
}

// JudgeCopyRows judges every copy, once, against the model of the node as
// it should be (b.Should; nil: no basis, every copy unknown); pass is the
// fraction of expected that passes. One per copy, in order: JudgeCopies'
// verdicts and the dossier's rows are both made from these. gpus maps
// CUDA ordinals to the discovered GPUs (to tell NVLink peers from PCIe
// peers).
func JudgeCopyRows(b *model.Basis, gpus map[int]*topology.GPU, res []CopyResult, pass float64) []CopyJudged {
	m := model.DefaultMargin()
	m.Pass = pass
	out := make([]CopyJudged, len(res))
	for i, r := range res {
		j := &out[i]
		j.Status = result.Unknown
		if b == nil {
			continue
		}
		x, t, got, ok := copyExpected(*b, gpus, r)
		if !ok {
			continue
		}
		j.Expected, j.Measured = &x, got
		j.Status, j.Ratio = x.Judge(got, m)
		if f, err := model.ExpectCopy(b.Found, t); err == nil && len(b.Deviations) > 0 && f.GBps < x.GBps {
			j.Found = &f
		}
	}
	return out
}

// JudgeCopies compares copies with the model of the node as it should be
// (b.Should), as JudgeCopyRows judged them, adds what the node as found
// would reach where it falls short, and states each as a fraction of the
// hardware limit. gpus maps CUDA ordinals to the discovered GPUs (to tell
// NVLink peers from PCIe peers).
func JudgeCopies(b model.Basis, gpus map[int]*topology.GPU, res []CopyResult, pass float64) []result.Result {
	var out []result.Result
	for i, j := range JudgeCopyRows(&b, gpus, res, pass) {
		x, got := j.Expected, j.Measured
		if x == nil {
			continue
		}
		subject := CopySubject(res[i])
		msg := fmt.Sprintf("%s: %.1f GB/s, expected %.1f GB/s (%s, limited by %s): %.0f%% of expected", subject, got, x.GBps, x.Description, x.Bottleneck, 100*j.Ratio)
		ev := []result.Evidence{{Source: "model", Value: x.Formula}}
		if j.Found != nil {
			msg += "; " + b.Explain(j.Found.GBps)
		}
		if x.PeakGBps > 0 {
			msg += fmt.Sprintf(", %.0f%% of the hardware limit", 100*got/x.PeakGBps)
			ev = append(ev, result.Evidence{Source: "hardware limit", Value: x.Limit})
		}
		out = append(out, result.Result{ID: JudgeCopyID, Status: j.Status, Subject: subject, Reason: "MeasuredVsExpected", Message: msg, Evidence: ev})
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
