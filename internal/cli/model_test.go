package cli

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

// The golden files of `gdrcheck model` live with the model package.
const modelGoldenDir = "../model/testdata/golden"

var update = flag.Bool("update", false, "rewrite golden files")

func runModelCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return run(t, append([]string{"model"}, args...)...)
}

func TestModelCommandGolden(t *testing.T) {
	t.Parallel()
	h200 := fakehost.Archive(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"cli-h100-8nodes.txt", []string{"--gpu", "h100", "--nodes", "8", "--gpus-per-node", "8", "--nics-per-node", "8", "--nic-rate", "400",
			"--collective", "all_reduce,all_gather,alltoall", "--size", "8,64M,8G"}},
		{"cli-h100-8nodes.json", []string{"--gpu", "h100", "--nodes", "8", "--gpus-per-node", "8", "--nics-per-node", "8", "--nic-rate", "400",
			"--collective", "all_reduce", "--size", "8G", "--format", "json", "--no-copies"}},
		{"cli-h100-1node-nvls-off.txt", []string{"--gpu", "h100", "--nvls=false", "--collective", "all_reduce", "--size", "8G", "--all", "--no-copies"}},
		// Issue 30: a GB200 NVL72 rack, two racks over the network, a GB300
		// rack (no public calibration), and SHARP with and without NVLS.
		{"cli-gb200-nvl72.txt", []string{"--gpu", "gb200", "--gpus-per-node", "72", "--collective", "all_reduce,all_gather", "--size", "1M,8G", "--no-copies"}},
		{"cli-gb200-nvl72-2racks.txt", []string{"--gpu", "gb200", "--gpus-per-node", "72", "--nodes", "2", "--nics-per-node", "72", "--nic-rate", "400",
			"--collective", "all_reduce", "--size", "16G", "--all", "--no-copies"}},
		{"cli-gb300-nvl72.txt", []string{"--gpu", "gb300", "--gpus-per-node", "72", "--collective", "all_reduce", "--size", "8G", "--no-copies"}},
		{"cli-h100-8nodes-sharp.txt", []string{"--gpu", "h100", "--nodes", "8", "--nics-per-node", "8", "--nic-rate", "400", "--sharp",
			"--collective", "all_reduce", "--size", "8G", "--all", "--no-copies"}},
		{"cli-h100-8nodes-sharp-nvls-off.txt", []string{"--gpu", "h100", "--nodes", "8", "--nics-per-node", "8", "--nic-rate", "400", "--sharp", "--nvls=false",
			"--collective", "all_reduce", "--size", "8G", "--all", "--no-copies"}},
		// A host as one tray of a larger NVLink domain (mechanics only: an
		// HGX H200 host stands in for a GB200 tray, of which we have no
		// capture).
		{"cli-host-nvlink-domain.txt", []string{"--root", h200, "--nvlink-domain", "16", "--nodes", "2", "--collective", "all_reduce", "--size", "8G", "--no-copies"}},
		{"cli-b200-2nodes.txt", []string{"--gpu", "b200", "--nodes", "2", "--nics-per-node", "8", "--nic-rate", "400",
			"--collective", "all_reduce", "--size", "8G", "--all", "--no-copies", "--formulas"}},
		{"cli-snapshot-h200x1.txt", []string{"--root", "../../testdata/snapshots/h200x1-vm.tgz", "--collective", "all_reduce,sendrecv", "--size", "8,8G"}},
		{"cli-host-whatif.txt", []string{"--root", h200, "--nodes", "4", "--gdr-off", "--downtrain", "gen4x16", "--sharp",
			"--collective", "all_reduce", "--size", "16G", "--all", "--margin", "0.9", "--warn-margin", "0.75"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runModelCLI(t, tc.args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			// The fixture is materialised under a temporary directory.
			out = strings.ReplaceAll(out, h200, "HOST")
			readertest.Golden(t, filepath.Join(modelGoldenDir, tc.name), []byte(out), *update)
		})
	}
}

// The command and the package agree: the JSON reads back as a report
// with the predictions the package makes for the same system.
func TestModelCommandMatchesPackage(t *testing.T) {
	t.Parallel()
	out, errs, code := runModelCLI(t, "--gpu", "a100", "--nodes", "2", "--nics-per-node", "8", "--nic-rate", "200",
		"--collective", "all_reduce", "--size", "8G", "--format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r model.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	s, err := model.NewSystem(model.Params{GPU: "a100", Nodes: 2, NICsPerNode: 8, NICRateGbps: 200})
	if err != nil {
		t.Fatal(err)
	}
	want, err := model.Expect(s, collective.AllReduce, 8<<30)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Collectives) != 1 || r.Collectives[0] != want {
		t.Errorf("command predicts %+v, package %+v", r.Collectives, want)
	}
	if r.Margin != model.DefaultMargin() || len(r.Copies) == 0 {
		t.Errorf("margin %+v, %d copies", r.Margin, len(r.Copies))
	}
}

func TestModelCommandErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpu", "h900"}, "not in the model's table"},
		{[]string{"--gpu", "h100", "--size", "8P"}, "--size"},
		{[]string{"--gpu", "h100", "--collective", "allreduce2"}, "--collective"},
		{[]string{"--gpu", "h100", "--format", "yaml"}, "--format"},
		{[]string{"--gpu", "h100", "--nodes", "2"}, "need NICs"},
		{[]string{"--gpu", "gb200", "--gpus-per-node", "72", "--nodes", "2"}, "--nics-per-node 72"},
		{[]string{"--gpu", "gb200", "--nvlink-domain", "72"}, "--gpus-per-node 72"},
		{[]string{"--root", "../../testdata/snapshots/h200x1-vm.tgz", "--nvlink-domain", "0"}, "--nvlink-domain 0"},
		{[]string{"--root", "../../testdata/snapshots/h200x1-vm.tgz", "--nvlink-domain", "72"}, "needs NVSwitches"},
		{[]string{"--gpu", "h100", "--nodes", "0"}, "--nodes"},
		{[]string{"--gpu", "a100", "--nvls"}, "NVLS needs"},
		{[]string{"--gpu", "h100", "--downtrain", "gen9x16"}, "--downtrain"},
		{[]string{"--gpu", "h100", "--nics-per-node", "1", "--nic-rate", "400", "--half-rails"}, "half the rails"},
		{[]string{"--gpu", "h100", "--margin", "0.5", "--warn-margin", "0.9"}, "margin"},
		{[]string{"--root", "../../testdata/snapshots/h200x1-vm.tgz", "--nics-per-node", "8"}, "--nics-per-node describes hardware"},
		{[]string{"--root", "../../testdata/snapshots/h200x1-vm.tgz", "--nodes", "2"}, "need NICs"},
		{[]string{"--root", "/nonexistent/gdrcheck-model-root"}, ""},
	} {
		out, errs, code := runModelCLI(t, tc.args...)
		if code != ExitToolErr || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("model %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errs, tc.want)
		}
	}
	// A host without a GPU says so.
	spec, err := fakehost.Parse("nogpu", strings.NewReader("numa 0 0-3\nhostbridge pci0000:00 numa=0\n  0000:00:1f.0 other\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, errs, code := runModelCLI(t, "--root", fakehost.MaterializeArchive(t, spec))
	if code != ExitToolErr || !strings.Contains(errs, "no NVIDIA GPU") {
		t.Errorf("no GPU: exit %d, %q", code, errs)
	}
}
