package topology

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
)

func TestNVSwitchesSeen(t *testing.T) {
	toSwitch := []gpu.NVLink{{Link: 0, Active: true, RemoteType: "nvswitch"}}
	cases := []struct {
		name string
		h    Host
		seen bool
		why  string
	}{
		{"switch functions", Host{NVSwitches: []*Device{{Address: "0000:05:00.0"}}}, true, "1 NVSwitch PCI function"},
		{"links to a switch (a VM)", Host{GPUs: []*GPU{{NVLinkKnown: true, NVLinks: toSwitch}, {NVLinkKnown: true}}}, true, "1 GPU(s) with active NVLinks"},
		{"an inactive link is not a switch", Host{GPUs: []*GPU{{NVLinkKnown: true, NVLinks: []gpu.NVLink{{RemoteType: "nvswitch"}}}}}, false, "no NVSwitch PCI function"},
		{"direct links only", Host{GPUs: []*GPU{{NVLinkKnown: true, NVLinks: []gpu.NVLink{{Active: true, RemoteType: "gpu"}}}}}, false, "no GPU NVLink to a switch"},
		{"unknown links are named", Host{GPUs: []*GPU{{}, {}}}, false, "NVLink state of 2 GPU(s) is unknown"},
	}
	for _, c := range cases {
		seen, why := c.h.NVSwitchesSeen()
		if seen != c.seen || !strings.Contains(why, c.why) {
			t.Errorf("%s: %v %q; want %v, %q", c.name, seen, why, c.seen, c.why)
		}
	}
}
