package counters

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// clock ticks one second per call from a fixed start.
func clock() func() time.Time {
	t := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func host(t testing.TB, root machine.Root) *topology.Host {
	t.Helper()
	h, err := discover.Discover(context.Background(), discover.WithRoot(root), discover.WithoutGPUFacts(), discover.WithoutNames())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func sample(t *testing.T, root machine.Root) *cf.Sample {
	t.Helper()
	return Read(root, host(t, root), "baseline", clock())
}

func TestReadFixture(t *testing.T) {
	s := sample(t, fakehost.Root(t, "testdata/two-gpu-gdr.host"))
	type want struct {
		name string
		v    uint64
		why  string // "" when a value is wanted
	}
	ports := map[string][]want{
		"mlx5_0/1": {
			{"counters/symbol_error", 7, ""},
			{"counters/link_downed", 1, ""},
			{"counters/port_rcv_data", 123456, ""},
			{"counters/port_xmit_data", 654321, ""},
			{"counters/link_error_recovery", 0, ""},
			{"counters/port_xmit_discards", 0, "N/A: the port's performance management agent did not answer"},
			{"counters/excessive_buffer_overrun_errors", 0, cf.NotExposed},
			{"hw_counters/out_of_sequence", 0, cf.NotExposed},
		},
		"mlx5_1/1": {
			{"hw_counters/out_of_sequence", 3, ""},
			{"hw_counters/np_cnp_sent", 100, ""},
			{"hw_counters/rnr_nak_retry_err", 0, ""},
			{"counters/symbol_error", 0, ""},
		},
	}
	if len(s.Ports) != 2 {
		t.Fatalf("%d ports, want 2", len(s.Ports))
	}
	for _, p := range s.Ports {
		for _, w := range ports[p.Key()] {
			v, why, ok := p.Get(w.name)
			if w.why == "" && (!ok || v != w.v) {
				t.Errorf("%s %s = %d (%q), want %d", p.Key(), w.name, v, why, w.v)
			}
			if w.why != "" && (ok || !strings.Contains(why, w.why)) {
				t.Errorf("%s %s: value %v why %q, want missing with %q", p.Key(), w.name, ok, why, w.why)
			}
		}
		if p.Dir != PortDir(p.Device, p.Port) {
			t.Errorf("%s dir %s", p.Key(), p.Dir)
		}
		if !p.ReadAt.Before(p.ReadDone) {
			t.Errorf("%s read at %v done %v", p.Key(), p.ReadAt, p.ReadDone)
		}
	}
	// Every GPU, NIC and bridge above them; in PCI order.
	var got []string
	for _, f := range s.Functions {
		got = append(got, f.Address+" "+f.Role)
	}
	wantFns := []string{
		"0000:15:01.0 bridge", "0000:16:00.0 bridge", "0000:17:00.0 bridge", "0000:17:01.0 bridge",
		"0000:18:00.0 gpu", "0000:19:00.0 nic",
		"0000:37:01.0 bridge", "0000:38:00.0 bridge", "0000:39:00.0 bridge", "0000:39:01.0 bridge",
		"0000:3a:00.0 gpu", "0000:3b:00.0 nic",
	}
	if d := cmp.Diff(wantFns, got); d != "" {
		t.Errorf("functions (-want +got):\n%s", d)
	}
	fn := map[string][]want{
		"0000:15:01.0": {{"aer_dev_correctable/RxErr", 2, ""}, {"aer_dev_correctable/TOTAL_ERR_COR", 2, ""}, {"aer_dev_fatal/TOTAL_ERR_FATAL", 0, ""}},
		"0000:17:00.0": {{"aer_dev_correctable/TOTAL_ERR_COR", 2, ""}, {"aer_dev_correctable/Timeout", 1, ""}},
		"0000:18:00.0": {{"aer_dev_nonfatal/CmpltTO", 1, ""}, {"aer_dev_nonfatal/TOTAL_ERR_NONFATAL", 1, ""}, {"aer_dev_nonfatal/PoisonTLPBlocked", 0, ""}},
		"0000:3a:00.0": {{"aer_dev_correctable/TOTAL_ERR_COR", 0, cf.NotExposed}, {"aer_dev_fatal/TOTAL_ERR_FATAL", 0, cf.NotExposed}},
	}
	for _, f := range s.Functions {
		for _, w := range fn[f.Address] {
			v, why, ok := f.Get(w.name)
			if w.why == "" && (!ok || v != w.v) {
				t.Errorf("%s %s = %d (%q), want %d", f.Address, w.name, v, why, w.v)
			}
			if w.why != "" && (ok || why != w.why) {
				t.Errorf("%s %s: value %v why %q, want missing with %q", f.Address, w.name, ok, why, w.why)
			}
		}
	}
}

// TestArchiveReadsTheSame reads the fixture from a snapshot archive (.tar,
// opened as --root opens one) and from memory: the same sample.
func TestArchiveReadsTheSame(t *testing.T) {
	spec, err := fakehost.Load("testdata/two-gpu-gdr.host")
	if err != nil {
		t.Fatal(err)
	}
	mem := sample(t, fakehost.MaterializeRoot(t, spec))
	r, cleanup, err := snapshot.Open(fakehost.MaterializeArchive(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	tar := sample(t, r)
	// Missing reasons name the file as the root shows it; compare the rest.
	for _, s := range []*cf.Sample{mem, tar} {
		for i := range s.Ports {
			for k, v := range s.Ports[i].Missing {
				if v != cf.NotExposed {
					s.Ports[i].Missing[k] = "error"
				}
			}
		}
	}
	if d := cmp.Diff(mem, tar); d != "" {
		t.Errorf("archive differs (-memory +archive):\n%s", d)
	}
}

// TestEveryFixtureHost reads every modelled host: each counter a sample
// looks for is either a value or missing with a reason, never both, never
// silently absent.
func TestEveryFixtureHost(t *testing.T) {
	hosts, err := filepath.Glob("../../../testdata/hosts/*.host")
	if err != nil || len(hosts) == 0 {
		t.Fatalf("no fixture hosts: %v", err)
	}
	for _, p := range hosts {
		t.Run(filepath.Base(p), func(t *testing.T) {
			root := fakehost.Root(t, p)
			h := host(t, root)
			s := Read(root, h, "", clock())
			nports := 0
			for _, n := range h.NICs {
				nports += len(n.Ports)
			}
			if len(s.Ports) != nports || len(s.Functions) != len(Functions(h)) {
				t.Fatalf("%d ports %d functions, want %d and %d", len(s.Ports), len(s.Functions), nports, len(Functions(h)))
			}
			for _, port := range s.Ports {
				for _, c := range cf.PMACounters {
					accounted(t, port.Key(), &port.Reading, cf.GroupPMA+"/"+c)
				}
				for _, c := range cf.HWCounters {
					accounted(t, port.Key(), &port.Reading, cf.GroupHW+"/"+c)
				}
			}
			for _, f := range s.Functions {
				for _, file := range cf.AERFiles {
					accounted(t, f.Address, &f.Reading, file+"/"+cf.AERTotal(file))
				}
			}
		})
	}
}

func accounted(t *testing.T, who string, r *cf.Reading, name string) {
	t.Helper()
	_, why, ok := r.Get(name)
	if !ok && (why == "" || why == "not read") {
		t.Errorf("%s %s: neither read nor missing with a reason", who, name)
	}
	if _, both := r.Missing[name]; ok && both {
		t.Errorf("%s %s: both a value and missing", who, name)
	}
}

// TestUnreadableIsNotZero: a garbled counter or AER file is missing with
// the parse error naming the file and line, never a 0.
func TestUnreadableIsNotZero(t *testing.T) {
	spec, err := fakehost.Load("testdata/two-gpu-gdr.host")
	if err != nil {
		t.Fatal(err)
	}
	bridge := "sys/devices/pci0000:15/0000:15:01.0"
	port := "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0/infiniband/mlx5_0/ports/1"
	spec.Files[bridge+"/aer_dev_fatal"] = "DLP 0\nSDES x\nTOTAL_ERR_FATAL 0\n"
	spec.Files[port+"/counters/link_downed"] = "lots\n"
	s := sample(t, fakehost.MaterializeRoot(t, spec))
	f := s.Function("0000:15:01.0")
	if _, why, ok := f.Get("aer_dev_fatal/TOTAL_ERR_FATAL"); ok || !strings.Contains(why, "aer_dev_fatal:2: \"SDES\": want a decimal count") {
		t.Errorf("garbled AER file: ok %v why %q", ok, why)
	}
	if _, _, ok := f.Get("aer_dev_correctable/TOTAL_ERR_COR"); !ok {
		t.Error("the other AER files of the function should still be read")
	}
	p := s.Port("mlx5_0", 1)
	if _, why, ok := p.Get("counters/link_downed"); ok || !strings.Contains(why, "link_downed:1: want a decimal counter") {
		t.Errorf("garbled counter: ok %v why %q", ok, why)
	}
	if v, _, ok := p.Get("counters/symbol_error"); !ok || v != 7 {
		t.Errorf("symbol_error = %d %v", v, ok)
	}
}
