package smitopo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gdrcheck/gdrcheck/internal/analyze/verdict"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
	"github.com/gdrcheck/gdrcheck/internal/topology/pairing"
)

// Kind is the analyzer kind name.
const Kind = "nvidia-smi-topo"

// IDNICAffinity is the verdict of the checks issue: every GPU needs an
// RDMA NIC within NCCL's default GDR level.
const IDNICAffinity = "gdr.nic-affinity"

// Report is a parsed matrix, its GPU→NIC pairing and the verdicts.
type Report struct {
	Matrix  *Matrix  `json:"matrix"`
	Pairing *Pairing `json:"pairing"`
}

// Pairing is the GPU→NIC assignment read off a matrix.
type Pairing struct {
	GPUs []GPUNIC `json:"gpus"`
	// Unused are NIC columns no GPU was paired with (front-end, storage).
	Unused []string `json:"unused_nics"`
	// NoGDR lists GPUs whose NIC is beyond PXB.
	NoGDR []string `json:"gpus_without_gdr_nic"`
}

// GPUNIC is one GPU's NIC.
type GPUNIC struct {
	GPU string `json:"gpu"`
	// NIC is the column label (NIC3, or mlx5_3 in old layouts); Device the
	// RDMA device name from the NIC legend.
	NIC    string `json:"nic,omitempty"`
	Device string `json:"device,omitempty"`
	Level  string `json:"level"`
	// Nearest are all NICs at the GPU's best level.
	Nearest []string `json:"nearest_nics"`
	// SharedWith names other GPUs paired with the same NIC.
	SharedWith []string `json:"shared_with,omitempty"`
	GDR        bool     `json:"gdr"`
}

var (
	reHeaderDetect = textio.MustCompile(`(?m)^\s*GPU0(?:\b|GPU1)[^\n]*\b(?:CPU Affinity|NUMA Affinity)`)
	reRowDetect    = textio.MustCompile(`(?m)^\s*GPU0\s+X\b`)
	reLegendDetect = textio.MustCompile(`(?m)^\s*X\s+= Self\s*$`)
)

// Detect reports whether head looks like `nvidia-smi topo -m` output.
func Detect(head []byte) bool {
	s := textio.StripANSI(string(head))
	return reHeaderDetect.MatchString(s) || (reRowDetect.MatchString(s) && reLegendDetect.MatchString(s))
}

// Analyze reads a matrix and judges the GPU→NIC affinity.
func Analyze(name string, r io.Reader) (*Report, []result.Result, error) {
	m, err := Parse(name, r)
	if err != nil {
		return nil, nil, err
	}
	rep := &Report{Matrix: m, Pairing: m.Pair()}
	vs := append(rep.affinity(name), rep.nvlink(name)...)
	result.SetSource(vs, Kind)
	return rep, vs, nil
}

// cellLevel reads a GPU→NIC cell; unreadable cells, and X or NV# (no
// GPU→NIC path), are unknown.
func cellLevel(cell string) level.Level {
	l, _, err := level.Parse(cell)
	if err != nil || l < level.PIX {
		return level.Unknown
	}
	return l
}

// Pair assigns each GPU a NIC with pairing.Assign: the nearest, a distinct
// NIC per GPU where the matrix allows (maximum matching level by level,
// PIX first), column order among equals; with more GPUs than NICs the rest
// share the least used of their nearest.
func (m *Matrix) Pair() *Pairing {
	p := &Pairing{GPUs: []GPUNIC{}, Unused: []string{}, NoGDR: []string{}}
	var gpus, nics []int
	for i := range m.Labels {
		if m.IsGPU[i] {
			if i >= len(m.Cells) {
				continue // the row is not in the input
			}
			gpus = append(gpus, i)
		} else {
			nics = append(nics, i)
		}
	}
	if len(gpus) == 0 {
		return p
	}
	levels := make([][]level.Level, len(gpus))
	for gi, g := range gpus {
		for _, n := range nics {
			levels[gi] = append(levels[gi], cellLevel(m.Cells[g][n]))
		}
	}
	choices := pairing.Assign(levels, nil)
	users := map[int]int{}
	for _, c := range choices {
		users[c.NIC]++
	}
	for gi, g := range gpus {
		c := choices[gi]
		e := GPUNIC{GPU: m.Labels[g], Level: "-", Nearest: []string{}}
		if len(c.Nearest) > 0 && levels[gi][c.Nearest[0]] != level.Unknown {
			for _, k := range c.Nearest {
				e.Nearest = append(e.Nearest, m.Labels[nics[k]])
			}
		}
		if k := c.NIC; k >= 0 {
			e.NIC, e.Device = m.Labels[nics[k]], m.NICNames[m.Labels[nics[k]]]
			l := levels[gi][k]
			e.Level = l.String()
			e.GDR = l <= level.DefaultGDR
			for gj, other := range gpus {
				if gj != gi && choices[gj].NIC == k {
					e.SharedWith = append(e.SharedWith, m.Labels[other])
				}
			}
		}
		if !e.GDR {
			p.NoGDR = append(p.NoGDR, e.GPU)
		}
		p.GPUs = append(p.GPUs, e)
	}
	for k, n := range nics {
		if users[k] == 0 {
			p.Unused = append(p.Unused, m.Labels[n])
		}
	}
	return p
}

var levelMeaning = map[string]string{
	"PIX":  "at most one PCIe bridge: the same PCIe switch",
	"PXB":  "several PCIe bridges without the host bridge",
	"PHB":  "through a PCIe host bridge (the CPU's root complex)",
	"NODE": "across PCIe host bridges within one NUMA node",
	"SYS":  "across the inter-socket link between NUMA nodes",
}

func (m *Matrix) nicName(label string) string {
	if d := m.NICNames[label]; d != "" && d != label {
		return fmt.Sprintf("%s (%s)", label, d)
	}
	return label
}

// nicDevice is a NIC column's device name (mlx5_2), else its label.
func (m *Matrix) nicDevice(label string) string {
	if d := m.NICNames[label]; d != "" {
		return d
	}
	return label
}

func (r *Report) affinity(name string) []result.Result {
	m, p := r.Matrix, r.Pairing
	nicCols := 0
	for _, g := range m.IsGPU {
		if !g {
			nicCols++
		}
	}
	if nicCols == 0 {
		return []result.Result{verdict.New(IDNICAffinity, result.Skip, "node", "NoRDMADevice",
			"the matrix has no NIC columns: no RDMA NIC on this host, so GPU Direct RDMA does not apply (inter-node NCCL traffic can only use sockets or a network plugin)")}
	}
	var out []result.Result
	if missing := m.missingGPUs(); len(missing) > 0 || len(m.Missing) > 0 {
		msg := fmt.Sprintf("the matrix is cut off: rows %s are not in the input, so %s cannot be judged; only the rows read are", strings.Join(m.Missing, ", "), orNone(missing))
		for _, s := range m.Skipped {
			if strings.HasPrefix(s, "line ") {
				msg += "; skipped " + s
			}
		}
		out = append(out, verdict.New(IDNICAffinity, result.Unknown, "node", "RowsMissing", msg,
			verdict.Ev(name, m.HeaderLine, fmt.Sprintf("header with %d columns, %d rows read", len(m.Labels), len(m.Cells)), "")))
	}
	for _, e := range p.GPUs {
		line := m.RowLine[e.GPU]
		ev := []result.Evidence{verdict.Ev(name, line, fmt.Sprintf("%s row: %s = %s", e.GPU, e.NIC, e.Level), "")}
		if e.NIC == "" {
			out = append(out, verdict.New(IDNICAffinity, result.Unknown, e.GPU, "NoReadableNIC", "no readable GPU-to-NIC cell in this GPU's row", ev...))
			continue
		}
		if e.GDR {
			msg := fmt.Sprintf("%s → %s at %s (%s): GPU Direct RDMA works at NCCL's default NCCL_NET_GDR_LEVEL (PXB)", e.GPU, m.nicName(e.NIC), e.Level, levelMeaning[e.Level])
			if len(e.SharedWith) > 0 {
				msg += fmt.Sprintf("; the NIC is shared with %s, so each GPU gets part of its bandwidth", strings.Join(e.SharedWith, ", "))
			}
			if also := e.alsoNearest(); len(also) > 0 {
				msg += fmt.Sprintf("; also at %s: %s", e.Level, strings.Join(also, ", "))
			}
			// Reasons and subjects as the check of the same ID gives them.
			out = append(out, verdict.New(IDNICAffinity, result.Pass, e.GPU+"-"+m.nicDevice(e.NIC), "NICAt"+e.Level, msg, ev...))
			continue
		}
		v := verdict.New(IDNICAffinity, result.Fail, e.GPU+"-"+m.nicDevice(e.NIC), "NICBeyondGDRLevel",
			fmt.Sprintf("%s's nearest RDMA NIC is %s at %s (%s): NCCL will not use GPU Direct RDMA for this GPU by default (NCCL_NET_GDR_LEVEL defaults to PXB) and stages its network traffic through host memory",
				e.GPU, m.nicName(e.NIC), e.Level, levelMeaning[e.Level]), ev...)
		v.Remedy = fmt.Sprintf("place an RDMA NIC on the GPU's PCIe switch (one GPU/NIC pair per switch), or accept the slower path and set NCCL_NET_GDR_LEVEL=%s to force GPU Direct RDMA across it; in VMs expose the host's PCIe switches (or an NCCL_TOPO_FILE) so NCCL sees the real distance", e.Level)
		out = append(out, v)
	}
	return out
}

// WriteText prints the verdicts, the matrix size and the pairing.
func (r *Report) WriteText(w io.Writer, vs []result.Result) error {
	m := r.Matrix
	var b strings.Builder
	if !m.Paste.Empty() {
		fmt.Fprintf(&b, "\n%s\n", m.Paste)
	}
	gpus, nics := 0, 0
	for _, g := range m.IsGPU {
		if g {
			gpus++
		} else {
			nics++
		}
	}
	fmt.Fprintf(&b, "\nnvidia-smi topo -m: %d GPUs, %d NICs (header at line %d)\n", gpus, nics, m.HeaderLine)
	if len(r.Pairing.GPUs) > 0 && nics > 0 {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  GPU\tNIC\tDevice\tPath\tGDR\tShared with\tAlso nearest\tCPU affinity\tNUMA")
		for _, e := range r.Pairing.GPUs {
			gdr := "no"
			if e.GDR {
				gdr = "yes"
			}
			also := e.alsoNearest()
			row := m.index(e.GPU)
			cpu, numa := "", ""
			if row >= 0 && row < len(m.CPUAffinity) {
				cpu, numa = m.CPUAffinity[row], m.NUMAAffinity[row]
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.GPU, dash(e.NIC), dash(e.Device), e.Level, gdr,
				dash(strings.Join(e.SharedWith, ",")), dash(strings.Join(also, ",")), dash(cpu), dash(numa))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Pairing.Unused) > 0 {
		var names []string
		for _, n := range r.Pairing.Unused {
			names = append(names, m.nicName(n))
		}
		fmt.Fprintf(&b, "  NICs no GPU is paired with: %s\n", strings.Join(names, ", "))
	}
	return (verdict.Text{}).Page(w, "", vs, b.String())
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// alsoNearest are the GPU's other NICs at its best level.
func (e GPUNIC) alsoNearest() []string {
	var also []string
	for _, n := range e.Nearest {
		if n != e.NIC {
			also = append(also, n)
		}
	}
	return also
}

// missingGPUs are the GPU columns whose rows the input does not hold.
func (m *Matrix) missingGPUs() []string {
	var out []string
	for i, l := range m.Labels {
		if m.IsGPU[i] && i >= len(m.Cells) {
			out = append(out, l)
		}
	}
	return out
}

func orNone(gpus []string) string {
	if len(gpus) == 0 {
		return "no GPU (only NIC rows are missing)"
	}
	return "the NIC paths of " + strings.Join(gpus, ", ")
}
