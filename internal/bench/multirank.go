package bench

import (
	"fmt"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/rendezvous"
)

// JobReport is a multi-process run as rank 0 gathered it: every rank's
// own part, and the ranks that failed.
type JobReport struct {
	Launcher   string `json:"launcher"`
	WorldSize  int    `json:"world_size"`
	Rendezvous string `json:"rendezvous"`
	// Split is how the ranks were grouped (all, intra, rail) and Groups
	// the number of communicators measured side by side.
	Split    string               `json:"split"`
	Groups   int                  `json:"groups"`
	Ranks    []RankResult         `json:"ranks"`
	Failures []rendezvous.Failure `json:"failures,omitempty"`
	// Processes are the job's processes where one drives several GPUs (a
	// rank each, nccl-tests' -g under MPI); absent in a job of one GPU
	// per process, where a process is a rank.
	Processes []JobProcess `json:"processes,omitempty"`
	// NCCLLogs is every rank's NCCL log read as one job.
	NCCLLogs *JobLogs `json:"nccl_logs,omitempty"`
}

// JobProcess is one process of a job whose processes drive several GPUs:
// its rank at the rendezvous, its host, and the NCCL ranks of its GPUs
// (FirstRank..FirstRank+GPUs-1).
type JobProcess struct {
	Process   int    `json:"process"`
	Host      string `json:"host"`
	GPUs      int    `json:"gpus"`
	FirstRank int    `json:"first_rank"`
}

// RankResult is one rank's part of a multi-process run: what it measured
// by itself (its own clock), where it ran, and NCCL's log of it.
type RankResult struct {
	Rank         int          `json:"rank"`
	Host         string       `json:"host"`
	PID          int          `json:"pid"`
	Device       Device       `json:"device"`
	Measurements []NCCLResult `json:"measurements"`
	Error        string       `json:"error,omitempty"`
	// Aborted is a rank that stopped because another failed (rank 0 told
	// it, or its peer's connection dropped), not by its own fault.
	Aborted bool `json:"aborted,omitempty"`
	// Group is the rank's communicator in a split job (its color: the
	// node's index for intra, the local index for rail; 0 unsplit).
	Group    int           `json:"group"`
	Evidence *NCCLEvidence `json:"nccl_evidence,omitempty"`
	// NCCLHostID is the rank's NCCL_HOSTID where set: NCCL counts ranks
	// with different ones as different nodes (several ranks on one
	// machine then connect over the network).
	NCCLHostID string `json:"nccl_hostid,omitempty"`
	// Logs are the rank's NCCL debug logs (their heads), for rank 0 to
	// judge as one job; rank 0's report keeps them in NCCLLogs instead.
	Logs []RankLog `json:"logs,omitempty"`
	// Process is the rank's process (its rank at the rendezvous) where a
	// process drives several GPUs: its folder is rank-<process>, and its
	// measurements, evidence and logs are on its first rank's row (one
	// clock timed all of its GPUs, as nccl-tests' -g does); nil in a job
	// of one GPU per process.
	Process *int `json:"process,omitempty"`
}

// NodeKey is the node the rank counts on, as NCCL counts them.
func (r RankResult) NodeKey() string {
	if r.NCCLHostID != "" {
		return "hostid:" + r.NCCLHostID
	}
	return r.Host
}

// CombineRanks is the job's table from every rank's own: nccl-tests'
// default (-a 1) averages each row's time over the ranks and derives the
// bandwidths from that average; #wrong is summed. Where a process drives
// several GPUs its one measurement is on its first rank's row (the others
// have none), so the mean is over processes, as nccl-tests averages over
// its MPI processes under -g, and the bandwidths use every rank (Ranks). A rank whose row differs
// in size, or that lacks the row, is left out of that row; a collective
// any rank failed in carries that rank's error.
func CombineRanks(ranks []RankResult, d DType) []NCCLResult {
	if len(ranks) == 0 {
		return nil
	}
	var out []NCCLResult
	for ci, base := range ranks[0].Measurements {
		res := NCCLResult{Collective: base.Collective, Ranks: base.Ranks, Error: base.Error, Variant: base.Variant}
		for _, rk := range ranks[1:] {
			if ci < len(rk.Measurements) && rk.Measurements[ci].Error != "" && res.Error == "" {
				res.Error = fmt.Sprintf("rank %d: %s", rk.Rank, rk.Measurements[ci].Error)
			}
		}
		var sums busSums
		for ri, row := range base.Rows {
			comb := row
			comb.OutOfPlace = combineMeasure(ranks, ci, ri, row, false, base.Collective, d, base.Ranks)
			comb.InPlace = combineMeasure(ranks, ci, ri, row, true, base.Collective, d, base.Ranks)
			for _, m := range []*collective.Measure{comb.OutOfPlace, comb.InPlace} {
				if m != nil {
					sums.add(&res, m)
				}
			}
			res.Rows = append(res.Rows, comb)
		}
		sums.average(&res)
		out = append(out, res)
	}
	return out
}

func combineMeasure(ranks []RankResult, ci, ri int, base collective.Row, inPlace bool, c collective.Collective, d DType, n int) *collective.Measure {
	var sum float64
	var k int
	var wrong *int64
	for _, rk := range ranks {
		if ci >= len(rk.Measurements) || rk.Measurements[ci].Collective != c || ri >= len(rk.Measurements[ci].Rows) {
			continue
		}
		row := rk.Measurements[ci].Rows[ri]
		m := row.OutOfPlace
		if inPlace {
			m = row.InPlace
		}
		if m == nil || row.Bytes != base.Bytes {
			continue
		}
		sum += m.TimeUS
		k++
		if m.Wrong != nil {
			wrong = new(deref(wrong) + *m.Wrong)
		}
	}
	if k == 0 {
		return nil
	}
	avg := sum / float64(k)
	m := &collective.Measure{TimeUS: avg, Wrong: wrong}
	m.AlgBW, m.BusBW = c.Bandwidths(base.Count, d.Size, avg/1e6, n)
	return m
}

// JobHeader prints the ranks of a multi-process run as nccl-tests does
// under MPI: one line per rank with its host, process and device.
func (t NCCLText) JobHeader(rep *NCCLReport, cfg NCCLConfig) {
	if t.W == nil || rep.Job == nil {
		return
	}
	w, l := t.W, printable.Line
	fmt.Fprintf(w, "# gdrcheck bench nccl: NCCL %s (%s), CUDA runtime %s, driver CUDA %s\n", l(rep.NCCL), l(rep.NCCLPath), l(rep.CUDARuntime), l(rep.CUDADriver))
	fmt.Fprintf(w, "# %d ranks (%s), rendezvous %s\n", rep.Job.WorldSize, l(rep.Job.Launcher), l(rep.Job.Rendezvous))
	if ps := rep.Job.Processes; len(ps) > 0 {
		fmt.Fprintf(w, "# %d processes, several GPUs each (each times all of its GPUs; the times are averaged over the processes):\n", len(ps))
		for _, p := range ps {
			fmt.Fprintf(w, "#  Process %2d on %10s: %d GPU(s), ranks %d..%d\n", p.Process, l(p.Host), p.GPUs, p.FirstRank, p.FirstRank+p.GPUs-1)
		}
	}
	if rep.Job.Split != "" && rep.Job.Split != "all" {
		fmt.Fprintf(w, "# split %s: %d communicators side by side, times averaged over every rank\n", l(rep.Job.Split), rep.Job.Groups)
	}
	fmt.Fprintf(w, "# minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d agg iters: 1 validation: %d\n", cfg.MinBytes, cfg.MaxBytes, stepText(cfg), cfg.Warmup, cfg.Iters, cfg.Check)
	fmt.Fprintf(w, "# device buffers from %s\n", l(string(cfg.Buffers)))
	fmt.Fprintln(w, "#\n# Using devices")
	for _, r := range rep.Job.Ranks {
		fmt.Fprintf(w, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s\n", r.Rank, r.PID, l(r.Host), r.Device.CUDA, l(r.Device.BusID), l(r.Device.Name))
	}
	for _, f := range rep.Job.Failures {
		fmt.Fprintf(w, "#  Rank %2d FAILED on %s: %s\n", f.Rank, l(f.Host), l(f.Reason))
	}
	for _, r := range rep.Job.Ranks {
		if r.Aborted {
			fmt.Fprintf(w, "#  Rank %2d aborted: another rank failed\n", r.Rank)
		}
	}
	if e := rep.Expected; e != nil {
		fmt.Fprintf(w, "# judged against %s\n", l(e.Line()))
	}
}

// JobTrailer prints what NCCL's logs of every rank say, read as one job.
func (t NCCLText) JobTrailer(jl *JobLogs) {
	if t.W == nil || jl == nil {
		return
	}
	l := printable.Line
	for _, v := range jl.Verdicts {
		fmt.Fprintf(t.W, "# NCCL job: %s %s %s: %s\n", strings.ToUpper(string(v.Status)), l(v.ID), l(v.Subject), l(v.Message))
	}
	for _, n := range jl.Truncated {
		fmt.Fprintf(t.W, "# NCCL job: %s reached rank 0 in part (its head)\n", l(n))
	}
	for _, e := range jl.Errors {
		fmt.Fprintf(t.W, "# NCCL job: %s\n", l(e))
	}
}

// WriteJobTables prints the combined table of every collective.
func (t NCCLText) WriteJobTables(results []NCCLResult, runErr error) {
	if t.W == nil {
		return
	}
	for _, r := range results {
		if r.Variant == VariantHierarchical {
			fmt.Fprintf(t.W, "#\n# Collective %s, hierarchical: reduce-scatter in the node, all-reduce per rail, all-gather in the node (out of place; each stage waited for)\n", r.Collective)
			io.WriteString(t.W, TableHeader())
		} else {
			t.Collective(r.Collective)
		}
		for _, row := range r.Rows {
			t.Row(row)
		}
	}
	t.Footers(results, runErr)
}
