package cli

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
	"github.com/gdrcheck/gdrcheck/internal/topology"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
	"github.com/spf13/cobra"
)

const repo = "../.."

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(args, &out, &errb, testSession(args), liveRoot)
	return out.String(), errb.String(), code
}

// testSession stamps documents with fixed values: golden files stay
// stable.
func testSession(args []string) *app.Session {
	return &app.Session{Tool: report.Tool{Version: "test", Commit: "test"}, Host: "testhost", Command: append([]string{"gdrcheck"}, args...),
		Clock: func() time.Time { return time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC) }}
}

func TestTopoCommand(t *testing.T) {
	root := fakehost.Archive(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	out, errs, code := run(t, "topo", "--root", root)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"\tGPU0\tGPU1", "GPU3\tNV18\tNV18\tNV18\t X \t", "NIC Legend:", "GPU→NIC pairing", "NCCL_IB_HCA==mlx5_3:1"} {
		if !strings.Contains(out, want) {
			t.Errorf("topo output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("ANSI escapes in output that is not a terminal")
	}
	out, _, code = run(t, "topo", "--root", root, "--format", "json")
	var s topology.Summary
	if code != ExitOK || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("json: exit %d: %s", code, out)
	}
	if len(s.GPUs) != 8 || len(s.NICs) != 10 || len(s.Pairing.Rails) != 8 || s.Matrix.Cells[0][11].Level != level.PIX {
		t.Errorf("json summary: %d GPUs %d NICs %d rails cell %v", len(s.GPUs), len(s.NICs), len(s.Pairing.Rails), s.Matrix.Cells[0][11])
	}
	out, _, _ = run(t, "topo", "--root", root, "--pcie", "--color", "always")
	if !strings.Contains(out, "\x1b[4m") || strings.Contains(out, "NV18") || strings.Contains(out, "NV#") {
		t.Errorf("--pcie --color always:\n%s", out)
	}
}

func TestSnapshotThenReplay(t *testing.T) {
	root := fakehost.Dir(t, repo+"/testdata/hosts/gke-a4-b200-8gpu-8nic.host") // a host directory, as the CLI reads one
	want, _, _ := run(t, "topo", "--root", root)
	tgz := filepath.Join(t.TempDir(), "node.tgz")
	out, errs, code := run(t, "snapshot", "--root", root, "-o", tgz)
	if code != ExitOK || !strings.Contains(out, "snapshot of gke-a4-node-1 written") {
		t.Fatalf("snapshot exit %d: %s %s", code, out, errs)
	}
	got, errs, code := run(t, "topo", "--root", tgz)
	if code != ExitOK || got != want {
		t.Errorf("replay of the snapshot differs (exit %d, %s):\n%s\nwant:\n%s", code, errs, got, want)
	}
}

func TestRunOnRealSnapshot(t *testing.T) {
	out, errs, code := run(t, "run", "--root", repo+"/testdata/snapshots/h200x1-vm.tgz")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"GPU0 0000:00:06.0 NVIDIA H200", "RDMA NICs: none: GPU Direct RDMA is not possible", "driver 580.159.04", "GPU0\t X \t0-15\t0\t\tN/A"} {
		if !strings.Contains(out, want) {
			t.Errorf("run output lacks %q:\n%s", want, out)
		}
	}
	// with no subcommand, gdrcheck runs the main job without benchmarks,
	// read-only (the timing line differs, and so can the verdict's time:
	// this capture has none, so it is the clock's, which may tick a second
	// between the two runs)
	out, _, _ = run(t, "run", "--no-bench", "--root", repo+"/testdata/snapshots/h200x1-vm.tgz")
	out2, _, _ := run(t, "--root", repo+"/testdata/snapshots/h200x1-vm.tgz")
	stamp := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	if a, b := stamp.ReplaceAllString(dropTimings(out2), "TIME"), stamp.ReplaceAllString(dropTimings(out), "TIME"); a != b {
		t.Errorf("gdrcheck with no subcommand differs from gdrcheck run:\n%s\nvs\n%s", a, b)
	}
}

func TestNoGPUSaysSo(t *testing.T) {
	s, err := fakehost.Parse("nogpu", strings.NewReader("numa 0 0-3\nhostbridge pci0000:00 numa=0\n  0000:00:1f.0 other\n  0000:00:03.0 eth id=8086:1592\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, code := run(t, "run", "--root", fakehost.MaterializeArchive(t, s))
	if code != ExitOK || !strings.Contains(out, "GPUs: none: no NVIDIA GPU on the PCI bus") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestToolErrors(t *testing.T) {
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"topo", "--root", "/nonexistent/snapshot"}, "no such file"},
		{[]string{"topo", "--root", t.TempDir()}, "no PCI devices found"},
		{[]string{"topo", "--root", repo + "/testdata/snapshots/h200x1-vm.tgz", "--format", "yaml"}, `invalid argument "yaml" for "--format" flag: want text or json`},
		{[]string{"snapshot"}, "needs --out"},
		{[]string{"run", "--root", repo + "/testdata/snapshots/h200x1-vm.tgz", "--only", "pcie.nothing"}, "no such check"},
		{[]string{"frobnicate"}, "unknown command"},
	}
	for _, c := range cases {
		_, errs, code := run(t, c.args...)
		if code != ExitToolErr || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errs, c.msg)
		}
	}
}

func TestVersionWithFakeLibraries(t *testing.T) {
	t.Setenv("GDRCHECK_CUDART", fakelib.CUDART(t))
	t.Setenv("GDRCHECK_NCCL", fakelib.NCCL(t))
	out, _, code := run(t, "version")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"gdrcheck test", "CUDA runtime: 13.0", "NCCL:         2.28.3"} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = run(t, "version", "--format", "json")
	var vi app.VersionInfo
	if err := json.Unmarshal([]byte(out), &vi); err != nil || !vi.CUDA.Loaded || vi.NCCL.Version != "2.28.3" {
		t.Errorf("json version: %v %+v", err, vi)
	}
}

func TestCheckCommand(t *testing.T) {
	good := fakehost.Archive(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	out, errs, code := run(t, "check", "--root", good)
	if code != ExitOK {
		t.Fatalf("healthy HGX: exit %d\n%s%s", code, out, errs)
	}
	// The text view counts the passes; --all (and --format table) lists them.
	if !strings.Contains(out, " passed (") || !strings.Contains(out, "gdr.nic-affinity 8") || strings.Contains(out, "PASS     gdr.nic-affinity") {
		t.Errorf("text:\n%s", out)
	}
	for _, all := range [][]string{{"--all"}, {"--format", "table"}} {
		if out, _, _ := run(t, append([]string{"check", "--root", good}, all...)...); !strings.Contains(out, "PASS     gdr.nic-affinity") {
			t.Errorf("%q:\n%s", all, out)
		}
	}
	first, _, _ := strings.Cut(out, "\n")
	stamp := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`) // the read time may tick between runs
	if q, _, code := run(t, "check", "--root", good, "-q"); code != ExitOK || stamp.ReplaceAllString(q, "T") != stamp.ReplaceAllString(first+"\n", "T") {
		t.Errorf("-q: exit %d\n%q\nwant %q", code, q, first+"\n")
	}
	bad := fakehost.Archive(t, repo+"/testdata/hosts/pcie-l40s-remote-nic.host")
	testVerdict(t, good, bad)
	out, errs, code = run(t, "check", "--root", bad)
	// The verdict first (issue 13, item 2), then the table, failures first.
	verdict, table, _ := strings.Cut(out, "\n\n")
	if code != ExitFailed || !strings.HasPrefix(verdict, "NOT READY  pcie-l40s-01  ") || !strings.Contains(verdict, "failing: gdr.nic-affinity") ||
		!strings.HasPrefix(table, "STATUS") || !strings.Contains(strings.SplitN(table, "\n", 3)[1], "FAIL") {
		t.Errorf("remote NIC: exit %d, verdict or failures not first:\n%s%s", code, out, errs)
	}
	for _, f := range []string{"text", "table", "json", "md", "junit"} {
		out, _, code = run(t, "check", "--root", bad, "--format", f)
		if code != ExitFailed || !strings.Contains(out, "NICBeyondGDRLevel") {
			t.Errorf("--format %s: exit %d\n%s", f, code, out)
		}
	}
	out, _, _ = run(t, "check", "--root", bad, "--format", "json")
	var rep struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Results) == 0 {
		t.Fatalf("json: %v", err)
	}
	for _, k := range []string{"id", "status", "subject", "reason", "message", "evidence", "remedy"} {
		if _, ok := rep.Results[0][k]; !ok {
			t.Errorf("json result lacks %q: %v", k, rep.Results[0])
		}
	}
	profile := filepath.Join(t.TempDir(), "site.yaml")
	os.WriteFile(profile, []byte("gpus: {count: 8, nvlinks: 18}\nnics: {count: 8, rate_gbps: 800}\n"), 0o644)
	out, _, code = run(t, "check", "--root", good, "--expect", profile, "--only", "nic.port")
	if code != ExitFailed || !strings.Contains(out, "RateBelowExpected") {
		t.Errorf("800G profile on 400G NICs: exit %d\n%s", code, out)
	}
	os.WriteFile(profile, []byte("gpus: {cuont: 8}\n"), 0o644)
	_, errs, code = run(t, "check", "--root", good, "--expect", profile)
	if code != ExitToolErr || !strings.Contains(errs, "line 1: field cuont not found (gpus)") {
		t.Errorf("bad profile: exit %d %s", code, errs)
	}
	_, errs, code = run(t, "check", "--root", good, "--only", "pcie.nothing")
	if code != ExitToolErr || !strings.Contains(errs, "no such check") {
		t.Errorf("--only unknown: exit %d %s", code, errs)
	}
	out, _, code = run(t, "run", "--root", bad)
	if code != ExitFailed || !strings.Contains(out, "Readiness checks:") {
		t.Errorf("run with failing checks: exit %d\n%s", code, out)
	}
}

// dropTimings removes the "... in N ms" summary lines.
func dropTimings(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasSuffix(l, " ms") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestRunOutWritesReport(t *testing.T) {
	snap := repo + "/testdata/snapshots/h200x1-vm.tgz"
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "report")
			stdout, errs, code := run(t, "run", "--root", snap, "--format", format, "--out", dir)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			b, err := os.ReadFile(filepath.Join(dir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := dossier.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("report.json: %v", err)
			}
			if got.Run.Host != "testhost" || got.Run.Version != "test" || len(got.Run.Command) != 8 {
				t.Errorf("report.json envelope: %+v", got.Run)
			}
			if len(got.Inventory.GPUs) != 1 || len(got.Results) == 0 {
				t.Errorf("report.json: %d GPUs, %d results:\n%s", len(got.Inventory.GPUs), len(got.Results), b)
			}
			// Each result once: in the envelope's results; checks keeps the
			// counts and the per-check runs.
			if !maps.Equal(got.Checks.Counts, result.Count(got.Results)) || len(got.Checks.Checks) == 0 {
				t.Errorf("report.json: checks.counts %v for %d results", got.Checks.Counts, len(got.Results))
			}
			if format == "json" && !bytes.Equal(bytes.TrimSpace([]byte(stdout)), bytes.TrimSpace(b)) {
				t.Errorf("--format json output and report.json differ")
			}
			if format == "text" && (!strings.Contains(stdout, "bench.nccl  skipped: benchmarks run on the live host only") || !strings.Contains(stdout, "Node verdict (checks and benchmarks): ")) {
				t.Errorf("the text does not say what was not done:\n%s", stdout)
			}
		})
	}
	_, errs, code := run(t, "run", "--root", snap, "--format", "json", "--bench")
	if code != ExitToolErr || !strings.Contains(errs, "benchmarks run on the live host only (--root is ") {
		t.Errorf("--bench on a snapshot: exit %d, %q", code, errs)
	}
}

// -q prints the node verdict alone.
func TestRunQuiet(t *testing.T) {
	stdout, errs, code := run(t, "run", "--root", repo+"/testdata/snapshots/h200x1-vm.tgz", "-q")
	if code != ExitOK || strings.Count(stdout, "\n") != 1 || !strings.HasPrefix(stdout, "DEGRADED") && !strings.HasPrefix(stdout, "READY") || errs != "" {
		t.Errorf("-q: exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
}

// analyze's documents carry the envelope: every verdict in results, the
// readers' outputs as data; the shared formats render its verdicts.
func TestAnalyzeCommand(t *testing.T) {
	failed := "../analyze/perftest/testdata/gke-a3ultra-h200-ib-write-bw-host-failed-status10.txt"
	out, errs, code := run(t, "analyze", failed, "--format", "json")
	var doc struct {
		Schema  string `json:"schema"`
		Results []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"results"`
		Data []struct {
			Kind string `json:"kind"`
		} `json:"data"`
	}
	if code != ExitFailed || errs != "" {
		t.Errorf("failed transfer: exit %d, stderr %q", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Schema != "gdrcheck.analyze/v1" || len(doc.Data) != 1 || len(doc.Results) == 0 || doc.Results[0].Status != "fail" {
		t.Errorf("json: %v %+v\n%s", err, doc, out)
	}
	for _, f := range []string{"table", "md", "junit"} {
		out, _, code := run(t, "analyze", failed, "--format", f)
		if code != ExitFailed || !strings.Contains(out, "TransferFailed") {
			t.Errorf("--format %s: exit %d\n%s", f, code, out)
		}
	}
	if _, errs, code := run(t, "analyze", failed, "--kind", "tea-leaves"); code != ExitToolErr || !strings.Contains(errs, `--kind "tea-leaves"`) {
		t.Errorf("unknown kind: exit %d %q", code, errs)
	}
}

// testVerdict: the JSON carries the verdict line's content, and --strict
// turns unknown results into failures, exit code included.
func testVerdict(t *testing.T, good, bad string) {
	t.Helper()
	var doc struct {
		Verdict checks.Verdict `json:"verdict"`
	}
	out, _, code := run(t, "check", "--root", bad, "--format", "json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitFailed {
		t.Fatalf("json: exit %d, %v", code, err)
	}
	if v := doc.Verdict; v.Status != checks.NotReady || v.Host != "pcie-l40s-01" || v.Time.IsZero() ||
		!slices.Equal(v.Failing, []string{"gdr.nic-affinity"}) || !slices.Contains(v.Unknown, "gdr.kernel-module") || !slices.Contains(v.Unknown, "nccl.env") {
		t.Errorf("json verdict %+v", v)
	}
	out, _, code = run(t, "check", "--root", bad, "--strict", "--format", "json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitFailed || !slices.Contains(doc.Verdict.Failing, "nccl.env") || !doc.Verdict.Strict {
		t.Errorf("--strict: an unknown result is not failing: exit %d, %v, %+v", code, err, doc.Verdict)
	}
	out, _, code = run(t, "check", "--root", good, "--format", "json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitOK || doc.Verdict.Status == checks.NotReady {
		t.Fatalf("healthy HGX: exit %d, %v, %+v", code, err, doc.Verdict)
	}
	unknown := doc.Verdict.Unknown
	if len(unknown) == 0 || doc.Verdict.Status != checks.Degraded {
		t.Fatalf("the healthy HGX fixture has unknown results (no dmesg, no environment): %+v", doc.Verdict)
	}
	out, _, code = run(t, "check", "--root", good, "--strict", "--format", "json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if code != ExitFailed || doc.Verdict.Status != checks.NotReady || !slices.Equal(doc.Verdict.Failing, unknown) || !doc.Verdict.Strict {
		t.Errorf("--strict with unknown %q: exit %d, %+v", unknown, code, doc.Verdict)
	}
	out, _, _ = run(t, "run", "--root", bad, "--format", "json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Verdict.Status != checks.NotReady {
		t.Errorf("run --format json: %v %+v", err, doc.Verdict)
	}
	out, _, _ = run(t, "run", "--root", bad)
	if !strings.HasPrefix(out, "NOT READY  pcie-l40s-01  ") {
		t.Errorf("run does not open with the verdict:\n%s", out)
	}
}

// TestVersionFlagAndRootRank: gdrcheck --version works as operators try
// it first, and bench nccl's root rank (-r, --root-rank) no longer shadows
// the global --root (review: "bench nccl --root snap.tgz" failed parsing
// the snapshot's name as a rank).
func TestVersionFlagAndRootRank(t *testing.T) {
	out, _, code := run(t, "--version")
	if code != ExitOK || out != "gdrcheck test (commit test)\n" {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	// -v is --verbose under run, so not --version at the root.
	if _, errs, code := run(t, "-v"); code != ExitToolErr || !strings.Contains(errs, "unknown shorthand flag: 'v'") {
		t.Errorf("-v: exit %d, %q", code, errs)
	}
	// nccl-tests' --warmup_iters and the hyphenated --warmup-iters are one flag.
	for _, f := range []string{"--warmup_iters", "--warmup-iters"} {
		if _, errs, _ := run(t, "bench", "nccl", f, "2", "--rank", "1"); strings.Contains(errs, "unknown flag") || !strings.Contains(errs, "--world-size") {
			t.Errorf("%s: %s", f, errs)
		}
	}
	_, errOut, _ := run(t, "bench", "nccl", "--root", t.TempDir(), "-e", "8")
	if strings.Contains(errOut, "ParseInt") || strings.Contains(errOut, "invalid argument") {
		t.Errorf("bench nccl --root DIR: the flag is still read as a rank: %s", errOut)
	}
	if _, errOut, code := run(t, "bench", "nccl", "-r", "x"); code != ExitToolErr || !strings.Contains(errOut, "root-rank") {
		t.Errorf("bench nccl -r x: exit %d, %q; want a flag error naming --root-rank", code, errOut)
	}
}

// version's text never prints a library's multi-line reason as literal
// "\n", and says how a build without a commit was made.
func TestVersionText(t *testing.T) {
	var b strings.Builder
	vi := app.VersionInfo{Version: "devel", Commit: "unknown", GoVersion: "go1.26", Platform: "linux/amd64",
		CUDA: app.LibraryState{Error: "CUDA runtime not found; searched:\n  libcudart.so.13: No such file\n  /usr/lib64/libcudart.so.13: no such file"},
		NCCL: app.LibraryState{Loaded: true, Version: "2.28.3", Path: "/usr/lib/libnccl.so.2"}, NVML: app.LibraryState{Error: "no driver"}}
	if err := writeVersionText(&b, vi); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"built without version control information", "CUDA runtime: not available: CUDA runtime not found; searched:\n", "\n                libcudart.so.13: No such file\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `\n`) {
		t.Errorf("a literal \\n:\n%s", out)
	}
}

// A host without GPUs or RDMA NICs gets a sentence, not an empty matrix
// and its legend.
func TestTopoNoGPU(t *testing.T) {
	root := fakehost.Archive(t, repo+"/internal/checks/testdata/no-gpu.host")
	out, _, code := run(t, "topo", "--root", root)
	if code != ExitOK || !strings.HasPrefix(out, "No NVIDIA GPU and no RDMA NIC on the PCI bus of ") || strings.Contains(out, "Legend") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// The global --root and --timeout given to a command that reads no node
// are an error naming the command, never silently ignored.
func TestGlobalFlagsWhereTheyApply(t *testing.T) {
	for _, args := range [][]string{{"fleet", "--root", "/nonexistent", "x.json"}, {"diff", "--timeout", "1s", "a", "b"}, {"version", "--root", "/"}} {
		_, errs, code := run(t, args...)
		if code != ExitToolErr || !strings.Contains(errs, "--root and --timeout do not apply") {
			t.Errorf("%q: exit %d, %s", args, code, errs)
		}
	}
}

// An argument or flag error says the usage line.
func TestUsageOnArgumentErrors(t *testing.T) {
	for args, want := range map[string]string{"diff a": "usage: gdrcheck diff OLD NEW [flags]", "check --nope": "usage: gdrcheck check [flags]"} {
		_, errs, code := run(t, strings.Fields(args)...)
		if code != ExitToolErr || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d, %s", args, code, errs)
		}
	}
}

// Every command's help has examples, and every example's flags are the
// command's own (an example that no longer parses is caught here).
func TestEveryCommandHasExamples(t *testing.T) {
	var out, errb bytes.Buffer
	root := newRoot(&globals{out: &out, errOut: &errb, session: testSession(nil)})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root && !c.Hidden && c.Name() != "help" && c.Name() != "completion" {
			if strings.TrimSpace(c.Example) == "" {
				t.Errorf("%s: no Examples", c.CommandPath())
			}
			for _, line := range strings.Split(c.Example, "\n") {
				line, _, _ = strings.Cut(line, "#")
				f := strings.Fields(line)
				for len(f) > 0 && f[0] != "gdrcheck" { // srun -N2 ... gdrcheck ...
					f = f[1:]
				}
				if len(f) == 0 {
					continue
				}
				sub, rest, err := root.Find(f[1:])
				under := false // the command or one of its subcommands
				for x := sub; x != nil; x = x.Parent() {
					under = under || x == c
				}
				if err != nil || !under {
					t.Errorf("%s: example %q runs %v (%v)", c.CommandPath(), line, sub.CommandPath(), err)
					continue
				}
				if err := sub.ParseFlags(rest); err != nil {
					t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
				}
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// model's formulas are behind --formulas: the page ends with its tables
// and the judging rule, not hundreds of columns of algebra.
func TestModelFormulasOnAsk(t *testing.T) {
	root := fakehost.Archive(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	out, _, code := run(t, "model", "--root", root)
	full, _, _ := run(t, "model", "--root", root, "--formulas")
	if code != ExitOK || strings.Contains(out, "[1] ") || !strings.Contains(out, "--formulas prints them") || !strings.Contains(full, "\n  [1] ") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

// run prints any file of its dossier, report.html too.
func TestRunFormatHTML(t *testing.T) {
	out, _, code := run(t, "run", "--root", repo+"/testdata/snapshots/h200x1-vm.tgz", "--format", "html")
	if code != ExitOK || !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, "gdrcheck dossier</title>") {
		t.Errorf("exit %d: %.300s", code, out)
	}
}

// run --include says in its text what each job moved from this node.
func TestRunIncludeText(t *testing.T) {
	out, _, code := run(t, "run", "--root", repo+"/testdata/snapshots/h200x1-live-gdrcheck.tgz", "--include", repo+"/internal/app/testdata/jobs/fake-socket-2ranks.json")
	if code != ExitFailed || !strings.Contains(out, "\nJobs:\n  job1 (bench-nccl, ") ||
		!strings.Contains(out, "rank 0 on GPU0 reached host-65cf06c2 (NCCL_HOSTID fakehost1) over NET/Socket: GPU memory host-staged") ||
		!strings.Contains(out, "failing: gdr.used") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

// topo --nccl-env: the settings each kind of node calls for, each with
// why; forcing GDR beyond PXB only advised (commented out).
func TestTopoNCCLEnv(t *testing.T) {
	for _, c := range []struct {
		host      string
		want, not []string
	}{
		{"hgx-h200-8gpu-10nic", []string{"export NCCL_IB_HCA==mlx5_3:1,mlx5_5:1,", "export NCCL_SOCKET_IFNAME==eth2\n"}, []string{"NCCL_IB_GID_INDEX", "NCCL_NET_GDR_LEVEL"}},
		{"hgx-h100-8gpu-12nic-roce", []string{"export NCCL_IB_GID_INDEX=3\n", "(GID 3: RoCE v2 ::ffff:10.0.0.1)"}, []string{"NCCL_NET_GDR_LEVEL"}},
		{"pcie-l40s-remote-nic", []string{"# export NCCL_NET_GDR_LEVEL=SYS\n", "GPU0→mlx5_0 at SYS"}, []string{"\nexport NCCL_NET_GDR_LEVEL"}},
	} {
		root := fakehost.Archive(t, repo+"/testdata/hosts/"+c.host+".host")
		out, _, code := run(t, "topo", "--root", root, "--nccl-env")
		if code != ExitOK {
			t.Fatalf("%s: exit %d", c.host, code)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s lacks %q:\n%s", c.host, w, out)
			}
		}
		for _, w := range c.not {
			if strings.Contains(out, w) {
				t.Errorf("%s has %q:\n%s", c.host, w, out)
			}
		}
		// Every line is a comment or one export of a shell word.
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(l, "# ") && !regexp.MustCompile(`^export NCCL_[A-Z_]+=[A-Za-z0-9_.:,=+/-]+$`).MatchString(l) {
				t.Errorf("%s: line %q", c.host, l)
			}
		}
	}
	// A host name or NIC name never reaches a shell line unquoted.
	var b strings.Builder
	topology.WriteNCCLEnv(&b, "h", []topology.NCCLSetting{{Name: "NCCL_IB_HCA", Value: "=mlx5_0:1;rm -rf /", Why: "x"}})
	if strings.Contains(b.String(), "export") || !strings.Contains(b.String(), "not printed as a shell line") {
		t.Errorf("%s", b.String())
	}
}

// Every --format is one flag of one vocabulary: its help and its refusal
// list the same formats in the one order, and a format it does not offer
// is refused with the usage line before anything runs.
func TestFormatOneVocabulary(t *testing.T) {
	var out, errb bytes.Buffer
	root := newRoot(&globals{out: &out, errOut: &errb, session: testSession(nil)})
	seen := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		fl := c.Flags().Lookup("format")
		if fl == nil || c.Hidden {
			return
		}
		seen++
		v, ok := fl.Value.(*formatValue)
		if !ok {
			t.Errorf("%s: --format is a %T, not the shared format flag", c.CommandPath(), fl.Value)
			return
		}
		choices := report.Choices(nil, v.offered...)
		if !strings.Contains(fl.Usage, "output format: ") || fl.DefValue != "text" {
			t.Errorf("%s: --format help %q, default %q", c.CommandPath(), fl.Usage, fl.DefValue)
		}
		for _, f := range v.offered {
			if !strings.Contains(fl.Usage, string(f)) {
				t.Errorf("%s: --format help %q does not name %s", c.CommandPath(), fl.Usage, f)
			}
		}
		args := append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "gdrcheck ")), "--format", "yaml")
		_, errs, code := run(t, args...)
		if code != ExitToolErr || !strings.Contains(errs, "want "+choices+"\n") || !strings.Contains(errs, "usage: "+c.UseLine()) {
			t.Errorf("%v: exit %d, %q; want the choices %q and the usage line", args, code, errs, choices)
		}
	}
	walk(root)
	if seen < 10 {
		t.Errorf("%d commands with --format; want every writer", seen)
	}
	if got := report.Choices(map[report.Format]string{report.JSON: "report.json"}, report.HTML, report.JSON, report.Text); got != "text, json (report.json) or html" {
		t.Errorf("Choices: %q", got)
	}
}

// topo --nccl-topo-file writes NCCL's topology file atomically, replaces
// only its own files without --force, and --nccl-env exports it.
func TestTopoNCCLTopoFile(t *testing.T) {
	root := repo + "/testdata/demo/hgx-h200-8gpu-10nic.tgz"
	dir := t.TempDir()
	file := filepath.Join(dir, "topo.xml")
	out, errs, code := run(t, "topo", "--root", root, "--nccl-topo-file", file)
	b, _ := os.ReadFile(file)
	if code != ExitOK || !strings.HasPrefix(string(b), `<system version="1" name="gdrcheck hgx-h200-01">`) || !strings.Contains(out, "wrote "+file+": NCCL's topology of hgx-h200-01 (8 GPUs, 10 RDMA NICs)") {
		t.Fatalf("exit %d: %s%s\n%.200s", code, out, errs, b)
	}
	// Its own file is replaced; the settings export it.
	out, errs, code = run(t, "topo", "--root", root, "--nccl-topo-file", file, "--nccl-env")
	if code != ExitOK || !strings.Contains(out, "export NCCL_TOPO_FILE="+file+"\n") || !strings.Contains(out, "export NCCL_IB_HCA==mlx5_3:1") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	// Standard output: the file alone.
	out, _, code = run(t, "topo", "--root", root, "--nccl-topo-file", "-")
	if code != ExitOK || !bytes.Equal([]byte(out), b) {
		t.Errorf("exit %d: standard output is not the file written:\n%.300s", code, out)
	}
	// Without a file, --nccl-env says how to have one.
	out, _, _ = run(t, "topo", "--root", root, "--nccl-env")
	if !strings.Contains(out, "# NCCL_TOPO_FILE: not set here; gdrcheck topo --nccl-topo-file FILE --nccl-env") || strings.Contains(out, "export NCCL_TOPO_FILE") {
		t.Errorf("--nccl-env:\n%s", out)
	}
	foreign := filepath.Join(dir, "mine.xml")
	if err := os.WriteFile(foreign, []byte("<system version=\"1\">\n</system>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nccl-topo-file", foreign}, "the file exists and gdrcheck did not write it (--force replaces it)"},
		{[]string{"--nccl-topo-file", "-", "--nccl-env"}, "both would go to standard output"},
		{[]string{"--nccl-topo-file", file, "--format", "json"}, "--format json does not apply"},
		{[]string{"--nccl-topo-file", dir}, "not a regular file"},
	} {
		_, errs, code := run(t, append([]string{"topo", "--root", root}, c.args...)...)
		if code != ExitToolErr || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %s; want %q", c.args, code, errs, c.want)
		}
	}
	if b, _ := os.ReadFile(foreign); string(b) != "<system version=\"1\">\n</system>\n" {
		t.Error("a file gdrcheck did not write was replaced")
	}
	if _, _, code := run(t, "topo", "--root", root, "--nccl-topo-file", foreign, "--force"); code != ExitOK {
		t.Errorf("--force: exit %d", code)
	}
}

// burn refuses what cannot mean anything before anything runs.
func TestBurnRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"burn", "--duration", "1m", "--window", "2m"}, "--window 2m0s is longer than --duration 1m0s"},
		{[]string{"burn", "--duration", "0s"}, "must be positive"},
		{[]string{"burn", "--root", repo + "/testdata/demo/hgx-h200-8gpu-10nic.tgz"}, "benchmarks run on the live host only"},
		{[]string{"burn", "--size", "lots"}, "--size"},
		{[]string{"run", "--duration", "1m"}, "--duration applies to --profile burnin only"},
		{[]string{"run", "--profile", "burnin", "--burn-size", "lots"}, "--burn-size"},
	} {
		_, errs, code := run(t, c.args...)
		if code != ExitToolErr || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, errs, c.want)
		}
	}
}
