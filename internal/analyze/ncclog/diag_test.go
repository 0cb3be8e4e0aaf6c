package ncclog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/result"
)

// nccl.diag on the NCCL documentation's examples of NCCL 2.31's
// diagnostics (testdata/diag: no real run's output was found in public
// sources; each file says so) and on a log with all checks passed.
func TestDiagVerdict(t *testing.T) {
	for _, c := range []struct {
		file, text string
		status     result.Status
		reason     string
		contains   string
	}{
		{file: "diag/nccl-active-diagnostics-p2p-doc-example-2.31.txt", status: result.Fail, reason: "DiagnosticsFailed", contains: "p2p (1 line(s))"},
		{file: "diag/nccl-ras-diagnostics-doc-example-2.31.txt", status: result.Warn, reason: "DiagnosticsWarnings", contains: "NCCL environment (4 line(s))"},
		{text: "h:1 NCCL DIAG === NCCL Diagnostics ===\nh:1 NCCL DIAG [OK]   p2p: verified P2P access in both directions between every GPU pair (56 peer accesses)\nh:1 NCCL DIAG [OK]   ECC: no uncorrected volatile errors across 8 ranks in comm 0x1\n", status: result.Pass, reason: "DiagnosticsOK", contains: "passed 2 check(s): p2p, ECC"},
		{file: "h200x1-vm-single-rank-socket-fallback-all-subsys.txt", status: result.Skip, reason: "NoDiagnostics", contains: "the NCCL in use (2.28.9+cuda13.0) predates NCCL's own diagnostics"},
		// An NCCL that has them, asked for them: they went to rank 0's
		// standard output, and the verdict says so.
		{text: "h1:101:101 [0] NCCL INFO NCCL version 2.31.2+cuda13.0\nh1:101:101 [0] NCCL INFO NCCL_RUN_DIAGNOSTICS set by environment to 1\nh1:101:101 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n",
			status: result.Skip, reason: "DiagnosticsNotInLog", contains: "NCCL_RUN_DIAGNOSTICS=1 was set and NCCL 2.31.2+cuda13.0 has diagnostics, but they print on rank 0's standard output"},
		// Not asked for: off, as NCCL's default is.
		{text: "h1:101:101 [0] NCCL INFO NCCL version 2.31.2+cuda13.0\nh1:101:101 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n",
			status: result.Skip, reason: "NoDiagnostics", contains: "NCCL_RUN_DIAGNOSTICS / NCCL_RUN_RAS_DIAGNOSTICS off"},
	} {
		name := c.file
		if name == "" {
			name = "inline"
		}
		t.Run(name, func(t *testing.T) {
			text := c.text
			if c.file != "" {
				b, err := os.ReadFile(filepath.Join("testdata", c.file))
				if err != nil {
					t.Fatal(err)
				}
				_, body, _ := strings.Cut(string(b), "\n---\n")
				text = body
			}
			if !Detect([]byte(text)) {
				t.Error("not detected as an NCCL log")
			}
			_, vs, err := Analyze(name, strings.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				if v.ID == "nccl.diag" {
					if v.Status != c.status || v.Reason != c.reason || !strings.Contains(v.Message, c.contains) {
						t.Errorf("%s %s %q", v.Status, v.Reason, v.Message)
					}
					return
				}
			}
			t.Error("no nccl.diag verdict")
		})
	}
}
