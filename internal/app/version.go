package app

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/collect/libs"
	"github.com/gdrcheck/gdrcheck/internal/collect/nvml/live"
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

// Versions is `gdrcheck version`: this build, and the NVML, CUDA runtime
// and NCCL this process can load (each probe under one 20 s deadline).
func (s *Session) Versions(ctx context.Context) VersionInfo {
	vi := VersionInfo{Version: s.Tool.Version, Commit: s.Tool.Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	f, err := live.New(live.WithoutSMIFallback()).Collect(ctx)
	if err != nil {
		vi.NVML.Error = err.Error()
	} else {
		vi.NVML = LibraryState{Loaded: true, Version: f.NVMLVersion, Path: "libnvidia-ml.so.1",
			Detail: fmt.Sprintf("driver %s, CUDA driver API %s, %d GPU(s)", f.DriverVersion, f.CUDADriverVersion, len(f.GPUs))}
	}
	vi.CUDA = LibraryState(libs.CUDARuntime(ctx))
	vi.NCCL = LibraryState(libs.NCCL())
	return vi
}
