package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/campaign"
	"github.com/gdrcheck/gdrcheck/internal/testutil/ansitest"
)

// simulateRound writes what the latest round's steps would on fab into
// the round's folder, as steps.sh would.
func simulateRound(t *testing.T, dir string, fab *campaign.Fabric) {
	t.Helper()
	c, err := app.LoadCampaign(dir)
	if err != nil {
		t.Fatal(err)
	}
	rd := filepath.Join(dir, campaign.RoundDir(c.Latest().N))
	for name, data := range fab.Run(c.Latest()) {
		path := filepath.Join(rd, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFleetPlanCommand runs a campaign through the command line on a
// simulated fabric: plan, then --next round by round to the findings.
func TestFleetPlanCommand(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		bad    map[string][]int // node → bad rails; nil rails: the node
		code   int
		format string
		want   []string
	}{
		{name: "bad node", args: []string{"--nodes", "gpu[01-16]", "--rails", "mlx5_0,mlx5_3"}, bad: map[string][]int{"gpu10": nil}, code: ExitFailed, want: []string{"Campaign: fault after 2 round(s)", "node gpu10: fails with 2"}},
		{name: "bad link md", args: []string{"--nodes", "gpu[01-16]", "--rails", "mlx5_0,mlx5_3"}, bad: map[string][]int{"gpu03": {1}}, code: ExitFailed, format: "md", want: []string{"# Campaign: fault", "link gpu03 rail mlx5\\_3"}},
		{name: "healthy bisect", args: []string{"--nodes", "gpu[01-16]", "--strategy", "bisect", "--min-busbw", "300"}, code: ExitOK, want: []string{"no fault found"}},
		{name: "json", args: []string{"--nodes", "gpu[01-16]"}, bad: map[string][]int{"gpu05": nil}, code: ExitFailed, format: "json", want: []string{`"schema": "gdrcheck.fleet-plan/v1"`, `"verdict": "fault"`, `"node": "gpu05"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "camp")
			out, errs, code := run(t, append([]string{"fleet", "plan", "--out", dir}, c.args...)...)
			if code != ExitOK || !strings.Contains(out, "Round 1 planned") {
				t.Fatalf("start: exit %d\n%s%s", code, out, errs)
			}
			fab := campaign.NewFabric(1)
			for n, rails := range c.bad {
				if rails == nil {
					fab.BadNodes[n] = true
				} else {
					fab.BadLinks[n] = rails
				}
			}
			for round := 1; ; round++ {
				if round > 12 {
					t.Fatal("no findings after 12 rounds")
				}
				simulateRound(t, dir, fab)
				args := []string{"fleet", "plan", "--next", dir}
				if c.format != "" {
					args = append(args, "--format", c.format)
				}
				out, errs, code = run(t, args...)
				if _, err := os.Stat(filepath.Join(dir, app.FindingsFile)); err == nil {
					break
				}
				if code != ExitOK {
					t.Fatalf("round %d: exit %d\n%s%s", round, code, out, errs)
				}
			}
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s%s", code, c.code, out, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, app.FindingsFile))
			var env struct {
				Schema   string
				Findings *campaign.Findings `json:"-"`
			}
			if err != nil || json.Unmarshal(b, &env) != nil || env.Schema != "gdrcheck.fleet-plan/v1" {
				t.Errorf("findings.json: %v, schema %q", err, env.Schema)
			}
			// Once concluded, --next says the findings again.
			again, _, code2 := run(t, "fleet", "plan", "--next", dir)
			if code2 != c.code || !strings.Contains(again, "Campaign: ") {
				t.Errorf("--next on a finished campaign: exit %d\n%s", code2, again)
			}
		})
	}
}

func TestFleetPlanErrors(t *testing.T) {
	hostfile := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hostfile, []byte("gpu01 slots=8\ngpu02 slots=8\n# spare\ngpu`reboot`\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(t.TempDir(), "camp")
	if _, errs, code := run(t, "fleet", "plan", "--nodes", "gpu[01-16]", "--out", started); code != ExitOK {
		t.Fatal(errs)
	}
	tmp := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{name: "no nodes", args: []string{"--out", tmp}, want: "give the nodes"},
		{name: "no folder", args: []string{"--nodes", "gpu[01-16]"}, want: "give --out DIR"},
		{name: "both", args: []string{"--nodes", "a,b", "--hostfile", hostfile, "--out", tmp}, want: "give one"},
		{name: "bad host", args: []string{"--nodes", "gpu[01-16],gpu_17", "--out", tmp}, want: `host 17: host name "gpu_17"`},
		{name: "bad range", args: []string{"--nodes", "gpu[16-01]", "--out", tmp}, want: `range "16-01"`},
		{name: "hostfile line", args: []string{"--hostfile", hostfile, "--out", tmp}, want: hostfile + ":4: host name"},
		{name: "hostfile absent", args: []string{"--hostfile", hostfile + ".nope", "--out", tmp}, want: "no such file"},
		{name: "bad rail", args: []string{"--nodes", "gpu[01-16]", "--rails", "mlx5_0,$(id)", "--out", tmp}, want: `rail 2: rail "$(id)"`},
		{name: "strategy", args: []string{"--nodes", "gpu[01-16]", "--strategy", "random", "--out", tmp}, want: "want pairs or bisect"},
		{name: "bisect relative", args: []string{"--nodes", "gpu[01-16]", "--strategy", "bisect", "--out", tmp}, want: "give --min-busbw"},
		{name: "exists", args: []string{"--nodes", "gpu[01-16]", "--out", started}, want: "campaign.json exists"},
		{name: "next with nodes", args: []string{"--next", started, "--rails", "mlx5_0"}, want: "--rails: the campaign in"},
		{name: "next nowhere", args: []string{"--next", tmp}, want: "no campaign here"},
		{name: "not run", args: []string{"--next", started}, want: "round 1 has no results yet"},
		{name: "format", args: []string{"--next", started, "--format", "html"}, want: "html"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := run(t, append([]string{"fleet", "plan"}, c.args...)...)
			if code != ExitToolErr || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, want %d and %q on stderr\n%s%s", code, ExitToolErr, c.want, out, errs)
			}
		})
	}
}

// TestFleetPlanHostileResults: a step's stderr and result carry terminal
// escapes; the findings show them escaped.
func TestFleetPlanHostileResults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "camp")
	if _, errs, code := run(t, "fleet", "plan", "--nodes", "gpu[01-16]", "--out", dir); code != ExitOK {
		t.Fatal(errs)
	}
	fab := campaign.NewFabric(2)
	fab.DownNodes["gpu05"] = true
	for _, format := range []string{"text", "md"} {
		var out string
		for round := 1; round < 5; round++ {
			if _, err := os.Stat(filepath.Join(dir, app.FindingsFile)); err != nil {
				simulateRound(t, dir, fab)
				errs, _ := filepath.Glob(filepath.Join(dir, "round-*", "results", "*.err"))
				for _, e := range errs {
					if err := os.WriteFile(e, []byte("srun: error\n"+ansitest.Payload+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			var code int
			out, _, code = run(t, "fleet", "plan", "--next", dir, "--format", format)
			if code == ExitFailed {
				break
			}
		}
		ansitest.Clean(t, format, out)
		shown := `\x1b[2J`
		if format == "md" {
			shown = `\\x1b\[2J`
		}
		ansitest.Shows(t, format, out, shown)
		if !strings.Contains(out, "gpu05") {
			t.Errorf("%s: gpu05 not accused:\n%s", format, out)
		}
	}
}
