package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/schematest"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

var update = flag.Bool("update", false, "rewrite golden files")

// dossierSession is testSession with the commit a real build resolves
// (report.ResolveTool: never empty).
func dossierSession() *Session {
	s := testSession()
	s.Tool.Commit = "0123456789ab"
	s.Command = []string{"gdrcheck", "run", "--out", "DIR"}
	return s
}

// fixtureHosts are every fixture host description.
func fixtureHosts(t *testing.T) []string {
	files, err := filepath.Glob("../../testdata/hosts/*.host")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixture hosts: %v", err)
	}
	return append(files, "../checks/testdata/no-gpu.host")
}

// runDossier runs `gdrcheck run --out DIR` on root and returns the report
// and the folder.
func runDossier(t *testing.T, ctx context.Context, root string, o DossierOptions) (*dossier.Report, string, error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "dossier")
	nr, err := dossierSession().Run(ctx, RunOptions{Node: NodeOptions{Root: root, Timeout: time.Minute},
		Checks: CheckOptions{Timeout: 10 * time.Second, XidWindow: 24 * time.Hour}, Out: out, AutoBench: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	rep, err := nr.Dossier(ctx, o)
	return rep, out, err
}

// normalized is a copy of r without what varies from run to run: the
// durations and the verdict's time (the host's clock for a fixture).
func normalized(r *dossier.Report) *dossier.Report {
	c := *r
	c.Results = append([]result.Result(nil), r.Results...)
	for i := range c.Results {
		c.Results[i].DurationMS = 0
	}
	c.Checks.Checks = append(c.Checks.Checks[:0:0], r.Checks.Checks...)
	for i := range c.Checks.Checks {
		c.Checks.Checks[i].DurationMS = 0
	}
	c.Checks.DurationMS = 0
	c.Phases = append([]dossier.Phase(nil), r.Phases...)
	for i := range c.Phases {
		c.Phases[i].DurationMS = 0
		c.Phases[i].StartedAt = r.Run.StartedAt
	}
	if s := r.Topology.Summary; s != nil {
		cs := *s
		cs.DiscoveryMS = 0
		c.Topology.Summary = &cs
	}
	c.Verdict.Time = r.Run.StartedAt
	return &c
}

// jsonGolden are the hosts whose whole report.json is a golden file (the
// others' are checked against the schema and through their renderings).
var jsonGolden = map[string]bool{"hgx-h200-8gpu-10nic": true, "no-gpu": true, "pcie-l40s-remote-nic": true}

// Every fixture host's dossier: report.json valid against the published
// schema, SHA256SUMS matching the files, metrics.prom parsed by
// Prometheus's own parser, and report.json, report.md, junit.xml and
// metrics.prom as their golden files (-update rewrites them).
func TestDossierOfFixtureHosts(t *testing.T) {
	sch := schematest.Compile(t, "report.schema.json")
	for _, f := range fixtureHosts(t) {
		name := strings.TrimSuffix(filepath.Base(f), ".host")
		t.Run(name, func(t *testing.T) {
			root := fakehost.Archive(t, f)
			rep, dir, err := runDossier(t, t.Context(), root, DossierOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, dossier.ReportJSON))
			if err != nil {
				t.Fatal(err)
			}
			if err := schematest.Validate(sch, b); err != nil {
				t.Errorf("report.json does not match the schema: %v", err)
			}
			if !rep.Complete || rep.Interrupted != "" {
				t.Errorf("complete %v, interrupted %q", rep.Complete, rep.Interrupted)
			}
			for _, p := range rep.Phases {
				if strings.HasPrefix(p.Name, "bench.") && (p.Status != dossier.PhaseSkipped || !strings.Contains(p.Reason, "live host only")) {
					t.Errorf("phase %+v: a snapshot's benchmarks must be skipped, saying why", p)
				}
			}
			checkSums(t, dir)
			checkProm(t, filepath.Join(dir, dossier.MetricsProm))
			n := normalized(rep)
			tmp := filepath.Dir(root) // the archive's temporary folder, named in the report
			if jsonGolden[name] {
				golden(t, filepath.Join("testdata", "dossier", name, dossier.ReportJSON), tmp, n.WriteJSON)
			}
			for _, f := range dossier.Files() {
				golden(t, filepath.Join("testdata", "dossier", name, f.Name), tmp, func(w io.Writer) error { return f.Render(w, n) })
			}
		})
	}
}

// checkSums verifies SHA256SUMS as `sha256sum -c` would, and that it
// lists every file of the dossier.
func checkSums(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, dossier.Sums))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		sum, p, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		c, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(c)
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: %s does not match", p)
		}
		listed[p] = true
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			// The lock is the writer's, not one of the dossier's files.
			if rel != dossier.Sums && rel != dossier.LockFile && !listed[filepath.ToSlash(rel)] {
				t.Errorf("%s is not in SHA256SUMS", rel)
			}
		}
		return nil
	})
}

// checkProm parses metrics.prom with Prometheus's text parser and checks
// that the stable names are there.
func checkProm(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("metrics.prom: %v", err)
	}
	for _, name := range []string{"gdrcheck_node_ready", "gdrcheck_check_status", "gdrcheck_report_complete", "gdrcheck_phase_done"} {
		if fams[name] == nil || fams[name].GetHelp() == "" {
			t.Errorf("metrics.prom has no %s with HELP", name)
		}
	}
}

// golden compares what render writes, with tmp written as FIXTURE, with
// the file at path.
func golden(t *testing.T, path, tmp string, render func(io.Writer) error) {
	t.Helper()
	var raw bytes.Buffer
	if err := render(&raw); err != nil {
		t.Fatal(err)
	}
	b := bytes.NewBufferString(strings.ReplaceAll(raw.String(), tmp, "FIXTURE"))
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(string(want), b.String()); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, d)
	}
}

// A run cut short leaves a valid dossier marked incomplete: the phases
// that did not run say so, and report.json still matches the schema.
func TestDossierInterrupted(t *testing.T) {
	sch := schematest.Compile(t, "report.schema.json")
	ctx, cancel := context.WithCancel(t.Context())
	o := DossierOptions{OnPhase: func(p dossier.Phase, done bool) {
		if p.Name == PhaseCopy && !done {
			cancel() // Ctrl-C as the benchmarks start
		}
	}}
	rep, dir, err := runDossier(t, ctx, fakehost.Archive(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host"), o)
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the interrupt", err)
	}
	if rep.Complete || !strings.Contains(rep.Interrupted, "interrupted") {
		t.Errorf("complete %v, interrupted %q", rep.Complete, rep.Interrupted)
	}
	back := readReport(t, sch, dir)
	if back.Complete || len(back.Results) != len(rep.Results) || len(back.Inventory.GPUs) != 8 {
		t.Errorf("on disk: complete %v, %d results, %d GPUs", back.Complete, len(back.Results), len(back.Inventory.GPUs))
	}
	var interrupted int
	for _, p := range back.Phases {
		if p.Status == dossier.PhaseInterrupted {
			interrupted++
		}
	}
	if interrupted == 0 {
		t.Errorf("no phase marked interrupted: %+v", back.Phases)
	}
	checkSums(t, dir)
}

// Between phases the dossier on disk is valid and says the run is not
// over: a process killed there leaves an honest report.
func TestDossierWrittenAfterEveryPhase(t *testing.T) {
	sch := schematest.Compile(t, "report.schema.json")
	var dir string
	seen := 0
	o := DossierOptions{OnPhase: func(p dossier.Phase, done bool) {
		if done || dir == "" || p.Name == PhaseVerdict {
			return
		}
		b, err := os.ReadFile(filepath.Join(dir, dossier.ReportJSON))
		if err != nil {
			t.Errorf("before %s: %v", p.Name, err)
			return
		}
		seen++
		if err := schematest.Validate(sch, b); err != nil {
			t.Errorf("before %s: %v", p.Name, err)
		}
		r, err := dossier.Decode(bytes.NewReader(b))
		if err != nil || r.Complete || !strings.Contains(r.Interrupted, p.Name+" was next") {
			t.Errorf("before %s: complete %v, %q, %v", p.Name, r.Complete, r.Interrupted, err)
		}
	}}
	out := filepath.Join(t.TempDir(), "dossier")
	dir = out
	nr, err := dossierSession().Run(t.Context(), RunOptions{Node: NodeOptions{Root: h200Snapshot, Timeout: time.Minute},
		Checks: CheckOptions{Timeout: 10 * time.Second}, Out: out, AutoBench: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	if _, err := nr.Dossier(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if seen != 4 {
		t.Errorf("report.json read before %d phases, want 4", seen)
	}
}

// Profiles: quick is the smallest pass, each of standard and full
// measures more, every profile measures every collective, and burnin's
// pass (before its burn-in) is quick's.
func TestProfiles(t *testing.T) {
	var last int
	quick, _ := ProfileQuick.benchConfig(0)
	for _, p := range Profiles() {
		n, c := p.benchConfig(0)
		rows := Rows(n)
		if p == ProfileBurnin {
			if rows != Rows(quick) || c.Bytes != ProfileQuick.MaxBytes() {
				t.Errorf("burnin: %d rows, copies of %d; want quick's pass", rows, c.Bytes)
			}
			continue
		}
		if rows <= last || len(n.Collectives) == 0 || c.Bytes != p.MaxBytes() {
			t.Errorf("%s: %d rows (previous %d), copies of %d", p, rows, last, c.Bytes)
		}
		last = rows
	}
	if _, err := ParseProfile("slow"); err == nil {
		t.Error("ParseProfile accepted slow")
	}
}

// Once the model phase has a basis, every measurement is stated against
// the model: expected busbw, the fraction, its status; the curves span the
// sizes measured. Before it, the same measurements are unknown.
func TestMeasurementsAgainstTheModel(t *testing.T) {
	nr, exp := hgxRun(t)
	w0 := int64(0)
	row := func(bytes uint64, busbw float64) collective.Row {
		return collective.Row{Bytes: bytes, OutOfPlace: &collective.Measure{TimeUS: 1, AlgBW: busbw / (2 * 7.0 / 8), BusBW: busbw, Wrong: &w0}}
	}
	d := &dossierRun{nr: nr, exp: exp,
		nccl:   []bench.NCCLResult{{Collective: collective.AllReduce, Ranks: 8, Rows: []collective.Row{row(1<<10, 1), row(1<<30, 400), row(1<<31, 100)}}},
		copies: []bench.CopyResult{{Test: bench.CopyP2P, Dev: 0, Peer: 1, Bytes: 1 << 30, GBps: 300, Valid: true}, {Test: bench.CopyD2D, Dev: 0, Peer: -1, Bytes: 1 << 30, Error: "boom"}}}
	before := d.measurements()
	if before.Basis != "" || before.Collectives[1].Status != result.Unknown || before.Collectives[1].Fraction != nil || len(before.Curves) != 0 {
		t.Errorf("before the model phase: %+v", before)
	}
	d.rep.Phases = append(d.rep.Phases, dossier.Phase{Name: PhaseModel, Status: dossier.PhaseDone})
	m := d.measurements()
	if m.Basis == "" || len(m.Collectives) != 3 || len(m.Copies) != 2 {
		t.Fatalf("%+v", m)
	}
	big, slow := m.Collectives[1], m.Collectives[2]
	if big.ExpectedBusBW == nil || big.Fraction == nil || *big.Fraction < 0.5 || big.Status == result.Unknown {
		t.Errorf("1 GiB all_reduce at 400 GB/s busbw: %+v", big)
	}
	if slow.Fraction == nil || *slow.Fraction > 0.5 || slow.Status != result.Fail {
		t.Errorf("2 GiB all_reduce at 100 GB/s busbw: %+v (fraction %v)", slow, *slow.Fraction)
	}
	// The interval of the prediction's class brackets the expectation
	// and says what it rests on (issue 30).
	if iv := big.Interval; iv == nil || iv.LowBusBW >= *big.ExpectedBusBW || iv.HighBusBW <= *big.ExpectedBusBW || iv.Class == "" || iv.Basis == "" {
		t.Errorf("1 GiB all_reduce: interval %+v around %v", big.Interval, *big.ExpectedBusBW)
	}
	if got, want := *big.Fraction, big.BusBW / *big.ExpectedBusBW; abs(got-want) > 1e-3 {
		t.Errorf("fraction %v is not busbw over expected (%v / %v)", got, big.BusBW, *big.ExpectedBusBW)
	}
	if len(m.Curves) != 1 || m.Curves[0].Points[0].Bytes != 1<<10 || m.Curves[0].Points[len(m.Curves[0].Points)-1].Bytes != 1<<31 {
		t.Errorf("curves %+v", m.Curves)
	}
	if p2p := m.Copies[0]; p2p.ExpectedGBps == nil || p2p.Fraction == nil || p2p.ID != "copy.p2p.GPU0-GPU1" {
		t.Errorf("p2p copy %+v", p2p)
	}
	if bad := m.Copies[1]; bad.Status != result.Error {
		t.Errorf("a copy that failed is %s", bad.Status)
	}
}

func abs(x float64) float64 { return max(x, -x) }

// The nccl-logs phase reads NCCL's debug logs of the pass as one job: the
// transports of its channels, GDR, its verdicts (source nccl-log) among
// the results, the logs named as the dossier's artifacts.
func TestNCCLLogsPhase(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "raw", "nccl")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile("../analyze/ncclog/testdata/a100pcie-2gpu-allreduce-interleaved-nccl-info.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nccl-debug.node1.4242.log"), log, 0o644); err != nil {
		t.Fatal(err)
	}
	d := &dossierRun{nr: &NodeRun{s: dossierSession(), out: out, ncclSetup: &NCCLSetup{Dir: dir}}}
	if st, why := d.ncclLogs(t.Context()); st != dossier.PhaseSkipped || !strings.Contains(why, "no NCCL benchmark ran") {
		t.Errorf("before any NCCL pass: %s %s", st, why)
	}
	d.rep.Phases = []dossier.Phase{{Name: PhaseNCCL, Status: dossier.PhaseDone}}
	if st, why := d.ncclLogs(t.Context()); st != dossier.PhaseDone {
		t.Fatalf("%s %s", st, why)
	}
	if len(d.rep.NCCL) != 1 {
		t.Fatalf("%d NCCL runs", len(d.rep.NCCL))
	}
	run := d.rep.NCCL[0]
	if len(run.Logs) != 1 || run.Logs[0] != "raw/nccl/nccl-debug.node1.4242.log" || len(run.Transports) == 0 || run.Transports[0].Class != "p2p" {
		t.Errorf("run %+v", run)
	}
	if len(d.judged) == 0 || len(run.Results) != len(d.judged) {
		t.Fatalf("%d verdicts, %d referenced", len(d.judged), len(run.Results))
	}
	for _, r := range d.judged {
		if r.Source != "nccl-log" {
			t.Errorf("verdict %s from %q", r.ID, r.Source)
		}
	}
}

// Two runs writing one --out at once: the second is refused and writes
// nothing, so the dossier stays one run's, whole (the review's D10: mixed
// files under a SHA256SUMS that matched neither). Once the first ends,
// another run may write it.
func TestDossierLocked(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dossier")
	var force bool
	start := func() *NodeRun {
		nr, err := dossierSession().Run(t.Context(), RunOptions{Node: NodeOptions{Root: h200Snapshot, Timeout: time.Minute},
			Checks: CheckOptions{Timeout: 10 * time.Second}, Out: out, Force: force})
		if err != nil {
			t.Fatal(err)
		}
		return nr
	}
	first := start()
	second := start()
	if second.OutErr == nil || !strings.Contains(second.OutErr.Error(), "another gdrcheck run is writing this dossier") {
		t.Fatalf("second writer: %v", second.OutErr)
	}
	if _, err := second.Dossier(t.Context(), DossierOptions{}); err != nil {
		t.Fatal(err)
	}
	second.Close()
	if _, err := os.Stat(filepath.Join(out, dossier.ReportJSON)); err == nil {
		t.Error("the refused run wrote report.json")
	}
	if _, err := first.Dossier(t.Context(), DossierOptions{}); err != nil {
		t.Fatal(err)
	}
	first.Close()
	force = true // the third replaces the first's dossier
	third := start()
	defer third.Close()
	if third.OutErr != nil {
		t.Errorf("after the first ended: %v", third.OutErr)
	}
}

// A dossier that cannot be written whole leaves a report.json that says
// writing failed, not that a phase was next (the review's D16: a full
// disk's report.json said "bench.copy was next").
func TestDossierWriteFailedSaid(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dossier")
	if err := os.MkdirAll(filepath.Join(out, "report.html", "x"), 0o755); err != nil { // cannot be replaced by a file
		t.Fatal(err)
	}
	nr, err := dossierSession().Run(t.Context(), RunOptions{Node: NodeOptions{Root: h200Snapshot, Timeout: time.Minute},
		Checks: CheckOptions{Timeout: 10 * time.Second}, Out: out, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	if _, err := nr.Dossier(t.Context(), DossierOptions{}); err == nil {
		t.Fatal("no error writing over a folder")
	}
	b, err := os.ReadFile(filepath.Join(out, dossier.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	r, err := dossier.Decode(bytes.NewReader(b))
	if err != nil || r.Complete || !strings.HasPrefix(r.Interrupted, "writing the dossier failed (") || strings.Contains(r.Interrupted, "was next") {
		t.Errorf("report.json: complete %v, %q, %v", r.Complete, r.Interrupted, err)
	}
}

// hgxRun is a run of the checks on the 8-GPU HGX fixture with its GPUs
// handed to the benchmarks, and the model's expectations of them: what the
// dossier's measurement tests judge against.
func hgxRun(t *testing.T) (*NodeRun, *bench.Expected) {
	t.Helper()
	root := fakehost.Archive(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	nr, err := dossierSession().Run(t.Context(), RunOptions{Node: NodeOptions{Root: root, Timeout: time.Minute},
		Checks: CheckOptions{Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	gpus := &GPUs{Host: nr.host, GPUs: map[int]*topology.GPU{}}
	for i, g := range nr.host.GPUs {
		gpus.Devices = append(gpus.Devices, i)
		gpus.GPUs[i] = g
	}
	nr.gpus = gpus
	exp, err := nr.judging.expected(gpus)
	if err != nil || exp == nil {
		t.Fatalf("no basis: %v", err)
	}
	return nr, exp
}

// readReport reads the dossier's report.json in dir, checks it against
// the schema sch and decodes it.
func readReport(t *testing.T, sch *jsonschema.Schema, dir string) *dossier.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, dossier.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := schematest.Validate(sch, b); err != nil {
		t.Errorf("report.json: %v", err)
	}
	back, err := dossier.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return back
}
