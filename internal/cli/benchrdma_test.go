package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// bench rdma --dry-run plans from a snapshot: JSON in the envelope, one
// entry per GPU–NIC pair with the bus id, the NIC, the path level and the
// commands; the text names the same.
func TestBenchRDMADryRun(t *testing.T) {
	root := fakehost.Archive(t, repo+"/testdata/hosts/hgx-h100-8gpu-12nic-roce.host")
	out, errs, code := run(t, "bench", "rdma", "--dry-run", "--root", root, "--format", "json", "-s", "1M", "--qps", "2")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var env struct {
		Schema  string `json:"schema"`
		Results []any  `json:"results"`
		Plan    struct {
			Pairs []struct {
				GPU      int    `json:"gpu"`
				GPUBusID string `json:"gpu_bus_id"`
				NIC      string `json:"nic"`
				Level    string `json:"path_level"`
				Runs     []struct {
					Client struct {
						Args []string `json:"args"`
					} `json:"client"`
				} `json:"runs"`
			} `json:"pairs"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if env.Schema != "gdrcheck.bench-rdma/v1" || env.Results == nil || len(env.Plan.Pairs) != 8 {
		t.Fatalf("schema %q, results %v, %d pairs", env.Schema, env.Results, len(env.Plan.Pairs))
	}
	for i, p := range env.Plan.Pairs {
		args := strings.Join(p.Runs[0].Client.Args, " ")
		if p.GPU != i || p.GPUBusID == "" || p.NIC == "" || p.Level == "" || !strings.Contains(args, "-s 1048576") || !strings.Contains(args, "-q 2") {
			t.Errorf("pair %d: %+v", i, p)
		}
	}
	text, errs, code := run(t, "bench", "rdma", "--dry-run", "--root", root)
	if code != ExitOK || !strings.Contains(text, "GPU0 0000:18:00.0") || !strings.Contains(text, "--use_cuda=0") {
		t.Errorf("text, exit %d: %s\n%s", code, errs, text)
	}
	// Cross-node: this node's side, both roles, the peer's address a
	// placeholder; no launcher needed to plan.
	text, errs, code = run(t, "bench", "rdma", "--dry-run", "--mode", "cross-node", "--rails", "1,3", "--concurrent", "--root", root)
	if code != ExitOK || !strings.Contains(text, "rail 1: GPU1") || !strings.Contains(text, "rail 3: GPU3") || strings.Contains(text, "rail 0:") ||
		!strings.Contains(text, "client (odd rank): ") || !strings.Contains(text, "<server-addr>") || !strings.Contains(text, "--concurrent") {
		t.Errorf("cross-node text, exit %d: %s\n%s", code, errs, text)
	}
}

func TestBenchRDMARefusals(t *testing.T) {
	root := fakehost.Archive(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pairs", "0"}, "--pairs item 1"},
		{[]string{"--test", "ib_foo"}, "--test"},
		{[]string{"--mode", "ring"}, "--mode \"ring\": want loopback or cross-node"},
		{[]string{"--mode", "cross-node", "--rails", "0,x"}, "--rails item 2"},
		{[]string{"--mode", "cross-node", "--rails", "9"}, "--rails 9: this host has rails 0..7"},
		{[]string{"--concurrent"}, "are for --mode cross-node"},
		{[]string{"--rank", "1"}, "--rank is for --mode cross-node"},
		{[]string{"--pair-timeout", "0s"}, "--pair-timeout"},
		{[]string{"-s", "lots"}, "-s lots"},
		{[]string{"--pass-ratio", "2"}, "--pass-ratio"},
		{nil, "live host only"}, // a real run on a snapshot
	} {
		_, errs, code := run(t, append([]string{"bench", "rdma", "--root", root, "--dry-run=" + dry(tc.args)}, tc.args...)...)
		if code != ExitToolErr || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %s", tc.args, code, errs)
		}
	}
	// The H200 machine's snapshot has no RDMA NIC: one line, exit 1 (no GPU
	// Direct RDMA path was measured) in either mode; exit 0 with a profile
	// saying the node is not meant for GDR.
	notRequired := filepath.Join(t.TempDir(), "site.yaml")
	if err := os.WriteFile(notRequired, []byte("gdr: {required: false}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"loopback", "cross-node"} {
		out, errs, code := run(t, "bench", "rdma", "--mode", mode, "--root", repo+"/testdata/snapshots/h200x1-vm.tgz")
		if code != ExitFailed || strings.Count(out, "\n") != 1 || !strings.Contains(out, "no RDMA NIC") || !strings.Contains(errs, "no GPU Direct RDMA path was measured") {
			t.Errorf("no NIC, %s: exit %d %q %s", mode, code, out, errs)
		}
		out, errs, code = run(t, "bench", "rdma", "--mode", mode, "--root", repo+"/testdata/snapshots/h200x1-vm.tgz", "--expect", notRequired)
		if code != ExitOK || strings.Count(out, "\n") != 1 || !strings.Contains(out, "no RDMA NIC") {
			t.Errorf("no NIC, not required, %s: exit %d %q %s", mode, code, out, errs)
		}
	}
}

// dry is --dry-run's value: a real run only for the case that tests it.
func dry(args []string) string {
	if args == nil {
		return "false"
	}
	return "true"
}
