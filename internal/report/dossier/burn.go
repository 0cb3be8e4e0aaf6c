package dossier

import (
	"time"

	"github.com/gdrcheck/gdrcheck/internal/burn"
)

// Burn is the burn-in's part of the dossier (run --profile burnin, or
// gdrcheck burn): the workload window by window, what the GPUs did under
// it, and every sampled device's error counters per window. The verdicts
// are among the report's results (burn.*); this section is their
// evidence, laid out in time.
type Burn struct {
	Duration string `json:"duration"`
	Window   string `json:"window"`
	// Complete is false while the burn-in runs and when it was cut short
	// (Stopped says why): the windows here were sampled and judged, the
	// rest were not.
	Complete bool   `json:"complete"`
	Stopped  string `json:"stopped,omitempty"`
	// Path is burn.json's path in the dossier; with the samples beside it,
	// it is what `gdrcheck burn --replay` judges again.
	Path    string       `json:"path"`
	Windows []BurnWindow `json:"windows"`
	// Timeline has a row per device whose counters were sampled (RDMA
	// ports, the GPUs, NICs and bridges on their paths) and a cell per
	// window.
	Timeline []burn.TimelineRow `json:"timeline"`
	Notes    []string           `json:"notes,omitempty"`
}

// BurnWindow is one window of the burn-in.
type BurnWindow struct {
	Index int       `json:"index"` // 0-based
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Passes are the passes of copies in the window; Moved the bytes the
	// schedule charged to links; Wrong the bytes that came back wrong.
	Passes int    `json:"passes"`
	Moved  uint64 `json:"moved_bytes"`
	Wrong  int64  `json:"wrong_bytes"`
	// Copies are the last pass's rates, per test and GPU; NCCL the
	// window's checked pass of every collective.
	Copies []BurnRate `json:"copies"`
	NCCL   []BurnRate `json:"nccl,omitempty"`
	// RDMA are the GPU-memory loopbacks through the GPU–NIC pairs run
	// beside the copies (GBps their rate in GB/s; Name the memory kind,
	// GPU "GPU0>mlx5_0:1").
	RDMA []BurnRate `json:"rdma,omitempty"`
	// Job is the window's pass of every collective across the nodes of a
	// job (burn under a launcher), on GPU.
	Job []BurnRate `json:"job,omitempty"`
	// GPUs are the clocks, power and temperature read under the load.
	GPUs   []burn.GPUSensors `json:"gpus,omitempty"`
	Errors []string          `json:"errors,omitempty"`
}

// BurnRate is one copy test on one GPU (or pair), or one NCCL collective,
// in one window.
type BurnRate struct {
	// Name is the copy test ("bidir_pinned") or the collective
	// ("all_reduce").
	Name string `json:"name"`
	// GPU is the copy's GPU ("GPU0", a pair "GPU0>GPU1"); "" for NCCL,
	// which runs on all of them.
	GPU string `json:"gpu,omitempty"`
	// GBps is the copy's rate or the collective's bus bandwidth.
	GBps  float64 `json:"gbps"`
	Wrong int64   `json:"wrong"`
	Error string  `json:"error,omitempty"`
}
