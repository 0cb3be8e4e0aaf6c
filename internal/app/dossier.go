package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/profile"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/report/html"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// Profile is how much `gdrcheck run` measures.
type Profile string

// Profiles.
const (
	// ProfileQuick: every collective at a few small sizes and the pinned
	// copies; fits in a minute on an 8-GPU node.
	ProfileQuick Profile = "quick"
	// ProfileStandard: every collective up to 1 GiB by factors of 4.
	ProfileStandard Profile = "standard"
	// ProfileFull: every collective at every power of two up to 4 GiB,
	// and every copy test, pageable ones too.
	ProfileFull Profile = "full"
	// ProfileBurnin: quick's pass and the GPU–NIC loopback, then the
	// burn-in (RunOptions.Burn: sustained traffic in windows, every error
	// counter attributed to a link and a window; docs/burn.md).
	ProfileBurnin Profile = "burnin"
)

// Profiles lists the profiles, shortest first.
func Profiles() []Profile {
	return []Profile{ProfileQuick, ProfileStandard, ProfileFull, ProfileBurnin}
}

// ParseProfile reads --profile.
func ParseProfile(s string) (Profile, error) {
	for _, p := range Profiles() {
		if string(p) == s {
			return p, nil
		}
	}
	return "", toolErr(fmt.Errorf("--profile %q: want quick, standard, full or burnin", s))
}

// MaxBytes is the profile's largest collective and copy size.
func (p Profile) MaxBytes() uint64 {
	switch p {
	case ProfileStandard:
		return 1 << 30
	case ProfileFull:
		return 4 << 30
	}
	return 64 << 20
}

// benchConfig is the profile's benchmark pass, up to size bytes (0: the
// profile's MaxBytes).
func (p Profile) benchConfig(size uint64) (bench.NCCLConfig, bench.CopyConfig) {
	if size == 0 {
		size = p.MaxBytes()
	}
	// quick: 32 B to 64 MiB by ×8 (8 sizes, the top one the largest);
	// standard: 16 B to 1 GiB by ×4; full: 8 B to 4 GiB by ×2.
	n := bench.NCCLConfig{Collectives: collective.All(), MinBytes: 32, MaxBytes: size, StepFactor: 8, Warmup: 2, Iters: 10, Check: 1, OpTimeout: QuickBenchTimeout}
	c := bench.CopyConfig{Bytes: size, Iters: 10, Warmup: 2, Timeout: QuickBenchTimeout,
		Tests: []string{bench.CopyD2D, bench.CopyH2DPinned, bench.CopyD2HPinned, bench.CopyBidirPinned, bench.CopyP2P, bench.CopyP2PBidir, bench.CopyLatency}}
	switch p {
	case ProfileStandard:
		n.MinBytes, n.StepFactor, n.Iters = 16, 4, 20
		c.Iters = 20
	case ProfileFull:
		n.MinBytes, n.StepFactor, n.Iters, n.Warmup = 8, 2, 20, 5
		c.Iters = 20
		c.Tests = append(c.Tests, bench.CopyH2DPageable, bench.CopyD2HPageable)
	}
	n.MinBytes = min(n.MinBytes, size)
	n.DType, _ = bench.DTypeByName("float")
	n.Op, _ = bench.RedOpByName("sum")
	return n, c
}

// Rows is how many rows the NCCL pass of cfg measures (for progress).
func Rows(cfg bench.NCCLConfig) int {
	sizes := 0
	for b := cfg.MinBytes; b <= cfg.MaxBytes && b > 0; {
		sizes++
		switch {
		case cfg.StepBytes > 0:
			b += cfg.StepBytes
		case cfg.StepFactor > 1:
			b *= cfg.StepFactor
		default:
			b = cfg.MaxBytes + 1
		}
	}
	return sizes * len(cfg.Collectives)
}

// The phases of a run, in order.
const (
	PhaseDiscovery = "discovery"
	PhaseChecks    = "checks"
	PhaseCopy      = "bench.copy"
	PhaseNCCL      = "bench.nccl"
	PhaseRDMA      = "bench.rdma"
	PhaseNVLS      = "bench.nvls"
	PhaseBurn      = "burn"
	PhaseNCCLLogs  = "nccl-logs"
	PhaseJobs      = "jobs"
	PhaseModel     = "model"
	PhaseVerdict   = "verdict"
)

// BenchRunID is the judgement of a benchmark pass that could not run on a
// node with GPUs: unknown, since what the node reaches was not measured.
const BenchRunID = "bench.run"

// DossierOptions are how the dossier is made and reported on.
type DossierOptions struct {
	// Text receives the benchmarks' text views as they run (nil: none).
	Text io.Writer
	// Warn receives problems that do not stop the run.
	Warn io.Writer
	// OnPhase is told when a phase starts (done false) and ends.
	OnPhase func(p dossier.Phase, done bool)
	// OnRow is told of each NCCL row measured, with the rows of the pass.
	OnRow func(done, total int, coll collective.Collective, bytes uint64)
	// Files are the dossier's renderers after report.json (dossierFiles).
	Files []dossier.File
}

// DossierFiles are the files of the dossier after report.json: the
// dossier package's renderings and report.html (internal/report/html).
// A new format is one more entry here.
func DossierFiles() []dossier.File {
	return append(dossier.Files(), dossier.File{Name: html.ReportHTML, Render: html.Render})
}

// dossierStep is a phase of the dossier and what runs it.
type dossierStep struct {
	name string
	run  func(context.Context) (status, reason string)
}

// stepIndex is the index of the phase named name in steps.
func stepIndex(steps []dossierStep, name string) int {
	return slices.IndexFunc(steps, func(st dossierStep) bool { return st.name == name })
}

// dossierRun is one run's dossier as it grows.
type dossierRun struct {
	nr      *NodeRun
	o       DossierOptions
	rep     dossier.Report
	nccl    []bench.NCCLResult
	copies  []bench.CopyResult
	judged  []result.Result // the benchmarks' and the NCCL logs' verdicts
	exp     *bench.Expected
	current string
	// rdma are the bench rdma documents in the dossier (the phase's and
	// the included ones), by their job's name.
	rdma []namedRDMA
	// burned are the burn-in's verdicts so far (each window judges every
	// window again, so they replace, not add).
	burned []result.Result
}

// namedRDMA is a bench rdma document under its name in the dossier.
type namedRDMA struct {
	name string
	j    *includedJob
}

// Dossier runs the phases after the checks (the benchmarks that apply,
// the analysis of NCCL's logs, the model) and returns the report with
// the node's one verdict. With RunOptions.Out it writes the dossier there
// after every phase, so that an interrupt (ctx cancelled) or a failure
// leaves a valid report marked incomplete with all that was measured; the
// returned error is then ctx's or the writing's. Benchmark failures are
// results, not errors.
func (nr *NodeRun) Dossier(ctx context.Context, o DossierOptions) (*dossier.Report, error) {
	d := &dossierRun{nr: nr, o: o}
	d.rep.Schema = dossier.Schema
	d.rep.Profile = string(nr.profile)
	d.rep.Expect = nr.judging.Profile
	d.rep.Inventory = dossier.NewInventory(nr.host, nr.env.Facts)
	c := nr.Checks
	d.rep.Checks = dossier.Checks{Counts: c.Counts, DurationMS: c.DurationMS, Checks: c.Checks}
	disc := nr.Summary.DiscoveryMS
	d.rep.Phases = []dossier.Phase{
		{Name: PhaseDiscovery, Status: dossier.PhaseDone, StartedAt: nr.started, DurationMS: disc},
		{Name: PhaseChecks, Status: dossier.PhaseDone, StartedAt: nr.started.Add(time.Duration(disc * float64(time.Millisecond))), DurationMS: c.DurationMS},
	}
	for _, p := range d.rep.Phases {
		d.tell(p, true)
	}
	steps := []dossierStep{
		{PhaseCopy, d.benchCopy},
		{PhaseNCCL, d.benchNCCL},
		{PhaseNCCLLogs, d.ncclLogs},
		{PhaseModel, d.model},
	}
	if nr.profile != ProfileQuick {
		// standard, full and burnin loop GPU memory through each rail NIC.
		steps = slices.Insert(steps, 2, dossierStep{PhaseRDMA, d.benchRDMA})
	}
	if seen, _ := nr.host.NVSwitchesSeen(); seen {
		// Only a node on NVSwitches has the phase: whether a multicast
		// object binds, before NCCL's own NVLS set-up.
		steps = slices.Insert(steps, stepIndex(steps, PhaseNCCL), dossierStep{PhaseNVLS, d.benchNVLS})
	}
	if nr.profile == ProfileBurnin {
		// The burn-in after the pass that measured the node at rest.
		steps = slices.Insert(steps, stepIndex(steps, PhaseNCCLLogs), dossierStep{PhaseBurn, d.burnIn})
	}
	if len(nr.included) > 0 {
		// Only a run that includes jobs has the phase: the fabric hop of
		// any other says how to measure it.
		steps = slices.Insert(steps, stepIndex(steps, PhaseNCCLLogs)+1, dossierStep{PhaseJobs, d.jobs})
	}
	var werr error
	for _, st := range steps {
		if werr = d.save(st.name); werr != nil {
			break
		}
		if ctx.Err() != nil {
			d.phase(st.name, nr.s.Now(), dossier.PhaseInterrupted, "not started: the run was interrupted")
			continue
		}
		d.tell(dossier.Phase{Name: st.name, StartedAt: nr.s.Now()}, false)
		start := nr.s.Now()
		status, reason := st.run(ctx)
		if ctx.Err() != nil && status != dossier.PhaseSkipped {
			status, reason = dossier.PhaseInterrupted, "interrupted: "+context.Cause(ctx).Error()
		}
		d.phase(st.name, start, status, reason)
	}
	start := nr.s.Now()
	d.tell(dossier.Phase{Name: PhaseVerdict, StartedAt: start}, false)
	d.phase(PhaseVerdict, start, dossier.PhaseDone, "")
	d.finish(ctx)
	if werr == nil && nr.out != "" {
		werr = d.write()
	}
	if werr != nil {
		d.noteWriteFailed(werr)
		return &d.rep, toolErr(fmt.Errorf("--out %s: %w", nr.out, werr))
	}
	if ctx.Err() != nil {
		return &d.rep, ctx.Err()
	}
	return &d.rep, nil
}

// noteWriteFailed tries, once writing the dossier failed (a full disk, a
// file that cannot be replaced), to leave a report.json that says so: the
// one on disk otherwise says a phase was next, as if the run had been
// stopped (the review's D16, W5). It may fail too; the run's error says
// why.
func (d *dossierRun) noteWriteFailed(werr error) {
	if d.nr.out == "" {
		return
	}
	rep := d.rep
	rep.Complete = false
	rep.Interrupted = "writing the dossier failed (" + dossier.WithoutPath(werr).Error() + "); this report.json holds what the run had when it stopped, the other files may be older or missing"
	_, _ = dossier.WriteRendered(d.nr.out, dossier.ReportJSON, rep.WriteJSON)
}

func (d *dossierRun) tell(p dossier.Phase, done bool) {
	if d.o.OnPhase != nil {
		d.o.OnPhase(p, done)
	}
}

func (d *dossierRun) phase(name string, start time.Time, status, reason string) {
	p := dossier.Phase{Name: name, Status: status, Reason: reason, StartedAt: start, DurationMS: float64(d.nr.s.Now().Sub(start)) / float64(time.Millisecond)}
	d.rep.Phases = append(d.rep.Phases, p)
	d.tell(p, true)
}

// finish fills what is derived from the phases so far: the results, the
// measurements, the topology's hops, the verdict, and whether the report
// is complete (ctx cancelled: interrupted during the current phase).
func (d *dossierRun) finish(ctx context.Context) {
	nr := d.nr
	rs := slices.Clone(nr.Checks.Results)
	rs = append(rs, d.judged...)
	rs = append(rs, d.burned...)
	d.rep.Results = rs
	d.rep.Measurements = d.measurements()
	d.rep.Topology = dossier.NewTopology(nr.host, nr.Summary, rs, d.rep.Measurements, d.rep.NCCL, d.rep.Jobs)
	v := checks.Judge(rs, nr.Checks.Verdict.Host, nr.Checks.Verdict.Time, nr.Checks.Verdict.Strict)
	// The sign-off: how the segments of the data paths were established.
	// A site profile with gdr.required: false leaves the GDR segments out.
	v.SignOff(d.rep.Topology.SignOff(nr.gdrRequired()))
	d.rep.Verdict = v
	d.rep.Complete = true
	d.rep.Interrupted = ""
	for _, p := range d.rep.Phases {
		if p.Status == dossier.PhaseFailed || p.Status == dossier.PhaseInterrupted {
			d.rep.Complete = false
		}
	}
	if ctx.Err() != nil {
		d.rep.Complete = false
		d.rep.Interrupted = "interrupted (" + context.Cause(ctx).Error() + ") during " + d.current
	}
	if d.rep.NCCL == nil {
		d.rep.NCCL = []dossier.NCCLRun{}
	}
	d.rep.Run = nr.s.Envelope(dossier.Command, nr.started, nil, nil).Run
}

// save writes the dossier as it stands before phase next runs: marked
// incomplete, since the run is not over.
func (d *dossierRun) save(next string) error {
	d.current = next
	return d.saveUnfinished(next + " was next")
}

// saveUnfinished writes the dossier as it stands, marked incomplete:
// the run had not finished, and state says where it was.
func (d *dossierRun) saveUnfinished(state string) error {
	if d.nr.out == "" {
		return nil
	}
	d.finish(context.Background())
	d.rep.Complete = false
	d.rep.Interrupted = "the run had not finished when this was written: " + state
	return d.write()
}

func (d *dossierRun) write() error {
	files := d.o.Files
	if files == nil {
		files = DossierFiles()
	}
	return dossier.WriteDir(d.nr.out, &d.rep, files)
}

// skipBench says why no benchmark runs ("" when they do), and records a
// node with GPUs whose benchmarks could not run as unknown.
func (d *dossierRun) skipBench() string {
	nr := d.nr
	switch {
	case nr.BenchSkip != "":
		return nr.BenchSkip
	case nr.BenchErr != nil:
		if !slices.ContainsFunc(d.judged, func(r result.Result) bool { return r.ID == BenchRunID }) {
			d.judged = append(d.judged, result.Result{ID: BenchRunID, Source: "bench", Status: result.Unknown, Subject: "node", Reason: "BenchmarksNotRun",
				Message: "the node has GPUs, but no benchmark could run: " + nr.BenchErr.Error() + "; what the data paths reach was not measured",
				Remedy:  "install the CUDA runtime (libcudart.so.12 or .13) and NCCL (libnccl.so.2) where gdrcheck can load them, then run again"})
		}
		return "cannot run: " + nr.BenchErr.Error()
	}
	return ""
}

func (d *dossierRun) benchCopy(ctx context.Context) (string, string) {
	if why := d.skipBench(); why != "" {
		return dossier.PhaseSkipped, why
	}
	var text bytes.Buffer
	env, dir, err := d.nr.BenchCopy(ctx, d.o.Warn)
	if env != nil {
		rep := env.Data.(*bench.CopyReport)
		d.copies = rep.Measurements
		d.exp = rep.Expected
		d.judged = append(d.judged, sourced(env.Results, "bench")...)
		w := io.Writer(&text)
		if d.o.Text != nil {
			w = io.MultiWriter(&text, d.o.Text)
		}
		bench.WriteCopyText(w, rep, d.nr.Copy, env.Results)
		d.rawFile(dir, "copy.txt", text.Bytes())
	}
	return benchStatus(err)
}

// benchStatus is a benchmark phase's status from its error: a failed
// judgement or wrong data is a finding (done, in the results); a tool
// error or a watchdog abort failed the phase.
func benchStatus(err error) (string, string) {
	var f *Failure
	switch {
	case err == nil:
		return dossier.PhaseDone, ""
	case errors.Is(err, context.Canceled):
		return dossier.PhaseInterrupted, "interrupted"
	case errors.As(err, &f) && !errors.Is(err, bench.ErrWatchdog):
		return dossier.PhaseDone, ""
	}
	return dossier.PhaseFailed, err.Error()
}

func (d *dossierRun) benchNCCL(ctx context.Context) (string, string) {
	if why := d.skipBench(); why != "" {
		return dossier.PhaseSkipped, why
	}
	nr := d.nr
	var text bytes.Buffer
	w := io.Writer(&text)
	if d.o.Text != nil {
		w = io.MultiWriter(&text, d.o.Text)
	}
	total, done := Rows(nr.NCCL), 0
	env, err := nr.s.benchNCCLWith(ctx, nr, NCCLOptions{Text: w, Warn: d.o.Warn, OnRow: func(c collective.Collective, r collective.Row) {
		done++
		if d.o.OnRow != nil {
			d.o.OnRow(done, total, c, r.Bytes)
		}
	}})
	if env != nil {
		rep := env.Data.(*bench.NCCLReport)
		d.nccl = rep.Measurements
		if rep.Expected != nil {
			d.exp = rep.Expected
		}
		d.judged = append(d.judged, sourced(env.Results, "bench")...)
	}
	if nr.ncclSetup != nil {
		d.rawFile(nr.ncclSetup.Dir, "nccl-tests.txt", text.Bytes())
	}
	return benchStatus(err)
}

// benchNVLS probes the multicast set-up NCCL's NVLS needs (bench nvls)
// on the benchmark pass's GPUs.
func (d *dossierRun) benchNVLS(ctx context.Context) (string, string) {
	if why := d.skipBench(); why != "" {
		return dossier.PhaseSkipped, why
	}
	nr := d.nr
	env, _, err := nr.s.nvls(ctx, nr.s.Now(), nr.host, nil, nr.gpus.Devices, NVLSOptions{Out: subdir(nr.out, rawNVLS), Warn: d.o.Warn})
	if env != nil {
		d.judged = append(d.judged, sourced(env.Results, "bench")...)
		if d.o.Text != nil {
			bench.WriteNVLSText(d.o.Text, env.Data.(*bench.NVLSReport), env.Results)
		}
	}
	return benchStatus(err)
}

// benchNCCLWith runs the pass's collectives with the run's setup.
func (s *Session) benchNCCLWith(ctx context.Context, nr *NodeRun, o NCCLOptions) (*report.Envelope, error) {
	o.Setup, o.Config, o.Judge = nr.ncclSetup, nr.NCCL, nr.judging
	env, _, err := s.BenchNCCL(ctx, nr.gpus, o)
	return env, err
}

// rawFile writes a tool's output beside its results (only into a dossier).
func (d *dossierRun) rawFile(dir, name string, b []byte) {
	if d.nr.out == "" || dir == "" || len(b) == 0 {
		return
	}
	if err := renameio.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil && d.o.Warn != nil {
		fmt.Fprintf(d.o.Warn, "gdrcheck: writing %s: %v\n", filepath.Join(dir, name), dossier.WithoutPath(err))
	}
}

func sourced(rs []result.Result, source string) []result.Result {
	out := slices.Clone(rs)
	for i := range out {
		if out[i].Source == "" {
			out[i].Source = source
		}
	}
	return out
}

// ncclLogs reads NCCL's own debug logs of the benchmark pass as one job:
// its versions, the transport of every channel, GPU Direct RDMA.
func (d *dossierRun) ncclLogs(ctx context.Context) (string, string) {
	nr := d.nr
	if nr.ncclSetup == nil || !slices.ContainsFunc(d.rep.Phases, func(p dossier.Phase) bool { return p.Name == PhaseNCCL && p.Status != dossier.PhaseSkipped }) {
		return dossier.PhaseSkipped, "no NCCL benchmark ran"
	}
	dir := nr.ncclSetup.Dir
	ents, err := os.ReadDir(dir)
	if err != nil {
		return dossier.PhaseFailed, dossier.WithoutPath(err).Error()
	}
	job := ncclog.NewJob("nccl")
	var logs []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "nccl-debug.") || !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return dossier.PhaseFailed, dossier.WithoutPath(err).Error()
		}
		err = job.Add(e.Name(), f)
		f.Close()
		if err != nil {
			return dossier.PhaseFailed, fmt.Sprintf("%s: %v", e.Name(), err)
		}
		logs = append(logs, d.rel(filepath.Join(dir, e.Name())))
	}
	if len(logs) == 0 {
		return dossier.PhaseSkipped, fmt.Sprintf("NCCL wrote no debug log into %s (NCCL_DEBUG=%s, NCCL_DEBUG_FILE=%s)", dir, os.Getenv("NCCL_DEBUG"), os.Getenv("NCCL_DEBUG_FILE"))
	}
	rep, vs := job.Report()
	vs = sourced(vs, ncclog.Kind)
	d.judged = append(d.judged, vs...)
	d.rep.NCCL = append(d.rep.NCCL, dossier.NewNCCLRun("nccl", logs, rep, vs))
	return dossier.PhaseDone, ""
}

// gdrRequired says whether the node is judged as one meant for GPU Direct
// RDMA: unless the site profile says gdr.required: false.
func (nr *NodeRun) gdrRequired() bool {
	var expect *profile.Profile
	if nr.env != nil {
		expect = nr.env.Expect
	}
	required, stated := expect.GDRRequired()
	return required || !stated
}

// RDMAJobName is the name of the run's own bench rdma among the dossier's
// jobs.
const RDMAJobName = "bench.rdma"

// benchRDMA loops GPU memory through every GPU–NIC pair of the node
// (bench rdma's loopback: each registration mode the node offers and the
// host-memory control), judged against line rate and the model; its pairs
// join the dossier's jobs as "bench.rdma", so that each pair's
// registration and NIC hops are measured.
func (d *dossierRun) benchRDMA(ctx context.Context) (string, string) {
	if why := d.skipBench(); why != "" {
		return dossier.PhaseSkipped, why
	}
	nr := d.nr
	if len(nr.host.NICs) == 0 {
		return dossier.PhaseSkipped, "no RDMA NIC on this host: no GPU–NIC pair to loop back through (gdr.kernel-module judges the node's GPU Direct RDMA path)"
	}
	var expect *profile.Profile
	if nr.env != nil {
		expect = nr.env.Expect
	}
	env, dir, err := nr.s.BenchRDMA(ctx, nr.node, RDMAOptions{Plan: rdma.Options{GIDIndex: -1}, Out: subdir(nr.out, rawRDMA),
		Timeout: 2 * time.Minute, Judging: rdma.DefaultJudging, Profile: expect})
	if env == nil {
		return dossier.PhaseFailed, err.Error()
	}
	doc := env.Data.(*RDMADoc)
	if len(doc.Pairs) == 0 {
		// Nothing to test: the run's one result says why.
		d.judged = append(d.judged, sourced(env.Results, "bench")...)
		return dossier.PhaseDone, ""
	}
	j := &includedJob{path: d.rel(filepath.Join(dir, "results.json")), run: env.Run, results: env.Results, rdma: doc}
	j.run.Host = nr.host.Hostname // its loopback pairs are this node's
	job, rs, jerr := dossier.NewJob(j.input(RDMAJobName), nr.jobContext())
	if jerr != nil {
		return dossier.PhaseFailed, jerr.Error()
	}
	job.SHA256 = fileSum(dir, "results.json")
	d.judged = append(d.judged, rs...)
	d.rep.Jobs = append(d.rep.Jobs, job)
	d.rdma = append(d.rdma, namedRDMA{RDMAJobName, j})
	return benchStatus(err)
}

// fileSum is the SHA-256 of dir/name, "" when it cannot be read.
func fileSum(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// jobContext is this node as the jobs are placed on it.
func (nr *NodeRun) jobContext() dossier.JobContext {
	c := dossier.JobContext{Self: nr.host.Hostname, Host: nr.host, GDR: nr.gdrRequired(), PeerMem: -1}
	if nr.env != nil {
		if nr.env.Expect != nil {
			c.Mode = nr.env.Expect.GDR.Mode
		}
		if peermem, _, known, _ := checks.Registration(nr.env); known {
			c.PeerMem = 0
			if peermem != "" {
				c.PeerMem = 1
			}
		}
	}
	return c
}

// jobName is the name of the i-th included job in the dossier.
func jobName(i int) string { return fmt.Sprintf("job%d", i+1) }

// jobs brings the included jobs into the dossier (run --include): each
// job's place on this node, its verdicts, its NCCL log analysis and its
// rows.
func (d *dossierRun) jobs(ctx context.Context) (string, string) {
	nr := d.nr
	for i, j := range nr.included {
		name := jobName(i)
		job, rs, err := dossier.NewJob(j.input(name), nr.jobContext())
		if err != nil {
			return dossier.PhaseFailed, fmt.Sprintf("%s: %v", j.path, err)
		}
		d.judged = append(d.judged, rs...)
		d.rep.Jobs = append(d.rep.Jobs, job)
		if j.rdma != nil {
			d.rdma = append(d.rdma, namedRDMA{name, j})
			continue // no NCCL log, no collective rows
		}
		if l := j.rep.Job.NCCLLogs; l != nil {
			vs := slices.Clone(l.Verdicts)
			for k := range vs {
				vs[k].Source, vs[k].Subject = "job", strings.TrimSpace(name+" "+vs[k].Subject)
			}
			d.judged = append(d.judged, vs...)
			var logs []string
			if l.Report != nil {
				for _, f := range l.Report.Files {
					logs = append(logs, f.Name)
				}
			}
			d.rep.NCCL = append(d.rep.NCCL, dossier.NewNCCLRun(name, logs, l.Report, vs))
		}
	}
	return dossier.PhaseDone, ""
}

// jobRows are the included jobs' rows, each judged as its job judged it:
// against the job's own expectation (its nodes, its ranks).
func (d *dossierRun) jobRows() []dossier.CollectiveMeasurement {
	var out []dossier.CollectiveMeasurement
	for i, j := range d.nr.included {
		if j.rdma != nil || !slices.ContainsFunc(d.rep.Jobs, func(x dossier.Job) bool { return x.Name == jobName(i) }) {
			continue // a bench rdma's, or not brought in (yet)
		}
		var basis *model.Basis
		if j.rep.Expected != nil {
			basis = &j.rep.Expected.Basis
		}
		ms := j.rep.Measurements
		for _, x := range bench.JudgeRows(basis, ms, d.nr.judging.Pass) {
			r, row := ms[x.Result], x.Row
			if row.OutOfPlace == nil {
				continue
			}
			coll := string(r.Collective)
			if r.Variant != "" {
				coll += "." + r.Variant
			}
			m := dossier.CollectiveMeasurement{ID: fmt.Sprintf("%s.nccl.%s.%d", jobName(i), coll, row.Bytes), Collective: string(r.Collective), Variant: r.Variant,
				Ranks: r.Ranks, Nodes: j.nodes(), Bytes: row.Bytes, TimeUS: row.OutOfPlace.TimeUS, AlgBW: row.OutOfPlace.AlgBW, BusBW: row.OutOfPlace.BusBW,
				Status: result.Unknown, Wrong: wrong(row.OutOfPlace) + wrong(row.InPlace), Run: jobName(i)}
			if row.InPlace != nil {
				m.InPlaceBusBW = row.InPlace.BusBW
			}
			if p := x.Expected; p != nil && p.BusBW > 0 {
				ratio := x.Ratio
				m.ExpectedBusBW, m.Fraction, m.Status, m.Bottleneck = &p.BusBW, &ratio, x.Status, string(p.Bottleneck)
				m.Interval = intervalOf(p)
			}
			if m.Wrong > 0 {
				m.Status = result.Fail
			}
			out = append(out, m)
		}
	}
	return out
}

// rdmaRows are the bench rdma runs of this node's ends of their pairs:
// each memory of each pair, with the run's judgement.
func (d *dossierRun) rdmaRows() []dossier.RDMAMeasurement {
	var out []dossier.RDMAMeasurement
	gpus := map[string]int{}
	for _, g := range d.nr.host.GPUs {
		gpus[pci.NormalizeBusID(g.Address)] = g.Index
	}
	self := d.nr.host.Hostname
	for _, x := range d.rdma {
		status := map[string]result.Status{}
		for _, r := range x.j.results {
			status[r.Subject] = r.Status
		}
		for _, pr := range x.j.rdma.Pairs {
			e := pr.Entry
			for _, en := range pairEnds(pr, x.j.run.Host) {
				g, ok := gpus[pci.NormalizeBusID(en.BusID)]
				if !ok || !dossier.SameHost(en.Host, self) {
					continue
				}
				for _, o := range pr.Outcomes {
					m := dossier.RDMAMeasurement{ID: fmt.Sprintf("%s.GPU%d-%s.%s", x.name, g, en.NIC, o.Memory), Job: x.name, Test: e.Runs0Test(), GPU: g, NIC: en.NIC,
						Port: en.Port, Memory: o.Memory, Peer: en.Peer, Gbps: o.Gbps, LatencyUS: o.LatencyUS, Status: result.Unknown}
					if st, ok := status[en.Subject+"/"+o.Memory]; ok {
						m.Status = st
					}
					if o.Cause != "" {
						m.Error = strings.TrimSpace(o.Cause + " " + o.Detail)
					}
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// rel is p relative to the dossier, with forward slashes.
func (d *dossierRun) rel(p string) string {
	if r, err := filepath.Rel(d.nr.out, p); err == nil && d.nr.out != "" {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(p)
}

// model states each measurement against the model of the node as it
// should be, and the model's curves.
func (d *dossierRun) model(ctx context.Context) (string, string) {
	if len(d.nccl) == 0 && len(d.copies) == 0 {
		return dossier.PhaseSkipped, "nothing was measured to compare with the model"
	}
	if d.exp == nil {
		if _, err := d.nr.judging.expected(d.nr.gpus); err != nil {
			return dossier.PhaseSkipped, "no model of this node: " + err.Error()
		}
		return dossier.PhaseSkipped, "judging is off"
	}
	return dossier.PhaseDone, ""
}

// measurements are the benchmarks' numbers beside the model's (once the
// model phase found a basis).
func (d *dossierRun) measurements() dossier.Measurements {
	m := dossier.Measurements{Pass: d.nr.judging.Pass, Collectives: []dossier.CollectiveMeasurement{}, Copies: []dossier.CopyMeasurement{}, Curves: []dossier.Curve{}}
	var basis *model.Basis
	if d.exp != nil && slices.ContainsFunc(d.rep.Phases, func(p dossier.Phase) bool { return p.Name == PhaseModel && p.Status == dossier.PhaseDone }) {
		basis = &d.exp.Basis
		m.Basis = d.exp.Line()
	}
	// Each row as bench judged it (JudgeRows: the same judgement as the
	// verdicts', hierarchical variants against their own expectation).
	for _, j := range bench.JudgeRows(basis, d.nccl, d.nr.judging.Pass) {
		r, row := d.nccl[j.Result], j.Row
		if row.OutOfPlace == nil {
			continue
		}
		x := dossier.CollectiveMeasurement{ID: fmt.Sprintf("nccl.%s.%d", r.Collective, row.Bytes), Collective: string(r.Collective), Ranks: r.Ranks, Bytes: row.Bytes,
			TimeUS: row.OutOfPlace.TimeUS, AlgBW: row.OutOfPlace.AlgBW, BusBW: row.OutOfPlace.BusBW, Status: result.Unknown, Wrong: wrong(row.OutOfPlace), Run: "nccl"}
		if row.InPlace != nil {
			x.InPlaceBusBW = row.InPlace.BusBW
			x.Wrong += wrong(row.InPlace)
		}
		if p := j.Expected; p != nil && p.BusBW > 0 {
			ratio := j.Ratio
			x.ExpectedBusBW, x.Fraction, x.Status, x.Bottleneck = &p.BusBW, &ratio, j.Status, string(p.Bottleneck)
			x.Interval = intervalOf(p)
		}
		if x.Wrong > 0 {
			x.Status = result.Fail
		}
		m.Collectives = append(m.Collectives, x)
	}
	m.Collectives = append(m.Collectives, d.jobRows()...)
	m.RDMA = d.rdmaRows()
	for _, r := range d.nccl {
		if c, ok := curve(basis, r); ok {
			m.Curves = append(m.Curves, c)
		}
	}
	var gpus map[int]*topology.GPU
	copyBasis := basis
	if d.nr.gpus != nil {
		gpus = d.nr.gpus.GPUs
	} else {
		copyBasis = nil // without the GPUs, NVLink peers cannot be told from PCIe peers
	}
	copies := bench.JudgeCopyRows(copyBasis, gpus, d.copies, d.nr.judging.Pass)
	for i, r := range d.copies {
		id := fmt.Sprintf("copy.%s.GPU%d", r.Test, r.Dev)
		if r.Peer >= 0 {
			id = fmt.Sprintf("copy.%s.GPU%d-GPU%d", r.Test, r.Dev, r.Peer)
		}
		x := dossier.CopyMeasurement{ID: id, Test: r.Test, Device: r.Dev, Peer: r.Peer, Bytes: r.Bytes, GBps: r.GBps, TimeUS: r.US, Status: result.Unknown, Valid: r.Valid, Error: r.Error}
		if j := copies[i]; j.Expected != nil && j.Expected.GBps > 0 {
			e, ratio := j.Expected, j.Ratio
			x.GBps, x.ExpectedGBps, x.Fraction, x.Status = j.Measured, &e.GBps, &ratio, j.Status
			x.LimitGBps, x.Limit = e.PeakGBps, e.Limit
		}
		if r.Error != "" || !r.Valid {
			x.Status = result.Fail
			if r.Error != "" {
				x.Status = result.Error
			}
		}
		m.Copies = append(m.Copies, x)
	}
	return m
}

// curve is the model's expectation for r (its variant's) at every power of
// two across the sizes it measured; false without a basis or a size.
func curve(basis *model.Basis, r bench.NCCLResult) (dossier.Curve, bool) {
	var lo, hi uint64
	for _, row := range r.Rows {
		if row.OutOfPlace == nil {
			continue
		}
		if lo == 0 || row.Bytes < lo {
			lo = row.Bytes
		}
		hi = max(hi, row.Bytes)
	}
	if basis == nil || hi == 0 {
		return dossier.Curve{}, false
	}
	c := dossier.Curve{Collective: string(r.Collective), Ranks: r.Ranks, Points: []dossier.CurvePoint{}}
	for b := lo; b <= hi; b *= 2 {
		if p, err := bench.Expectation(basis.Should, r, float64(b)); err == nil {
			c.Points = append(c.Points, dossier.CurvePoint{Bytes: b, BusBW: p.BusBW, AlgBW: p.AlgBW, Algorithm: string(p.Algorithm)})
		}
	}
	return c, true
}

func wrong(m *collective.Measure) int64 {
	if m == nil || m.Wrong == nil {
		return 0
	}
	return max(*m.Wrong, 0)
}

// intervalOf is a prediction's interval as the dossier states it; nil
// when the prediction has none.
func intervalOf(p *model.Prediction) *dossier.Interval {
	iv := p.Interval
	if iv.Class == "" || iv.HighBusBW <= 0 {
		return nil
	}
	return &dossier.Interval{LowBusBW: iv.LowBusBW, HighBusBW: iv.HighBusBW, Class: iv.Class, Runs: iv.Runs, Basis: iv.Basis}
}
