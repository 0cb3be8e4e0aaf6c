package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/analyze"
	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/printable"
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

FILE "-" is the standard input; pipes, FIFOs and process substitution
(<(cmd)) are read once, as they come. Directories and devices are refused.
Ctrl-C stops the analysis (exit 130).

Exit status: 0 when no verdict fails, 1 when a verdict fails (or says the analysed
tool itself broke), 2 when a file cannot be read or its kind is not recognised.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAnalyze(cmd.Context(), g, args, kind, format)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "read every file as this kind: "+strings.Join(analyze.Kinds(), ", "))
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, json, table, md or junit")
	return cmd
}

// analyzeFormats are analyze's output formats: text is each reader's own
// view; table, md and junit list the verdicts.
var analyzeFormats = []report.Format{report.Text, report.JSON, report.Table, report.Markdown, report.JUnit}

func runAnalyze(ctx context.Context, g *globals, files []string, kind, format string) error {
	f, err := report.ParseFormat(format, analyzeFormats...)
	if err != nil {
		return toolError(err)
	}
	started := g.session.Now()
	a, err := app.Analyze(ctx, files, kind)
	if err != nil {
		return err
	}
	for _, err := range a.Unread {
		fmt.Fprintln(g.errOut, "gdrcheck: analyze:", printable.Text(err.Error()))
	}
	switch f {
	case report.Text:
		for i, o := range a.Outputs {
			if i > 0 {
				fmt.Fprintln(g.out)
			}
			if err := o.WriteText(g.out); err != nil {
				return toolError(err)
			}
		}
	default:
		if err := report.Write(g.out, f, g.envelope("analyze", started, a.Results, a.Outputs)); err != nil {
			return toolError(err)
		}
	}
	switch {
	case len(a.Unread) > 0:
		return toolError(fmt.Errorf("%d of %d file(s) could not be analysed", len(a.Unread), len(files)))
	case result.Count(a.Results).Failed():
		return errFailedQuietly
	}
	return nil
}
