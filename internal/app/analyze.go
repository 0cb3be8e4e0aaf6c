package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Analysis is what `gdrcheck analyze` found in its files.
type Analysis struct {
	Outputs []*analyze.Output
	// Results are every reader's verdicts, in the order of the outputs.
	Results []result.Result
	// Unread are the files that could not be read or recognised, one
	// error each.
	Unread []error
}

// Analyze reads every file as kind, or as every kind its content matches
// when kind is "". A kind that no reader has is a ToolError.
// It stops with ctx's error when ctx ends (Ctrl-C).
func Analyze(ctx context.Context, files []string, kind string) (*Analysis, error) {
	if kind != "" && !slices.Contains(analyze.Kinds(), kind) {
		return nil, toolErr(fmt.Errorf("--kind %q: want one of %s", kind, strings.Join(analyze.Kinds(), ", ")))
	}
	a := &Analysis{Outputs: []*analyze.Output{}}
	for _, f := range files {
		var got []*analyze.Output
		var err error
		if kind != "" {
			var o *analyze.Output
			if o, err = analyze.File(ctx, f, kind); err == nil {
				got = []*analyze.Output{o}
			}
		} else {
			got, err = analyze.FileAll(ctx, f)
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("interrupted while reading %s: %w", f, err)
		}
		if err != nil {
			a.Unread = append(a.Unread, err)
			continue
		}
		a.Outputs = append(a.Outputs, got...)
	}
	for _, o := range a.Outputs {
		o.Results = [2]int{len(a.Results), len(a.Results) + len(o.Verdicts)}
		a.Results = append(a.Results, o.Verdicts...)
	}
	return a, nil
}
