package bench

import (
	"fmt"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// NCCLText streams bench nccl's own text view, nccl-tests' layout, while
// a run goes. A nil W writes nothing. What the libraries, the driver and
// NCCL's log said (versions, paths, device names, errors, NCCL's summary
// lines) is printed escaped (printable.Line).
type NCCLText struct{ W io.Writer }

// Header names the libraries, the sizes and the ranks.
func (t NCCLText) Header(rep *NCCLReport, cfg NCCLConfig, host string, pid int) {
	if t.W == nil {
		return
	}
	w, l := t.W, printable.Line
	fmt.Fprintf(w, "# gdrcheck bench nccl: NCCL %s (%s), CUDA runtime %s, driver CUDA %s\n", l(rep.NCCL), l(rep.NCCLPath), l(rep.CUDARuntime), l(rep.CUDADriver))
	fmt.Fprintf(w, "# minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d validation: %d\n", cfg.MinBytes, cfg.MaxBytes, stepText(cfg), cfg.Warmup, cfg.Iters, cfg.Check)
	fmt.Fprintf(w, "# device buffers from %s\n", l(string(cfg.Buffers)))
	for i, d := range rep.Devices {
		fmt.Fprintf(w, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s\n", i, pid, l(host), d.CUDA, l(d.BusID), l(d.Name))
	}
	if e := rep.Expected; e != nil {
		fmt.Fprintf(w, "# judged against %s\n", l(e.Line()))
	}
}

func stepText(cfg NCCLConfig) string {
	if cfg.StepFactor > 1 {
		return fmt.Sprintf("%d(factor)", cfg.StepFactor)
	}
	return fmt.Sprintf("%d(bytes)", cfg.StepBytes)
}

// Note is a remark nccl-tests would print ("Reducing maxBytes").
func (t NCCLText) Note(s string) {
	if t.W != nil {
		fmt.Fprintf(t.W, "#\n# %s\n", printable.Line(s))
	}
}

// Collective starts a collective's table.
func (t NCCLText) Collective(name collective.Collective) {
	if t.W != nil {
		fmt.Fprintf(t.W, "#\n# Collective %s\n", name)
		io.WriteString(t.W, TableHeader())
	}
}

// Row is one finished size.
func (t NCCLText) Row(r collective.Row) {
	if t.W != nil {
		fmt.Fprintln(t.W, RowLine(r))
	}
}

// Footers close every collective's table; runErr is the run's error.
func (t NCCLText) Footers(results []NCCLResult, runErr error) {
	if t.W == nil {
		return
	}
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(t.W, "# ERROR: %s\n", printable.Line(r.Error))
		}
		io.WriteString(t.W, r.Footer())
	}
	if runErr != nil && len(results) == 0 {
		fmt.Fprintf(t.W, "# ERROR: %s\n", printable.Line(runErr.Error()))
	}
}

// Trailer gives the judgements, NCCL's own verdicts and where the results
// are.
func (t NCCLText) Trailer(judgements []result.Result, ev *NCCLEvidence, dir string) {
	if t.W == nil {
		return
	}
	for _, j := range judgements {
		fmt.Fprintf(t.W, "# %-7s %s: %s\n", strings.ToUpper(string(j.Status)), printable.Line(j.Subject), printable.Line(j.Message))
		if j.Remedy != "" && j.Status != result.Pass {
			fmt.Fprintf(t.W, "#         → %s\n", printable.Line(j.Remedy))
		}
	}
	for _, l := range ev.Summary {
		fmt.Fprintf(t.W, "# NCCL: %s\n", printable.Line(l))
	}
	fmt.Fprintf(t.W, "# Results and NCCL's logs: %s\n", printable.Line(dir))
}
