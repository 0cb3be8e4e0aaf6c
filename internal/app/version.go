package app

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
