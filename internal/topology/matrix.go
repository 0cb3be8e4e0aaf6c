package topology

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/printable"
)

// Matrix is the topology matrix as data: the same content as
// `nvidia-smi topo -m`.
type Matrix struct {
	Labels []string     `json:"labels"` // GPU0.., NIC0..
	Cells  [][]Relation `json:"cells"`  // Cells[i][j]: row i to column j
	// Affinity columns of GPU rows (empty strings on NIC rows).
	CPUAffinity  []string `json:"cpu_affinity"`
	NUMAAffinity []string `json:"numa_affinity"`
	GPUNUMAID    []string `json:"gpu_numa_id"`
	NICNames     []string `json:"nic_names"` // NIC legend, by NIC index
	// NVLinkUnknown is true when some GPU's NVLinks could not be read, so
	// GPU–GPU cells show the PCIe path only.
	NVLinkUnknown bool `json:"nvlink_unknown"`
	// PCIeOnly is the `nvidia-smi topo -mp` form: PCIe paths, no NV#.
	PCIeOnly bool `json:"pcie_only"`
}

// BuildMatrix computes the matrix of a host (`nvidia-smi topo -m`).
func (h *Host) BuildMatrix() *Matrix { return h.buildMatrix(false) }

// BuildPCIeMatrix computes the PCIe-only matrix (`nvidia-smi topo -mp`).
func (h *Host) BuildPCIeMatrix() *Matrix { return h.buildMatrix(true) }

func (h *Host) buildMatrix(pcieOnly bool) *Matrix {
	eps := h.Endpoints()
	m := &Matrix{PCIeOnly: pcieOnly}
	for _, e := range eps {
		m.Labels = append(m.Labels, e.Label)
		if e.NIC != nil {
			m.NICNames = append(m.NICNames, e.NIC.Name)
		}
		if e.GPU != nil && !e.GPU.NVLinkKnown {
			m.NVLinkUnknown = true
		}
	}
	m.Cells = make([][]Relation, len(eps))
	for i, a := range eps {
		m.Cells[i] = make([]Relation, len(eps))
		for j, b := range eps {
			r := h.Relate(a, b)
			if pcieOnly {
				r.Level, r.NVLinks = r.PCIe, 0
			}
			m.Cells[i][j] = r
		}
		cpu, numa, gnuma := "", "", ""
		if a.GPU != nil {
			cpu = a.GPU.Dev.LocalCPUs.String()
			if n := h.NUMAOf(a.GPU.Dev); n >= 0 {
				numa = strconv.Itoa(n)
			} else {
				numa = "N/A"
			}
			gnuma = "N/A"
			if f := a.GPU.Facts; f != nil && f.NUMANode != nil && *f.NUMANode >= 0 {
				gnuma = strconv.Itoa(*f.NUMANode)
			}
		}
		m.CPUAffinity = append(m.CPUAffinity, cpu)
		m.NUMAAffinity = append(m.NUMAAffinity, numa)
		m.GPUNUMAID = append(m.GPUNUMAID, gnuma)
	}
	return m
}

// legend is nvidia-smi's legend, word for word, so outputs can be diffed.
var legend = []string{
	"  X    = Self",
	"  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
	"  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node",
	"  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
	"  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
	"  PIX  = Connection traversing at most a single PCIe bridge",
	"  NV#  = Connection traversing a bonded set of # NVLinks",
}

// RenderOptions controls the text layout.
type RenderOptions struct {
	// Underline wraps the header in the ANSI underline escape as
	// nvidia-smi does (only sensible on a terminal).
	Underline bool
}

// WriteText prints the matrix in `nvidia-smi topo -m`'s tab-separated
// layout, legend and NIC legend included. Labels, affinities and NIC names
// are printed escaped (printable.Line): a NIC's name is a directory name
// from the host, and may hold anything but a slash.
func (m *Matrix) WriteText(w io.Writer, o RenderOptions) error {
	var b strings.Builder
	labels := make([]string, len(m.Labels))
	for i, l := range m.Labels {
		labels[i] = printable.Line(l)
	}
	hdr := strings.Join(append(labels, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"), "\t")
	if o.Underline {
		hdr = "\x1b[4m" + hdr + "\x1b[0m"
	}
	b.WriteString("\t" + hdr + "\n")
	for i, l := range labels {
		cells := make([]string, 0, len(m.Labels)+5)
		cells = append(cells, l)
		for j := range m.Labels {
			if i == j {
				cells = append(cells, " X ")
			} else {
				cells = append(cells, m.Cells[i][j].String())
			}
		}
		// nvidia-smi leaves an empty field between NUMA Affinity and GPU NUMA ID.
		cells = append(cells, printable.Line(m.CPUAffinity[i]), printable.Line(m.NUMAAffinity[i]), "", printable.Line(m.GPUNUMAID[i]))
		b.WriteString(strings.Join(cells, "\t") + "\n")
	}
	b.WriteString("\nLegend:\n\n")
	for i, l := range legend {
		if m.PCIeOnly && i == len(legend)-1 {
			break // no NV# in a PCIe-only matrix
		}
		b.WriteString(l + "\n")
	}
	if len(m.NICNames) > 0 {
		b.WriteString("\nNIC Legend:\n\n")
		for i, n := range m.NICNames {
			fmt.Fprintf(&b, "  NIC%d: %s\n", i, printable.Line(n))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
