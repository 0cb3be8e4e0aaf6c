// Package nvbandwidth reads the output of NVIDIA's nvbandwidth (text of
// the old and v0.8 layouts, and -j JSON): each testcase's bandwidth matrix
// and sum, with verdicts that flag outlier and asymmetric cells.
package nvbandwidth

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Kind is the analyzer kind name.
const Kind = "nvbandwidth"

// Report is what one nvbandwidth output says.
type Report struct {
	Format string `json:"format"` // text or json
	// Paste says which paste prefixes were removed and which lines were
	// skipped (code fences of an issue) before the lines were read.
	Paste         *textio.PasteNote `json:"paste,omitempty"`
	Version       string            `json:"version,omitempty"`
	GitVersion    string            `json:"git_version,omitempty"`
	CUDARuntime   string            `json:"cuda_runtime_version,omitempty"`
	CUDADriver    string            `json:"cuda_driver_version,omitempty"`
	DriverVersion string            `json:"driver_version,omitempty"`
	Hostname      string            `json:"hostname,omitempty"`
	Devices       []Device          `json:"devices,omitempty"`
	Testcases     []*Testcase       `json:"testcases"`
	Errors        []textio.Quote    `json:"errors,omitempty"`
	// Failures are the tool's own checks that failed: the data copied did
	// not match the pattern written ("Invalid value when checking the
	// pattern", an "ASSERT in expression" line).
	Failures []textio.Quote `json:"failures,omitempty"`
	// Dropped counts the testcases past the cap (4096), read but not kept.
	Dropped int `json:"dropped_testcases,omitempty"`
}

// Device is a "Device 0: Tesla T4 (00000000:3b:00)" line.
type Device struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	BusID string `json:"bus_id,omitempty"`
}

// Testcase is one nvbandwidth test and its matrix.
type Testcase struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Engine is CE (copy engine) or SM; Direction "->", "<-" or "<->";
	// Rows/Cols say what the matrix indexes: GPU or CPU.
	Engine    string `json:"engine,omitempty"`
	Direction string `json:"direction,omitempty"`
	RowKind   string `json:"row_kind,omitempty"`
	ColKind   string `json:"col_kind,omitempty"`
	Unit      string `json:"unit,omitempty"`
	// Columns are the column indices as printed.
	Columns []int `json:"columns,omitempty"`
	RowIDs  []int `json:"row_ids,omitempty"`
	// RowLines are the input lines of the matrix rows (text input).
	RowLines []int `json:"row_lines,omitempty"`
	// Matrix[i][j] is nil for N/A (and for the 0.00 diagonal of old versions).
	Matrix [][]*float64 `json:"matrix"`
	// Sum is the "SUM name value" line (or the JSON sum); SumComputed adds the cells.
	Sum         *float64 `json:"sum,omitempty"`
	SumComputed float64  `json:"sum_computed"`
	Min         float64  `json:"min"`
	Median      float64  `json:"median"`
	Max         float64  `json:"max"`
	Status      string   `json:"status,omitempty"` // Passed, Waived, Error, Not Found (JSON)
	Error       string   `json:"error,omitempty"`
	Line        int      `json:"line"`
	errLine     int
	dropped     bool // past the cap: read, not kept
}

var (
	reWaived   = textio.MustCompile(`^(Waived|Error|Not Found)\s*:?\s*(.*)$`)
	reHostname = textio.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$`)

	reDetect = textio.MustCompile(`(?m)^(?:nvbandwidth Version:|Running \w+_(?:ce|sm)\.|memcpy (?:CE|SM) (?:CPU|GPU)\(row\))`)
)

// Limits keeping memory bounded.
const (
	maxDim   = 4096
	maxCases = 4096
	// maxCells bounds the matrix cells kept over all testcases.
	maxCells = 1 << 20
)

// Detect reports whether head looks like nvbandwidth output.
func Detect(head []byte) bool {
	if textio.StartsJSON(head) {
		return bytes.Contains(head, []byte(`"nvbandwidth"`))
	}
	return reDetect.Match(head)
}

// Analyze reads a whole nvbandwidth output.
func Analyze(name string, r io.Reader) (*Report, []result.Result, error) {
	rep, err := textio.TextOrJSON(name, r, analyzeText, analyzeJSON)
	if err != nil {
		return nil, nil, err
	}
	for _, tc := range rep.Testcases {
		stats(tc)
	}
	vs := verdicts(name, rep)
	result.SetSource(vs, Kind)
	return rep, vs, nil
}

type textState struct {
	cells  int
	rep    *Report
	cur    *Testcase
	inMat  bool
	sawHdr bool      // the version/driver block (a bare hostname line may follow it)
	fields []string  // scratch for a matrix row's fields
	vals   []float64 // and its values
	na     []bool    // and which are N/A
}

func analyzeText(name string, r io.Reader) (*Report, error) {
	st := &textState{rep: &Report{Format: "text"}}
	lr := textio.NewLineReader(name, r)
	for n, line := range lr.All() {
		if err := st.line(strings.TrimRight(textio.StripANSI(line), " \t"), n); err != nil {
			return nil, err
		}
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	st.rep.Paste = lr.Paste()
	if len(st.rep.Testcases) == 0 && st.rep.Version == "" {
		return nil, textio.Errorf(name, max(lr.Line(), 1), "no nvbandwidth output found (no version line, 'Running <testcase>.' line or bandwidth matrix)")
	}
	return st.rep, nil
}

func (st *textState) testcase(n int) *Testcase {
	if st.cur == nil || st.cur.Matrix != nil || st.cur.Sum != nil {
		st.cur = &Testcase{Line: n}
		if len(st.rep.Testcases) >= maxCases {
			// Past the cap a testcase is read into a discarded record.
			st.rep.Dropped++
			st.cur.dropped = true
			return st.cur
		}
		st.rep.Testcases = append(st.rep.Testcases, st.cur)
	}
	return st.cur
}

func (st *textState) line(s string, n int) error {
	rep := st.rep
	t := strings.TrimSpace(s)
	if st.inMat {
		if t == "" || !st.matrixRow(t, n) {
			st.inMat = false
		} else {
			return nil
		}
	}
	var m []string
	switch {
	case t == "":
	case valueAfter(t, "nvbandwidth Version:", &m):
		rep.Version, st.sawHdr = textio.Clip(m[1], 64), true
	case valueAfter(t, "Built from Git version:", &m):
		rep.GitVersion = textio.Clip(m[1], 64)
	case valueAfter(t, "CUDA Runtime Version:", &m):
		rep.CUDARuntime, st.sawHdr = textio.Clip(m[1], 32), true
	case valueAfter(t, "CUDA Driver Version:", &m):
		rep.CUDADriver = textio.Clip(m[1], 32)
	case valueAfter(t, "Driver Version:", &m):
		rep.DriverVersion, st.sawHdr = textio.Clip(m[1], 32), true
	case len(rep.Devices) < maxDim && deviceLine(t, &m): // past the cap a device line is not parsed
		idx, _ := strconv.Atoi(m[1])
		rep.Devices = append(rep.Devices, Device{Index: idx, Name: textio.Clip(m[2], 128), BusID: m[3]})
	case runningLine(t, &m):
		st.cur = nil
		tc := st.testcase(n)
		tc.Name = textio.Clip(m[1], 128)
	case !strings.Contains(t, "(row)") && strings.Contains(t, "(column)") && allDesc(t, &m):
		// v0.2's all_to_one / one_to_all: "memcpy CE All Gpus -> GPU(column)
		// total bandwidth (GB/s)", "memcpy SM GPU(column) <- All GPUs ...":
		// one row, all the GPUs together.
		tc := st.testcase(n)
		if tc.Description != "" {
			st.cur = nil
			name := tc.Name
			tc = st.testcase(n)
			tc.Name = name
		}
		tc.Description, tc.Engine, tc.RowKind, tc.Direction, tc.ColKind, tc.Unit = textio.Clip(t, 256), m[2], "All", m[3], "GPU", textio.Clip(m[5], 16)
	case strings.Contains(t, "(row)") && descLine(t, &m):
		tc := st.testcase(n)
		if tc.Description != "" { // a second matrix in one testcase: start another
			st.cur = nil
			name := tc.Name
			tc = st.testcase(n)
			tc.Name = name
		}
		tc.Description, tc.Engine, tc.RowKind, tc.Direction, tc.ColKind, tc.Unit = textio.Clip(t, 256), m[2], m[3], m[4], m[5], textio.Clip(m[7], 16)
	case st.cur != nil && st.cur.Description != "" && st.cur.Matrix == nil && isColumnHeader(t):
		for _, f := range strings.Fields(t) {
			v, _ := strconv.Atoi(f)
			if len(st.cur.Columns) < maxDim {
				st.cur.Columns = append(st.cur.Columns, v)
			}
		}
		st.cur.Matrix = [][]*float64{}
		st.inMat = true
	case sumLine(t, &m):
		tc := st.cur
		name := textio.Clip(m[1], 128)
		if tc == nil || (tc.Name != "" && tc.Name != name) {
			st.cur = nil
			tc = st.testcase(n)
			tc.Name = name
		}
		if tc.Name == "" {
			tc.Name = name
		}
		if v, ok := textio.ParseFloat(m[2]); ok {
			tc.Sum = &v
		}
	case strings.HasPrefix(t, "Waiving ") && waivingLine(t, &m):
		// Older releases (v0.2) print "Waiving NAME." in place of "Running NAME.".
		st.cur = nil
		tc := st.testcase(n)
		tc.Name, tc.Status, tc.errLine = textio.Clip(m[1], 128), "Waived", n
		st.cur = nil
	case validationFailure(t):
		rep.Failures = textio.AddQuote(rep.Failures, n, t)
		if st.cur != nil && st.cur.Status != "Failed" {
			st.cur.Status, st.cur.Error, st.cur.errLine = "Failed", textio.Clip(t, 400), n
		}
	case (st.cur == nil || st.cur.Matrix == nil || strings.HasPrefix(t, "Waived")) && reWaived.Submatch(t, &m):
		// "Waived: " comes without a "Running" line (the testcase's filter
		// refused it); "Error: ..." follows the "Running" line of its testcase.
		tc := st.cur
		if m[1] == "Waived" || tc == nil || tc.Matrix != nil {
			st.cur = nil
			tc = st.testcase(n)
			tc.Name = "(" + strings.ToLower(m[1]) + ")"
		}
		tc.Status, tc.Error = m[1], textio.Clip(m[2], 400)
		if tc.Line == 0 {
			tc.Line = n
		}
		tc.errLine = n
	case strings.HasPrefix(t, "ERROR") || strings.HasPrefix(t, "Error") || strings.Contains(t, "CUDA error") || strings.Contains(t, "failed with error"):
		rep.Errors = textio.AddQuote(rep.Errors, n, t)
		if st.cur != nil && st.cur.Matrix == nil && st.cur.Error == "" {
			st.cur.Status, st.cur.Error = "Error", textio.Clip(t, 400)
		}
	case st.sawHdr && rep.Hostname == "" && len(rep.Devices) == 0 && len(rep.Testcases) == 0 && reHostname.MatchString(t) && !strings.Contains(t, "..."):
		// v0.8 prints the host name on its own line before the device list.
		rep.Hostname = textio.Clip(t, 64)
	}
	return nil
}

// reSpace is RE2's \s: the separators of reRunning and reSum.
func reSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\f' || r == '\r' }

// runningLine is reRunning.Submatch without the regexp (it runs on every
// line): "Running NAME.".
func runningLine(t string, m *[]string) bool {
	rest, ok := strings.CutPrefix(strings.TrimPrefix(t, "> "), "Running ")
	rest = strings.TrimRightFunc(rest, reSpace)
	if !ok || rest == "" || strings.IndexFunc(rest, reSpace) >= 0 {
		return false
	}
	name := strings.TrimSuffix(rest, ".")
	if name == "" {
		name = rest
	}
	*m = []string{t, name}
	return true
}

// reDescAll is the description of a testcase between all GPUs together
// and each GPU: the row is "All GPUs", written before or after the column.
var reDescAll = textio.MustCompile(`^(memcpy)\s+(CE|SM)\s+(?:All G(?:PU|pu)s\s*(->|<-)\s*GPU\(column\)|GPU\(column\)\s*(->|<-)\s*All G(?:PU|pu)s)\s*(.*?)\s*(?:\(([^)]+)\))?\s*$`)

// allDesc reads reDescAll into m as [line, memcpy, engine, direction seen
// from the "All GPUs" row, kind, unit].
func allDesc(t string, m *[]string) bool {
	var x []string
	if !reDescAll.Submatch(t, &x) {
		return false
	}
	dir := x[3]
	if dir == "" { // "GPU(column) -> All GPUs": the row receives
		dir = map[string]string{"->": "<-", "<-": "->"}[x[4]]
	}
	*m = []string{x[0], x[1], x[2], dir, x[5], x[6]}
	return true
}

// waivingLine reads "Waiving NAME." (v0.2).
func waivingLine(t string, m *[]string) bool {
	rest := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(t, "Waiving ")), ".")
	if rest == "" || strings.IndexFunc(rest, reSpace) >= 0 {
		return false
	}
	*m = []string{t, rest}
	return true
}

// validationFailure is a line of nvbandwidth's own check of the data it
// copied: the pattern read back differs, and the assertion that stops it.
func validationFailure(t string) bool {
	return strings.HasPrefix(t, "ASSERT in expression") || strings.HasPrefix(t, "Invalid value when checking the pattern")
}

// sumLine is reSum.Submatch without the regexp: "SUM NAME VALUE".
func sumLine(t string, m *[]string) bool {
	rest, ok := strings.CutPrefix(t, "SUM")
	if !ok || rest == "" || !reSpace(rune(rest[0])) {
		return false
	}
	f := strings.FieldsFunc(rest, reSpace)
	if len(f) != 2 {
		return false
	}
	*m = []string{t, f[0], f[1]}
	return true
}

// matrixRow reads " 0       N/A     26.34 ...".
func (st *textState) matrixRow(t string, n int) bool {
	f := textio.AppendFields(st.fields[:0], t)
	st.fields = f[:0] // f is not kept: the next row reuses it
	if len(f) < 2 {
		return false
	}
	id, err := strconv.Atoi(f[0])
	if err != nil {
		return false
	}
	tc := st.cur
	cells := f[1:]
	// The cells are read into scratch first: a row of a testcase past the
	// caps is checked, not kept, and costs no allocation.
	na := st.na[:0]
	scratch := st.vals[:0]
	for _, c := range cells {
		v, ok := 0.0, c == "N/A"
		if !ok {
			if v, ok = textio.ParseFloat(c); !ok {
				return false
			}
		}
		scratch, na = append(scratch, v), append(na, c == "N/A")
	}
	st.vals, st.na = scratch[:0], na[:0]
	if len(tc.Columns) > 0 && len(cells) != len(tc.Columns) {
		return false
	}
	if tc.dropped || len(tc.Matrix) >= maxDim || st.cells+len(cells) > maxCells {
		return true
	}
	row := make([]*float64, len(cells))
	vals := make([]float64, len(cells)) // the cells' values: one allocation per row
	for i := range cells {
		if !na[i] {
			vals[i] = scratch[i]
			row[i] = &vals[i]
		}
	}
	st.cells += len(row)
	tc.RowIDs = append(tc.RowIDs, id)
	tc.RowLines = append(tc.RowLines, n)
	tc.Matrix = append(tc.Matrix, row)
	return true
}

// JSON output (json_output.cpp): {"nvbandwidth": {..., "testcases": [{"name",
// "status", "bandwidth_description", "bandwidth_matrix": [["N/A","26.3"...]],
// "sum"}]}}; matrix cells are strings.
type jsonRoot struct {
	NVB *struct {
		Version     string           `json:"version"`
		GitVersion  string           `json:"git_version"`
		CUDARuntime textio.FlexFloat `json:"CUDA Runtime Version"`
		Driver      string           `json:"Driver Version"`
		Devices     []string         `json:"GPU Device list"`
		Error       string           `json:"error"`
		Warning     string           `json:"warning"`
		Testcases   []struct {
			Name        string              `json:"name"`
			Status      string              `json:"status"`
			Error       string              `json:"error"`
			Description string              `json:"bandwidth_description"`
			Matrix      [][]json.RawMessage `json:"bandwidth_matrix"`
			Sum         textio.FlexFloat    `json:"sum"`
		} `json:"testcases"`
	} `json:"nvbandwidth"`
}

var reJSONDevice = textio.MustCompile(`^(\d+):\s*(.*?)\s*(?:\(([0-9a-fA-F]+:[0-9a-fA-F]+:[0-9a-fA-F]+)\))?\s*(?::\s*\(([^)]*)\))?\s*$`)

func analyzeJSON(name string, r io.Reader) (*Report, error) {
	lc := textio.NewLineCounter(r)
	dec := json.NewDecoder(lc)
	var root jsonRoot
	if err := lc.DecodeAll(name, dec, &root); err != nil {
		return nil, err
	}
	if root.NVB == nil {
		return nil, textio.Errorf(name, 1, `JSON has no "nvbandwidth" object`)
	}
	j := root.NVB
	rep := &Report{Format: "json", Version: j.Version, GitVersion: j.GitVersion, DriverVersion: j.Driver}
	if j.CUDARuntime.Valid {
		rep.CUDARuntime = strconv.FormatInt(int64(j.CUDARuntime.V), 10)
	}
	for _, d := range j.Devices {
		if m := reJSONDevice.FindStringSubmatch(d); m != nil && len(rep.Devices) < maxDim {
			idx, _ := strconv.Atoi(m[1])
			rep.Devices = append(rep.Devices, Device{Index: idx, Name: m[2], BusID: m[3]})
			if rep.Hostname == "" {
				rep.Hostname = m[4]
			}
		}
	}
	if j.Error != "" {
		rep.Errors = append(rep.Errors, textio.Quote{Line: 1, Text: j.Error})
	}
	for i, jt := range j.Testcases {
		if i >= maxCases {
			rep.Dropped = len(j.Testcases) - maxCases
			break
		}
		tc := &Testcase{Name: jt.Name, Status: jt.Status, Error: jt.Error, Description: jt.Description, Line: 1}
		var m []string
		if descLine(jt.Description, &m) {
			tc.Engine, tc.RowKind, tc.Direction, tc.ColKind, tc.Unit = m[2], m[3], m[4], m[5], m[7]
		}
		if jt.Sum.Valid {
			v := jt.Sum.V
			tc.Sum = &v
		}
		for ri, jr := range jt.Matrix {
			if ri >= maxDim {
				break
			}
			row := make([]*float64, 0, len(jr))
			for _, c := range jr {
				v, na, ok := jsonCell(c)
				if !ok {
					return nil, textio.Errorf(name, 1, "testcase %s: matrix cell [%d][%d] = %s is neither a number nor N/A", jt.Name, ri, len(row), textio.Clip(string(c), 40))
				}
				if na {
					row = append(row, nil)
				} else {
					row = append(row, &v)
				}
			}
			tc.RowIDs = append(tc.RowIDs, ri)
			tc.Matrix = append(tc.Matrix, row)
		}
		if len(tc.Matrix) > 0 {
			for c := range tc.Matrix[0] {
				tc.Columns = append(tc.Columns, c)
			}
		}
		rep.Testcases = append(rep.Testcases, tc)
	}
	return rep, nil
}

// jsonCell reads a matrix cell: "12.5", 12.5 or "N/A".
func jsonCell(c json.RawMessage) (v float64, na, ok bool) {
	var s string
	if json.Unmarshal(c, &s) == nil {
		if strings.TrimSpace(s) == "N/A" {
			return 0, true, true
		}
		v, ok = textio.ParseFloat(s)
		return v, false, ok
	}
	if json.Unmarshal(c, &v) == nil {
		return v, false, true
	}
	return 0, false, false
}

// stats clears the 0.00 diagonal of old layouts and computes sum, min,
// median and max of the measured cells.
func stats(tc *Testcase) {
	square := tc.RowKind == "GPU" && tc.ColKind == "GPU"
	var vals []float64
	sum := 0.0
	for i, row := range tc.Matrix {
		for j, c := range row {
			if c == nil {
				continue
			}
			if square && j < len(tc.Columns) && i < len(tc.RowIDs) && tc.Columns[j] == tc.RowIDs[i] && *c == 0 {
				row[j] = nil
				continue
			}
			vals = append(vals, *c)
			sum += *c
		}
	}
	tc.SumComputed = math.Round(sum*100) / 100
	if len(vals) == 0 {
		return
	}
	sort.Float64s(vals)
	tc.Min, tc.Max = vals[0], vals[len(vals)-1]
	if len(vals)%2 == 1 {
		tc.Median = vals[len(vals)/2]
	} else {
		tc.Median = (vals[len(vals)/2-1] + vals[len(vals)/2]) / 2
	}
	if tc.Status == "" {
		tc.Status = "Passed"
	}
}

func fmtF(v float64) string { return textio.FormatFloat(v, 2) }
