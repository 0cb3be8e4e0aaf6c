package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// benchHost discovers the HGX H200 fixture after edit changes its text.
func benchHost(t *testing.T, edit func(string) string) *topology.Host {
	t.Helper()
	b, err := os.ReadFile("../../testdata/hosts/hgx-h200-8gpu-10nic.host")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := fakehost.Parse("hgx-h200", strings.NewReader(edit(string(b))))
	if err != nil {
		t.Fatal(err)
	}
	h, err := discover.Discover(context.Background(), discover.WithRoot(fakehost.MaterializeRoot(t, spec)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestBenchJudgedAgainstProfile: bench nccl and bench copy, given a site
// profile, are judged against the hardware it and the catalogue describe,
// not the node as found; the documents name the basis, and a shortfall of
// the node as found (GPU2 trained to x8) is shown beside the expectation,
// not taken as it.
func TestBenchJudgedAgainstProfile(t *testing.T) {
	healthy := func(s string) string { return s }
	x8 := func(s string) string {
		return strings.Replace(s, "0000:4b:00.0 gpu id=10de:2335 curgen=1", "0000:4b:00.0 gpu id=10de:2335 curgen=1 curwidth=8", 1)
	}
	dir := t.TempDir()
	profile := filepath.Join(dir, "site.yaml")
	if err := os.WriteFile(profile, []byte("gpus: {count: 8, model: H200, nvlinks: 18, pcie_gen: 5, pcie_width: 16}\nnics: {count: 8, rate_gbps: 400}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		edit       func(string) string
		profile    string
		source     string
		deviations []string
	}{
		{"healthy, catalogue", healthy, "", "catalogue", nil},
		{"healthy, profile", healthy, profile, "catalogue + site profile " + profile, nil},
		{"x8, catalogue", x8, "", "catalogue", []string{"PCIe Gen5 x8"}},
		{"x8, profile", x8, profile, "catalogue + site profile " + profile, []string{"PCIe Gen5 x8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range (bench.NCCLDebug{}).Names() {
				t.Setenv(k, "")
			}
			t.Setenv("FAKECUDA_DEVICES", "8")
			g, err := openGPUs(t.Context(), GPUOptions{CUDART: fakelib.CUDART(t), Host: benchHost(t, tc.edit)})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			j, err := JudgingWithProfile(Judging{Pass: 0.85}, tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			s := testSession()
			cfg := bench.NCCLConfig{Collectives: []collective.Collective{collective.AllReduce}, MinBytes: 1 << 10, MaxBytes: 64 << 10, StepFactor: 4, Warmup: 1, Iters: 2, OpTimeout: QuickBenchTimeout}
			cfg.DType, _ = bench.DTypeByName("float")
			cfg.Op, _ = bench.RedOpByName("sum")
			var text strings.Builder
			env, _, _ := s.BenchNCCL(t.Context(), g, NCCLOptions{Lib: fakelib.NCCL(t), Out: filepath.Join(t.TempDir(), "nccl"), Config: cfg, Judge: j, Text: &text})
			if env == nil {
				t.Fatal("no document")
			}
			nrep := env.Data.(*bench.NCCLReport)
			check := func(what string, e *bench.Expected) {
				t.Helper()
				if e == nil {
					t.Fatalf("%s: no expectation in the document", what)
				}
				if e.Source != tc.source || e.Hardware != "8×NVIDIA H200 with 18 NVLinks" || e.Should.PCIeWidth != 16 || !slices.Equal(e.Deviations, tc.deviations) {
					t.Errorf("%s: expected %q %q should x%d, deviations %q", what, e.Source, e.Hardware, e.Should.PCIeWidth, e.Deviations)
				}
				if want := map[bool]int{true: 8, false: 16}[tc.deviations != nil]; e.Found.PCIeWidth != want {
					t.Errorf("%s: found x%d, want x%d", what, e.Found.PCIeWidth, want)
				}
			}
			check("bench nccl", nrep.Expected)
			if !strings.Contains(text.String(), "# judged against 8×NVIDIA H200 with 18 NVLinks ("+tc.source+")") {
				t.Errorf("bench nccl text lacks the basis:\n%s", text.String())
			}
			// The JSON names the basis.
			b, err := json.Marshal(env)
			if err != nil || !strings.Contains(string(b), `"basis":"`+tc.source+`"`) {
				t.Errorf("results.json lacks the basis %q: %v", tc.source, err)
			}
			cenv, _, _ := s.BenchCopy(t.Context(), g, CopyOptions{Out: filepath.Join(t.TempDir(), "copy"), Judge: j,
				Config: bench.CopyConfig{Bytes: 2 << 20, Iters: 2, Warmup: 1, Timeout: QuickBenchTimeout, Tests: []string{bench.CopyH2DPinned}}})
			if cenv == nil {
				t.Fatal("no copy document")
			}
			check("bench copy", cenv.Data.(*bench.CopyReport).Expected)
			explained := false
			for _, r := range cenv.Results {
				explained = explained || strings.Contains(r.Message, "this node as found (PCIe Gen5 x8) would reach")
			}
			if explained != (tc.deviations != nil) {
				t.Errorf("copy judgements explain the shortfall: %v, want %v: %+v", explained, tc.deviations != nil, cenv.Results)
			}
		})
	}
}
