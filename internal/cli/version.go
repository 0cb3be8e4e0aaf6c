package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/collect/nvml"
)

// VersionInfo is what `gdrcheck version` reports.
type VersionInfo struct {
	Version   string       `json:"version"`
	Commit    string       `json:"commit"`
	GoVersion string       `json:"go_version"`
	Platform  string       `json:"platform"`
	NVML      LibraryState `json:"nvml"`
	CUDA      LibraryState `json:"cuda_runtime"`
	NCCL      LibraryState `json:"nccl"`
}

// LibraryState is one vendor library: its version, or why it is not there.
type LibraryState struct {
	Loaded  bool   `json:"loaded"`
	Version string `json:"version,omitempty"`
	Path    string `json:"path,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Error   string `json:"error,omitempty"`
}

func (g *globals) buildInfo() (version, commit string) {
	version, commit = g.build.Version, g.build.Commit
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && commit == "" {
				commit = s.Value
				if len(commit) > 12 {
					commit = commit[:12]
				}
			}
			if s.Key == "vcs.modified" && s.Value == "true" && commit != "" {
				commit += "-dirty"
			}
		}
	}
	if version == "" {
		version = "devel"
	}
	if commit == "" {
		commit = "unknown"
	}
	return version, commit
}

func collectVersions(ctx context.Context, g *globals) VersionInfo {
	v, c := g.buildInfo()
	vi := VersionInfo{Version: v, Commit: c, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
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
			vi := collectVersions(cmd.Context(), g)
			if format == "json" {
				return writeJSON(g.out, vi)
			}
			fmt.Fprintf(g.out, "gdrcheck %s (commit %s, %s, %s)\n", vi.Version, vi.Commit, vi.GoVersion, vi.Platform)
			for _, l := range []struct {
				name string
				s    LibraryState
			}{{"NVML", vi.NVML}, {"CUDA runtime", vi.CUDA}, {"NCCL", vi.NCCL}} {
				if l.s.Error != "" {
					fmt.Fprintf(g.out, "%-13s not available: %s\n", l.name+":", l.s.Error)
					continue
				}
				fmt.Fprintf(g.out, "%-13s %s (%s)", l.name+":", l.s.Version, l.s.Path)
				if l.s.Detail != "" {
					fmt.Fprintf(g.out, "; %s", l.s.Detail)
				}
				fmt.Fprintln(g.out)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}
