package nccltopo

import (
	"fmt"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze/verdict"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// WriteText prints a human summary (verdict.Text.Page): a headline, the
// verdicts, then the GPUs, NICs and graphs.
func (r *Report) WriteText(w io.Writer, vs []result.Result) error {
	kind := "topology"
	if r.Kind == "graphs" {
		kind = "graph"
	}
	head := fmt.Sprintf("NCCL %s file %s (version %q, %d lines)", kind, r.File, r.Version, r.Lines)
	if r.Truncated {
		head += ", TRUNCATED"
	}
	var b strings.Builder
	if !r.Paste.Empty() {
		fmt.Fprintf(&b, "\n%s\n", r.Paste)
	}
	if s := r.System; s != nil {
		fmt.Fprintf(&b, "\nCPUs: %d, GPUs: %d, NICs: %d\n", len(s.CPUs), len(s.GPUs), len(s.NICs))
		for _, g := range s.GPUs {
			fmt.Fprintf(&b, "  %-34s numa %s, %s, path %s", gpuName(g), intOr(g.NUMAID), link(g.LinkSpeedGTs, g.LinkWidth), pathStr(g.Path))
			if g.SM != nil {
				fmt.Fprintf(&b, ", sm %d", *g.SM)
			}
			if g.GDR != nil {
				fmt.Fprintf(&b, ", gdr %v", *g.GDR)
			}
			for _, l := range g.NVLinks {
				fmt.Fprintf(&b, ", nvlink %s x%d", l.Target, deref(l.Count))
			}
			b.WriteString("\n")
		}
		for _, n := range s.NICs {
			bus := n.BusID
			if bus == "" {
				bus = "(under the CPU)"
			}
			fmt.Fprintf(&b, "  NIC %-30s numa %s, %s, path %s, rdma %v", bus, intOr(n.NUMAID), link(n.LinkSpeedGTs, n.LinkWidth), pathStr(n.Path), n.RDMA)
			for _, x := range n.Nets {
				fmt.Fprintf(&b, "; %s", x.Name)
				if x.Speed != nil {
					fmt.Fprintf(&b, " %g Gb/s", float64(*x.Speed)/1000)
				}
				if x.GDR != nil {
					fmt.Fprintf(&b, " gdr %v", *x.GDR)
				}
			}
			b.WriteString("\n")
		}
		for _, p := range s.Paths {
			fmt.Fprintf(&b, "  GPU %s -> %s: %s\n", p.GPU, strings.Join(p.NICs, ", "), p.Type)
		}
	}
	for _, g := range r.Graphs {
		fmt.Fprintf(&b, "\n%s: %d channel(s), intra %s %g GB/s, inter %s %g GB/s, crossnic %d\n",
			graphName(g), g.NChannels, g.TypeIntra, g.SpeedIntra, g.TypeInter, g.SpeedInter, g.CrossNIC)
		for i, c := range g.Channels {
			var d []string
			for _, x := range c.Devices {
				d = append(d, fmt.Sprintf("%s%d", strings.ToUpper(x.Kind), x.Dev))
			}
			fmt.Fprintf(&b, "  channel %d: %s\n", i, strings.Join(d, " "))
		}
	}
	return (verdict.Text{Notes: true}).Page(w, head, vs, b.String())
}

func intOr(p *int) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprint(*p)
}

func link(speed float64, width *int) string {
	if speed <= 0 && deref(width) <= 0 {
		return "link unknown"
	}
	return fmt.Sprintf("%g GT/s x%d", speed, deref(width))
}

func pathStr(p []string) string {
	if len(p) == 0 {
		return "CPU"
	}
	return "CPU > " + strings.Join(p, " > ")
}
