package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/collect/nvml"
	"github.com/gdrcheck/gdrcheck/internal/report/printable"
)

// LibraryState is app.LibraryState under the name the library probes of
// this package use.
type LibraryState = app.LibraryState

func collectVersions(ctx context.Context, g *globals) app.VersionInfo {
	t := g.session.Tool
	vi := app.VersionInfo{Version: t.Version, Commit: t.Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	nctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	f, err := nvml.New(nvml.WithoutSMIFallback()).Collect(nctx)
	if err != nil {
		vi.NVML.Error = err.Error()
	} else {
		vi.NVML = LibraryState{Loaded: true, Version: f.NVMLVersion, Path: "libnvidia-ml.so.1",
			Detail: fmt.Sprintf("driver %s, CUDA driver API %s, %d GPU(s)", f.DriverVersion, f.CUDADriverVersion, len(f.GPUs))}
	}
	vi.CUDA = cudaState(nctx)
	vi.NCCL = ncclState()
	return vi
}

func newVersion(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print gdrcheck's version and the NVML, CUDA and NCCL libraries it can load",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			collect := func() (app.VersionInfo, error) { return collectVersions(cmd.Context(), g), nil }
			return writeTextOrJSON(g, "version", format, collect, writeVersionText)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

func writeVersionText(w io.Writer, vi app.VersionInfo) error {
	fmt.Fprintf(w, "gdrcheck %s (commit %s, %s, %s)\n", vi.Version, vi.Commit, vi.GoVersion, vi.Platform)
	for _, l := range []struct {
		name string
		s    LibraryState
	}{{"NVML", vi.NVML}, {"CUDA runtime", vi.CUDA}, {"NCCL", vi.NCCL}} {
		if l.s.Error != "" {
			fmt.Fprintf(w, "%-13s not available: %s\n", l.name+":", printable.Line(l.s.Error))
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
