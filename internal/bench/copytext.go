package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// WriteCopyText is bench copy's own text view: a table of every copy, the
// peer matrices and the judgements. What the runtime and the driver said
// (versions, device names, errors) is printed escaped (printable.Line).
func WriteCopyText(w io.Writer, rep *CopyReport, cfg CopyConfig, judgements []result.Result) {
	l := printable.Line
	fmt.Fprintf(w, "gdrcheck bench copy: CUDA runtime %s, %d bytes per copy, %d timed after %d warm-up, every copy validated\n", l(rep.CUDARuntime), cfg.Bytes, cfg.Iters, cfg.Warmup)
	for _, d := range rep.Devices {
		fmt.Fprintf(w, "  device %d [%s] %s\n", d.CUDA, l(d.BusID), l(d.Name))
	}
	if e := rep.Expected; e != nil {
		fmt.Fprintf(w, "  judged against %s\n", l(e.Line()))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTEST\tGPU\tPEER\tBYTES\tTIME(us)\tGB/s\tREAD+WRITE GB/s\tVALID\tNUMA-LOCAL\tNOTE")
	for _, r := range rep.Measurements {
		peer := "-"
		if r.Peer >= 0 {
			peer = fmt.Sprint(r.Peer)
		}
		gb, rw := fmt.Sprintf("%.1f", r.GBps), "-"
		if r.ReadWriteGBps > 0 {
			rw = fmt.Sprintf("%.1f", r.ReadWriteGBps)
		}
		if r.Test == CopyLatency {
			gb = "-"
		}
		valid := "yes"
		if !r.Valid {
			valid = fmt.Sprintf("NO (%d bytes wrong)", r.Wrong)
		}
		note := l(r.Note)
		if r.Error != "" {
			valid, note = "ERROR", l(r.Error)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%.2f\t%s\t%s\t%s\t%s\t%s\n", r.Test, r.Dev, peer, r.Bytes, r.US, gb, rw, valid, yesno(r.NUMABound), note)
	}
	tw.Flush()
	writePeerMatrix(w, rep.Measurements, CopyP2P, "GPU->GPU copy bandwidth, one way (GB/s)")
	writePeerMatrix(w, rep.Measurements, CopyP2PBidir, "GPU<->GPU copy bandwidth, both ways at once, summed (GB/s)")
	writePeerMatrix(w, rep.Measurements, CopyLatency, "GPU->GPU small-copy latency (us)")
	for _, j := range judgements {
		fmt.Fprintf(w, "%-7s %s\n", strings.ToUpper(string(j.Status)), l(j.Message))
	}
}

func yesno(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func writePeerMatrix(w io.Writer, rs []CopyResult, test, title string) {
	cells := map[[2]int]CopyResult{}
	var devs []int
	seen := map[int]bool{}
	for _, r := range rs {
		if r.Test == test && r.Peer >= 0 {
			cells[[2]int{r.Dev, r.Peer}] = r
			for _, d := range []int{r.Dev, r.Peer} {
				if !seen[d] {
					seen[d] = true
					devs = append(devs, d)
				}
			}
		}
	}
	if len(cells) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\n%s\n", title)
	hdr := "src\\dst\t"
	for _, d := range devs {
		hdr += fmt.Sprintf("%d\t", d)
	}
	fmt.Fprintln(tw, hdr)
	for _, a := range devs {
		line := fmt.Sprintf("%d\t", a)
		for _, b := range devs {
			c, ok := cells[[2]int{a, b}]
			switch {
			case a == b || !ok:
				line += "-\t"
			case test == CopyLatency:
				line += fmt.Sprintf("%.2f\t", c.US)
			default:
				line += fmt.Sprintf("%.1f\t", c.GBps)
			}
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}
