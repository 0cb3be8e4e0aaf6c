// Package smitopo reads `nvidia-smi topo -m` output as people capture and
// paste it: tab- or space-separated, with ANSI escapes, prose around it,
// old layouts whose NIC columns are named mlx5_N, NIC legends that do not
// start at mlx5_0, and empty affinity cells in containers.
package smitopo

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/textio"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// Matrix is a parsed topology matrix.
type Matrix struct {
	Labels []string `json:"labels"` // column labels as printed (GPU0, NIC0, mlx5_0)
	// Paste says which paste prefixes were removed and which lines were
	// skipped (code fences of an issue) before the lines were read.
	Paste *textio.PasteNote `json:"paste,omitempty"`
	IsGPU []bool            `json:"-"`
	// Cells[i][j] is row i's cell for column j, normalised ("X" for self).
	Cells        [][]string `json:"cells"`
	CPUAffinity  []string   `json:"cpu_affinity"`
	NUMAAffinity []string   `json:"numa_affinity"`
	GPUNUMAID    []string   `json:"gpu_numa_id,omitempty"`
	// NICNames maps a NIC column to its device name: from the NIC legend,
	// or the label itself in layouts that print device names.
	NICNames map[string]string `json:"nic_names"`
	// HeaderLine is the 1-based line of the header in the input.
	HeaderLine int `json:"header_line"`
	// RowLine maps a row label to its 1-based input line.
	RowLine map[string]int `json:"-"`
	// HasGPUNUMAColumn says whether the header had the GPU NUMA ID column
	// (old drivers print none).
	HasGPUNUMAColumn bool `json:"has_gpu_numa_column"`
	// Missing are the header's rows the input does not hold: a paste cut
	// off mid-matrix. Only the rows read are judged.
	Missing []string `json:"missing_rows,omitempty"`
	// Skipped says what was read but not used: a row cut short, old
	// wording translated (pre-2018 legends print SOC for today's SYS).
	Skipped []string `json:"skipped,omitempty"`
}

// oldLevels are cells of older nvidia-smi releases and the level they
// name today: before 2018 the legend's "SOC" (a path across the
// socket-level link, e.g. QPI) was what is now "SYS".
var oldLevels = map[string]string{"SOC": "SYS"}

var (
	reLegend   = textio.MustCompile(`^\s*(NIC\d+)\s*:\s*(\S+)\s*$`)
	reGPULabel = textio.MustCompile(`^GPU\d+$`)
)

// Parse reads the first topology matrix in r (and the rest of r). name is
// used in errors, which are *textio.ParseError.
func Parse(name string, r io.Reader) (*Matrix, error) {
	lr := textio.NewLineReader(name, r)
	m := &Matrix{NICNames: map[string]string{}, RowLine: map[string]int{}}
	lineNo := 0
	state := 0 // 0: looking for header, 1: rows, 2: after rows, 3: NIC legend
	seenRow := map[string]bool{}
	for n, raw := range lr.All() {
		lineNo = n
		line := strings.TrimRight(textio.StripANSI(raw), "\r")
		trim := strings.TrimSpace(line)
		switch state {
		case 0:
			f := unglue(strings.Fields(trim))
			// The header starts with GPU0 and, unlike the GPU0 row, is
			// not followed by a cell ("X").
			if len(f) == 0 || f[0] != "GPU0" || (len(f) > 1 && f[1] == "X") {
				continue
			}
			if err := m.header(f); err != nil {
				return nil, textio.Errorf(name, lineNo, "%v", err)
			}
			m.HeaderLine = lineNo
			state = 1
		case 1:
			if trim == "" || strings.HasPrefix(trim, "Legend") {
				if len(m.Cells) == 0 {
					return nil, textio.Errorf(name, lineNo, "topology header without rows")
				}
				state = 2
				continue
			}
			label, err := m.row(line)
			if errors.Is(err, errNotRow) {
				// A fence, an HTML tag or prose after the last row: the
				// matrix ended without a blank line or a legend.
				state = 2
				continue
			}
			var cut *cutRowError
			if errors.As(err, &cut) {
				m.Skipped = append(m.Skipped, fmt.Sprintf("line %d: row %s is cut short (%d of %d cells)", lineNo, cut.label, cut.got, len(m.Labels)))
				state = 2
				continue
			}
			if err != nil {
				return nil, textio.Errorf(name, lineNo, "%v", err)
			}
			if seenRow[label] {
				return nil, textio.Errorf(name, lineNo, "row %s appears twice", label)
			}
			seenRow[label] = true
			m.RowLine[label] = lineNo
		case 2:
			if strings.HasPrefix(trim, "NIC Legend") {
				state = 3
			}
		case 3:
			if trim == "" {
				if len(m.NICNames) > 0 {
					state = 4
				}
				continue
			}
			if mm := reLegend.FindStringSubmatch(line); mm != nil {
				m.NICNames[mm[1]] = mm[2]
			} else {
				state = 4
			}
		}
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	m.Paste = lr.Paste()
	if state == 0 {
		return nil, textio.Errorf(name, max(lineNo, 1), "no topology matrix found (no header line starting with GPU0)")
	}
	if len(m.Cells) == 0 {
		return nil, textio.Errorf(name, lineNo, "topology header without rows")
	}
	// Rows come in header order (row checks it), so what is missing is the
	// tail of the matrix: a paste cut off.
	m.Missing = append(m.Missing, m.Labels[len(m.Cells):]...)
	for i, l := range m.Labels {
		if !m.IsGPU[i] {
			if _, ok := m.NICNames[l]; !ok {
				m.NICNames[l] = l
			}
		}
	}
	return m, nil
}

// reGlued is one device label of a header whose separators were lost.
var reGlued = textio.MustCompile(`GPU\d+|NIC\d+|mlx\d+_\d+`)

// unglue splits header tokens that are several device labels run
// together ("GPU0GPU1GPU2...mlx5_0": a web page's code block printed the
// tabs between them as nothing). A token is split only when it is made of
// labels from end to end; every label starts with letters, so where one
// ends is never ambiguous.
func unglue(f []string) []string {
	for i, t := range f {
		if len(t) < 8 || !strings.HasPrefix(t, "GPU") {
			continue
		}
		parts := reGlued.FindAllString(t, -1)
		if len(parts) < 2 || strings.Join(parts, "") != t {
			continue
		}
		out := append(append(append([]string{}, f[:i]...), parts...), f[i+1:]...)
		return unglue(out)
	}
	return f
}

func (m *Matrix) header(f []string) error {
	i := 0
	for ; i < len(f); i++ {
		t := f[i]
		if t == "CPU" || t == "NUMA" || t == "Affinity" || (t == "GPU" && i+1 < len(f) && f[i+1] == "NUMA") {
			break
		}
		m.Labels = append(m.Labels, t)
		m.IsGPU = append(m.IsGPU, reGPULabel.MatchString(t))
	}
	rest := strings.Join(f[i:], " ")
	m.HasGPUNUMAColumn = strings.Contains(rest, "GPU NUMA ID")
	if len(m.Labels) == 0 {
		return fmt.Errorf("header has no device columns")
	}
	seen := map[string]bool{}
	for _, l := range m.Labels {
		if seen[l] {
			return fmt.Errorf("column %s appears twice in the header", l)
		}
		seen[l] = true
	}
	return nil
}

func (m *Matrix) index(label string) int {
	for i, l := range m.Labels {
		if l == label {
			return i
		}
	}
	return -1
}

// errNotRow is a line after the rows that is no row at all.
var errNotRow = errors.New("not a matrix row")

// cutRowError is a row with fewer cells than the header has columns, and
// nothing after its cells: a paste cut off inside the row.
type cutRowError struct {
	label string
	got   int
}

func (e *cutRowError) Error() string { return fmt.Sprintf("row %s is cut short", e.label) }

// row parses one matrix row and returns its label.
func (m *Matrix) row(line string) (string, error) {
	n := len(m.Labels)
	var label string
	var cells, rest []string
	if strings.Contains(line, "\t") {
		fields := strings.Split(line, "\t")
		k := 0
		for ; k < len(fields) && strings.TrimSpace(fields[k]) == ""; k++ {
		}
		if k == len(fields) {
			return "", fmt.Errorf("empty row")
		}
		label = strings.TrimSpace(fields[k])
		k++
		for ; k < len(fields) && len(cells) < n; k++ {
			t := strings.TrimSpace(fields[k])
			if t == "" {
				continue
			}
			// A field may hold several space-separated cells when a paste
			// mixed tabs and spaces.
			cells = append(cells, strings.Fields(t)...)
		}
		for ; k < len(fields); k++ {
			rest = append(rest, strings.TrimSpace(fields[k]))
		}
		if len(cells) > n {
			rest = append(cells[n:], rest...)
			cells = cells[:n]
		}
	} else {
		f := strings.Fields(line)
		label = f[0]
		f = f[1:]
		if len(f) < n {
			cells = f
		} else {
			cells, rest = f[:n], f[n:]
		}
	}
	i := m.index(label)
	if i < 0 {
		if !hasCell(cells) {
			return "", errNotRow
		}
		return "", fmt.Errorf("row label %q is not a column of the header", label)
	}
	if i < len(m.Cells) {
		return "", fmt.Errorf("row %s appears twice", label)
	}
	if i != len(m.Cells) {
		return "", fmt.Errorf("row %s out of order (expected %s)", label, m.Labels[len(m.Cells)])
	}
	for j, c := range cells {
		if l, ok := oldLevels[c]; ok {
			cells[j] = l
			m.noteOld(c, l)
		}
	}
	if len(cells) < n && len(rest) == 0 && i == len(m.Cells) {
		return "", &cutRowError{label: label, got: len(cells)}
	}
	if len(cells) != n {
		return "", fmt.Errorf("row %s has %d cells, the header has %d columns", label, len(cells), n)
	}
	for j, c := range cells {
		if c == "X" {
			if j != i {
				return "", fmt.Errorf("row %s: X (self) in column %s", label, m.Labels[j])
			}
			continue
		}
		if _, _, err := level.Parse(c); err != nil {
			return "", fmt.Errorf("row %s, column %s: %v", label, m.Labels[j], err)
		}
		if j == i {
			return "", fmt.Errorf("row %s: %q on the diagonal, want X", label, c)
		}
	}
	cpu, numa, gnuma := "", "", ""
	if len(rest) > 0 {
		cpu = rest[0]
	}
	if len(rest) > 1 {
		numa = rest[1]
	}
	for _, r := range rest[min(2, len(rest)):] {
		if r != "" {
			gnuma = r
		}
	}
	if !strings.Contains(line, "\t") && len(rest) == 2 && !m.HasGPUNUMAColumn {
		cpu, numa = rest[0], rest[1]
	}
	m.Cells = append(m.Cells, cells)
	m.CPUAffinity = append(m.CPUAffinity, cpu)
	m.NUMAAffinity = append(m.NUMAAffinity, numa)
	m.GPUNUMAID = append(m.GPUNUMAID, gnuma)
	return label, nil
}

// hasCell says whether any field reads as a topology cell (X or a level).
func hasCell(fields []string) bool {
	for _, f := range fields {
		if _, old := oldLevels[f]; old || f == "X" {
			return true
		}
		if _, _, err := level.Parse(f); err == nil {
			return true
		}
	}
	return false
}

// noteOld records, once, that old wording was read as today's.
func (m *Matrix) noteOld(old, now string) {
	note := fmt.Sprintf("old legend wording: %s cells read as %s", old, now)
	for _, s := range m.Skipped {
		if s == note {
			return
		}
	}
	m.Skipped = append(m.Skipped, note)
}
