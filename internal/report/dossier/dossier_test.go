package dossier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/schematest"
)

var at = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// fixtureReport judges a fixture host with every check and builds its
// report, with one measurement of each kind planted so that every part of
// the document is exercised.
func fixtureReport(t *testing.T, file string) *Report {
	t.Helper()
	root := fakehost.Root(t, file)
	h, err := discover.Discover(context.Background(), discover.WithRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	facts := sysinfo.Collect(context.Background(), root, h, sysinfo.Options{})
	env := &checks.Env{Host: h, Facts: facts, Now: at, XidWindow: 24 * time.Hour}
	rep := checks.Run(context.Background(), env, checks.All(), checks.Options{})
	s := h.Summarize()
	frac, exp := 0.9, 400.0
	m := Measurements{Pass: 0.85, Basis: "test", Collectives: []CollectiveMeasurement{{ID: "nccl.all_reduce.1048576", Collective: "all_reduce", Ranks: 8, Bytes: 1 << 20,
		TimeUS: 10, AlgBW: 100, BusBW: 175, ExpectedBusBW: &exp, Fraction: &frac, Status: result.Pass, Run: "all_reduce"}},
		Copies: []CopyMeasurement{{ID: "copy.d2d.GPU0", Test: "d2d", Device: 0, Peer: -1, Bytes: 1 << 20, GBps: 2000, Status: result.Pass, Valid: true}},
		Curves: []Curve{{Collective: "all_reduce", Ranks: 8, Points: []CurvePoint{{Bytes: 8, BusBW: 0.1, AlgBW: 0.05, Algorithm: "ring"}}}}}
	runs := []NCCLRun{NewNCCLRun("all_reduce", []string{"raw/nccl/all_reduce.log"}, nil, nil)}
	doc := Document{Complete: true, Profile: "quick", Verdict: rep.Verdict, Inventory: NewInventory(h, facts),
		Topology: NewTopology(h, s, rep.Results, m, runs, nil), Checks: Checks{Counts: rep.Counts, DurationMS: rep.DurationMS, Checks: rep.Checks},
		Measurements: m, NCCL: runs,
		Phases:    []Phase{{Name: "discovery", Status: PhaseDone, StartedAt: at}, {Name: "bench.nccl", Status: PhaseSkipped, Reason: "test", StartedAt: at}},
		Artifacts: []Artifact{{Name: "all_reduce.log", Path: "raw/nccl/all_reduce.log", Kind: "nccl-log", Bytes: 0, SHA256: strings.Repeat("0", 64)}}}
	return &Report{Schema: Schema, Run: report.Run{Tool: report.Tool{Version: "test", Commit: "abc"}, Host: "testhost", StartedAt: at, EndedAt: at, Command: []string{"gdrcheck", "run"}},
		Results: rep.Results, Document: doc}
}

func hostFiles(t *testing.T) []string {
	files, err := filepath.Glob("../../../testdata/hosts/*.host")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixture hosts: %v", err)
	}
	return append(files, "../../checks/testdata/no-gpu.host")
}

// Every fixture host's report is valid against the published schema, and
// reads back as it was written.
func TestFixtureReportsMatchSchema(t *testing.T) {
	sch := schematest.Compile(t, "report.schema.json")
	for _, f := range hostFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := fixtureReport(t, f)
			var b bytes.Buffer
			if err := r.WriteJSON(&b); err != nil {
				t.Fatal(err)
			}
			if err := schematest.Validate(sch, b.Bytes()); err != nil {
				t.Fatalf("report.json does not match the schema: %v", err)
			}
			back, err := Decode(&b)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(r.Results, back.Results); d != "" {
				t.Errorf("results differ after reading back: %s", d)
			}
			if len(back.Topology.DataPaths) != len(r.Inventory.GPUs) {
				t.Errorf("%d data paths for %d GPUs", len(back.Topology.DataPaths), len(r.Inventory.GPUs))
			}
		})
	}
}

// The schema is not a formality: documents with planted faults fail it.
func TestSchemaRefusesBadReports(t *testing.T) {
	sch := schematest.Compile(t, "report.schema.json")
	r := fixtureReport(t, "../../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
	}{
		{"wrong schema", func(m map[string]any) { m["schema"] = "gdrcheck.run/v1" }},
		{"no verdict", func(m map[string]any) { delete(m, "verdict") }},
		{"incomplete without a reason", func(m map[string]any) { m["complete"] = false }},
		{"bad status", func(m map[string]any) { m["results"].([]any)[0].(map[string]any)["status"] = "ok" }},
		{"bad sha256", func(m map[string]any) { m["artifacts"].([]any)[0].(map[string]any)["sha256"] = "xyz" }},
		{"artifact outside the dossier", func(m map[string]any) { m["artifacts"].([]any)[0].(map[string]any)["path"] = "../etc/passwd" }},
		{"skipped phase without a reason", func(m map[string]any) { delete(m["phases"].([]any)[1].(map[string]any), "reason") }},
		{"unknown member", func(m map[string]any) { m["extra"] = 1 }},
	} {
		var m map[string]any
		if err := json.Unmarshal(b.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		tc.edit(m)
		bad, _ := json.Marshal(m)
		if schematest.Validate(sch, bad) == nil {
			t.Errorf("%s: the schema accepted it", tc.name)
		}
	}
}

// Decode refuses another document.
func TestDecodeRefusesOtherSchemas(t *testing.T) {
	if _, err := Decode(strings.NewReader(`{"schema":"gdrcheck.run/v1"}`)); err == nil || !strings.Contains(err.Error(), "gdrcheck.report/v1") {
		t.Errorf("Decode: %v", err)
	}
}

// A hop nobody judged is unknown, never a pass; the fabric of a
// single-node run is not exercised.
func TestDataPathHops(t *testing.T) {
	r := fixtureReport(t, "../../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	if len(r.Topology.DataPaths) != 8 {
		t.Fatalf("%d data paths", len(r.Topology.DataPaths))
	}
	p := r.Topology.DataPaths[0]
	kinds := []string{}
	for _, h := range p.Hops {
		kinds = append(kinds, h.Kind)
		if len(h.Evidence) == 0 && h.Status != result.Unknown {
			t.Errorf("hop %s %s is %s with no evidence", h.Kind, h.Name, h.Status)
		}
	}
	if kinds[0] != HopGPUMemory || kinds[len(kinds)-1] != HopFabric || kinds[len(kinds)-2] != HopPort || kinds[len(kinds)-3] != HopRegistration || kinds[len(kinds)-4] != HopNIC {
		t.Errorf("hops %v", kinds)
	}
	if f := p.Hops[len(p.Hops)-1]; f.Status != result.Unknown || f.Proof != result.ProofNotExercised || !strings.Contains(f.Detail, "not exercised") {
		t.Errorf("fabric hop %+v", f)
	}
	// GPU memory carries a local copy that passed: measured. The
	// registration and the port were read and judged: checked. The path
	// as a whole is as proven as its weakest hop.
	if h := p.Hops[0]; h.Proof != result.ProofMeasured {
		t.Errorf("GPU memory hop %+v", h)
	}
	for _, h := range p.Hops[len(p.Hops)-3 : len(p.Hops)-1] {
		if h.Proof != result.ProofChecked {
			t.Errorf("%s hop %+v, want checked", h.Kind, h)
		}
	}
	if p.Proof != result.ProofNotExercised {
		t.Errorf("path proof %s", p.Proof)
	}
	if p.Hops[0].Evidence[len(p.Hops[0].Evidence)-1] != RefMeasurement+"copy.d2d.GPU0" {
		t.Errorf("GPU memory hop evidence %v", p.Hops[0].Evidence)
	}
}

// WriteDir writes every file whole or not at all: a renderer that fails
// leaves the files written before it as they were, no manifest (so the
// folder does not claim to be whole) and no temporary file; a good write
// then lists every file and artifact in a manifest sha256sum -c accepts.
func TestWriteDirAtomic(t *testing.T) {
	dir := t.TempDir()
	r := fixtureReport(t, "../../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	raw := filepath.Join(dir, RawDir, "nccl")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(raw, "nccl-debug.h.1.log"), []byte("NCCL INFO x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(dir, r, Files()); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, ReportMD))
	if err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(dir, Sums))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  report.json\n", "  report.md\n", "  junit.xml\n", "  metrics.prom\n", "  raw/nccl/nccl-debug.h.1.log\n"} {
		if !strings.Contains(string(sums), want) {
			t.Errorf("SHA256SUMS lacks %q:\n%s", want, sums)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, p, _ := strings.Cut(line, "  ")
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || SumLine(p, b) != line+"\n" {
			t.Errorf("%s: %v, sum %s", p, err, sum)
		}
	}
	if len(r.Artifacts) != 1 || r.Artifacts[0].Kind != "nccl-log" || r.Artifacts[0].Path != "raw/nccl/nccl-debug.h.1.log" {
		t.Errorf("artifacts %+v", r.Artifacts)
	}
	r.Verdict.Status = "CHANGED"
	boom := errors.New("boom")
	err = WriteDir(dir, r, []File{{JUnitXML, WriteJUnit}, {ReportMD, func(w io.Writer, r *Report) error {
		io.WriteString(w, "half a file")
		return boom
	}}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), ReportMD) {
		t.Errorf("err = %v, want boom naming %s", err, ReportMD)
	}
	after, _ := os.ReadFile(filepath.Join(dir, ReportMD))
	if !bytes.Equal(before, after) {
		t.Error("report.md was changed by a renderer that failed")
	}
	if _, err := os.Stat(filepath.Join(dir, Sums)); !os.IsNotExist(err) {
		t.Errorf("SHA256SUMS survived a failed write: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
