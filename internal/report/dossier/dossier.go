// Package dossier is the commissioning dossier's document: report.json
// ("gdrcheck.report/v1"), the one file that says what a node is, how it is
// connected, what was checked and measured against what it should reach,
// and the node's verdict; and the renderers of its other files
// (report.md, junit.xml, metrics.prom, SHA256SUMS).
//
// The document is a report.Envelope: schema, run (tool version and commit,
// the host it ran on, start and end time, the command line) and results
// (every verdict: the readiness checks', the benchmarks' judgements and
// the NCCL log analysis's), followed by the members of Document. The
// package is pure: app gathers the facts and builds the Document; the
// renderers here only read it. docs/schema/report.schema.json is its
// published JSON Schema, and docs/dossier.md describes it.
package dossier

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// Command is the document's name in its schema: "gdrcheck.report/v1".
const Command = "report"

// Schema is the schema of report.json.
var Schema = report.Schema(Command)

// Document is report.json's own members, after the envelope's schema, run
// and results.
type Document struct {
	// Complete is false when the run was cut short (Interrupted says why)
	// or a phase could not finish: what is here was measured, what is
	// missing was not.
	Complete    bool   `json:"complete"`
	Interrupted string `json:"interrupted,omitempty"`
	// Profile is the run's profile: quick, standard or full.
	Profile string `json:"profile"`
	// Expect is the site profile the node was judged against ("" none).
	Expect string `json:"expect,omitempty"`
	// Verdict is the node's one answer over every result (checks.Judge).
	Verdict      checks.Verdict `json:"verdict"`
	Inventory    Inventory      `json:"inventory"`
	Topology     Topology       `json:"topology"`
	Checks       Checks         `json:"checks"`
	Measurements Measurements   `json:"measurements"`
	// NCCL is what NCCL's own logs of the benchmark runs say: versions,
	// the transports every connection used, GPU Direct RDMA.
	NCCL []NCCLRun `json:"nccl"`
	// Jobs are the jobs of several nodes brought in with run --include:
	// which of their ranks ran here and what they reached.
	Jobs []Job `json:"jobs,omitempty"`
	// Burn is the burn-in (profile burnin): nil when none ran.
	Burn      *Burn      `json:"burn,omitempty"`
	Phases    []Phase    `json:"phases"`
	Artifacts []Artifact `json:"artifacts"`
}

// Inventory is what the node is made of, with serials, firmware and
// versions.
type Inventory struct {
	// Host is the judged node's name (from its snapshot when one was
	// read), Root what was read ("/" live).
	Host           string `json:"host"`
	Kernel         string `json:"kernel,omitempty"`
	Root           string `json:"root"`
	Driver         string `json:"driver_version,omitempty"`
	CUDADriver     string `json:"cuda_driver_version,omitempty"`
	NVML           string `json:"nvml_version,omitempty"`
	GPUFactsSource string `json:"gpu_facts_source,omitempty"`
	// GPUFactsError says why the driver's facts (serials, UUIDs, NVLink)
	// could not be had.
	GPUFactsError string  `json:"gpu_facts_error,omitempty"`
	CUDARuntime   Library `json:"cuda_runtime"`
	NCCL          Library `json:"nccl"`
	// RDMACore and MLX5Core are the user-space RDMA library and the mlx5
	// driver versions where they were read.
	RDMACore   string   `json:"rdma_core_version,omitempty"`
	MLX5Core   string   `json:"mlx5_core_version,omitempty"`
	GPUs       []GPU    `json:"gpus"`
	NICs       []NIC    `json:"nics"`
	NVSwitches []string `json:"nvswitches"`
	// NotCollected names facts this release does not read, so that their
	// absence is not read as "none".
	NotCollected []string `json:"not_collected,omitempty"`
}

// Library is a vendor library: its version, or why it is not there
// (Probed false: nobody looked).
type Library struct {
	Probed  bool   `json:"probed"`
	Loaded  bool   `json:"loaded"`
	Version string `json:"version,omitempty"`
	Path    string `json:"path,omitempty"`
	Error   string `json:"error,omitempty"`
}

// GPU is one GPU's identity and where it sits.
type GPU struct {
	Index        int     `json:"index"`
	BusID        string  `json:"bus_id"`
	Name         string  `json:"name,omitempty"`
	UUID         string  `json:"uuid,omitempty"`
	Serial       string  `json:"serial,omitempty"`
	Architecture string  `json:"architecture,omitempty"`
	MemoryMiB    *uint64 `json:"memory_mib,omitempty"`
	NUMA         int     `json:"numa_node"`
	// PCIe is the link as sysfs reports it.
	PCIe          topology.Link `json:"pcie"`
	NVLinksActive int           `json:"nvlinks_active"` // -1 unknown
	NVLinksTotal  int           `json:"nvlinks_total"`  // -1 unknown
	// NVLinksExpected is how many NVLinks the catalogue says this GPU has
	// (SXM parts; 0 not known): the driver's total counts only the links
	// it reports, so a GPU with a bundle down can read "10 / 10".
	NVLinksExpected int `json:"nvlinks_expected,omitempty"`
}

// NIC is one RDMA NIC: identity, firmware and ports.
type NIC struct {
	Name     string `json:"name"`
	BusID    string `json:"bus_id,omitempty"`
	HCAType  string `json:"hca_type,omitempty"`
	BoardID  string `json:"board_id,omitempty"`
	Firmware string `json:"firmware,omitempty"`
	NodeGUID string `json:"node_guid,omitempty"`
	Driver   string `json:"driver,omitempty"`
	NUMA     int    `json:"numa_node"`
	// Upstream are the PCI bridges above the NIC, nearest first, as
	// "ADDRESS (PORT TYPE)" like topology.GPUSummary's: where report.html
	// draws it in the PCI tree.
	Upstream []string `json:"upstream,omitempty"`
	Ports    []Port   `json:"ports"`
}

// Port is one NIC port.
type Port struct {
	Number    int     `json:"port"`
	State     string  `json:"state"`
	PhysState string  `json:"phys_state"`
	LinkLayer string  `json:"link_layer"`
	RateGbps  float64 `json:"rate_gbps"` // 0 unknown
	Rate      string  `json:"rate,omitempty"`
	NetDev    string  `json:"netdev,omitempty"`
	MTU       int     `json:"mtu,omitempty"`
}

// Topology is how the node is connected: the discovered summary (the
// matrix, the GPU→NIC pairing), and for each GPU its data path hop by hop
// and its links to the other GPUs, each judged from the evidence.
type Topology struct {
	Summary   *topology.Summary `json:"summary"`
	DataPaths []DataPath        `json:"data_paths"`
	GPULinks  []GPULink         `json:"gpu_links"`
}

// GDR states of a data path.
const (
	GDREnabled  = "enabled"   // a NIC within GDR reach, and GPU memory can be registered
	GDRPathOnly = "path-only" // placed for GDR, but nothing can register GPU memory
	GDRNoPath   = "no-path"   // the NIC is too far for GDR (beyond PXB)
	GDRNoNIC    = "no-nic"    // no RDMA NIC to pair with
)

// DataPath is one GPU's path to the fabric: GPU memory → PCIe switches →
// NIC → port → fabric.
type DataPath struct {
	GPU      int    `json:"gpu"`
	GPUBusID string `json:"gpu_bus_id"`
	NIC      string `json:"nic,omitempty"`
	Port     int    `json:"port,omitempty"`
	// Level is the PCIe relation of GPU and NIC (PIX, PXB, PHB, NODE, SYS).
	Level string `json:"level"`
	// GDR is one of GDREnabled, GDRPathOnly, GDRNoPath, GDRNoNIC; GDRWhy
	// says why when it is not enabled.
	GDR    string `json:"gdr"`
	GDRWhy string `json:"gdr_why,omitempty"`
	// GDRUsed is how the included jobs' traffic from this GPU moved its
	// memory across the fabric, as NCCL logged it (GDRUsedDirect,
	// GDRUsedHostStaged, GDRUsedMixed, GDRUsedUnknown); absent when no
	// job reached another node from it.
	GDRUsed string `json:"gdr_used,omitempty"`
	// Status is the worst of the hops'.
	Status result.Status `json:"status"`
	// Proof is the weakest of the hops' proof levels.
	Proof result.Proof `json:"proof"`
	Hops  []Hop        `json:"hops"`
}

// Hop kinds, in the order a path runs.
const (
	HopGPUMemory  = "gpu-memory"
	HopPCIeSwitch = "pcie-switch"
	HopRootPort   = "root-port"
	HopHostBridge = "host-bridge"
	HopNIC        = "nic"
	// HopRegistration is GPU memory registered with the NIC (nvidia-peermem
	// or dma-buf): what makes the path GPU Direct RDMA.
	HopRegistration = "registration"
	HopPort         = "port"
	HopFabric       = "fabric"
)

// Hop is one stage of a data path. Status is the worst of the results and
// measurements its Evidence names; unknown when none judged it (a hop
// nobody looked at is never a pass).
type Hop struct {
	Kind   string        `json:"kind"`
	Name   string        `json:"name"`
	Detail string        `json:"detail,omitempty"`
	Status result.Status `json:"status"`
	// Proof is how the hop was established (result.ProofMeasured, result.ProofChecked,
	// result.ProofNotExercised, result.ProofFailed), from the kinds and statuses of its
	// evidence.
	Proof result.Proof `json:"proof"`
	// Evidence are references: "result:ID SUBJECT" (a result in the
	// envelope's results, by result.Result.Ref), "measurement:ID" (a
	// measurement's ID) or "nccl:RUN" (an NCCL run's analysis).
	Evidence []string `json:"evidence"`
}

// GPULink is one pair of GPUs: how they are connected and what was seen.
type GPULink struct {
	A int `json:"a"`
	B int `json:"b"`
	// Level is the topo -m relation (NV#, PIX, PXB, PHB, NODE, SYS).
	Level   string        `json:"level"`
	NVLinks int           `json:"nvlinks"` // -1 unknown
	Status  result.Status `json:"status"`
	// Proof as in Hop.
	Proof result.Proof `json:"proof"`
	// Evidence as in Hop.
	Evidence []string `json:"evidence"`
}

// Evidence reference prefixes.
const (
	RefResult      = "result:"
	RefMeasurement = "measurement:"
	RefNCCL        = "nccl:"
)

// ResultRef is the reference to r.
func ResultRef(r result.Result) string { return RefResult + r.Ref() }

// Checks is the readiness checks' own outcome; their results are in the
// envelope's results (source "check").
type Checks struct {
	Counts     result.Counts     `json:"counts"`
	DurationMS float64           `json:"duration_ms"`
	Checks     []checks.CheckRun `json:"checks"`
}

// Measurements are the benchmarks' numbers, each beside what the model
// expects of this node as it should be.
type Measurements struct {
	// Basis says what the expectations are of (the catalogue's hardware,
	// the site profile), "" when there is no model.
	Basis string `json:"basis,omitempty"`
	// Pass is the fraction of expected that passes.
	Pass        float64                 `json:"pass_fraction"`
	Collectives []CollectiveMeasurement `json:"collectives"`
	Copies      []CopyMeasurement       `json:"copies"`
	// RDMA are the bench rdma runs of this node's GPU–NIC pairs (the
	// bench.rdma phase's and included ones'); absent when none ran.
	RDMA []RDMAMeasurement `json:"rdma,omitempty"`
	// Curves are the model's expected bus bandwidth against size, one per
	// collective measured, for plotting beside the measurements.
	Curves []Curve `json:"curves"`
}

// ComparedBandwidth is the bandwidth a collective's measurements are
// compared and drawn by: its bus bandwidth, or on one rank (where the bus
// factor is 0 by definition and NCCL does nothing in place) its algorithm
// bandwidth; algorithm says which.
func ComparedBandwidth(ranks int, busbw, algbw float64) (gbps float64, algorithm bool) {
	if ranks <= 1 {
		return algbw, true
	}
	return busbw, false
}

// CollectiveMeasurement is one NCCL collective at one size (nccl-tests'
// out-of-place numbers).
type CollectiveMeasurement struct {
	// ID is "nccl.COLLECTIVE.BYTES", the measurement's reference.
	ID         string  `json:"id"`
	Collective string  `json:"collective"`
	Ranks      int     `json:"ranks"`
	Bytes      uint64  `json:"bytes"`
	TimeUS     float64 `json:"time_us"`
	AlgBW      float64 `json:"algbw_gbps"`
	BusBW      float64 `json:"busbw_gbps"`
	// InPlaceBusBW is the in-place run's; 0 when not measured.
	InPlaceBusBW float64 `json:"in_place_busbw_gbps,omitempty"`
	// ExpectedBusBW is the model's for this size, Fraction measured over
	// expected; both absent when there is no model (Status unknown then).
	ExpectedBusBW *float64 `json:"expected_busbw_gbps,omitempty"`
	Fraction      *float64 `json:"fraction,omitempty"`
	// Interval is where a healthy measurement of this size may lie, from
	// the public runs of the prediction's class (docs/model.md); absent
	// with no model, or for a prediction no class covers.
	Interval *Interval `json:"expected_interval,omitempty"`
	// Bottleneck is what the model says limits this size.
	Bottleneck string        `json:"bottleneck,omitempty"`
	Status     result.Status `json:"status"`
	Wrong      int64         `json:"wrong"`
	// Run names the NCCL run (NCCLRun.Name) whose logs hold its transports.
	Run string `json:"run,omitempty"`
	// Nodes is the number of nodes of an included job's row (absent: this
	// node alone); Variant is the collective's variant ("hierarchical").
	Nodes   int    `json:"nodes,omitempty"`
	Variant string `json:"variant,omitempty"`
}

// Interval is the model's interval around an expected bus bandwidth.
type Interval struct {
	LowBusBW  float64 `json:"low_busbw_gbps"`
	HighBusBW float64 `json:"high_busbw_gbps"`
	// Class is the prediction's evidence class; Runs the public runs it
	// rests on; Basis what its width is from ("no public calibration").
	Class string `json:"class"`
	Runs  int    `json:"runs"`
	Basis string `json:"basis"`
}

// RDMAMeasurement is one perftest run of a GPU–NIC pair: its memory
// (host, cuda, cuda-dmabuf) moved through the NIC to itself (loopback) or
// to another node (cross-node).
type RDMAMeasurement struct {
	// ID is "JOB.GPUn-NIC.MEMORY", the measurement's reference.
	ID     string `json:"id"`
	Job    string `json:"job"`
	Test   string `json:"test"`
	GPU    int    `json:"gpu"`
	NIC    string `json:"nic"`
	Port   int    `json:"port"`
	Memory string `json:"memory"`
	// Peer is the other end of a cross-node rail; "" a loopback.
	Peer      string  `json:"peer,omitempty"`
	Gbps      float64 `json:"gbps"`
	LatencyUS float64 `json:"latency_us,omitempty"`
	// Status is the run's judgement (bench.rdma's result); Error why it
	// measured nothing.
	Status result.Status `json:"status"`
	Error  string        `json:"error,omitempty"`
}

// CopyMeasurement is one copy benchmark.
type CopyMeasurement struct {
	// ID is "copy.TEST.GPUa" or "copy.TEST.GPUa-GPUb".
	ID     string  `json:"id"`
	Test   string  `json:"test"`
	Device int     `json:"device"`
	Peer   int     `json:"peer"` // -1 unless GPU to GPU
	Bytes  uint64  `json:"bytes"`
	GBps   float64 `json:"gbps"`
	// TimeUS is one copy's time: the latency test's number (its GBps is
	// not the point); 0 when not recorded.
	TimeUS float64 `json:"time_us,omitempty"`
	// ExpectedGBps is the model's, in the terms of GBps (a bidirectional
	// copy counts both directions); Fraction measured over expected.
	ExpectedGBps *float64 `json:"expected_gbps,omitempty"`
	Fraction     *float64 `json:"fraction,omitempty"`
	// LimitGBps is the hardware limit the copy runs against, Limit names it.
	LimitGBps float64       `json:"limit_gbps,omitempty"`
	Limit     string        `json:"limit,omitempty"`
	Status    result.Status `json:"status"`
	Valid     bool          `json:"valid"`
	Error     string        `json:"error,omitempty"`
}

// Curve is the model's expected bus bandwidth of one collective against
// message size.
type Curve struct {
	Collective string       `json:"collective"`
	Ranks      int          `json:"ranks"`
	Points     []CurvePoint `json:"points"`
}

// CurvePoint is one size of a Curve.
type CurvePoint struct {
	Bytes     uint64  `json:"bytes"`
	BusBW     float64 `json:"busbw_gbps"`
	AlgBW     float64 `json:"algbw_gbps"`
	Algorithm string  `json:"algorithm"`
}

// NCCLRun is what NCCL's own log of one benchmark run says.
type NCCLRun struct {
	Name string `json:"name"`
	// Logs are the artifacts analysed (Artifact.Name).
	Logs     []string `json:"logs"`
	Versions []string `json:"versions"`
	// Network is the network NCCL chose ("IB", "Socket"), if any.
	Network    []string    `json:"network,omitempty"`
	Transports []Transport `json:"transports"`
	GDR        NCCLGDR     `json:"gdr"`
	Errors     int64       `json:"errors"`
	Warnings   int64       `json:"warnings"`
	// Results are the IDs of this run's verdicts in the envelope's results
	// (source "nccl-log"), by reference.
	Results []string `json:"results"`
}

// Transport is one transport NCCL's channels used, with line counts.
type Transport struct {
	Transport string `json:"transport"`
	Class     string `json:"class"` // p2p, shm, net, collnet, nvls, other
	Lines     int64  `json:"lines"`
	Intra     int64  `json:"intra_node"`
	Inter     int64  `json:"inter_node"`
}

// NCCLGDR is what NCCL said about GPU Direct RDMA.
type NCCLGDR struct {
	DMABuf bool `json:"dmabuf"`
	// HCAs are "NAME enabled|disabled" per NIC NCCL reported on.
	HCAs []string `json:"hcas,omitempty"`
	// GPUs are "GPU/HCA enabled|disabled" lines.
	GPUs []string `json:"gpus,omitempty"`
}

// Phase statuses.
const (
	PhaseDone        = "done"
	PhaseSkipped     = "skipped"
	PhaseFailed      = "failed"
	PhaseInterrupted = "interrupted"
)

// Phase is one stage of the run: discovery, checks, bench.copy,
// bench.nccl, nccl-logs, model, verdict.
type Phase struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Reason says why a phase was skipped, failed or was interrupted.
	Reason     string    `json:"reason,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS float64   `json:"duration_ms"`
}

// Artifact is one file of the dossier beside report.json: a raw NCCL log,
// a tool's output, a benchmark's results.
type Artifact struct {
	Name string `json:"name"`
	// Path is relative to the dossier, with forward slashes.
	Path   string `json:"path"`
	Kind   string `json:"kind"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Report is report.json as read back: the envelope's members and the
// Document's, in one struct.
type Report struct {
	Schema  string          `json:"schema"`
	Run     report.Run      `json:"run"`
	Results []result.Result `json:"results"`
	Document
}

// Envelope is r as the envelope it is written as.
func (r *Report) Envelope() *report.Envelope {
	return &report.Envelope{Schema: r.Schema, Run: r.Run, Results: r.Results, Data: &r.Document}
}

// WriteJSON writes r as report.json.
func (r *Report) WriteJSON(w io.Writer) error { return report.WriteJSON(w, r.Envelope()) }

// Decode reads report.json, refusing another schema. A decoding error
// keeps encoding/json's offset and field, and the field is the document's
// path ("inventory.gpus", not Go's "Document.inventory.gpus").
func Decode(rd io.Reader) (*Report, error) {
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	var head struct {
		Schema  string          `json:"schema"`
		Run     report.Run      `json:"run"`
		Results []result.Result `json:"results"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("report.json: %w", err)
	}
	if head.Schema != Schema {
		return nil, fmt.Errorf("report.json: schema %q, want %q", head.Schema, Schema)
	}
	r := Report{Schema: head.Schema, Run: head.Run, Results: head.Results}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&r.Document); err != nil {
		return nil, fmt.Errorf("report.json: %w", err)
	}
	return &r, nil
}
