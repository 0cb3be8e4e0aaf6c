package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// InputID is the ID of the findings about analyze's inputs themselves: an
// input that could not be read (error), or that was read but holds nothing
// a reader recognises (unknown). Their source is InputSource.
const (
	InputID     = "analyze.input"
	InputSource = "analyze"
)

// AnalyzeOptions are analyze's options.
type AnalyzeOptions struct {
	// Kind forces every file's kind; "": detected from the content.
	Kind string
	// Separate judges every NCCL debug log on its own; by default the logs
	// given together are judged as one job.
	Separate bool
	// Expect is a site profile (check --expect's format); "": none.
	Expect string
	// Hardware is what the flags say the job ran on; it overrides the
	// profile field by field.
	Hardware Hardware
}

// Analysis is what `gdrcheck analyze` found in its files.
type Analysis struct {
	Outputs []*analyze.Output
	// Results are every reader's verdicts, in the order of the outputs,
	// then the findings about the inputs (Inputs).
	Results []result.Result
	// Inputs are the findings about inputs that gave no output: Error
	// when the input could not be read (Unread counts them), Unknown when
	// it was read but not recognised.
	Inputs []result.Result
	// Unread are the inputs that could not be read at all (missing, a
	// directory, a device, a failed read), one error each.
	Unread []error
}

// Analyze reads every file as opts.Kind, or as every kind its content
// matches. NCCL debug logs given together are judged as one job (unless
// opts.Separate); nccl-tests outputs are judged against the hardware the
// options describe, when they describe one. A kind that no reader has, or
// a site profile that cannot be loaded, is a ToolError. An input that
// cannot be read, or is not recognised, is a finding (Inputs), and the
// others are still judged. It stops with ctx's error when ctx ends.
func Analyze(ctx context.Context, files []string, opts AnalyzeOptions) (*Analysis, error) {
	kind := opts.Kind
	if kind != "" && !slices.Contains(analyze.Kinds(), kind) {
		return nil, toolErr(fmt.Errorf("--kind %q: want one of %s", kind, strings.Join(analyze.Kinds(), ", ")))
	}
	profile, err := LoadProfile(opts.Expect)
	if err != nil {
		return nil, err
	}
	if err := opts.Hardware.validate(); err != nil {
		return nil, toolErr(err)
	}
	a := &Analysis{Outputs: []*analyze.Output{}, Inputs: []result.Result{}}
	// A job reads every NCCL log a second time, as a part of the whole:
	// with one input there is nothing to merge, and no second reading.
	var job *analyze.Job
	if !opts.Separate && len(files) > 1 {
		job = analyze.NewJob()
	}
	for _, f := range files {
		got, err := analyze.Files(ctx, f, kind, job)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("interrupted while reading %s: %w", f, err)
		}
		if err != nil {
			a.Inputs = append(a.Inputs, inputFinding(f, err))
			if analyze.Unreadable(err) {
				a.Unread = append(a.Unread, err)
			}
			continue
		}
		a.Outputs = append(a.Outputs, got...)
	}
	if job != nil {
		a.Outputs = job.Merge(a.Outputs)
	}
	judgeHardware(a.Outputs, opts.Hardware.with(profile))
	for _, o := range a.Outputs {
		o.Results = [2]int{len(a.Results), len(a.Results) + len(o.Verdicts)}
		a.Results = append(a.Results, o.Verdicts...)
	}
	a.Results = append(a.Results, a.Inputs...)
	return a, nil
}

// inputFinding is the finding about an input that gave no output.
func inputFinding(file string, err error) result.Result {
	r := result.Result{ID: InputID, Source: InputSource, Subject: file, Message: err.Error()}
	if analyze.Unreadable(err) {
		r.Status, r.Reason = result.Error, "Unreadable"
		r.Remedy = "give a readable file (or - and a pipe); the other inputs were judged without it"
		return r
	}
	r.Status, r.Reason = result.Unknown, "NotRecognised"
	r.Remedy = "give the output of one of the tools analyze reads (" + strings.Join(analyze.Kinds(), ", ") + "), or force a kind with --kind"
	return r
}
