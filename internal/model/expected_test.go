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

// slower: one of the predictions for b.Found is below b.Should's.
func slower(t *testing.T, b Basis) bool {
	t.Helper()
	predict := func(s System) []float64 {
		p, err := Expect(s, collective.AllReduce, 16<<30)
		if err != nil {
			t.Fatal(err)
		}
		out := []float64{p.BusBW}
		for _, c := range []CopyTest{CopyP2PNVLink, CopyH2DPinned} {
			x, err := ExpectCopy(s, c)
			if err == nil {
				out = append(out, x.GBps)
			}
		}
		return out
	}
	found, should := predict(b.Found), predict(b.Should)
	if len(found) != len(should) {
		t.Fatalf("predictions %v as found, %v as it should be", found, should)
	}
	for i := range found {
		if found[i] < should[i] {
			return true
		}
	}
	return false
}
