package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/analyze"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

func newAnalyze(g *globals) *cobra.Command {
	var kind, format string
	cmd := &cobra.Command{
		Use:   "analyze FILE...",
		Short: "Read NCCL logs, nccl-tests, perftest, nvbandwidth, dcgmi diag and nvidia-smi topo -m outputs and say what they mean",
		Long: `analyze reads outputs operators already have and gives verdicts on them:
whether GPU Direct RDMA was used, whether bandwidth is what the hardware should
give, whether a diagnostic failed on the hardware or broke by itself.

The kind of each file is detected from its content (a NCCL_DEBUG=INFO run of
nccl-tests is read both as an NCCL log and as nccl-tests output); --kind forces
one. Kinds: ` + strings.Join(analyze.Kinds(), ", ") + `.

Exit status: 0 when no verdict fails, 1 when a verdict fails (or says the analysed
tool itself broke), 2 when a file cannot be read or its kind is not recognised.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAnalyze(g, args, kind, format)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "read every file as this kind: "+strings.Join(analyze.Kinds(), ", "))
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, json, table, md or junit")
	return cmd
}

// analyzeFormats are analyze's output formats: text is each reader's own
// view; table, md and junit list the verdicts.
var analyzeFormats = []report.Format{report.Text, report.JSON, report.Table, report.Markdown, report.JUnit}

func runAnalyze(g *globals, files []string, kind, format string) error {
	f, err := report.ParseFormat(format, analyzeFormats...)
	if err != nil {
		return toolError(err)
	}
	started := g.session.Now()
	if kind != "" {
		if !slices.Contains(analyze.Kinds(), kind) {
			return &exitError{code: ExitToolErr, err: fmt.Errorf("--kind %q: want one of %s", kind, strings.Join(analyze.Kinds(), ", "))}
		}
	}
	outs := []*analyze.Output{}
	bad := 0
	for _, f := range files {
		var got []*analyze.Output
		var err error
		if kind != "" {
			var o *analyze.Output
			if o, err = analyze.File(f, kind); err == nil {
				got = []*analyze.Output{o}
			}
		} else {
			got, err = analyze.FileAll(f)
		}
		if err != nil {
			bad++
			fmt.Fprintln(g.errOut, "gdrcheck: analyze:", err)
			continue
		}
		outs = append(outs, got...)
	}
	var all []result.Result
	for _, o := range outs {
		all = append(all, o.Verdicts...)
	}
	switch f {
	case report.Text:
		for i, o := range outs {
			if i > 0 {
				fmt.Fprintln(g.out)
			}
			if err := o.WriteText(g.out); err != nil {
				return toolError(err)
			}
		}
	default:
		if err := report.Write(g.out, f, g.envelope("analyze", started, all, outs)); err != nil {
			return toolError(err)
		}
	}
	switch {
	case bad > 0:
		return &exitError{code: ExitToolErr, err: fmt.Errorf("%d of %d file(s) could not be analysed", bad, len(files))}
	case result.Count(all).Failed():
		return errFailedQuietly
	}
	return nil
}
