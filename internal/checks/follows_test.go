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

// TestNoHealthyBesideXid: "GPU3 Healthy" must not sit next to "GPU3 Xid
// 79". A hardware Xid turns the GPU's clean driver facts into a note (Skip)
// that follows from the Xid result; an application Xid leaves them a pass
// of the facts alone, still not called Healthy. The other GPU stays Healthy.
func TestNoHealthyBesideXid(t *testing.T) {
	for _, tc := range []struct {
		dmesg  string
		gpu    string
		status result.Status
	}{
		{"2026-12-01T11:30:00,000000+00:00 NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", "GPU0", result.Skip},
		{"2026-12-01T11:30:00,000000+00:00 NVRM: Xid (PCI:0000:3a:00): 13, pid=4242, name=python, Graphics SM Warp Exception", "GPU1", result.Pass},
	} {
		env := fixture{set: map[string]string{"@dmesg": tc.dmesg}}.env(t)
		rep := checks.Run(context.Background(), env, checks.All(), checks.Options{Only: []string{"gpu.health"}})
		healthy, notes := 0, 0
		for _, r := range rep.Results {
			if r.Reason == "Healthy" {
				healthy++
				if strings.HasPrefix(r.Subject, tc.gpu) {
					t.Errorf("%s called healthy beside its Xid: %+v", tc.gpu, r)
				}
			}
			if r.Reason == "NoFaultInDriverFacts" {
				notes++
				if r.Subject != tc.gpu || r.Status != tc.status || r.FollowsFrom != "gpu.health "+tc.gpu+"-xid" ||
					!strings.Contains(r.Message, "follows from gpu.health "+tc.gpu+"-xid") {
					t.Errorf("note: %+v", r)
				}
			}
		}
		if healthy != 1 || notes != 1 {
			t.Errorf("%s: %d healthy, %d notes; want 1 and 1", tc.gpu, healthy, notes)
		}
	}
}

// TestPairingGDRFollowsRegistration: with peermem missing and the
// proprietary driver (no dma-buf), the pairing no longer says "GDR yes" for
// a NIC that is merely within PXB: it says "path only" and why. With a
// registration path, the column is unchanged.
func TestPairingGDRFollowsRegistration(t *testing.T) {
	const proprietary = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.133.20  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Mar 13 19:01:23 UTC 2025"
	for _, tc := range []struct {
		set     map[string]string
		blocked bool
	}{
		{nil, false},
		{map[string]string{"@peermem": ""}, false}, // the open module: dma-buf
		{map[string]string{"@peermem": "", "@driver": proprietary}, true},
	} {
		env := fixture{set: tc.set}.env(t)
		why := checks.GDRBlocked(env)
		if (why != "") != tc.blocked {
			t.Errorf("%v: blocked %q", tc.set, why)
			continue
		}
		var text, own strings.Builder
		if err := env.Host.Pairing().WithGDRBlocked(why).WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if err := env.Host.Pairing().WriteText(&own); err != nil {
			t.Fatal(err)
		}
		yes := strings.Contains(text.String(), "  yes  ")
		if yes == tc.blocked || strings.Contains(text.String(), "path only") != tc.blocked ||
			tc.blocked && !strings.Contains(text.String(), "GPU Direct RDMA cannot be used on this node: neither nvidia_peermem is loaded nor dma-buf possible (the proprietary") {
			t.Errorf("%v:\n%s", tc.set, text.String())
		}
		if !strings.Contains(own.String(), "  yes  ") || env.Host.Pairing().GDRBlocked != "" {
			t.Errorf("the host's own pairing changed:\n%s", own.String())
		}
	}
}
