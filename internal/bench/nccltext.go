package bench

import (
	"fmt"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// NCCLText streams bench nccl's own text view, nccl-tests' layout, while
// a run goes. A nil W writes nothing.
type NCCLText struct{ W io.Writer }

// Header names the libraries, the sizes and the ranks.
func (t NCCLText) Header(rep *NCCLReport, cfg NCCLConfig, host string, pid int) {
	if t.W == nil {
		return
	}
	w := t.W
	fmt.Fprintf(w, "# gdrcheck bench nccl: NCCL %s (%s), CUDA runtime %s, driver CUDA %s\n", rep.NCCL, rep.NCCLPath, rep.CUDARuntime, rep.CUDADriver)
	fmt.Fprintf(w, "# minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d validation: %d\n", cfg.MinBytes, cfg.MaxBytes, stepText(cfg), cfg.Warmup, cfg.Iters, cfg.Check)
	fmt.Fprintf(w, "# device buffers from %s\n", cfg.Buffers)
	for i, d := range rep.Devices {
		fmt.Fprintf(w, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s\n", i, pid, host, d.CUDA, d.BusID, d.Name)
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
		fmt.Fprintf(t.W, "#\n# %s\n", s)
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
			fmt.Fprintf(t.W, "# ERROR: %s\n", r.Error)
		}
		io.WriteString(t.W, r.Footer())
	}
	if runErr != nil && len(results) == 0 {
		fmt.Fprintf(t.W, "# ERROR: %v\n", runErr)
	}
}

// Trailer gives the judgements, NCCL's own verdicts and where the results
// are.
func (t NCCLText) Trailer(judgements []result.Result, ev *NCCLEvidence, dir string) {
	if t.W == nil {
		return
	}
	for _, j := range judgements {
		fmt.Fprintf(t.W, "# %-7s %s: %s\n", strings.ToUpper(string(j.Status)), j.Subject, j.Message)
	}
	for _, l := range ev.Summary {
		fmt.Fprintf(t.W, "# NCCL: %s\n", l)
	}
	fmt.Fprintf(t.W, "# Results and NCCL's logs: %s\n", dir)
}
