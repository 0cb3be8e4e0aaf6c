package counters

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

func nics(t *testing.T, root machine.Root) map[string]cf.NIC {
	t.Helper()
	out := map[string]cf.NIC{}
	for _, n := range ReadNICs(context.Background(), root, host(t, root), clock()) {
		out[n.Device] = n
	}
	return out
}

func f(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestReadNICsFixture reads every shape of nic-optics.host: hwmon
// temperatures read, one unreadable, none; a module read through the
// captured ethtool -m, a port without a netdev, a command not captured —
// each a value or missing with its reason, never a 0.
func TestReadNICsFixture(t *testing.T) {
	got := nics(t, fakehost.Root(t, "testdata/nic-optics.host"))
	if len(got) != 3 {
		t.Fatalf("%d NICs, want 3: %v", len(got), got)
	}
	type sensor struct {
		name, label         string
		temp, highest, crit any
		missing             string
	}
	for _, tc := range []struct {
		dev            string
		sensors        []sensor
		sensorsMissing string
		netdev         string
		moduleMissing  string
		moduleTemp     any
	}{
		{dev: "mlx5_0", sensors: []sensor{{"hwmon2/temp1", "asic", 61.0, 64.125, 105.0, ""}, {"hwmon2/temp2", "sensor64", 48.5, 50.0, 75.0, ""}},
			moduleMissing: NoNetdev},
		{dev: "mlx5_1", sensors: []sensor{{"hwmon3/temp1", "asic", 58.25, nil, 105.0, "temp1_highest"}, {"hwmon3/temp2", "sensor64", 40.0, nil, nil, "temp2_crit"}},
			netdev: "enp59s0np0", moduleTemp: 30.56},
		{dev: "mlx5_2", sensorsMissing: NoHwmon, netdev: "enp60s0np0", moduleMissing: "ethtool -m enp60s0np0: not captured in this snapshot"},
	} {
		t.Run(tc.dev, func(t *testing.T) {
			n := got[tc.dev]
			if n.SensorsMissing != tc.sensorsMissing || len(n.Sensors) != len(tc.sensors) {
				t.Fatalf("sensors %+v missing %q", n.Sensors, n.SensorsMissing)
			}
			for i, w := range tc.sensors {
				s := n.Sensors[i]
				if s.Name != w.name || s.Label != w.label || f(s.TempC) != w.temp || f(s.HighestC) != w.highest || f(s.CritC) != w.crit {
					t.Errorf("sensor %d: got %s %q %v %v %v", i, s.Name, s.Label, f(s.TempC), f(s.HighestC), f(s.CritC))
				}
				if w.missing != "" && s.Missing[w.missing] == "" {
					t.Errorf("sensor %d: %s not missing: %v", i, w.missing, s.Missing)
				}
			}
			if len(n.Modules) != 1 {
				t.Fatalf("%d modules", len(n.Modules))
			}
			m := n.Modules[0]
			if m.Port != 1 || m.Netdev != tc.netdev || !strings.Contains(m.Missing, tc.moduleMissing) || (tc.moduleMissing == "") != (m.Missing == "") {
				t.Errorf("module: port %d netdev %q missing %q", m.Port, m.Netdev, m.Missing)
			}
			if tc.moduleTemp != nil && (m.DDM == nil || f(m.DDM.TempC) != tc.moduleTemp || len(m.DDM.Lanes) != 4) {
				t.Errorf("module ddm %+v", m.DDM)
			}
			if tc.moduleMissing != "" && m.DDM != nil {
				t.Errorf("module missing but ddm %+v", m.DDM)
			}
			if !n.ReadAt.Before(n.ReadDone) {
				t.Errorf("read at %v done %v", n.ReadAt, n.ReadDone)
			}
		})
	}
	// The garbled crit names its file.
	if why := got["mlx5_1"].Sensors[1].Missing["temp2_crit"]; !strings.Contains(why, "temp2_crit") || !strings.Contains(why, `"N/A"`) {
		t.Errorf("garbled crit: %q", why)
	}
}

// TestReadNICsArchive: the same readings from a snapshot archive.
func TestReadNICsArchive(t *testing.T) {
	spec, err := fakehost.Load("testdata/nic-optics.host")
	if err != nil {
		t.Fatal(err)
	}
	mem := nics(t, fakehost.MaterializeRoot(t, spec))
	r, cleanup, err := snapshot.Open(fakehost.MaterializeArchive(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	tar := nics(t, r)
	// Reasons name files as each root shows them; compare the rest.
	for _, s := range []map[string]cf.NIC{mem, tar} {
		for k, n := range s {
			for i := range n.Sensors {
				for f, v := range n.Sensors[i].Missing {
					if v != cf.NotExposed {
						n.Sensors[i].Missing[f] = "error"
					}
				}
			}
			for i := range n.Modules {
				if n.Modules[i].Missing != "" {
					n.Modules[i].Missing = "missing"
				}
			}
			s[k] = n
		}
	}
	if d := cmp.Diff(mem, tar); d != "" {
		t.Errorf("archive differs (-memory +archive):\n%s", d)
	}
}

// TestReadNICsGarbledModule: an ethtool -m output that does not parse is
// missing with the parse error naming the file and line, never zeros.
func TestReadNICsGarbledModule(t *testing.T) {
	spec, err := fakehost.Load("testdata/nic-optics.host")
	if err != nil {
		t.Fatal(err)
	}
	spec.Files["commands/ethtool-m-enp59s0np0.txt"] = strings.Replace(spec.Files["commands/ethtool-m-enp59s0np0.txt"], "30.56 degrees C", "hot", 1)
	m := nics(t, fakehost.MaterializeRoot(t, spec))["mlx5_1"].Modules[0]
	if m.DDM != nil || !strings.Contains(m.Missing, "ethtool-m-enp59s0np0.txt:26: Module temperature: want a number in degrees C") {
		t.Errorf("got %+v", m)
	}
}

// TestReadNICsHungModule: live, an ethtool that never answers is killed
// within half the time the sample has left; the module is missing with
// the command's error and the sample's own deadline is not spent.
func TestReadNICsHungModule(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "ethtool"), []byte("#!/bin/sh\nsleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	h := host(t, fakehost.Root(t, "testdata/nic-optics.host"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	got := ReadNICs(ctx, machine.NewRoot("/"), h, nil)
	if took := time.Since(start); took > 2500*time.Millisecond || ctx.Err() != nil {
		t.Fatalf("took %s, sample context %v", took, ctx.Err())
	}
	for _, n := range got {
		for _, m := range n.Modules {
			if m.Netdev != "" && (m.DDM != nil || !strings.Contains(m.Missing, "ethtool -m "+m.Netdev)) {
				t.Errorf("%s: %+v", n.Device, m)
			}
		}
	}
}
