package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// TestFlagsRefused holds every flag value that cannot mean anything: each
// exits 2 with a message naming the flag, before anything runs. The bench
// rows run with fake CUDA and NCCL libraries, with which the old code
// measured (and exited 0).
func TestFlagsRefused(t *testing.T) {
	fakeGPUs(t, "2")
	hgx := fakehost.Archive(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	big := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", 2<<20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nccl := []string{"bench", "nccl", "-b", "8", "-e", "64", "--no-judge"}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"step factor 0", append(nccl, "-f", "0"), "-f 0"},
		{"factor 1 without a step", append(nccl, "-f", "1", "-i", "0"), "-f 1 -i 0"},
		{"no timed iterations", append(nccl, "-n", "0"), "-n 0"},
		{"negative timed iterations", append(nccl, "-n", "-5"), "-n -5"},
		{"negative warm-up", append(nccl, "-w", "-5"), "-w -5"},
		{"negative checks", append(nccl, "-c", "-1"), "-c -1"},
		{"negative GPU count", append(nccl, "-g", "-3"), "-g -3"},
		{"a device twice", append(nccl, "--devices", "0,0"), "device 0 is given twice"},
		{"a negative device", append(nccl, "--devices", "-1"), `"-1" is not a device number`},
		{"op timeout 0", append(nccl, "--op-timeout", "0"), "--op-timeout 0s"},
		{"pass ratio negative", append(nccl, "--pass-ratio", "-3"), "--pass-ratio -3"},
		{"pass ratio 0", append(nccl, "--pass-ratio", "0"), "--pass-ratio 0"},
		{"pass ratio above 1", append(nccl, "--pass-ratio", "1.5"), "--pass-ratio 1.5"},
		{"pass ratio NaN", append(nccl, "--pass-ratio", "NaN"), "--pass-ratio NaN"},
		{"copy without iterations", []string{"bench", "copy", "--size", "1K", "-n", "0"}, "-n 0"},
		{"copy negative warm-up", []string{"bench", "copy", "--size", "1K", "-w", "-1"}, "-w -1"},
		{"copy negative GPU count", []string{"bench", "copy", "--size", "1K", "-g", "-1"}, "-g -1"},
		{"unknown bench", []string{"bench", "nosuch"}, `unknown command "nosuch" for "gdrcheck bench"`},
		{"color purple", []string{"topo", "--root", hgx, "--color", "purple"}, `--color "purple"`},
		{"negative Xid window", []string{"check", "--root", hgx, "--xid-window", "-5h"}, "--xid-window -5h0m0s"},
		{"check timeout 0", []string{"check", "--root", hgx, "--check-timeout", "0"}, "--check-timeout 0s"},
		{"profile a device", []string{"check", "--root", hgx, "--expect", "/dev/zero"}, "--expect /dev/zero: not a file"},
		{"profile too large", []string{"check", "--root", hgx, "--expect", big}, "larger than 1048576 bytes"},
		{"run check timeout 0", []string{"run", "--root", hgx, "--check-timeout", "0"}, "--check-timeout 0s"},
		{"model NaN rate", []string{"model", "--gpu", "h100", "--nodes", "2", "--nics-per-node", "8", "--nic-rate", "NaN"}, "--nic-rate NaN"},
		{"model Inf rate", []string{"model", "--gpu", "h100", "--nodes", "2", "--nics-per-node", "8", "--nic-rate", "Inf"}, "--nic-rate +Inf"},
		{"model overflowing ranks", []string{"model", "--gpu", "h100", "--nodes", "9223372036854775807", "--nics-per-node", "8", "--nic-rate", "400"}, "--nodes 9223372036854775807 × 8"},
		{"model overflowing product", []string{"model", "--gpu", "h100", "--nodes", "2147483647", "--gpus-per-node", "2147483647", "--nics-per-node", "8", "--nic-rate", "400"}, "more ranks than the model counts"},
		{"model overflowing host nodes", []string{"model", "--root", hgx, "--nodes", "9223372036854775807"}, "more ranks than the model counts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := run(t, c.args...)
			if code != ExitToolErr || !strings.Contains(errs, c.want) {
				t.Errorf("gdrcheck %s: exit %d, stderr %q; want exit 2 naming %q\n%s", strings.Join(c.args, " "), code, errs, c.want, out)
			}
		})
	}
}

// TestRunBenchRefusedBeforeChecks: run --bench refuses a bad --bench-size
// and a root that is not the live host before the checks run and print.
func TestRunBenchRefusedBeforeChecks(t *testing.T) {
	t.Parallel()
	hgx := fakehost.Archive(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--bench", "--bench-size", "1P"}, "--bench-size"},
		{[]string{"run", "--bench", "--bench-size", "4"}, "--bench-size 4: at least 8 bytes"},
		{[]string{"run", "--bench", "--root", hgx}, "benchmarks run on the live host only (--root is "},
	} {
		out, errs, code := run(t, c.args...)
		if code != ExitToolErr || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("gdrcheck %s: exit %d, stderr %q, stdout %d bytes; want exit 2 naming %q and nothing printed", strings.Join(c.args, " "), code, errs, len(out), c.want)
		}
	}
}
