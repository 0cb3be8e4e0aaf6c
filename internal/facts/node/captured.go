package node

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// ParseEnviron reads KEY=VALUE lines.
func ParseEnviron(b []byte) map[string]string {
	return FilterEnviron(strings.Split(string(b), "\n"))
}

// FormatEnviron writes KEY=VALUE lines, sorted.
func FormatEnviron(m map[string]string) []byte {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k + "=" + m[k] + "\n")
	}
	return []byte(b.String())
}

// Libraries are the user-space libraries the job loads.
type Libraries struct {
	CUDARuntime Library
	NCCL        Library
}

// Library is one vendor library: its version, or why it is not there.
type Library struct {
	Loaded  bool
	Version string
	Path    string
	// Detail is more about the version (the CUDA version the driver
	// supports); it is not kept in snapshots.
	Detail string
	Error  string
}

// The keys of snapshot.LibrariesFile: the version under the library's key, its
// path and its load error under key+"_path" and key+"_error".
const (
	cudartKey = "cudart"
	ncclKey   = "nccl"
)

// Marshal writes the libraries in snapshot.LibrariesFile's form.
func (l *Libraries) Marshal() ([]byte, error) {
	m := map[string]string{}
	for key, lib := range map[string]Library{cudartKey: l.CUDARuntime, ncclKey: l.NCCL} {
		if lib.Path != "" {
			m[key+"_path"] = lib.Path
		}
		if lib.Error != "" {
			m[key+"_error"] = lib.Error
		} else {
			m[key] = lib.Version
		}
	}
	return json.MarshalIndent(m, "", "  ")
}

// ParseLibraries reads snapshot.LibrariesFile.
func ParseLibraries(b []byte) (*Libraries, error) {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	lib := func(key string) Library {
		v, ok := m[key]
		return Library{Loaded: ok, Version: v, Path: m[key+"_path"], Error: m[key+"_error"]}
	}
	return &Libraries{CUDARuntime: lib(cudartKey), NCCL: lib(ncclKey)}, nil
}
