package campaign

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/testutil/goldenfile"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name (-update rewrites it).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got, *update)
}

func hosts(n int) []string {
	h := make([]string, n)
	for i := range h {
		h[i] = fmt.Sprintf("gpu%04d", i+1)
	}
	return h
}

func TestParseNodeList(t *testing.T) {
	cases := []struct {
		in, want, err string
	}{
		{in: "gpu[001-003],login1", want: "gpu001 gpu002 gpu003 login1"},
		{in: "a-1.cluster,b[8-9]-ib", want: "a-1.cluster b8-ib b9-ib"},
		{in: "gpu[3-1]", err: `range "3-1"`},
		{in: "gpu[1-2", err: "without ']'"},
		{in: "gpu_1,gpu2", err: "host 1: host name \"gpu_1\": '_' is not"},
		{in: "gpu1,gpu2;reboot", err: "host 2: host name \"gpu2;reboot\""},
		{in: "gpu1,-gpu2", err: "host 2: host name \"-gpu2\": a label starts or ends with '-'"},
		{in: "gpu1,a..b", err: "host 2: host name \"a..b\": a label is empty"},
		{in: "", err: "no host"},
	}
	for _, c := range cases {
		got, err := ParseNodeList(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one containing %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("%q: %v, %v; want %s", c.in, got, err, c.want)
		}
	}
}

func TestParseHostfile(t *testing.T) {
	cases := []struct {
		name, in, want, err string
	}{
		{name: "plain", in: "# the rack\ngpu01 slots=8\n\ngpu02   slots=8 max_slots=8 # spare\ngpu03\n", want: "gpu01 gpu02 gpu03"},
		{name: "crlf", in: "gpu01\r\ngpu02\r\n", want: "gpu01 gpu02"},
		{name: "bad host", in: "gpu01\ngpu$(id)\n", err: "hosts:2: host name \"gpu$(id)\""},
		{name: "bad word", in: "gpu01 8\n", err: "hosts:1: \"8\" after the host name"},
		{name: "empty", in: "# nothing\n", err: "hosts: no host"},
	}
	for _, c := range cases {
		got, err := ParseHostfile("hosts", []byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("%s: %v, %v; want %s", c.name, got, err, c.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	rails := []string{"mlx5_0", "mlx5_1:1"}
	cases := []struct {
		name string
		mod  func(*Config)
		err  string
	}{
		{name: "ok", mod: func(c *Config) {}},
		{name: "one node", mod: func(c *Config) { c.Nodes = c.Nodes[:1] }, err: "at least 2"},
		{name: "duplicate", mod: func(c *Config) { c.Nodes[5] = c.Nodes[2] }, err: "node 6: \"gpu0003\" is node 3 already"},
		{name: "bad rail", mod: func(c *Config) { c.Rails = []string{"mlx5_0", "mlx5 1"} }, err: "rail 2: rail \"mlx5 1\""},
		{name: "bad port", mod: func(c *Config) { c.Rails = []string{"mlx5_0:0"} }, err: "port \"0\""},
		{name: "rails ok", mod: func(c *Config) { c.Rails = rails }},
		{name: "strategy", mod: func(c *Config) { c.Strategy = "random" }, err: "want pairs or bisect"},
		{name: "confirm 1", mod: func(c *Config) { c.Confirm = 1 }, err: "never by one"},
		{name: "bisect relative", mod: func(c *Config) { c.Strategy = Bisect }, err: "give --min-busbw"},
		{name: "bisect rails relative", mod: func(c *Config) { c.Strategy, c.MinBusBW, c.Rails = Bisect, 300, rails }, err: "give --min-rail-busbw"},
		{name: "bisect absolute", mod: func(c *Config) { c.Strategy, c.MinBusBW, c.MinRailBusBW, c.Rails = Bisect, 300, 40, rails }},
		{name: "few pairs", mod: func(c *Config) { c.Nodes = c.Nodes[:8] }, err: "8 nodes make 4 pairs"},
		{name: "few pairs absolute", mod: func(c *Config) { c.Nodes, c.MinBusBW = c.Nodes[:2], 300 }},
		{name: "size", mod: func(c *Config) { c.Bench.Size = "1Q" }, err: "bench size"},
	}
	for _, c := range cases {
		cfg := DefaultConfig(hosts(16))
		c.mod(&cfg)
		err := cfg.Validate()
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
}

// TestRoundFiles: the scripts and hostfiles of a round with rails (golden),
// valid bash.
func TestRoundFiles(t *testing.T) {
	cfg := DefaultConfig([]string{"gpu01", "gpu02", "gpu03", "gpu04", "gpu05"})
	cfg.Rails = []string{"mlx5_0", "mlx5_3:1"}
	cfg.MinBusBW, cfg.MinRailBusBW = 300, 38
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	for _, f := range c.Files(c.Latest()) {
		fmt.Fprintf(&all, "==> %s (%o)\n%s", f.Name, f.Mode, f.Data)
		if strings.HasSuffix(f.Name, ".sh") {
			if _, err := exec.LookPath("bash"); err == nil {
				cmd := exec.Command("bash", "-n")
				cmd.Stdin = bytes.NewReader(f.Data)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("bash -n %s: %v\n%s", f.Name, err, out)
				}
			}
		}
	}
	golden(t, "round-01.txt", all.Bytes())
}

// TestScriptsRun runs a round's steps.sh and mpirun.sh with srun and
// mpirun replaced by a fake that writes what a step would: the results
// land where Record reads them, and a failing step's exit status is kept.
func TestScriptsRun(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	cfg := DefaultConfig([]string{"gpu01", "gpu02", "gpu03", "gpu04"})
	cfg.Rails = []string{"mlx5_0"}
	cfg.MinBusBW, cfg.MinRailBusBW = 300, 38
	for _, launcher := range []string{"srun", "mpirun"} {
		t.Run(launcher, func(t *testing.T) {
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			bin := filepath.Join(dir, "bin")
			round := filepath.Join(dir, RoundDir(1))
			for _, d := range []string{bin, round} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range c.Files(c.Latest()) {
				if err := os.WriteFile(filepath.Join(round, f.Name), f.Data, os.FileMode(f.Mode)); err != nil {
					t.Fatal(err)
				}
			}
			// The fake launcher: the node list (srun) or hostfile's first
			// host (mpirun) decides; gpu03 cannot run, a rail's step
			// measures 46 GB/s, a node-level step 360.
			// Its result names the ranks, 8 a node, on the nodes it ran on.
			fake := `#!/usr/bin/env bash
args="$*"; nodes=
while [ $# -gt 0 ]; do
  case "$1" in
  --hostfile) args="$args $(cat "$2")"; nodes=$(cut -d' ' -f1 "$2" | paste -sd' ');;
  --nodelist=*) nodes=$(echo "${1#--nodelist=}" | tr ',' ' ');;
  esac
  shift
done
case "$args" in *gpu03*) echo "gpu03: no GPU" >&2; exit 1;; esac
bw=360; [ -n "${NCCL_IB_HCA:-}" ] && bw=46
[ "${NCCL_IB_HCA:-}" = "" ] || [ "${NCCL_IB_HCA}" = "=mlx5_0" ] || exit 3
ranks=; r=0
for n in $nodes; do for g in 0 1 2 3 4 5 6 7; do ranks="$ranks${ranks:+,}{\"rank\":$r,\"host\":\"$n\"}"; r=$((r+1)); done; done
printf '{"schema":"gdrcheck.bench-nccl/v1","complete":true,"measurements":[{"collective":"all_reduce","ranks":%d,"rows":[{"size_bytes":1073741824,"out_of_place":{"busbw_gbs":%s},"in_place":{"busbw_gbs":%s}}]}],"job":{"world_size":%d,"ranks":[%s]}}\n' $r $bw $bw $r "$ranks"
`
			if err := os.WriteFile(filepath.Join(bin, launcher), []byte(fake), 0o755); err != nil {
				t.Fatal(err)
			}
			script := "steps.sh"
			if launcher == "mpirun" {
				script = "mpirun.sh"
			}
			cmd := exec.Command("bash", filepath.Join(round, script))
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			if launcher == "mpirun" {
				cmd.Env = append(cmd.Env, "PARALLEL=1") // one chain at a time
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", script, err, out)
			}
			if err := c.Record(os.DirFS(round), false); err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, s := range c.Latest().Steps {
				got += fmt.Sprintf("%s %s %.0f; ", s.ID, s.Outcome.Status, s.Outcome.BusBW)
			}
			// Pairs: gpu01+gpu03, gpu02+gpu04.
			want := "s0001 fail 0; s0001-r0 fail 0; s0002 pass 360; s0002-r0 pass 46; "
			if got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			if why := c.Latest().Steps[0].Outcome.Why; !strings.Contains(why, "exit status 1") || !strings.Contains(why, "gpu03") {
				t.Errorf("a step that could not run: %q", why)
			}
		})
	}
}
