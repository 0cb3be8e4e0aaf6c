package bench

// The documents of `gdrcheck bench nccl` and `gdrcheck bench copy`: the
// data of their results.json. Each is written inside a report.Envelope
// (schemas gdrcheck.bench-nccl/v1 and gdrcheck.bench-copy/v1) whose
// results are the judgements against the model and whose run member names
// the tool, the host, the times and the command line.

// Device is a GPU a benchmark ran on.
type Device struct {
	CUDA  int    `json:"cuda_device"`
	BusID string `json:"bus_id"`
	Name  string `json:"name"`
}

// NCCLReport is the data of `gdrcheck bench nccl`.
type NCCLReport struct {
	Complete     bool           `json:"complete"`
	Interrupted  bool           `json:"interrupted,omitempty"`
	Error        string         `json:"error,omitempty"`
	NCCL         string         `json:"nccl_version"`
	NCCLPath     string         `json:"nccl_path"`
	CUDARuntime  string         `json:"cuda_runtime"`
	CUDADriver   string         `json:"cuda_driver"`
	Devices      []Device       `json:"devices"`
	Config       map[string]any `json:"config"`
	Measurements []NCCLResult   `json:"measurements"`
	Evidence     *NCCLEvidence  `json:"nccl_evidence,omitempty"`
	Notes        []string       `json:"notes,omitempty"`
}

// CopyReport is the data of `gdrcheck bench copy`.
type CopyReport struct {
	Complete     bool         `json:"complete"`
	Error        string       `json:"error,omitempty"`
	CUDARuntime  string       `json:"cuda_runtime"`
	CUDADriver   string       `json:"cuda_driver"`
	Devices      []Device     `json:"devices"`
	Measurements []CopyResult `json:"measurements"`
}
