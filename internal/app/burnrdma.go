package app

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// BurnRDMA is one ib_write_bw loopback of a window: GPU memory through one
// GPU–NIC pair for Seconds, at its average rate.
type BurnRDMA struct {
	GPU    string  `json:"gpu"` // PCI address
	NIC    string  `json:"nic"`
	Port   int     `json:"port"`
	Memory string  `json:"memory"` // cuda (nvidia-peermem) or cuda-dmabuf
	Gbps   float64 `json:"gbps"`
	// Seconds is how long it is taken to have run: its -D, or less when
	// its round ended sooner (a share of the round's time).
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
	// Cause is perftest's failure as bench rdma names it
	// (rdma.Cause*), "" when it ran.
	Cause string `json:"cause,omitempty"`
}

// burnLoopback is the burn-in's loopback plan and how long each of its
// runs lasts (perftest's -D).
type burnLoopback struct {
	plan *rdma.Plan
	secs int
}

// loopbackSeconds is each run's -D for runs runs a round in a window: a
// round takes at most half the window, so that rounds repeat within it,
// each run 2 s to 20 s (long enough that its rate is steady). 0 when not
// even 2 s a run fits.
func loopbackSeconds(window time.Duration, runs int) int {
	if runs < 1 {
		return 0
	}
	secs := min(int(window/2/time.Second)/runs, 20)
	if secs < 2 {
		return 0
	}
	return secs
}

// burnRDMAPlan is the burn-in's loopback plan on the node behind n: every
// GPU–NIC pair that is not skipped, with its GPU-memory runs only (the
// host-memory control moves no GPU data); nil and why when there is
// nothing to loop back through, or a window too short for a round.
func burnRDMAPlan(ctx context.Context, n NodeOptions, h *topology.Host, o BurnOptions) (*burnLoopback, string) {
	switch {
	case !o.RDMA:
		return nil, "RDMA loopback left out of the workload (--no-rdma)"
	case len(h.NICs) == 0:
		return nil, "no RDMA NIC on this host: no GPU–NIC pair to loop back through under load"
	}
	plan := func(secs int) (*rdma.Plan, int, string) {
		p, err := PlanRDMA(ctx, n, rdma.Options{Mode: rdma.ModeLoopback, Test: rdma.WriteBW, Size: 1 << 20, GIDIndex: -1, Duration: secs})
		if err != nil {
			return nil, 0, "no RDMA loopback under load: " + err.Error()
		}
		var keep []rdma.Entry
		var why []string
		runs := 0
		for _, e := range p.Entries {
			if e.Skip != "" {
				why = append(why, fmt.Sprintf("%s–%s: %s", e.GPUBusID, e.NIC, e.Skip))
				continue
			}
			var rs []rdma.Run
			for _, r := range e.Runs {
				if r.Memory != rdma.MemHost {
					rs = append(rs, r)
				}
			}
			if len(rs) == 0 {
				why = append(why, fmt.Sprintf("%s–%s: no way to register GPU memory with the NIC", e.GPUBusID, e.NIC))
				continue
			}
			e.Runs = rs
			runs += len(rs)
			keep = append(keep, e)
		}
		if len(keep) == 0 {
			return nil, 0, "no GPU–NIC pair to loop back through under load: " + strings.Join(why, "; ")
		}
		p.Entries = keep
		return p, runs, ""
	}
	// The runs a round has decide each run's length: plan, count, plan
	// again with it.
	p, runs, why := plan(2)
	if p == nil {
		return nil, why
	}
	secs := loopbackSeconds(o.Window, runs)
	if secs == 0 {
		return nil, fmt.Sprintf("no RDMA loopback under load: a window of %s is too short for a round of %d loopback(s) of 2 s at least in half of it", o.Window, runs)
	}
	if secs != 2 {
		if p, _, why = plan(secs); p == nil {
			return nil, why
		}
	}
	return &burnLoopback{plan: p, secs: secs}, ""
}

// rdmaRounds runs the plan's loopbacks round after round until a round
// could not end by deadline, or one failed (the window's verdict is then
// given; retrying a tool that fails at once would only spin), and returns
// every run; the outputs of the last round are kept in out.
func rdmaRounds(ctx context.Context, lb *burnLoopback, o BurnOptions, out string, now func() time.Time, deadline time.Time) []BurnRDMA {
	p, secs := lb.plan, lb.secs
	runs := 0
	for _, e := range p.Entries {
		runs += len(e.Runs)
	}
	var done []BurnRDMA
	for ctx.Err() == nil && now().Add(time.Duration(secs*runs)*time.Second).Before(deadline) {
		start := now()
		prs, err := bench.RunRDMA(ctx, p, bench.RDMAOptions{PerftestDir: o.PerftestDir, Out: out, Timeout: time.Duration(secs)*time.Second + time.Minute})
		// Each run is charged its -D, or its share of the round where the
		// round was shorter (a perftest that ended early moved less).
		each := float64(secs)
		if n := runsIn(prs); n > 0 {
			each = min(each, now().Sub(start).Seconds()/float64(n))
		}
		failed := false
		for _, pr := range prs {
			for _, oc := range pr.Outcomes {
				r := BurnRDMA{GPU: pr.Entry.GPUBusID, NIC: pr.Entry.NIC, Port: pr.Entry.Port, Memory: oc.Memory, Gbps: oc.Gbps, Seconds: each, Cause: oc.Cause}
				if oc.Cause != "" {
					failed = true
					r.Error = oc.Cause
					if oc.Detail != "" {
						r.Error += ": " + oc.Detail
					}
				}
				done = append(done, r)
			}
		}
		if err != nil || failed {
			break
		}
	}
	return done
}

// runsIn counts the runs of a round's results.
func runsIn(prs []rdma.PairResult) int {
	n := 0
	for _, pr := range prs {
		n += len(pr.Outcomes)
	}
	return n
}

// chargeRDMA puts a window's loopbacks on the links they crossed: the
// GPU–NIC path and the NIC's port (in a two-NIC loopback the server's port
// too; a port that looped the traffic back inside the NIC counts none of
// it, and attribution credits a port only with what it counted).
func chargeRDMA(lb *burnLoopback, runs []BurnRDMA, moved map[burn.Link]uint64) {
	server := map[string]rdma.Entry{}
	for _, e := range lb.plan.Entries {
		server[e.GPUBusID+">"+e.NIC] = e
	}
	for _, r := range runs {
		if r.Error != "" || r.Gbps <= 0 {
			continue
		}
		b := uint64(r.Gbps * 1e9 / 8 * r.Seconds)
		moved[burn.GPUNICLink(r.GPU, r.NIC)] += b
		moved[burn.PortLink(r.NIC, r.Port)] += b
		if e, ok := server[r.GPU+">"+r.NIC]; ok && (e.ServerNIC != r.NIC || e.ServerPort != r.Port) && e.ServerNIC != "" {
			moved[burn.PortLink(e.ServerNIC, e.ServerPort)] += b
		}
	}
}

// rdmaResults judges a window's loopbacks (burn.rdma): a loopback that
// failed under load fails the window, naming the pair; perftest does not
// check the data, so a pass says the bytes were moved, not verified.
func rdmaResults(doc *BurnDoc) []result.Result {
	var out []result.Result
	for _, w := range doc.Work {
		if len(w.RDMA) == 0 {
			continue
		}
		name := doc.Schedule.Name(w.Window)
		subject := fmt.Sprintf("window %d", w.Window+1)
		var failed, couldNot []string
		lo, hi := 0.0, 0.0
		for _, r := range w.RDMA {
			what := fmt.Sprintf("%s–%s port %d (%s): %s", r.GPU, r.NIC, r.Port, r.Memory, r.Error)
			switch {
			case r.Cause == rdma.CauseMissingBinary || r.Cause == rdma.CausePortConflict:
				// perftest not installed, or its TCP port taken: this
				// machine could not run the loopback, the path is not at fault.
				couldNot = append(couldNot, what)
				continue
			case r.Error != "":
				failed = append(failed, what)
				continue
			}
			if lo == 0 || r.Gbps < lo {
				lo = r.Gbps
			}
			hi = max(hi, r.Gbps)
		}
		if len(couldNot) > 0 && len(failed) == 0 {
			out = append(out, result.Result{ID: "burn.rdma", Source: burn.Source, Status: result.Unknown, Subject: subject, Reason: "LoopbackNotRun",
				Message: fmt.Sprintf("%s: the GPU-memory loopback could not run: %s; the GPU–NIC paths were not under load", name, limitList(couldNot, 3)),
				Remedy:  "install perftest (ib_write_bw, built with CUDA) where gdrcheck finds it (PATH), or free its TCP ports, or leave it out with --no-rdma"})
			continue
		}
		if len(failed) > 0 {
			out = append(out, result.Result{ID: "burn.rdma", Source: burn.Source, Status: result.Fail, Subject: subject, Reason: "LoopbackFailed",
				Message: fmt.Sprintf("%s: %d of %d GPU-memory loopback(s) failed under load: %s", name, len(failed), len(w.RDMA), limitList(failed, 3)),
				Remedy:  "run gdrcheck bench rdma on the pair for the loopback's own output (raw/burn/rdma), and gdrcheck check gdr. for the registration path; a loopback that works at rest and fails under load points at the NIC, its PCIe path or the GPU"})
			continue
		}
		out = append(out, result.Result{ID: "burn.rdma", Source: burn.Source, Status: result.Pass, Subject: subject, Reason: "LoopbackRan",
			Message: fmt.Sprintf("%s: %d GPU-memory loopback(s) through the GPU–NIC pairs ran under load, %.0f–%.0f Gb/s (ib_write_bw does not check the data: the bytes were moved and counted on the links, not verified)", name, len(w.RDMA), lo, hi)})
	}
	return out
}

// limitList joins the first n items and says how many more there are.
func limitList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:n], "; "), len(items)-n)
}

// rdmaDir is where a window's loopback outputs go.
func rdmaDir(dir string, window int) string {
	return filepath.Join(dir, "rdma", fmt.Sprintf("window-%d", window+1))
}
