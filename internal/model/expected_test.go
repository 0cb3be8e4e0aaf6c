package model

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// h200Variant is the HGX H200 fixture with edit applied to its text.
func h200Variant(t *testing.T, edit func(string) string) *topology.Host {
	t.Helper()
	b, err := os.ReadFile(repoRoot + "/testdata/hosts/hgx-h200-8gpu-10nic.host")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := fakehost.Parse("variant", strings.NewReader(edit(string(b))))
	if err != nil {
		t.Fatal(err)
	}
	h, err := discover.Discover(context.Background(), discover.WithRoot(fakehost.MaterializeRoot(t, spec)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// dropLines removes the lines that contain any of subs.
func dropLines(subs ...string) func(string) string {
	return func(s string) string {
		var out strings.Builder
		for l := range strings.Lines(s) {
			if !slices.ContainsFunc(subs, func(x string) bool { return strings.Contains(l, x) }) {
				out.WriteString(l)
			}
		}
		return out.String()
	}
}

// TestHealthyDegraded: a damaged node is judged against the hardware as it
// should be, and the as-found system (its damage) is kept beside it as the
// explanation. An intact node has no deviations: Should is Found.
func TestHealthyDegraded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		host   func(t *testing.T) *topology.Host
		want   Want
		should func(s System) bool
		devs   []string
		slower bool // the as-found all_reduce prediction is below the expectation
	}{
		{"intact", func(t *testing.T) *topology.Host { return discoverFixture(t, "hgx-h200-8gpu-10nic") }, Want{},
			func(s System) bool { return s.GPUsPerNode == 8 && s.NVLinks == 18 && s.PCIeWidth == 16 }, nil, false},
		{"intact with its profile", func(t *testing.T) *topology.Host { return discoverFixture(t, "hgx-h200-8gpu-10nic") },
			Want{GPUs: 8, NVLinks: 18, PCIeGen: 5, PCIeWidth: 16, NICs: 8, NICRateGbps: 400},
			func(s System) bool { return s.GPUsPerNode == 8 && s.NICsPerNode == 8 }, nil, false},
		{"a100 2 NVLinks down", func(t *testing.T) *topology.Host { return discoverFixture(t, "a100sxm-4gpu-nvlink-degraded") }, Want{},
			func(s System) bool { return s.NVLinks == 12 && s.NVLinkPairLinks == 12 && s.GPUsPerNode == 4 }, []string{"10 NVLinks"}, true},
		{"h200 2 NVLinks down", func(t *testing.T) *topology.Host {
			return h200Variant(t, func(s string) string {
				return strings.Replace(s, `nvml-gpu 0000:3a:00.0 name="NVIDIA H200"`, `nvml-gpu 0000:3a:00.0 nvlink_down=2 name="NVIDIA H200"`, 1)
			})
		}, Want{}, func(s System) bool { return s.NVLinks == 18 && s.NVLinkPairLinks == 18 && s.NVLS }, []string{"16 NVLinks"}, true},
		{"h200 GPU at x8", func(t *testing.T) *topology.Host {
			return h200Variant(t, func(s string) string {
				return strings.Replace(s, "0000:4b:00.0 gpu id=10de:2335 curgen=1", "0000:4b:00.0 gpu id=10de:2335 curgen=1 curwidth=8", 1)
			})
		}, Want{}, func(s System) bool { return s.PCIeGen == 5 && s.PCIeWidth == 16 }, []string{"PCIe Gen5 x8"}, true},
		{"h200 GPU missing, profile of 8", func(t *testing.T) *topology.Host { return h200Variant(t, dropLines("0000:d4:00.0")) },
			Want{GPUs: 8, NICRateGbps: 400}, func(s System) bool { return s.GPUsPerNode == 8 }, []string{"7 GPUs"}, true},
		{"h200 GPU missing, no profile", func(t *testing.T) *topology.Host { return h200Variant(t, dropLines("0000:d4:00.0")) },
			Want{}, func(s System) bool { return s.GPUsPerNode == 7 }, nil, false},
		{"profile's GPU model", func(t *testing.T) *topology.Host { return discoverFixture(t, "hgx-h200-8gpu-10nic") },
			Want{GPUs: 8, Model: "H100"}, func(s System) bool { return s.GPU == "h200-sxm" && s.NVLinks == 18 }, []string{"NVIDIA H200, not the profile's H100"}, false},
		{"profile's GPU model matches", func(t *testing.T) *topology.Host { return discoverFixture(t, "hgx-h200-8gpu-10nic") },
			Want{GPUs: 8, Model: "h200"}, func(s System) bool { return s.GPU == "h200-sxm" }, nil, false},
		{"profile's NIC rate", func(t *testing.T) *topology.Host { return discoverFixture(t, "hgx-h200-8gpu-10nic") },
			Want{NICRateGbps: 800}, func(s System) bool { return s.NICRateGbps == 800 }, []string{"NICs at 400 Gb/s"}, false}, // one node: the NICs carry nothing
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.host(t)
			found, err := FromHost(h)
			if err != nil {
				t.Fatal(err)
			}
			b := Healthy(found, h, tc.want)
			if !tc.should(b.Should) {
				t.Errorf("should: %+v", b.Should)
			}
			if !slices.Equal(b.Deviations, tc.devs) {
				t.Errorf("deviations %q, want %q", b.Deviations, tc.devs)
			}
			if err := b.Should.Validate(); err != nil {
				t.Error(err)
			}
			if tc.devs == nil && b.Explain(1) != "" {
				t.Errorf("explain on an intact node: %q", b.Explain(1))
			}
			if got := slower(t, b); got != tc.slower {
				t.Errorf("as found slower: %v, want %v", got, tc.slower)
			}
		})
	}
}

// TestHealthyNoNVLink: SXM GPUs with no NVLink active (links or fabric
// down) are expected on their NVSwitch baseboard; PCIe GPUs stay on PCIe.
func TestHealthyNoNVLink(t *testing.T) {
	h := discoverFixture(t, "hgx-h200-8gpu-10nic")
	found, err := FromHost(h)
	if err != nil {
		t.Fatal(err)
	}
	found.NVLinkTopology, found.NVLinks, found.NVLinkPairLinks, found.NVLS = NVLinkNone, 0, 0, false
	b := Healthy(found, h, Want{})
	if s := b.Should; s.NVLinkTopology != NVLinkSwitch || s.NVLinks != 18 || s.NVLinkPairLinks != 18 || !s.NVLS || !slices.Equal(b.Deviations, []string{"0 NVLinks"}) {
		t.Errorf("should %+v, deviations %q", s, b.Deviations)
	}
	if !slower(t, b) {
		t.Error("no NVLink is not slower")
	}
	pcie := discoverFixture(t, "epyc-genoa-4gpu-pcie")
	if found, err = FromHost(pcie); err != nil {
		t.Fatal(err)
	}
	if b := Healthy(found, pcie, Want{}); b.Should.NVLinkTopology != NVLinkNone || len(b.Deviations) != 0 {
		t.Errorf("PCIe GPUs: should %+v, deviations %q", b.Should, b.Deviations)
	}
}

// TestNameAndExplain: the message halves a judgement is built from.
func TestNameAndExplain(t *testing.T) {
	h := discoverFixture(t, "a100sxm-4gpu-nvlink-degraded")
	found, err := FromHost(h)
	if err != nil {
		t.Fatal(err)
	}
	b := Healthy(found, h, Want{})
	if got := b.Should.Name(); !strings.HasPrefix(got, "4×") || !strings.HasSuffix(got, "with 12 NVLinks") {
		t.Errorf("name %q", got)
	}
	if got, want := b.Explain(123.45), "this node as found (10 NVLinks) would reach 123.5 GB/s"; got != want {
		t.Errorf("explain %q, want %q", got, want)
	}
}

// slower: one of the predictions for b.Found is below b.Should's (a copy
// the found node cannot make, P2P over NVLink without NVLink, counts as 0).
func slower(t *testing.T, b Basis) bool {
	t.Helper()
	busbw := func(s System) float64 {
		p, err := Expect(s, collective.AllReduce, 16<<30)
		if err != nil {
			t.Fatal(err)
		}
		return p.BusBW
	}
	if busbw(b.Found) < busbw(b.Should) {
		return true
	}
	for _, c := range []CopyTest{CopyP2PNVLink, CopyH2DPinned} {
		want, err := ExpectCopy(b.Should, c)
		if err != nil {
			continue
		}
		got, err := ExpectCopy(b.Found, c)
		if err != nil || got.GBps < want.GBps {
			return true
		}
	}
	return false
}
