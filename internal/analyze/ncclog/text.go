package ncclog

import (
	"fmt"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze/verdict"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// WriteText prints a human summary (verdict.Text.Page): a headline, the
// verdicts, then what the log says.
func (r *Report) WriteText(w io.Writer, vs []result.Result) error {
	head := fmt.Sprintf("NCCL log %s: %d lines, %d NCCL messages", r.File, r.Lines, r.NCCLLines)
	if r.SplicedLines > 0 {
		head += fmt.Sprintf(", %d lines spliced by concurrent writers", r.SplicedLines)
	}
	if r.LongLines > 0 {
		head += fmt.Sprintf(", %d overlong lines read in part", r.LongLines)
	}
	var b strings.Builder
	if !r.Paste.Empty() {
		fmt.Fprintf(&b, "\n%s\n", r.Paste)
	}
	if len(r.Versions) > 0 {
		b.WriteString("\nNCCL versions:\n")
		for _, v := range r.Versions {
			if v.Processes == 0 {
				fmt.Fprintf(&b, "  %-24s printed without a rank header (line %d)\n", v.Version, v.Line)
				continue
			}
			fmt.Fprintf(&b, "  %-24s %d process(es) %s\n", v.Version, v.Processes, strings.Join(v.Hosts, " "))
		}
	}
	r.writeHosts(&b)
	r.writeGDR(&b)
	r.writeChannels(&b)
	for _, t := range r.Topology {
		fmt.Fprintf(&b, "\nSystem tree of %s (line %d): maxBw %.1f totalBw %.1f, %d GPUs, %d NICs, %d NVLink links\n",
			t.Host, t.Line, t.MaxBW, t.TotalBW, t.GPUs, t.NICs, t.NVLinks)
		for _, f := range t.Findings {
			fmt.Fprintf(&b, "  %s: %s (line %d)\n", f.Kind, f.Detail, f.Line)
		}
	}
	if len(r.Errors) > 0 || len(r.Warnings) > 0 {
		fmt.Fprintf(&b, "\nErrors (%d lines) and warnings (%d lines):\n", r.ErrorCount, r.WarningCount)
		for _, e := range append(append([]Event{}, r.Errors...), r.Warnings...) {
			fmt.Fprintf(&b, "  %-7s line %d x%d: %s\n", e.Level, e.Line, e.Count, short(e.Message, 160))
			if e.Explanation != "" {
				fmt.Fprintf(&b, "          (%s)\n", e.Explanation)
			}
		}
	}
	return (verdict.Text{}).Page(w, head, vs, b.String())
}

// writeHosts prints the hosts (the first 32).
func (r *Report) writeHosts(b *strings.Builder) {
	if len(r.Hosts) > 0 {
		fmt.Fprintf(b, "\nHosts (%d):\n", len(r.Hosts))
		for i, h := range r.Hosts {
			if i == 32 {
				fmt.Fprintf(b, "  ... %d more\n", len(r.Hosts)-32)
				break
			}
			fmt.Fprintf(b, "  %-24s %d proc, ranks %s, %d lines", h.Name, h.Processes, intRanges(h.Ranks), h.Lines)
			if h.Silent {
				b.WriteString(" (silent)")
			}
			if len(h.Networks) > 0 {
				fmt.Fprintf(b, ", network %s", strings.Join(h.Networks, "/"))
			}
			if len(h.IBDevices) > 0 {
				var ds []string
				for _, d := range h.IBDevices {
					ds = append(ds, fmt.Sprintf("%s:%d/%s", d.Name, d.Port, d.LinkLayer))
				}
				fmt.Fprintf(b, ", IB %s", strings.Join(ds, " "))
			}
			if h.NoIBDevice {
				b.WriteString(", no IB device")
			}
			if len(h.SocketIfaces) > 0 {
				fmt.Fprintf(b, ", socket %s", strings.Join(h.SocketIfaces, " "))
			}
			b.WriteString("\n")
		}
	}
}

// writeGDR prints the GPU Direct RDMA lines (the first 16 of each kind).
func (r *Report) writeGDR(b *strings.Builder) {
	if len(r.GDR.HCAs) > 0 || len(r.GDR.GPUs) > 0 || r.GDR.DMABuf {
		b.WriteString("\nGPU Direct RDMA:\n")
		for i, h := range r.GDR.HCAs {
			if i == 16 {
				fmt.Fprintf(b, "  ... %d more HCAs\n", len(r.GDR.HCAs)-16)
				break
			}
			fmt.Fprintf(b, "  %-20s %s HCA %d %-14s %s\n", h.Host, h.Plugin, h.Index, h.Name, onOff(h.Enabled))
		}
		for i, g := range r.GDR.GPUs {
			if i == 16 {
				fmt.Fprintf(b, "  ... %d more GPU/HCA pairs\n", len(r.GDR.GPUs)-16)
				break
			}
			fmt.Fprintf(b, "  %-20s GPU %s / HCA %d: %s (distance %d, limit %d)\n", g.Host, g.GPU, g.HCA, onOff(g.Enabled), g.Distance, g.Limit)
		}
		fmt.Fprintf(b, "  dma-buf: %v", r.GDR.DMABuf)
		if r.GDR.Level != "" {
			fmt.Fprintf(b, ", NCCL_NET_GDR_LEVEL=%s", r.GDR.Level)
		}
		b.WriteString("\n")
	}
}

// writeChannels prints the channel transports and counts.
func (r *Report) writeChannels(b *strings.Builder) {
	c := r.Channels
	fmt.Fprintf(b, "\nChannels: %d transport lines (%d intra-node, %d inter-node, %d unknown), %d connections",
		c.TransportLines, c.IntraNode, c.InterNode, c.UnknownLocality, c.Connections)
	if c.GarbledLines > 0 {
		fmt.Fprintf(b, ", %d garbled", c.GarbledLines)
	}
	b.WriteString("\n")
	for _, t := range c.ByTransport {
		if t.Lines == 0 {
			continue
		}
		fmt.Fprintf(b, "  %-32s %-7s %8d lines (intra %d, inter %d, unknown %d)\n", t.Transport, t.Class, t.Lines, t.Intra, t.Inter, t.Unknown)
	}
	for _, n := range c.Counts {
		fmt.Fprintf(b, "  counts on %d process(es): %s\n", n.Processes, n.Text)
	}
}

func onOff(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

func short(s string, n int) string {
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}

// intRanges prints sorted ints as "0-7,9".
func intRanges(v []int) string {
	if len(v) == 0 {
		return "-"
	}
	var p []string
	for i := 0; i < len(v); {
		j := i
		for j+1 < len(v) && v[j+1] == v[j]+1 {
			j++
		}
		if j > i {
			p = append(p, fmt.Sprintf("%d-%d", v[i], v[j]))
		} else {
			p = append(p, fmt.Sprint(v[i]))
		}
		if len(p) == 16 {
			p = append(p, "...")
			break
		}
		i = j + 1
	}
	return strings.Join(p, ",")
}
