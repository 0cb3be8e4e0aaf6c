package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
)

func newVersion(g *globals) *cobra.Command {
	var format *formatValue
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print gdrcheck's version and the NVML, CUDA and NCCL libraries it can load",
		Example: `  gdrcheck version
  gdrcheck version --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			collect := func() (app.VersionInfo, error) { return g.session.Versions(cmd.Context()), nil }
			return writeTextOrJSON(g, "version", format.Format(), collect, writeVersionText)
		},
	}
	format = addFormat(cmd.Flags(), nil, report.Text, report.JSON)
	return cmd
}

func writeVersionText(w io.Writer, vi app.VersionInfo) error {
	fmt.Fprintf(w, "gdrcheck %s (commit %s, %s, %s)\n", vi.Version, vi.Commit, vi.GoVersion, vi.Platform)
	if vi.Commit == "unknown" {
		// Say how it was built rather than leave the reader guessing.
		fmt.Fprintln(w, "              built without version control information (go build -buildvcs=false, or from a copy outside the repository): scripts/build.sh stamps the version and commit")
	}
	for _, l := range []struct {
		name string
		s    app.LibraryState
	}{{"NVML", vi.NVML}, {"CUDA runtime", vi.CUDA}, {"NCCL", vi.NCCL}} {
		if l.s.Error != "" {
			// A multi-line reason (the places searched) as lines of its
			// own, each made printable, never as literal "\n".
			lines := strings.Split(strings.TrimRight(l.s.Error, "\n"), "\n")
			fmt.Fprintf(w, "%-13s not available: %s\n", l.name+":", printable.Line(lines[0]))
			for _, x := range lines[1:] {
				fmt.Fprintf(w, "%-13s   %s\n", "", printable.Line(strings.TrimSpace(x)))
			}
			continue
		}
		fmt.Fprintf(w, "%-13s %s (%s)", l.name+":", printable.Line(l.s.Version), printable.Line(l.s.Path))
		if l.s.Detail != "" {
			fmt.Fprintf(w, "; %s", printable.Line(l.s.Detail))
		}
		fmt.Fprintln(w)
	}
	return nil
}
