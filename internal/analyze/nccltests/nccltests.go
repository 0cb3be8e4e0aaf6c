// Package nccltests reads the output of NVIDIA's nccl-tests benchmarks
// (all_reduce_perf and friends): the text table, including runs whose lines
// are tagged by mpirun or srun, interleaved between ranks or glued to
// NCCL_DEBUG lines, and the -J JSON file. It reports every row, the
// averages, #wrong and out-of-bounds counts, and verdicts on correctness and
// bus bandwidth.
package nccltests

import (
	"bytes"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Kind is the analyzer kind name.
const Kind = "nccl-tests"

// Report is what one nccl-tests output says.
type Report struct {
	Format string  `json:"format"` // "text" or "json"
	Tests  []*Test `json:"tests"`
	// Streams counts the output streams seen (mpirun/srun rank tags; 1 when untagged).
	Streams int `json:"streams"`
	// NCCLLogLines counts NCCL_DEBUG lines mixed into the output.
	NCCLLogLines int `json:"nccl_log_lines"`
	// PartialRows lists rows that were started but never completed.
	PartialRows []textio.Quote `json:"partial_rows,omitempty"`
	// Paste says which paste prefixes were removed and which lines were
	// skipped (code fences of an issue) before the lines were read.
	Paste *textio.PasteNote `json:"paste,omitempty"`
	// Failures are "Test NCCL failure" / "Test CUDA failure" / "# error:" lines.
	Failures []textio.Quote `json:"failures,omitempty"`
	// Elided is true when the output contains a literal "..." line (rows cut by the author).
	Elided bool `json:"elided,omitempty"`
	// TruncatedLines counts input lines longer than the reader keeps.
	TruncatedLines int `json:"truncated_lines,omitempty"`
	// DroppedTests counts the tests past the cap (1024), read but not kept.
	DroppedTests int `json:"dropped_tests,omitempty"`
	// DroppedWrongRows counts the rows past the caps (not kept) whose
	// #wrong is above 0, FirstDroppedWrongLine the first of them: they
	// fail the run as a kept row would.
	DroppedWrongRows      int `json:"dropped_wrong_rows,omitempty"`
	FirstDroppedWrongLine int `json:"first_dropped_wrong_line,omitempty"`
}

// Test is one benchmark run: one collective, one table.
type Test struct {
	// Collective is the benchmark binary without _perf: all_reduce, all_gather, ...
	Collective string `json:"collective"`
	// Binary is the program as printed or run (all_reduce_perf, all_reduce_perf_mpi).
	Binary string `json:"binary,omitempty"`
	// CollectiveFrom says where Collective came from: header, command,
	// json, nccl-log (the NCCL_DEBUG op lines), inferred (from the rows) or
	// file-name.
	CollectiveFrom string   `json:"collective_from,omitempty"`
	Stream         string   `json:"stream,omitempty"` // mpirun/srun tag of the lines ("1,0", "0")
	TestsVersion   string   `json:"nccl_tests_version,omitempty"`
	NCCLVersion    string   `json:"nccl_version,omitempty"`
	Params         Params   `json:"params"`
	Devices        []Device `json:"devices,omitempty"`
	Hosts          []string `json:"hosts,omitempty"`
	// Columns are the table's column names as printed.
	Columns []string         `json:"columns,omitempty"`
	Rows    []collective.Row `json:"rows"`
	// Unordered is true when sizes did not increase down the table
	// (interleaved or concatenated tables).
	Unordered bool `json:"unordered,omitempty"`
	// DroppedRows counts rows beyond the kept maximum (65536 per test,
	// and as many over all tests).
	DroppedRows int `json:"dropped_rows,omitempty"`
	// rowsLeft is the rows the report may still keep over all its tests.
	rowsLeft *int
	// dropped is true for a test past the cap, read but not kept.
	dropped bool

	OutOfBounds   *int64 `json:"out_of_bounds,omitempty"`
	OutOfBoundsOK *bool  `json:"out_of_bounds_ok,omitempty"`
	// AvgBusBW is the "# Avg bus bandwidth" line (GB/s), else the mean of
	// every busbw cell, as nccl-tests computes it; AvgFrom says which.
	AvgBusBW float64 `json:"avg_busbw"`
	AvgFrom  string  `json:"avg_busbw_from"` // printed, computed, none
	// AvgCheck is the OK/FAILED word nccl-tests prints when run with -G/check.
	AvgCheck string `json:"avg_busbw_check,omitempty"`
	// PeakBusBW is the best busbw cell (GB/s), at PeakSize bytes.
	PeakBusBW float64  `json:"peak_busbw"`
	PeakSize  uint64   `json:"peak_size"`
	PeakPlace string   `json:"peak_place,omitempty"` // out-of-place or in-place
	Notes     []string `json:"notes,omitempty"`
	// Line is where the test's output starts.
	Line int `json:"line"`

	summary bool // Avg bus bandwidth or out-of-bounds line seen
	noHint  bool // a command line came after its summary: it is the next test's
}

// Params is the "# nThread ..." line.
type Params struct {
	NThread     int    `json:"nthread,omitempty"`
	NGpus       int    `json:"ngpus,omitempty"`
	MinBytes    int64  `json:"min_bytes,omitempty"`
	MaxBytes    int64  `json:"max_bytes,omitempty"`
	Step        string `json:"step,omitempty"` // "2(factor)", "134217728(bytes)"
	WarmupIters int    `json:"warmup_iters,omitempty"`
	Iters       int    `json:"iters,omitempty"`
	AggIters    int    `json:"agg_iters,omitempty"`
	Validation  *int   `json:"validation,omitempty"`
	Graph       int    `json:"graph,omitempty"`
	// Extra holds further "key: value" fields of newer versions.
	Extra map[string]string `json:"extra,omitempty"`
}

// Device is one "#  Rank  0 Group  0 Pid ... on host device  0 [0x18] NVIDIA H100" line.
type Device struct {
	Rank   int    `json:"rank"`
	Group  int    `json:"group"`
	Pid    int    `json:"pid"`
	Host   string `json:"host"`
	Device int    `json:"device"`
	BusID  string `json:"bus_id"`
	Name   string `json:"name"`
}

var (
	reDetectText = textio.MustCompile(`(?m)^(?:\[\d+,\d+\]<std(?:out|err)>:|\[\d+\] |\d+: )?#\s*(?:nThread \d+ nGpus \d+|nccl-tests version|Collective test starting|\s*size\s+count\s+type|\s*Avg bus bandwidth\s*:|\s*Out of bounds values\s*:)`)
	// reDetectBare: the same lines whose "#" was lost in the paste (a
	// Markdown heading), only the shapes no other tool prints.
	reDetectBare = textio.MustCompile(`(?m)^[ \t]*(?:nThread \d+ nGpus \d+ minBytes \d+|nccl-tests version \S+|Collective test starting:|size\s+count\s+type\s+(?:redop\s+)?(?:root\s+)?time\s+algbw|Out of bounds values\s*:\s*\d+|Avg bus bandwidth\s*:\s*[\d.]+)`)
	reDetectRow  = textio.MustCompile(`(?m)^(?:\[\d+,\d+\]<std(?:out|err)>:|\[\d+\] |\d+: )?\s+\d+\s+\d+\s+(?:` + typeAlt + `)\s+`)
)

// Detect reports whether head looks like nccl-tests output (text or -J JSON).
func Detect(head []byte) bool {
	if textio.StartsJSON(head) {
		return bytes.Contains(head, []byte(`"nccl_version"`)) &&
			(bytes.Contains(head, []byte(`"results"`)) || bytes.Contains(head, []byte(`"config"`)) || bytes.Contains(head, []byte(`"average_bus_bandwidth"`)))
	}
	if reDetectText.Match(head) || reDetectBare.Match(head) {
		return true
	}
	rows := reDetectRow.FindAllIndex(head, 3)
	if len(rows) >= 3 {
		return true
	}
	// One or two rows are enough when one reads whole, with its two
	// result groups: no other tool prints "size count type ... time algbw
	// busbw #wrong" twice over.
	for _, r := range rows {
		// The match may start at blank lines before the row: the row
		// is the line the match ends in.
		start := bytes.LastIndexByte(head[:r[1]], '\n') + 1
		end := bytes.IndexByte(head[r[1]:], '\n')
		if end < 0 {
			end = len(head)
		} else {
			end += r[1]
		}
		if wholeRow(string(head[start:end])) {
			return true
		}
	}
	return false
}

// wholeRow reports whether line is one result row with both result
// groups (a launcher's tag before it allowed).
func wholeRow(line string) bool {
	toks := strings.Fields(line)
	if len(toks) > 0 && (strings.HasSuffix(toks[0], ":") || strings.HasPrefix(toks[0], "[") && strings.HasSuffix(toks[0], "]")) {
		toks = toks[1:]
	}
	if !rowStart(toks) {
		return false
	}
	r, err := parseRowInto(toks, nil, new(rowBuf))
	return err == nil && r.OutOfPlace != nil && r.InPlace != nil
}

// Analyze reads a whole nccl-tests output.
func Analyze(name string, r io.Reader) (*Report, []result.Result, error) {
	rep, err := textio.TextOrJSON(name, r, analyzeText, analyzeJSON)
	if err != nil {
		return nil, nil, err
	}
	nameHint(rep, name)
	vs := verdicts(name, rep)
	result.SetSource(vs, Kind)
	return rep, vs, nil
}
