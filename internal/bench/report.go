package bench

import (
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/model"
)

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
	// Job is a multi-process run's ranks and failures (rank 0's document
	// only); Measurements are then CombineRanks of the ranks' own.
	Job *JobReport `json:"job,omitempty"`
	// Expected is what the measurements were judged against; nil when
	// they were not judged or there was no model of the node.
	Expected *Expected `json:"expected,omitempty"`
	Notes    []string  `json:"notes,omitempty"`
}

// CopyReport is the data of `gdrcheck bench copy`.
type CopyReport struct {
	Complete     bool         `json:"complete"`
	Error        string       `json:"error,omitempty"`
	CUDARuntime  string       `json:"cuda_runtime"`
	CUDADriver   string       `json:"cuda_driver"`
	Devices      []Device     `json:"devices"`
	Measurements []CopyResult `json:"measurements"`
	Expected     *Expected    `json:"expected,omitempty"`
}

// Expected is what a benchmark's measurements were judged against: the
// hardware as it should be (Should: the catalogue's GPU, and the site
// profile where one was given) and the node as found (Found), whose
// prediction explains a shortfall (Deviations name how Found falls short).
type Expected struct {
	// Source says where Should came from: "catalogue", "catalogue + site
	// profile FILE", or the node as found when its GPU is not in the
	// catalogue.
	Source string `json:"basis"`
	// Hardware is Should in words: "8×H200 with 18 NVLinks".
	Hardware string `json:"hardware"`
	model.Basis
}

// NewExpected names the basis b of a judgement; profile is the site
// profile's path ("" none).
func NewExpected(b model.Basis, profile string) *Expected {
	return &Expected{Source: b.Source(profile), Hardware: b.Should.Name(), Basis: b}
}

// Line is the expectation in one line: "8×H200 with 18 NVLinks (catalogue
// + site profile site.yaml); as found: 16 NVLinks".
func (e *Expected) Line() string {
	s := fmt.Sprintf("%s (%s)", e.Hardware, e.Source)
	if len(e.Deviations) > 0 {
		s += "; as found: " + strings.Join(e.Deviations, ", ")
	}
	return s
}
