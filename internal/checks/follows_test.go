package checks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// TestStrayGDRLevelIsOneFinding is the review's hgx-h200-broken variant in
// small: a job's NCCL_NET_GDR_LEVEL=LOC on a node whose NICs sit under the
// GPUs' switches and whose GPU0 port redirects P2P (ACS). The variable is
// one failure (nccl.env); each GPU–NIC pair is a note that follows from it,
// with no hardware remedy; the ACS fault is still found.
func TestStrayGDRLevelIsOneFinding(t *testing.T) {
	env := fixture{set: map[string]string{"@environ": "NCCL_NET_GDR_LEVEL=LOC", "@dsp0": "acs=0x1d"}}.env(t)
	rep := checks.Run(context.Background(), env, checks.All(), checks.Options{Only: []string{"nccl.env", "gdr.nic-affinity", "pcie.acs"}})
	var fails []string
	pairs := 0
	for _, r := range rep.Results {
		if r.Status == result.Fail {
			fails = append(fails, r.ID+" "+r.Reason)
		}
		if r.ID == "gdr.nic-affinity" {
			pairs++
			if r.Status != result.Skip || r.Reason != "NarrowedByGDRLevel" || r.FollowsFrom != "nccl.env NCCL_NET_GDR_LEVEL" || r.Remedy != "" ||
				!strings.Contains(r.Message, "placement is right") || !strings.Contains(r.Message, "follows from nccl.env NCCL_NET_GDR_LEVEL") {
				t.Errorf("pair: %+v", r)
			}
		}
	}
	if want := []string{"nccl.env GDRDisabled", "pcie.acs ACSRedirectsP2P"}; strings.Join(fails, ",") != strings.Join(want, ",") {
		t.Errorf("failures %q, want %q", fails, want)
	}
	if pairs != 2 {
		t.Errorf("%d GPU–NIC pairs, want 2", pairs)
	}
	// The cause is a result of its own, under the name the pairs give.
	for _, r := range rep.Results {
		if r.Reason == "GDRDisabled" && r.Ref() != "nccl.env NCCL_NET_GDR_LEVEL" {
			t.Errorf("cause %q", r.Ref())
		}
	}
}
