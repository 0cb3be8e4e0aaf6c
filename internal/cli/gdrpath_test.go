package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A GPU node with no RDMA NIC (the H200 VM) has no GPU Direct RDMA path: it
// is never a bare READY. Without a word on gdr.required it is DEGRADED,
// with gdr.required: true NOT READY, and only gdr.required: false (a node
// not meant for GDR) makes it READY. check and run say the same.
func TestNodeWithoutGDRPathIsNotReady(t *testing.T) {
	snap := repo + "/testdata/snapshots/h200x1-live-gdrcheck.tgz"
	dir := t.TempDir()
	profile := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// check judges configuration only; run's verdict also says how the data
	// paths were established (the GPU memory of a snapshot was checked,
	// never measured; a GPU without a NIC has no GDR path to exercise).
	for _, c := range []struct {
		name    string
		expect  string // profile body; "" none
		verdict string // check's
		proof   string // what run adds after the verdict word
		code    int
		runCode int
	}{
		{"no profile", "", "DEGRADED  host-65cf06c2  2026-12-02T18:30:54Z  degraded by: gdr.kernel-module", " (not exercised)", ExitOK, ExitOK},
		{"profile silent on gdr.required", "gdr: {mode: any}\n", "DEGRADED  host-65cf06c2  2026-12-02T18:30:54Z  degraded by: gdr.kernel-module", " (not exercised)", ExitOK, ExitOK},
		{"gdr required", "gdr: {required: true}\n", "NOT READY  host-65cf06c2  2026-12-02T18:30:54Z  failing: gdr.kernel-module, gdr.nic-affinity", " (not exercised)", ExitFailed, ExitFailed},
		{"gdr not required", "gdr: {required: false}\n", "READY  host-65cf06c2  2026-12-02T18:30:54Z", " (checked, not measured)", ExitOK, ExitOK},
	} {
		args := []string{"--root", snap}
		if c.expect != "" {
			args = append(args, "--expect", profile(strings.ReplaceAll(c.name, " ", "-")+".yaml", c.expect))
		}
		out, errs, code := run(t, append([]string{"check"}, args...)...)
		if first, _, _ := strings.Cut(out, "\n"); code != c.code || first != c.verdict {
			t.Errorf("check, %s: exit %d, verdict %q, want %d %q\n%s", c.name, code, first, c.code, c.verdict, errs)
		}
		word, rest, _ := strings.Cut(c.verdict, "  ")
		want := word + c.proof + "  " + rest
		out, errs, code = run(t, append([]string{"run", "--out", filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))}, args...)...)
		if code != c.runCode || !strings.Contains(out, "Node verdict (checks and benchmarks): "+want+"\n") {
			t.Errorf("run, %s: exit %d, want %d and %q\n%s%s", c.name, code, c.runCode, want, out, errs)
		}
		// The sign-off: --strict fails unless every required segment was
		// measured, and names those that were not.
		out, errs, code = run(t, append([]string{"run", "--strict", "--out", filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+"-strict")}, args...)...)
		if code != ExitFailed || !strings.Contains(out, "Node verdict (checks and benchmarks): NOT READY"+c.proof) || !strings.Contains(out, "not measured: GPU0 gpu-memory (checked)") {
			t.Errorf("run --strict, %s: exit %d, want 1 naming what was not measured\n%s%s", c.name, code, out, errs)
		}
	}
}
