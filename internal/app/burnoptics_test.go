package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/burn"
	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

// burnOpticsHost is a GPU and a RoCE NIC (enp25s0np0) under one switch:
// the NIC's mlx5 hwmon (ASIC at 61 °C, critical 105 °C) and the real
// `ethtool -m` of a Mellanox QSFP28 SR4 module (30.56 °C; every lane's
// received power well above its low-warning threshold) captured for its
// interface.
func burnOpticsHost(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../facts/counters/testdata/ethtool-m/qsfp28-sff8636-mellanox-mma1b00-c100d.txt")
	if err != nil {
		t.Fatal(err)
	}
	hw := "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0/hwmon/hwmon2/"
	return `hostname fakelive
numa 0 0-15
module nvidia
hostbridge pci0000:15 numa=0
  0000:15:01.0 rootport aer=yes
    0000:16:00.0 usp aer=yes
      0000:17:00.0 dsp aer=yes
        0000:18:00.0 gpu id=10de:2335 aer=yes
      0000:17:01.0 dsp aer=yes
        0000:19:00.0 eth aer=yes
rdma mlx5_0 0000:19:00.0 rate=100 layer=Ethernet netdev=enp25s0np0
nvml driver=580.95.05 cuda=13.0
nvml-gpu 0000:18:00.0 name="NVIDIA H200" sm_clock=1980 power=650.5 temp=61
command dmesg.txt ""
file ` + hw + `name "mlx5\n"
file ` + hw + `temp1_input "61000\n"
file ` + hw + `temp1_crit "105000\n"
file ` + hw + `temp1_label "asic\n"
command ethtool-m-enp25s0np0.txt <<END
` + string(b) + `END
`
}

// TestBurnReplayOptics runs a burn-in on burnOpticsHost (the NIC's
// temperature and module read through the door at every sample, the
// module from its captured ethtool -m), replays it clean, then plants in
// its samples lane 3's received power falling below the module's
// low-warning threshold at window 2's end, with the module's own Rx power
// low alarm flag for lane 3 raised there, and the module running hot at
// window 3's end, and replays again: each is named with the NIC, port,
// lane and window, both numbers given; the alarm fails.
func TestBurnReplayOptics(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICES", "1")
	spec, err := fakehost.Parse("fakelive", strings.NewReader(burnOpticsHost(t)))
	if err != nil {
		t.Fatal(err)
	}
	live := t.TempDir()
	if err := spec.Materialize(live); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "burn")
	o := BurnOptions{Duration: 3 * 250 * time.Millisecond, Window: 250 * time.Millisecond, Settle: 10 * time.Millisecond, Out: out,
		Bytes: 1 << 20, GPU: GPUOptions{CUDART: fakelib.CUDART(t)}, Judge: fakeRates, SensorEvery: 30 * time.Millisecond}
	s := &Session{Clock: time.Now}
	env, _, err := s.Burn(t.Context(), NodeOptions{Root: "/", Timeout: time.Minute, LiveRoot: live}, o)
	if env == nil {
		t.Fatalf("no burn-in: %v", err)
	}
	optics := func(rs []result.Result) map[string]result.Result {
		got := map[string]result.Result{}
		for _, r := range rs {
			if r.ID == burn.IDOptics {
				got[r.Subject] = r
			}
		}
		return got
	}
	const mod, asic = "mlx5_0/1 (enp25s0np0)", "mlx5_0 hwmon2/temp1 (asic)"
	check := func(name string, got map[string]result.Result, want map[string][]string, status map[string]result.Status) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %d burn.optics results, want %d: %v", name, len(got), len(want), got)
		}
		for subj, has := range want {
			r, ok := got[subj]
			if !ok {
				t.Errorf("%s: no burn.optics %s in %v", name, subj, got)
				continue
			}
			if r.Status != status[subj] {
				t.Errorf("%s: %s is %s (%s: %s), want %s", name, subj, r.Status, r.Reason, r.Message, status[subj])
			}
			for _, h := range has {
				if !strings.Contains(r.Message, h) {
					t.Errorf("%s: %s: %q lacks %q", name, subj, r.Message, h)
				}
			}
		}
	}
	// The live run and its replay: clean, both pass.
	clean := map[string][]string{mod: {"at 3 window end(s)", "highest 30.56 °C", "Mellanox MMA1B00-C100D"}, asic: {"highest 61.0 °C", "critical threshold 105.0 °C"}}
	pass := map[string]result.Status{mod: result.Pass, asic: result.Pass}
	check("live", optics(env.Results), clean, pass)
	replay, _ := s.BurnReplay(t.Context(), NodeOptions{Root: live, Timeout: time.Minute}, out, BurnOptions{Judge: fakeRates})
	if replay == nil {
		t.Fatal("no replay")
	}
	check("clean replay", optics(replay.Results), clean, pass)

	// Plant: lane 3 at 0.08 mW (-10.97 dBm: under the -10.30 dBm warning,
	// above the -13.31 dBm alarm) at window 2's end, with the module's own
	// Rx power low alarm and warning flags for lane 3 On there (latched: the
	// power fell below the alarm threshold during the window, and was back
	// above it when read); the module at 72 °C (its warning threshold is
	// 70 °C) at window 3's end.
	flag := func(d *cf.DDM, name string, lane int) {
		for i, f := range d.Flags {
			if f.Name == name && f.Lane == lane {
				d.Flags[i].On = true
				return
			}
		}
		t.Fatalf("no flag %s lane %d in %+v", name, lane, d.Flags)
	}
	for label, plant := range map[string]func(d *cf.DDM){
		"window-2": func(d *cf.DDM) {
			*d.Lanes[2].RxMW = 0.08
			flag(d, "Laser rx power low alarm", 3)
			flag(d, "Laser rx power low warning", 3)
		},
		"window-3": func(d *cf.DDM) { *d.TempC = 72 },
	} {
		p := filepath.Join(out, "samples", label+".json")
		var sm cf.Sample
		b, err := os.ReadFile(p)
		if err != nil || json.Unmarshal(b, &sm) != nil || len(sm.NICs) != 1 || sm.NICs[0].Modules[0].DDM == nil {
			t.Fatalf("%s: %v %+v", p, err, sm.NICs)
		}
		plant(sm.NICs[0].Modules[0].DDM)
		if b, err = json.Marshal(sm); err != nil || os.WriteFile(p, b, 0o644) != nil {
			t.Fatal(err)
		}
	}
	replay, _ = s.BurnReplay(t.Context(), NodeOptions{Root: live, Timeout: time.Minute}, out, BurnOptions{Judge: fakeRates})
	if replay == nil {
		t.Fatal("no replay")
	}
	check("planted replay", optics(replay.Results), map[string][]string{
		mod: {
			"lane 3: Laser rx power low alarm raised during the window", "lane 3: Laser rx power low warning raised during the window",
			"window 2 (", "lane 3: Rx power -10.97 dBm (0.0800 mW), below the module's low-warning threshold -10.30 dBm (0.0933 mW)",
			"lane 3: Rx power fell 11.5 dB, from 0.55 dBm (1.1340 mW) before the workload",
			"window 3 (", "module at 72.00 °C, at or above its high-warning threshold 70.00 °C",
		},
		asic: {"highest 61.0 °C"},
	}, map[string]result.Status{mod: result.Fail, asic: result.Pass})
	r := optics(replay.Results)[mod]
	if strings.Contains(r.Message, "window 1 (") {
		t.Errorf("window 1 named: %s", r.Message)
	}
	// The alarm is the module's own, named with its window: the verdict's
	// reason and first words.
	if r.Reason != "ModuleAlarm" || !strings.HasPrefix(r.Message, "window 2 (") || !strings.Contains(r.Message, "): lane 3: Laser rx power low alarm raised during the window") {
		t.Errorf("alarm not named first with its window: %s: %s", r.Reason, r.Message)
	}
	for _, x := range replay.Results {
		if x.ID == burn.IDBefore && x.Subject == mod {
			t.Errorf("flags before the workload reported, none was On: %s", x.Message)
		}
	}
}
