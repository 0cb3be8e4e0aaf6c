package ncclras

import (
	"flag"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

var update = flag.Bool("update", false, "rewrite golden files")

var reader = readertest.Reader[*Report]{Detect: Detect, Analyze: Analyze}

func TestGolden(t *testing.T) { reader.GoldenSamples(t, *update, nil) }

// What a person reading each real report concludes (testdata: each file
// says where it was published).
var samples = []readertest.Case[*Report]{
	// RUNNING/OK while PyTorch's watchdog fired: RAS sees nothing wrong
	// in NCCL's state, and says so without claiming the job is fine.
	{File: "ncclras-status-healthy-32node-256gpu-nccl-1730.txt", Verdicts: []string{"pass nccl.ras.comms AllRunning job"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if r.Nodes != 32 || r.Processes != 256 || r.GPUs != 256 || r.NCCLVersion != "2.26.2" || len(vs) != 1 || !strings.Contains(vs[0].Message, "does not show here") {
				t.Errorf("%+v %v", r, vs)
			}
		}},
	// Two reports of one job: the last (a process DEAD) is its state.
	{File: "ncclras-status-incomplete-dead-doc-example.txt", Verdicts: []string{
		"fail nccl.ras.comms CommunicatorsNotRunning job", "fail nccl.ras.errors ProcessDead job", "fail nccl.ras.errors MissingData comm #0-0 (cf264af53edbe986)"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if r.Reports != 2 || len(r.Warnings) != 0 || len(r.Errors) != 2 || !strings.Contains(vs[1].Message, "Process 3487984 on node 172.16.64.213 managing GPU 5") {
				t.Errorf("reports %d warnings %v errors %+v; %v", r.Reports, r.Warnings, r.Errors, vs)
			}
		}},
	// A rank missing, a group without communicator, and an outlier node.
	{File: "ncclras-status-incomplete-nocomm-nccl-1762.txt", Verdicts: []string{
		"fail nccl.ras.comms CommunicatorsNotRunning job", "fail nccl.ras.errors MissingData job", "fail nccl.ras.errors MissingData comm #0-0 (b3398875b8b2a063)",
		"warn nccl.ras.nodes OutlierNode job"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			if r.Nodes != 2 || r.Processes != 10 || len(r.Groups) != 3 || r.Groups[2].Status != "NOCOMM" || len(r.Outliers) != 1 {
				t.Errorf("%+v", r)
			}
		}},
	// Two ranks one AllGather ahead: a warning naming them, not a failure.
	{File: "ncclras-status-mismatch-4node-32gpu-nccl-1911.txt", Verdicts: []string{
		"warn nccl.ras.comms CommunicatorsMismatch job", "warn nccl.ras.warnings OperationMismatch comm #0-0 (fa93daea854b060b)"},
		Check: func(t *testing.T, r *Report, vs []result.Result) {
			w := r.Warnings[0]
			if len(w.Details) != 5 || !strings.Contains(strings.Join(w.Details, "\n"), "Rank 13 -- GPU 5 managed by process 323033 on node 10.137.190.124") {
				t.Errorf("%+v", w)
			}
		}},
}

func TestSamples(t *testing.T) { reader.Samples(t, samples) }

func TestRefusals(t *testing.T) {
	reader.WantErrors(t, map[string]string{
		"":                           "x.txt:1:",
		"NCCL version 2.26.2\nhello": "x.txt:2:",
	})
}

func TestDetect(t *testing.T) {
	for in, want := range map[string]bool{
		"Job summary\n===========\n":                   true,
		"  Communicators... (2.05s)\n  ============\n": true,
		"NCCL INFO Communicators are ready\n":          false,
		"Group     Comms\n":                            false,
	} {
		if Detect([]byte(in)) != want {
			t.Errorf("Detect(%q) != %v", in, want)
		}
	}
}

func TestWriteFuzzSeeds(t *testing.T) { readertest.FuzzSeeds(t, 0, "FuzzAnalyze") }

func FuzzAnalyze(f *testing.F) {
	reader.FuzzAnalyze(f, "Communicators... (0.00s)\n=============\n\nGroup  Comms\n    0         1         4         8        32        32   RUNNING  MISMATCH\n\nWarnings\n========\n\n#0-0 (fa) MISMATCH\n  x\n")
}
