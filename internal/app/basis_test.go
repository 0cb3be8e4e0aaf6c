package app

import (
	"context"
	"slices"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/profile"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// TestBenchBasis: a benchmark on every GPU is held to the profile's GPU
// count and NIC rate; one on some of the GPUs to that many GPUs only. The
// profile reaches the judgement through model.WantOf.
func TestBenchBasis(t *testing.T) {
	h, err := discover.Discover(context.Background(), discover.WithRoot(fakehost.Root(t, "../../testdata/hosts/hgx-h200-8gpu-10nic.host")))
	if err != nil {
		t.Fatal(err)
	}
	want := model.WantOf(&profile.Profile{GPUs: &profile.GPUs{Count: 16}, NICs: &profile.NICs{RateGbps: 800}})
	if want != (model.Want{GPUs: 16, NICRateGbps: 800}) || model.WantOf(nil) != (model.Want{}) {
		t.Fatalf("WantOf: %+v", want)
	}
	all := &GPUs{Host: h, Devices: []int{0, 1, 2, 3, 4, 5, 6, 7}}
	b, err := all.basis(want)
	if err != nil {
		t.Fatal(err)
	}
	if b.Should.GPUsPerNode != 16 || b.Should.NICRateGbps != 800 || !slices.Equal(b.Deviations, []string{"8 GPUs", "NICs at 400 Gb/s"}) {
		t.Errorf("all GPUs: should %+v, deviations %q", b.Should, b.Deviations)
	}
	some := &GPUs{Host: h, Devices: []int{0, 1}}
	if b, err = some.basis(want); err != nil {
		t.Fatal(err)
	}
	if b.Found.GPUsPerNode != 2 || b.Should.GPUsPerNode != 2 || slices.Contains(b.Deviations, "2 GPUs") {
		t.Errorf("two GPUs: should %+v, deviations %q", b.Should, b.Deviations)
	}
	if _, err := (&GPUs{}).basis(want); err == nil {
		t.Error("no host: no error")
	}
}
