// Package perftest reads the output of the linux-rdma perftest tools
// (ib_write_bw, ib_read_bw, ib_send_bw, the _lat latency tools), text or
// --out_json, host or GPU memory (--use_cuda, --use_cuda_dmabuf), client and
// server sides concatenated or interleaved, in MB/s or Gb/s. It reports the
// rows, link type, MTU, the memory used and the best average bandwidth in
// Gb/s, and verdicts on the run, the bandwidth and the GPU memory path.
package perftest

import (
	"bytes"
	"io"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Kind is the analyzer kind name.
const Kind = "perftest"

// Report is what one perftest output says.
type Report struct {
	Format string `json:"format"` // text or json
	// Paste says which paste prefixes were removed and which lines were
	// skipped (code fences of an issue) before the lines were read.
	Paste   *textio.PasteNote `json:"paste,omitempty"`
	Tool    string            `json:"tool,omitempty"`
	Command string            `json:"command,omitempty"`
	// Test is the title perftest prints ("RDMA_Write BW Test").
	Test string `json:"test,omitempty"`
	// Type is "bw" or "lat".
	Type   string `json:"type"`
	Device string `json:"device,omitempty"`
	// LinkType is "IB" or "Ethernet" (RoCE).
	LinkType       string `json:"link_type,omitempty"`
	Transport      string `json:"transport,omitempty"`
	ConnectionType string `json:"connection_type,omitempty"`
	QPs            int    `json:"qps,omitempty"`
	MTU            int    `json:"mtu,omitempty"`
	// MTULowered is true when perftest said "Requested mtu is higher than
	// active mtu" and fell back to the port's active MTU.
	MTULowered bool              `json:"mtu_lowered,omitempty"`
	RDMACM     bool              `json:"rdma_cm,omitempty"`
	Params     map[string]string `json:"params,omitempty"`
	// Sides counts the result tables (2 when client and server outputs are
	// both in the file); Server is true when the server's banner is there.
	Sides  int    `json:"sides"`
	Server bool   `json:"server,omitempty"`
	Memory Memory `json:"memory"`
	// Unit is the bandwidth unit as printed: "Gb/sec", "MB/sec", "MiB/sec".
	Unit         string   `json:"unit,omitempty"`
	DurationMode bool     `json:"duration_mode,omitempty"`
	Rows         []Row    `json:"rows,omitempty"`
	LatRows      []LatRow `json:"lat_rows,omitempty"`
	// PeakAvgGbps is the best "BW average" in Gb/s whatever unit was
	// printed; PeakAvgBytes its message size. PeakGbps is the best "BW peak".
	PeakAvgGbps  float64        `json:"peak_avg_gbps"`
	PeakAvgBytes int64          `json:"peak_avg_bytes,omitempty"`
	PeakGbps     float64        `json:"peak_gbps,omitempty"`
	Errors       []textio.Quote `json:"errors,omitempty"`
	Warnings     []textio.Quote `json:"warnings,omitempty"`
}

// Memory is where the test buffers lived.
type Memory struct {
	// Kind is "host", "cuda" or "rocm".
	Kind string `json:"kind"`
	// Registration of GPU memory with the NIC: "dma-buf" (ibv_reg_dmabuf_mr)
	// or "peermem" (ibv_reg_mr on device memory, through nvidia-peermem).
	Registration string `json:"registration,omitempty"`
	// DMABufRequested is true when the command line asked for --use_cuda_dmabuf.
	DMABufRequested bool           `json:"dmabuf_requested,omitempty"`
	GPU             string         `json:"gpu,omitempty"`
	GPUBusID        string         `json:"gpu_bus_id,omitempty"`
	Integrated      bool           `json:"integrated,omitempty"`
	Evidence        []textio.Quote `json:"evidence,omitempty"`
}

// Row is one bandwidth result line.
type Row struct {
	Bytes      int64   `json:"bytes"`
	Iterations int64   `json:"iterations"`
	BWPeak     float64 `json:"bw_peak"`    // as printed
	BWAverage  float64 `json:"bw_average"` // as printed
	MsgRate    float64 `json:"msg_rate_mpps"`
	PeakGbps   float64 `json:"peak_gbps"`
	AvgGbps    float64 `json:"avg_gbps"`
	Line       int     `json:"line"`
}

// LatRow is one latency result line (microseconds).
type LatRow struct {
	Bytes      int64    `json:"bytes"`
	Iterations int64    `json:"iterations"`
	Min        *float64 `json:"t_min_us,omitempty"`
	Max        *float64 `json:"t_max_us,omitempty"`
	Typical    *float64 `json:"t_typical_us,omitempty"`
	Avg        *float64 `json:"t_avg_us,omitempty"`
	Stdev      *float64 `json:"t_stdev_us,omitempty"`
	P99        *float64 `json:"p99_us,omitempty"`
	P999       *float64 `json:"p99_9_us,omitempty"`
	Line       int      `json:"line"`
}

// field is where a latency column goes, by its name in the text header
// (t_min, p99.9) or in --out_json (percentile_99.9, avg_lat); nil for
// other columns.
func (r *LatRow) field(col string) **float64 {
	switch col {
	case "t_min":
		return &r.Min
	case "t_max":
		return &r.Max
	case "t_typical":
		return &r.Typical
	case "t_avg", "avg_lat":
		return &r.Avg
	case "t_stdev":
		return &r.Stdev
	case "p99", "percentile_99":
		return &r.P99
	case "p99.9", "percentile_99.9":
		return &r.P999
	}
	return nil
}

var (
	reDetectTitle  = textio.MustCompile(`(?m)^\s*(?:RDMA_Write|RDMA_Read|Send|Atomic|Raw Ethernet|RDMA Write|RDMA Read)[\w ]*\s(?:BW|Latency|Lat)\s+Test\s*$`)
	reDetectResult = textio.MustCompile(`(?m)^\s*#bytes\s+(?:#sl\s+)?#iterations\s+(?:BW peak|t_min|t_avg)`)
	reDetectTool   = textio.MustCompile(`\bib_(?:write|read|send|atomic)_(?:bw|lat)\b`)
	// reDetectMsg: with a perftest tool's name, a line only perftest
	// prints, including those of a run that dies before its test banner
	// (its GPU buffer set-up, a memory registration failure, rdma_cm).
	reDetectMsg = textio.MustCompile(`#bytes|Couldn't connect to|Unable to init the socket connection|Waiting for client to connect|Completion with error|Failed status \d+|No IB devices found|Couldn't get device|Couldn't (?:allocate|register) MR|Failed to create MR|Couldn't create IB resources|Failed to initialize RDMA contexts|Failed to handle RDMA CM event|allocated GPU buffer (?:address|of)`)
)

// Detect reports whether head looks like perftest output.
func Detect(head []byte) bool {
	if textio.StartsJSON(head) {
		return bytes.Contains(head, []byte(`"test_info"`)) && (bytes.Contains(head, []byte(`"results"`)) || bytes.Contains(head, []byte(`"Link_type"`)))
	}
	if reDetectTitle.Match(head) || reDetectResult.Match(head) {
		return true
	}
	return reDetectTool.Match(head) && reDetectMsg.Match(head)
}

// Analyze reads a whole perftest output.
func Analyze(name string, r io.Reader) (*Report, []result.Result, error) {
	rep, err := textio.TextOrJSON(name, r, analyzeText, analyzeJSON)
	if err != nil {
		return nil, nil, err
	}
	finish(rep)
	vs := verdicts(name, rep)
	result.SetSource(vs, Kind)
	return rep, vs, nil
}
