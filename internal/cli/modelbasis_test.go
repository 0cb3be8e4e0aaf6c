package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// h200Edited is the HGX H200 fixture after edit, as a snapshot archive.
func h200Edited(t *testing.T, edit func(string) string) string {
	t.Helper()
	b, err := os.ReadFile(repo + "/testdata/hosts/hgx-h200-8gpu-10nic.host")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := fakehost.Parse("hgx-h200", strings.NewReader(edit(string(b))))
	if err != nil {
		t.Fatal(err)
	}
	return fakehost.MaterializeArchive(t, spec)
}

// TestModelHostAsItShouldBe: model --root predicts for the hardware as it
// should be (the catalogue, and --expect's profile), not for the host as
// found: a host with 16 of 18 NVLinks on a GPU or a GPU trained to x8 gets
// the healthy node's expectation, and its own prediction beside it as the
// explanation.
func TestModelHostAsItShouldBe(t *testing.T) {
	t.Parallel()
	same := func(s string) string { return s }
	nv16 := func(s string) string {
		return strings.Replace(s, `nvml-gpu 0000:3a:00.0 name="NVIDIA H200" nvswitch=18`, `nvml-gpu 0000:3a:00.0 name="NVIDIA H200" nvswitch=16`, 1)
	}
	x8 := func(s string) string {
		return strings.Replace(s, "0000:4b:00.0 gpu id=10de:2335 curgen=1", "0000:4b:00.0 gpu id=10de:2335 curgen=1 curwidth=8", 1)
	}
	gpu7gone := func(s string) string {
		s = strings.Replace(s, "        0000:d4:00.0 gpu id=10de:2335 curgen=1\n", "", 1)
		return strings.Replace(s, "nvml-gpu 0000:d4:00.0 name=\"NVIDIA H200\" nvswitch=18 mem=143771 curgen=1\n", "", 1)
	}
	profile := filepath.Join(t.TempDir(), "site.yaml")
	if err := os.WriteFile(profile, []byte("gpus: {count: 8, model: H200, nvlinks: 18, pcie_gen: 5, pcie_width: 16}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h100 := filepath.Join(t.TempDir(), "h100.yaml")
	if err := os.WriteFile(h100, []byte("gpus: {count: 8, model: H100}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--collective", "all_reduce", "--size", "8G"}
	healthy, errs, code := runModelCLI(t, append([]string{"--root", h200Edited(t, same), "--format", "json"}, args...)...)
	if code != ExitOK {
		t.Fatalf("healthy: exit %d: %s", code, errs)
	}
	var want model.Report
	if err := json.Unmarshal([]byte(healthy), &want); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		edit       func(string) string
		expect     string
		basis      string
		deviations []string
	}{
		{"healthy", same, "", "catalogue", nil},
		{"16 NVLinks", nv16, "", "catalogue", []string{"16 NVLinks"}},
		{"x8", x8, "", "catalogue", []string{"PCIe Gen5 x8"}},
		{"x8 with a profile", x8, profile, "catalogue + site profile " + profile, []string{"PCIe Gen5 x8"}},
		// The GPU count comes from the profile: without one, a node that
		// lost a GPU cannot be told from a 7-GPU node.
		// A profile's gpus.model names no one catalogue entry: the GPU
		// found is modelled, and the wrong SKU named.
		{"the profile's model is not the GPU found", same, h100, "catalogue + site profile " + h100, []string{"NVIDIA H200, not the profile's H100"}},
		{"GPU7 gone, with a profile of 8", gpu7gone, profile, "catalogue + site profile " + profile, []string{"7 GPUs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := append([]string{"--root", h200Edited(t, tc.edit)}, args...)
			if tc.expect != "" {
				a = append(a, "--expect", tc.expect)
			}
			out, errs, code := runModelCLI(t, append(a, "--format", "json")...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var r model.Report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if r.Basis != tc.basis || !slices.Equal(r.Deviations, tc.deviations) {
				t.Errorf("basis %q, deviations %q", r.Basis, r.Deviations)
			}
			// The expectation is the healthy node's.
			if r.System.NVLinks != 18 || r.System.PCIeWidth != 16 || len(r.Collectives) != 1 || r.Collectives[0].BusBW != want.Collectives[0].BusBW {
				t.Errorf("expectation: %d NVLinks, x%d, %+v; healthy %+v", r.System.NVLinks, r.System.PCIeWidth, r.Collectives, want.Collectives)
			}
			if (r.AsFound != nil) != (tc.deviations != nil) {
				t.Fatalf("as found: %+v", r.AsFound)
			}
			text, _, _ := runModelCLI(t, a...)
			if !strings.Contains(text, "Judged against the hardware as it should be: 8×NVIDIA H200 with 18 NVLinks ("+tc.basis+")") {
				t.Errorf("text lacks the basis:\n%s", text)
			}
			if tc.deviations == nil {
				if strings.Contains(text, "AS FOUND") || strings.Contains(text, "falls short") {
					t.Errorf("a healthy host has an as-found column:\n%s", text)
				}
				return
			}
			if !strings.Contains(text, "This node as found falls short: "+strings.Join(tc.deviations, ", ")) || !strings.Contains(text, "AS FOUND BUSBW") {
				t.Errorf("text lacks the as-found explanation:\n%s", text)
			}
			f := r.AsFound
			if tc.name == "16 NVLinks" && (f.System.NVLinks != 16 || f.Collectives[0].BusBW >= r.Collectives[0].BusBW) {
				t.Errorf("as found: %d NVLinks, busbw %.1f vs %.1f", f.System.NVLinks, f.Collectives[0].BusBW, r.Collectives[0].BusBW)
			}
			if tc.name == "GPU7 gone, with a profile of 8" && (r.System.GPUsPerNode != 8 || f.System.GPUsPerNode != 7) {
				t.Errorf("GPUs: expected %d, as found %d", r.System.GPUsPerNode, f.System.GPUsPerNode)
			}
			if strings.HasPrefix(tc.name, "x8") {
				var should, found float64
				for _, c := range r.Copies {
					if c.Test == model.CopyH2DPinned {
						should = c.GBps
					}
				}
				for _, c := range f.Copies {
					if c.Test == model.CopyH2DPinned {
						found = c.GBps
					}
				}
				if f.System.PCIeWidth != 8 || !(found < should) {
					t.Errorf("as found x%d: h2d %.1f GB/s vs expected %.1f", f.System.PCIeWidth, found, should)
				}
			}
		})
	}
	// A profile that cannot be read is refused, naming it.
	_, errs, code = runModelCLI(t, "--root", h200Edited(t, same), "--expect", "/nonexistent/site.yaml")
	if code != ExitToolErr || !strings.Contains(errs, "--expect") || !strings.Contains(errs, "/nonexistent/site.yaml") {
		t.Errorf("unreadable --expect: exit %d: %s", code, errs)
	}
	// --expect describes a host's hardware: with --gpu it is refused.
	_, errs, code = runModelCLI(t, "--gpu", "h100", "--expect", profile)
	if code != ExitToolErr || !strings.Contains(errs, "with --gpu the flags describe it") {
		t.Errorf("--gpu --expect: exit %d: %s", code, errs)
	}
}
