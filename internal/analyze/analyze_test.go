package analyze_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/analyze"
	"github.com/gdrcheck/gdrcheck/internal/cli"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// body copies a sample without its source header into a temporary file.
func body(t *testing.T, sample string) string {
	t.Helper()
	b, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	bd, ok := readertest.CorpusBody(b)
	if !ok {
		t.Fatalf("%s: no source header", sample)
	}
	p := filepath.Join(t.TempDir(), filepath.Base(sample))
	if err := os.WriteFile(p, bd, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKinds(t *testing.T) {
	kinds := analyze.Kinds()
	for _, k := range []string{"nvidia-smi-topo", "dcgmi", "nvbandwidth", "perftest", "nccl-topo", "nccl-tests", "nccl-ras", "nccl-log"} {
		if !slices.Contains(kinds, k) {
			t.Errorf("kind %s missing from %v", k, kinds)
		}
	}
	seen := map[string]bool{}
	for _, r := range analyze.Readers() {
		if seen[r.Kind()] || r.Description() == "" {
			t.Errorf("reader %q duplicated or undescribed", r.Kind())
		}
		seen[r.Kind()] = true
	}
}

// TestContract holds every reader to the promise of docs/analyzers.md:
// input it cannot read gives a *textio.ParseError naming the file and a
// line; what it reads gives a report that prints and marshals, and
// verdicts of the vocabulary.
func TestContract(t *testing.T) {
	for _, r := range analyze.Readers() {
		t.Run(r.Kind(), func(t *testing.T) {
			for _, in := range []string{"", "\x00\x01binary\n", "some text\n\x00"} {
				if r.Detect([]byte(in)) {
					t.Errorf("Detect(%q) is true", in)
				}
				_, _, err := r.Analyze("bad.txt", strings.NewReader(in))
				var pe *textio.ParseError
				if !errors.As(err, &pe) || pe.Name != "bad.txt" || pe.Line < 1 {
					t.Errorf("Analyze(%q): %v, want a *textio.ParseError naming bad.txt and a line", in, err)
				}
				readertest.CheckOutcome(t, "bad.txt", nil, nil, err)
			}
		})
	}
	read := map[string]string{
		"dcgmi": "dcgmi/testdata/dcgmi-diag-r2-aws-p4de-a100-dcgm333.txt", "nvbandwidth": "nvbandwidth/testdata/synthetic-nvbandwidth-json-t4.txt",
		"perftest": "perftest/testdata/synthetic-ib-write-lat.txt", "nccl-tests": "nccltests/testdata/synthetic-json-allreduce-J.txt",
		"nvidia-smi-topo": "smitopo/testdata/puget-wrx90-2x-rtx6000ada-pcie.txt", "nccl-topo": "nccltopo/testdata/synthetic-graph-2node.txt",
		"nccl-log": "ncclog/testdata/synthetic-2node-ib-no-gdr.txt", "nccl-ras": "ncclras/testdata/ncclras-status-mismatch-4node-32gpu-nccl-1911.txt",
	}
	for _, kind := range analyze.Kinds() {
		sample, ok := read[kind]
		if !ok {
			t.Errorf("kind %s: no sample in TestContract", kind)
			continue
		}
		p := body(t, sample)
		o, err := analyze.File(t.Context(), p, "")
		if err != nil || o.Kind != kind || len(o.Verdicts) == 0 {
			t.Fatalf("%s: %v, %+v", sample, err, o)
		}
		readertest.CheckOutcome(t, p, o.Report, o.Verdicts, nil)
	}
}

// Every sample goes to its kind (and NCCL_DEBUG runs of nccl-tests to both
// readers); the worst verdict of each output is what a person says.
func TestDispatch(t *testing.T) {
	for _, c := range []struct {
		sample string
		kinds  []string
		worst  []result.Status
	}{
		{"nccltests/testdata/aws-p5-2node-efa-ofi-gdrdma-full.txt", []string{"nccl-tests", "nccl-log"}, nil},
		{"nccltests/testdata/a100pcie-2node-gdr-level-sys-mixed-roce-ib-gather-dropoff.txt", []string{"nccl-tests", "nccl-log"}, []result.Status{result.Warn}},
		{"nccltests/testdata/dgxc-h100-1node-allreduce-nvls-480.txt", []string{"nccl-tests"}, []result.Status{result.Pass}},
		{"nccltests/testdata/synthetic-allreduce-wrong-oob-failed.txt", []string{"nccl-tests"}, []result.Status{result.Fail}},
		// busbw not judged against any hardware: skip (issue 26 class 6).
		{"nccltests/testdata/synthetic-json-allreduce-J.txt", []string{"nccl-tests"}, []result.Status{result.Skip}},
		{"perftest/testdata/gke-a3ultra-h200-ib-write-bw-host-failed-status10.txt", []string{"perftest"}, []result.Status{result.Fail}},
		// Host-memory runs skip the GPU-memory verdict (skip sorts before pass).
		{"perftest/testdata/k8s-cx6-ib-write-bw-host-all-sizes-98g.txt", []string{"perftest"}, []result.Status{result.Skip}},
		{"perftest/testdata/synthetic-ib-write-bw-out-json.txt", []string{"perftest"}, []result.Status{result.Skip}},
		{"perftest/testdata/gke-a3ultra-h200-ib-write-bw-cuda-dmabuf-140g.txt", []string{"perftest"}, []result.Status{result.Warn}},
		{"nvbandwidth/testdata/nvbandwidth-v08-4x-t4-pcie-gen3-d2d-ce-sm.txt", []string{"nvbandwidth"}, []result.Status{result.Pass}},
		{"nvbandwidth/testdata/synthetic-nvbandwidth-json-t4.txt", []string{"nvbandwidth"}, []result.Status{result.Skip}},
		{"dcgmi/testdata/dcgmi-diag-dcgm423-l40s-x4-pcie-internal-error-k8s.txt", []string{"dcgmi"}, []result.Status{result.Error}},
		{"dcgmi/testdata/synthetic-dcgmi-diag-json-dcgm4-internal-error.txt", []string{"dcgmi"}, []result.Status{result.Error}},
		{"smitopo/testdata/h200x8-10nic-gpu3-triple-pix-tabs.txt", []string{"nvidia-smi-topo"}, []result.Status{result.Pass}},
		{"smitopo/testdata/puget-wrx90-2x-rtx6000ada-pcie.txt", []string{"nvidia-smi-topo"}, []result.Status{result.Fail}},
		{"nccltopo/testdata/azure-ndv2-v100-topo.txt", []string{"nccl-topo"}, nil},
		// A one-row table whose header lines lost their "#", before a
		// topo -m in the same paste: its wrong result is read, not lost
		// behind the matrix (issue 26 class 6).
		{"nccltests/testdata/nccltests37-hashless-header-one-row-wrong-then-topo-m.txt", []string{"nvidia-smi-topo", "nccl-tests"}, []result.Status{result.Skip, result.Fail}},
	} {
		t.Run(filepath.Base(c.sample), func(t *testing.T) {
			outs, err := analyze.FileAll(t.Context(), body(t, c.sample))
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, o := range outs {
				kinds = append(kinds, o.Kind)
				if len(o.Verdicts) == 0 {
					t.Errorf("%s: no verdicts", o.Kind)
				}
				for _, v := range o.Verdicts {
					if v.Source != o.Kind {
						t.Errorf("%s: verdict %s has source %q", o.Kind, v.ID, v.Source)
					}
				}
			}
			if !slices.Equal(kinds, c.kinds) {
				t.Fatalf("kinds %v, want %v", kinds, c.kinds)
			}
			for i, w := range c.worst {
				if got := result.Worst(outs[i].Verdicts); got != w {
					t.Errorf("%s: worst verdict %s, want %s", outs[i].Kind, got, w)
				}
			}
		})
	}
}

func TestNotRecognised(t *testing.T) {
	p := body(t, "nvbandwidth/testdata/vastai-4xa100-custom-p2p-bandwidth-nvlink-vs-pcie.txt")
	_, err := analyze.File(t.Context(), p, "")
	var ke *analyze.KindError
	if !errors.As(err, &ke) || ke.File != p {
		t.Fatalf("error %v, want a KindError for the file", err)
	}
	if _, err := analyze.File(t.Context(), p, "no-such-kind"); !errors.As(err, &ke) {
		t.Errorf("unknown kind: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.txt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := analyze.FileAll(t.Context(), empty); !errors.As(err, &ke) || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty file: %v", err)
	}
	if _, err := analyze.File(t.Context(), filepath.Join(t.TempDir(), "missing.txt"), ""); err == nil {
		t.Error("missing file: no error")
	}
}

func TestForcedKind(t *testing.T) {
	p := body(t, "dcgmi/testdata/dcgmi-diag-r2-aws-p4de-a100-dcgm333.txt")
	_, err := analyze.File(t.Context(), p, "perftest")
	var pe *textio.ParseError
	if !errors.As(err, &pe) || pe.Name != p || pe.Line < 1 {
		t.Fatalf("dcgmi output read as perftest: %v, want an error naming the file and a line", err)
	}
	o, err := analyze.File(t.Context(), p, "dcgmi")
	if err != nil || o.Kind != "dcgmi" || o.File != p {
		t.Fatalf("forced dcgmi: %v %+v", err, o)
	}
}

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cli.Main(args, &out, &errb, cli.BuildInfo{Version: "test"})
	return code, out.String(), errb.String()
}

func TestCommand(t *testing.T) {
	good := body(t, "perftest/testdata/k8s-cx6-ib-write-bw-host-all-sizes-98g.txt")
	bad := body(t, "smitopo/testdata/puget-wrx90-2x-rtx6000ada-pcie.txt")
	unknown := body(t, "nvbandwidth/testdata/vastai-4xa100-custom-p2p-bandwidth-nvlink-vs-pcie.txt")

	code, out, _ := run("analyze", good)
	if code != 0 || !strings.Contains(out, "(perftest)") || !strings.Contains(out, "perftest.bw [Measured]") {
		t.Errorf("good file: exit %d\n%s", code, out)
	}
	code, out, _ = run("analyze", good, bad)
	if code != 1 {
		t.Errorf("a failing verdict: exit %d, want 1", code)
	}
	topo := out[strings.Index(out, "(nvidia-smi-topo)"):]
	if !strings.HasPrefix(strings.SplitN(topo, "\n", 3)[2], "  FAIL    gdr.nic-affinity") || !strings.Contains(topo, "remedy:") {
		t.Errorf("text output does not start the topo file with its failure and remedy:\n%s", topo)
	}
	// A file read but not recognised is an unknown finding, and nothing
	// was judged in it: exit 3 (issue 26 class 10; 0 before), with or
	// without --strict; the good file is still judged. A failure beside
	// it is still 1.
	code, out, errOut := run("analyze", good, unknown)
	if code != 3 || !strings.Contains(errOut, "kind not recognised") || !strings.Contains(out, "UNKNOWN analyze.input [NotRecognised]") || !strings.Contains(out, "(perftest)") {
		t.Errorf("unrecognised file: exit %d, stderr %q\n%s", code, errOut, out)
	}
	if code, _, _ = run("analyze", "--strict", good, unknown); code != 3 {
		t.Errorf("unrecognised file, --strict: exit %d, want 3", code)
	}
	if code, _, _ = run("analyze", unknown); code != 3 {
		t.Errorf("only an unrecognised file: exit %d, want 3", code)
	}
	if code, _, _ = run("analyze", good, bad, unknown); code != 1 {
		t.Errorf("unrecognised file beside a failure: exit %d, want 1", code)
	}
	// A file that cannot be read: exit 2, the others still judged.
	code, out, errOut = run("analyze", good, bad, "/nonexistent/x")
	if code != 2 || !strings.Contains(errOut, "/nonexistent/x") || !strings.Contains(out, "ERROR   analyze.input [Unreadable]") || !strings.Contains(out, "FAIL    gdr.nic-affinity") {
		t.Errorf("unreadable file: exit %d, stderr %q\n%s", code, errOut, out)
	}
	code, out, _ = run("analyze", "--format", "json", good, bad)
	// The outputs are the data of the document's envelope.
	var doc struct {
		Results []result.Result `json:"results"`
		Data    []struct {
			File     string          `json:"file"`
			Kind     string          `json:"kind"`
			Report   json.RawMessage `json:"report"`
			Results  [2]int          `json:"results"`
			Verdicts json.RawMessage `json:"verdicts"`
		} `json:"data"`
	}
	err := json.Unmarshal([]byte(out), &doc)
	outs := doc.Data
	if err != nil || code != 1 || len(outs) != 2 {
		t.Fatalf("json: exit %d, %v, %d outputs", code, err, len(outs))
	}
	if r := outs[1].Results; outs[1].Kind != "nvidia-smi-topo" || r[0] < outs[0].Results[1] || r[1] != len(doc.Results) || r[0] >= r[1] ||
		doc.Results[r[0]].ID != "gdr.nic-affinity" || doc.Results[r[0]].Status != result.Fail {
		t.Errorf("json output %+v, results %d", outs[1], len(doc.Results))
	}
	for _, o := range outs {
		if o.Verdicts != nil {
			t.Errorf("%s: the verdicts are written twice, in the results and beside the report", o.Kind)
		}
		var rep map[string]json.RawMessage
		if err := json.Unmarshal(o.Report, &rep); err != nil || len(rep) == 0 {
			t.Errorf("%s report: %v", o.Kind, err)
		}
		if _, twice := rep["verdicts"]; twice {
			t.Errorf("%s: the verdicts are written twice, in the report and beside it", o.Kind)
		}
	}
	code, out, _ = run("analyze", "--kind", "dcgmi", good)
	if code != 3 || !strings.Contains(out, "no dcgmi diag table found") {
		t.Errorf("forced wrong kind: exit %d\n%s", code, out)
	}
	if code, _, _ = run("analyze", "--kind", "nope", good); code != 2 {
		t.Errorf("unknown --kind: exit %d", code)
	}
	if code, _, _ = run("analyze", "--format", "yaml", good); code != 2 {
		t.Errorf("bad --format: exit %d", code)
	}
	if code, _, _ = run("analyze"); code != 2 {
		t.Errorf("no file: exit %d", code)
	}
}

// A data-corruption result is never lost because the file was taken for
// another kind (issue 26 class 6): a real NCCL log longer than the head
// (the same log twice), then the one-row table of nccl-tests issue 37
// whose header lines lost their "#". The head shows only the log; the
// table's wrong result still fails.
func TestWrongResultsNeverLost(t *testing.T) {
	logBody := readertest.Sample(t, "ncclog/testdata/h200x1-vm-single-rank-socket-fallback-all-subsys.txt")
	table := readertest.Sample(t, "nccltests/testdata/nccltests37-hashless-header-one-row-wrong-then-topo-m.txt")
	table = table[:bytes.Index(table, []byte("#nvidia-smi"))]
	in := slices.Concat(logBody, logBody, table)
	if len(in) <= textio.HeadSize {
		t.Fatalf("input of %d bytes: the table must lie past the head (%d)", len(in), textio.HeadSize)
	}
	p := filepath.Join(t.TempDir(), "log-then-table.txt")
	if err := os.WriteFile(p, in, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := analyze.Detect(in); !slices.Equal(got, []string{"nccl-log"}) {
		t.Fatalf("detected %v: the head must show the log only", got)
	}
	outs, err := analyze.FileAll(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range outs {
		kinds = append(kinds, o.Kind)
	}
	if !slices.Equal(kinds, []string{"nccl-log", "nccl-tests"}) {
		t.Fatalf("kinds %v, want nccl-log and nccl-tests", kinds)
	}
	if w := result.Worst(outs[1].Verdicts); w != result.Fail {
		t.Errorf("nccl-tests worst verdict %s, want fail", w)
	}
	// Without a wrong result the log alone is the answer.
	clean := bytes.Replace(bytes.Replace(in, []byte("1e+00"), []byte("0e+00"), 2), []byte("2 FAILED"), []byte("0 OK"), 1)
	if err := os.WriteFile(p, clean, 0o644); err != nil {
		t.Fatal(err)
	}
	if outs, err = analyze.FileAll(t.Context(), p); err != nil || len(outs) != 1 || outs[0].Kind != "nccl-log" {
		t.Errorf("clean table: %d outputs (%v), want the log's only", len(outs), err)
	}
}
