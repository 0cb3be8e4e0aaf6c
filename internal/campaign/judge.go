package campaign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/rendezvous"
	"github.com/gdrcheck/gdrcheck/internal/report/noise"
)

// The files a round's scripts write, under the round's folder:
//
//	results/ID.json  the step's bench nccl --format json output (rank 0's
//	                 envelope, schema gdrcheck.bench-nccl/v1)
//	results/ID.rc    the step's exit status, written when it ended
//	results/ID.err   its standard error
//
// A step without .rc did not run or has not finished (missing); one with an
// exit status but no usable result failed to run, which is a finding.

// ResultsDir is where a round's steps write, relative to its folder.
const ResultsDir = "results"

// maxResult bounds a result file read whole: a two-node all_reduce's
// envelope is a few tens of KB.
const maxResult = 16 << 20

// maxBusBW bounds a plausible bus bandwidth (GB/s): ten times NVLink 5's
// 900 GB/s per GPU, the fastest link a step's GPUs can have; more is a
// corrupt or forged result, never a pass.
const maxBusBW = 10_000

// Observation is what one step's files say, before judging.
type Observation struct {
	Status   Status // Missing, Fail (could not run), or Pass (measured: judged later)
	BusBW    float64
	Measured bool
	Why      string
}

// benchDoc is the part of bench nccl's envelope a campaign reads.
type benchDoc struct {
	Schema       string `json:"schema"`
	Complete     bool   `json:"complete"`
	Error        string `json:"error"`
	Measurements []struct {
		Collective string           `json:"collective"`
		Variant    string           `json:"variant"`
		Ranks      int              `json:"ranks"`
		Rows       []collective.Row `json:"rows"`
		Wrong      int64            `json:"wrong"`
		Error      string           `json:"error"`
	} `json:"measurements"`
	Job *struct {
		WorldSize int `json:"world_size"`
		Ranks     []struct {
			Rank int    `json:"rank"`
			Host string `json:"host"`
		} `json:"ranks"`
		Failures []rendezvous.Failure `json:"failures"`
	} `json:"job"`
}

const benchSchema = "gdrcheck.bench-nccl/v1"

// Observe reads step s's files from fsys (the round's folder). A result
// counts only if it is a job of the step's ranks (its nodes ×
// gpusPerNode) run on the step's nodes: a result from other machines (an
// srun that placed every task on one node, a copied or stale file) must
// not clear nodes it never tested.
func Observe(fsys fs.FS, s *Step, gpusPerNode int) Observation {
	name := ResultsDir + "/" + s.ID
	// The exit status is written when the step has ended: without it the
	// step did not run, or has not finished (its result may be half
	// written), and is not judged.
	rcb, rerr := readSmall(fsys, name+".rc")
	if errors.Is(rerr, fs.ErrNotExist) {
		return Observation{Status: Missing, Why: "no exit status: the step did not run, or has not finished"}
	}
	if rerr != nil {
		return Observation{Status: Fail, Why: fmt.Sprintf("%s.rc: %v", name, rerr)}
	}
	rc, err := strconv.Atoi(strings.TrimSpace(string(rcb)))
	if err != nil {
		return Observation{Status: Fail, Why: fmt.Sprintf("%s.rc: %q is not an exit status", name, firstLine(rcb))}
	}
	js, jerr := readSmall(fsys, name+".json")
	why := func(s string) Observation {
		if rc != 0 {
			s = fmt.Sprintf("exit status %d; %s", rc, s)
			if tail := lastLine(fsys, name+".err"); tail != "" {
				s += "; stderr: " + tail
			}
		}
		return Observation{Status: Fail, Why: s}
	}
	if jerr != nil {
		if errors.Is(jerr, fs.ErrNotExist) {
			return why(fmt.Sprintf("%s.json: no result", name))
		}
		return why(fmt.Sprintf("%s.json: %v", name, jerr))
	}
	if len(bytes.TrimSpace(js)) == 0 {
		return why(fmt.Sprintf("%s.json: empty", name))
	}
	var d benchDoc
	if err := json.Unmarshal(js, &d); err != nil {
		return why(fmt.Sprintf("%s.json: not bench nccl's JSON: %v", name, err))
	}
	if d.Schema != benchSchema {
		return why(fmt.Sprintf("%s.json: schema %q, want %s", name, d.Schema, benchSchema))
	}
	if d.Job != nil && len(d.Job.Failures) > 0 {
		return why(fmt.Sprintf("%s.json: %s", name, d.Job.Failures[0]))
	}
	if d.Error != "" {
		return why(fmt.Sprintf("%s.json: %s", name, d.Error))
	}

	var best *collective.Row
	ranks := 0 // the best row's
	for i, m := range d.Measurements {
		if m.Collective != string(collective.AllReduce) || m.Variant != "" {
			continue
		}
		if m.Error != "" {
			return why(fmt.Sprintf("%s.json: all_reduce: %s", name, m.Error))
		}
		if m.Wrong > 0 {
			return why(fmt.Sprintf("%s.json: all_reduce: %d wrong values", name, m.Wrong))
		}
		for j := range m.Rows {
			if best == nil || m.Rows[j].Bytes > best.Bytes {
				best, ranks = &d.Measurements[i].Rows[j], m.Ranks
			}
		}
	}
	if best == nil {
		return why(fmt.Sprintf("%s.json: no all_reduce row", name))
	}
	bw, place := best.BestBusBW()
	if place == "" {
		return why(fmt.Sprintf("%s.json: all_reduce %s: no bus bandwidth measured", name, collective.FormatSize(best.Bytes)))
	}
	if math.IsNaN(bw) || bw > maxBusBW {
		// A corrupt or forged result: 1e308 GB/s would pass any threshold.
		return why(fmt.Sprintf("%s.json: all_reduce %s: busbw %.4g GB/s is not a measurement (more than %g GB/s)", name, collective.FormatSize(best.Bytes), bw, float64(maxBusBW)))
	}
	if want := len(s.Nodes) * gpusPerNode; ranks != want {
		return why(fmt.Sprintf("%s.json: all_reduce of %d ranks, but the step runs %d (%d nodes × %d GPUs): not this step's result", name, ranks, want, len(s.Nodes), gpusPerNode))
	}
	if s := notOfStep(&d, s, gpusPerNode); s != "" {
		return why(fmt.Sprintf("%s.json: %s", name, s))
	}
	if rc != 0 {
		return why(fmt.Sprintf("measured %.4g GB/s, but the step failed", bw))
	}
	if !d.Complete {
		return Observation{Status: Fail, BusBW: bw, Measured: true, Why: fmt.Sprintf("%s.json: incomplete run", name)}
	}
	return Observation{Status: Pass, BusBW: bw, Measured: true, Why: fmt.Sprintf("all_reduce %s: busbw %.4g GB/s", collective.FormatSize(best.Bytes), bw)}
}

// notOfStep says why d is not a result of step s ("" it is): its job's
// world size, and the hosts its ranks ran on, against the step's.
func notOfStep(d *benchDoc, s *Step, gpusPerNode int) string {
	want := len(s.Nodes) * gpusPerNode
	switch {
	case d.Job == nil:
		return fmt.Sprintf("no job in the result: the step runs %d ranks on %s", want, strings.Join(s.Nodes, ","))
	case d.Job.WorldSize != want:
		return fmt.Sprintf("a job of %d ranks, but the step runs %d (%d nodes × %d GPUs): not this step's result", d.Job.WorldSize, want, len(s.Nodes), gpusPerNode)
	case len(d.Job.Ranks) != want:
		return fmt.Sprintf("the job names %d of its %d ranks: which nodes ran it is unknown", len(d.Job.Ranks), want)
	}
	nodes := map[string]int{}
	for _, n := range s.Nodes {
		nodes[shortHost(n)] = 0
	}
	for _, r := range d.Job.Ranks {
		h := shortHost(r.Host)
		if _, ok := nodes[h]; !ok {
			return fmt.Sprintf("rank %d ran on %s, which is not one of the step's nodes (%s): not this step's result", r.Rank, printable.Line(r.Host), strings.Join(s.Nodes, ","))
		}
		nodes[h]++
	}
	for _, n := range s.Nodes {
		if c := nodes[shortHost(n)]; c != gpusPerNode {
			return fmt.Sprintf("%d ranks ran on %s, want %d: the step's nodes were not all tested", c, n, gpusPerNode)
		}
	}
	return ""
}

// shortHost is a host name compared: its first label, lower case (a rank
// may report gpu01.cluster, the campaign name it gpu01).
func shortHost(h string) string {
	h, _, _ = strings.Cut(h, ".")
	return strings.ToLower(h)
}

func readSmall(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Only a regular file: a FIFO would block, a device never end.
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxResult+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxResult {
		return nil, fmt.Errorf("larger than %d MiB", maxResult>>20)
	}
	return b, nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// lastLine is the last non-empty line of a step's stderr (at most 200
// bytes of it).
func lastLine(fsys fs.FS, name string) string {
	b, err := readSmall(fsys, name)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	s := strings.TrimSpace(lines[len(lines)-1])
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// MissingError is a round whose steps' results are missing.
type MissingError struct {
	Round int
	Steps []string
	Total int
}

func (e *MissingError) Error() string {
	if len(e.Steps) == e.Total {
		return fmt.Sprintf("round %d has no results yet (none of its %d steps ran): run its steps.sh (or mpirun.sh) first", e.Round, e.Total)
	}
	shown := e.Steps
	if len(shown) > 5 {
		shown = shown[:5]
	}
	return fmt.Sprintf("round %d: %d of %d steps have no exit status, so they did not run or have not finished (%s%s): wait for them, run them, or give --allow-missing to plan them again", e.Round, len(e.Steps), e.Total, strings.Join(shown, ", "), map[bool]string{true: ", ...", false: ""}[len(e.Steps) > 5])
}

// Record reads the latest round's results from fsys (its folder) and
// judges every step. Missing results are a *MissingError unless
// allowMissing; then those steps are recorded missing, to be planned again.
func (c *Campaign) Record(fsys fs.FS, allowMissing bool) error {
	r := c.Latest()
	if r.Read {
		return fmt.Errorf("round %d was read already", r.N)
	}
	obs := make([]Observation, len(r.Steps))
	for i, s := range r.Steps {
		obs[i] = Observe(fsys, s, c.Bench.GPUsPerNode)
	}
	return c.record(obs, allowMissing)
}

// record judges the latest round's observations (one per step, in order):
// Record's, or a simulation's (Simulate).
func (c *Campaign) record(obs []Observation, allowMissing bool) error {
	r := c.Latest()
	if r.Read {
		return fmt.Errorf("round %d was read already", r.N)
	}
	var missing []string
	for i, s := range r.Steps {
		if obs[i].Status == Missing {
			missing = append(missing, s.ID)
		}
	}
	if len(missing) > 0 && (!allowMissing || len(missing) == len(r.Steps)) {
		return &MissingError{Round: r.N, Steps: missing, Total: len(r.Steps)}
	}
	return c.judge(r, obs)
}

// judge turns the round's observations into outcomes: a measured step is
// compared with the threshold of its kind, or with every measured step of
// its kind (node-level; the same rail) read so far, this round's included,
// by fleet's robust z.
func (c *Campaign) judge(r *Round, obs []Observation) error {
	type ref struct{ med, mad float64 }
	refs := map[int]ref{}
	pool := map[int][]float64{}
	for _, old := range c.Rounds {
		if old == r || !old.Read {
			continue
		}
		for _, s := range old.Steps {
			if s.Outcome != nil && s.Outcome.Measured {
				pool[s.Rail] = append(pool[s.Rail], s.Outcome.BusBW)
			}
		}
	}
	for i, s := range r.Steps {
		if obs[i].Measured {
			pool[s.Rail] = append(pool[s.Rail], obs[i].BusBW)
		}
	}
	fo := c.Robust.rule()
	for i, s := range r.Steps {
		o := obs[i]
		out := &Outcome{Status: o.Status, BusBW: o.BusBW, Measured: o.Measured, Why: o.Why}
		if o.Status == Pass {
			thr, what := c.MinBusBW, "--min-busbw"
			if s.Rail >= 0 {
				thr, what = c.MinRailBusBW, "--min-rail-busbw"
			}
			if thr > 0 {
				out.Threshold = thr
				if o.BusBW < thr {
					out.Status = Fail
					out.Why = fmt.Sprintf("%s, below %s %.4g", o.Why, what, thr)
				}
			} else {
				rf, ok := refs[s.Rail]
				if !ok {
					vals := pool[s.Rail]
					if len(vals) < c.Robust.MinSteps {
						return fmt.Errorf("round %d: %d measured step(s) of %s so far, too few to judge one against the others (%d at least): give %s", r.N, len(vals), c.levelName(s.Rail), c.Robust.MinSteps, what)
					}
					rf.med, rf.mad = medianMAD(vals)
					refs[s.Rail] = rf
				}
				z, low, ok := fo.Score(o.BusBW, rf.med, rf.mad)
				out.Median, out.MAD, out.Z = rf.med, rf.mad, z
				switch {
				case !ok:
					out.Status = Fail
					out.Why = fmt.Sprintf("%s; the median of %s is 0: nothing to compare by", o.Why, c.levelName(s.Rail))
				case low:
					out.Status = Fail
					out.Why = fmt.Sprintf("%s, %+.1f%% of the median %.4g of %s (z %.1f < −%g)", o.Why, 100*(o.BusBW-rf.med)/rf.med, rf.med, c.levelName(s.Rail), z, fo.Z)
				}
			}
		}
		s.Outcome = out
	}
	r.Read = true
	return nil
}

func medianMAD(vals []float64) (float64, float64) {
	return noise.MedianMAD(slices.Clone(vals))
}

func (c *Campaign) levelName(rail int) string {
	if rail < 0 {
		return "the node-level steps"
	}
	return "rail " + c.Rails[rail] + "'s steps"
}
