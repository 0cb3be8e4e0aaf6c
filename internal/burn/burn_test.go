package burn

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	cc "github.com/gdrcheck/gdrcheck/internal/collect/counters"
	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/goldenfile"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const (
	gpu0   = "0000:18:00.0"
	gpu1   = "0000:3a:00.0"
	dsp0   = "0000:17:00.0" // the switch port above GPU0
	port0  = "mlx5_0/1"
	window = 5 * time.Minute
	gap    = 10 * time.Second // between windows, for the sample
)

var t0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

// node is the fixture host and its counters as the collector reads them.
func node(t *testing.T) (*topology.Host, *cf.Sample) {
	t.Helper()
	root := fakehost.Root(t, "testdata/gdr-node.host")
	h, err := discover.Discover(context.Background(), discover.WithRoot(root), discover.WithoutGPUFacts(), discover.WithoutNames())
	if err != nil {
		t.Fatal(err)
	}
	return h, cc.Read(root, h, "baseline", func() time.Time { return t0 })
}

// at is a deep copy of s with every reading taken at t.
func at(s *cf.Sample, t time.Time, label string) *cf.Sample {
	c := &cf.Sample{Label: label}
	for _, p := range s.Ports {
		p.Values, p.Missing = maps.Clone(p.Values), maps.Clone(p.Missing)
		p.ReadAt, p.ReadDone = t, t.Add(time.Millisecond)
		c.Ports = append(c.Ports, p)
	}
	for _, f := range s.Functions {
		f.Values, f.Missing = maps.Clone(f.Values), maps.Clone(f.Missing)
		f.ReadAt, f.ReadDone = t, t.Add(time.Millisecond)
		c.Functions = append(c.Functions, f)
	}
	return c
}

// add moves a counter of a port ("mlx5_0/1") or a function (PCI address) up
// by d; set gives it a value.
func add(t *testing.T, s *cf.Sample, dev, counter string, d uint64) {
	t.Helper()
	r := reading(t, s, dev)
	v, _, ok := r.Get(counter)
	if !ok {
		t.Fatalf("%s %s not read in the fixture", dev, counter)
	}
	r.Set(counter, v+d)
}

func set(t *testing.T, s *cf.Sample, dev, counter string, v uint64) {
	t.Helper()
	reading(t, s, dev).Set(counter, v)
}

func reading(t *testing.T, s *cf.Sample, dev string) *cf.Reading {
	t.Helper()
	if name, port, ok := strings.Cut(dev, "/"); ok {
		for i := range s.Ports {
			if s.Ports[i].Device == name && fmt.Sprint(s.Ports[i].Port) == port {
				return &s.Ports[i].Reading
			}
		}
	}
	if f := s.Function(dev); f != nil {
		return &f.Reading
	}
	t.Fatalf("no %s in the sample", dev)
	return nil
}

// series is a three-window burn-in over the fixture: the schedule, one
// baseline and the end samples, which a case then plants faults in.
type series struct {
	opts     Options
	h        *topology.Host
	sched    Schedule
	baseline []*cf.Sample
	ends     []*cf.Sample
}

const tb = uint64(1e12)

func clean(t *testing.T) *series {
	h, base := node(t)
	s := &series{h: h}
	s.baseline = []*cf.Sample{at(base, t0, "baseline")}
	prev := s.baseline[0]
	for i := range 3 {
		start := t0.Add(gap + time.Duration(i)*(window+gap))
		s.sched.Windows = append(s.sched.Windows, Window{Start: start, End: start.Add(window), Traffic: []Traffic{
			{Link: PortLink("mlx5_0", 1), Bytes: 5 * tb},
			{Link: GPUNICLink(gpu0, "mlx5_0"), Bytes: 5 * tb},
			{Link: GPUHostLink(gpu1), Bytes: 1 * tb},
			{Link: NVLinkLink(gpu0, 0), Bytes: 2 * tb},
		}})
		end := at(prev, start.Add(window+time.Second), fmt.Sprintf("end %d", i+1))
		add(t, end, port0, "counters/port_rcv_data", 5*tb/4)
		add(t, end, port0, "counters/port_xmit_data", 5*tb/4)
		s.ends = append(s.ends, end)
		prev = end
	}
	return s
}

func (s *series) judge(t *testing.T) (*Series, []result.Result) {
	t.Helper()
	ser, err := Attribute(s.h, s.sched, s.baseline, s.ends)
	if err != nil {
		t.Fatal(err)
	}
	return ser, Judge(ser, s.opts)
}

// later applies f to end samples from, from+1, ... (a counter that moved
// in window from stays moved afterwards).
func (s *series) later(from int, f func(*cf.Sample)) {
	for _, e := range s.ends[from:] {
		f(e)
	}
}

type want struct {
	id, subject string
	status      result.Status
	reason      string
	msg         []string // substrings of the message
}

func TestJudgePlanted(t *testing.T) {
	cases := []struct {
		name  string
		plant func(t *testing.T, s *series)
		want  []want
		// clean: nothing may fail or warn
		clean bool
	}{
		{
			name:  "clean series",
			plant: func(*testing.T, *series) {},
			clean: true,
			want: []want{
				{IDFatal, port0, result.Pass, "NoFatalErrors", []string{"3 window(s)"}},
				{IDFatal, gpu0, result.Pass, "NoFatalErrors", nil},
				{IDErrorRate, port0, result.Pass, "ErrorRateWithinSpec", []string{"symbol_error over 3 window(s): 0 in 1.2e+14 bits", "InfiniBand allows 1e-12"}},
				{IDErrorRate, dsp0, result.Pass, "ErrorRateWithinSpec", []string{"TOTAL_ERR_COR", "0 in 1.2e+14 bits"}},
				{IDFatal, gpu1, result.Unknown, "CounterNotRead", []string{"(GPU1) carried traffic in windows 1, 2, 3 but its fatal-error counters could not be read (aer_dev_fatal/TOTAL_ERR_FATAL: at the start: not exposed; at the end: not exposed; aer_dev_nonfatal"}},
				{IDErrorRate, gpu1, result.Unknown, "CounterNotRead", []string{"TOTAL_ERR_COR could not be read in windows 1, 2, 3 (at the start: not exposed; at the end: not exposed)"}},
				{IDUnmeasured, "nvlink:0000:18:00.0#0", result.Unknown, "NotMeasured", []string{"6 TB in window(s) 1, 2, 3", "its NVLink counters were not read at both ends"}},
				{IDBefore, port0, result.Skip, "CountedBeforeBurn", []string{"link_downed=1", "symbol_error=7"}},
			},
		},
		{
			name: "link_downed on one port in window 2",
			plant: func(t *testing.T, s *series) {
				s.later(1, func(e *cf.Sample) { add(t, e, port0, "counters/link_downed", 1) })
			},
			want: []want{{IDFatal, port0, result.Fail, "LinkDowned", []string{"window 2 (12:05:20–12:10:20)", "mlx5_0 port 1", "link_downed +1 (1 → 2)", "rdma:mlx5_0/1 (5 TB)"}}},
		},
		{
			name: "symbol errors on one port in window 3",
			plant: func(t *testing.T, s *series) {
				add(t, s.ends[2], port0, "counters/symbol_error", 5000)
			},
			want: []want{
				{IDErrorRate, port0, result.Fail, "ErrorRateAboveSpec", []string{"window 3", "symbol_error 5000 in 4e+13 bits", "bits from counters/port_rcv_data"}},
				{IDErrorRate, port0, result.Fail, "ErrorRateAboveSpec", []string{"over 3 window(s): 5000 in 1.2e+14 bits"}},
			},
		},
		{
			name: "AER correctable errors on a bridge of GPU0's path in window 1",
			plant: func(t *testing.T, s *series) {
				s.later(0, func(e *cf.Sample) {
					add(t, e, dsp0, "aer_dev_correctable/BadTLP", 900)
					add(t, e, dsp0, "aer_dev_correctable/TOTAL_ERR_COR", 900)
				})
			},
			want: []want{
				{IDErrorRate, dsp0, result.Fail, "ErrorRateAboveSpec", []string{"window 1", "0000:17:00.0 (bridge)", "gpu-nic:0000:18:00.0>mlx5_0 (5 TB)", "PCIe allows 1e-12"}},
			},
		},
		{
			name: "uncorrectable AER on GPU0 in window 2",
			plant: func(t *testing.T, s *series) {
				s.later(1, func(e *cf.Sample) {
					add(t, e, gpu0, "aer_dev_nonfatal/CmpltTO", 1)
					add(t, e, gpu0, "aer_dev_nonfatal/TOTAL_ERR_NONFATAL", 1)
				})
			},
			want: []want{{IDFatal, gpu0, result.Fail, "NonFatalAER", []string{"window 2", "(GPU0)", "aer_dev_nonfatal/CmpltTO +1 (0 → 1), while", "gpu-nic:0000:18:00.0>mlx5_0"}}},
		},
		{
			name: "a GPU whose counters vanish in window 2 (fell off the bus)",
			plant: func(t *testing.T, s *series) {
				s.later(1, func(e *cf.Sample) {
					f := e.Function(gpu0)
					for _, file := range cf.AERFiles {
						for k := range f.Values {
							if strings.HasPrefix(k, file+"/") {
								delete(f.Values, k)
							}
						}
						f.Miss(file, cf.NotExposed)
					}
				})
			},
			want: []want{{IDFatal, gpu0, result.Fail, "CountersGone", []string{"window 2", "(GPU0)", ": aer_dev_correctable, aer_dev_fatal, aer_dev_nonfatal read at the window's start and gone at its end (the device fell off the bus"}}},
		},
		{
			name: "a counter reset in window 2 is reported, never a huge delta",
			plant: func(t *testing.T, s *series) {
				s.later(1, func(e *cf.Sample) {
					set(t, e, port0, "counters/symbol_error", 0)
					set(t, e, port0, "counters/link_downed", 0)
				})
			},
			want: []want{
				{IDFatal, port0, result.Unknown, "CounterReset", []string{"window 2", "link_downed at least +0 (went down from 1 to 0"}},
				{IDErrorRate, port0, result.Unknown, "CounterNotExact", []string{"window 2", "symbol_error at least +0 (went down from 7 to 0"}},
			},
		},
		{
			name: "a reset with new events after it fails with what it counted since",
			plant: func(t *testing.T, s *series) {
				// 1 → 5 in window 2, then cleared and 2 more in window 3.
				set(t, s.ends[1], port0, "counters/link_downed", 5)
				set(t, s.ends[2], port0, "counters/link_downed", 2)
			},
			want: []want{
				{IDFatal, port0, result.Fail, "LinkDowned", []string{"window 2", "link_downed +4 (1 → 5)"}},
				{IDFatal, port0, result.Fail, "LinkDowned", []string{"window 3", "link_downed at least +2 (went down from 5 to 2"}},
			},
		},
		{
			name: "a saturated counter cannot count",
			plant: func(t *testing.T, s *series) {
				set(t, s.baseline[0], port0, "counters/excessive_buffer_overrun_errors", 15)
				s.later(0, func(e *cf.Sample) { set(t, e, port0, "counters/excessive_buffer_overrun_errors", 15) })
			},
			want: []want{{IDFatal, port0, result.Unknown, "CounterSaturated", []string{"window 1", "already at its maximum 15"}}},
		},
		{
			name: "link training between two baseline samples never fails",
			plant: func(t *testing.T, s *series) {
				early := at(s.baseline[0], t0.Add(-time.Minute), "boot")
				set(t, early, port0, "counters/symbol_error", 2)
				set(t, early, port0, "counters/link_downed", 0)
				s.baseline = []*cf.Sample{early, s.baseline[0]}
			},
			clean: true,
			want: []want{
				{IDBefore, port0, result.Skip, "CountedBeforeBurn", []string{"symbol_error=2"}},
				{IDBefore, port0, result.Skip, "MovedBeforeBurn", []string{"link_downed +1 (0 → 1)", "symbol_error +5 (2 → 7)", "baseline samples 1 and 2"}},
			},
		},
		{
			name: "too few bits is unknown, never a pass",
			plant: func(t *testing.T, s *series) {
				for i := range s.sched.Windows {
					for j := range s.sched.Windows[i].Traffic {
						s.sched.Windows[i].Traffic[j].Bytes = 1e9
					}
				}
				for i, e := range s.ends {
					set(t, e, port0, "counters/port_rcv_data", 1000+uint64(i+1)*1e9/4)
				}
			},
			clean: true,
			want: []want{
				{IDErrorRate, port0, result.Unknown, "TooFewBits", []string{"0 in 2.4e+10 bits", "needs about 3e+12 bits", "run the burn-in longer"}},
				{IDErrorRate, dsp0, result.Unknown, "TooFewBits", nil},
			},
		},
		{
			name: "traffic the port never received gives it no bits",
			plant: func(t *testing.T, s *series) {
				// The schedule put 5 TB per window on mlx5_0/1, the port
				// received nothing (a loopback inside the NIC).
				s.later(0, func(e *cf.Sample) { set(t, e, port0, "counters/port_rcv_data", 1000) })
			},
			clean: true,
			want:  []want{{IDErrorRate, port0, result.Unknown, "TooFewBits", []string{"0 in 0 bits", "received 0 B while the schedule put 5 TB on it", "in windows 1, 2, 3"}}},
		},
		{
			name: "a few errors over a long run: above the target but not proven",
			plant: func(t *testing.T, s *series) {
				// 43 per window: 1.1e-12 per bit estimated, its lower
				// bound below 1e-12, in each window and over the run.
				for i, e := range s.ends {
					add(t, e, port0, "counters/symbol_error", uint64(43*(i+1)))
				}
			},
			want: []want{
				{IDErrorRate, port0, result.Warn, "ErrorRateMayExceedSpec", []string{"window 2", "43 in 4e+13 bits"}},
				{IDErrorRate, port0, result.Warn, "ErrorRateMayExceedSpec", []string{"over 3 window(s): 129 in 1.2e+14 bits"}},
			},
		},
		{
			name: "errors on a port that carried nothing",
			plant: func(t *testing.T, s *series) {
				s.later(0, func(e *cf.Sample) { add(t, e, "mlx5_1/1", "counters/port_rcv_errors", 3) })
			},
			want: []want{{IDErrorRate, "mlx5_1/1", result.Warn, "ErrorsWithoutTraffic", []string{"window 1", "port_rcv_errors +3"}}},
		},
		{
			name: "a site's stricter threshold turns a clean run into too few bits",
			plant: func(t *testing.T, s *series) {
				s.opts.Thresholds = map[string]Threshold{"InfiniBand": {BER: 1e-15, Source: "site: post-FEC links"}}
			},
			clean: true,
			want: []want{
				{IDErrorRate, port0, result.Unknown, "TooFewBits", []string{"0 in 1.2e+14 bits", "proving InfiniBand's 1e-15 needs about 3e+15 bits"}},
				{IDErrorRate, dsp0, result.Pass, "ErrorRateWithinSpec", []string{"PCIe allows 1e-12"}},
			},
		},
		{
			name: "a burn-in cut short",
			plant: func(t *testing.T, s *series) {
				s.ends = s.ends[:2]
			},
			clean: true,
			want:  []want{{IDUnsampled, "node", result.Unknown, "WindowNotSampled", []string{"window(s) 3"}}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := clean(t)
			c.plant(t, s)
			_, rs := s.judge(t)
			for _, w := range c.want {
				if !found(rs, w) {
					t.Errorf("no %s %s %s %s with %q in:\n%s", w.id, w.subject, w.status, w.reason, w.msg, dump(rs))
				}
			}
			for _, r := range rs {
				if r.Source != Source {
					t.Errorf("%s %s: source %q", r.ID, r.Subject, r.Source)
				}
				if c.clean && (r.Status == result.Fail || r.Status == result.Warn) {
					t.Errorf("clean series: %s %s %s: %s", r.Status, r.ID, r.Subject, r.Message)
				}
				if r.ID == IDBefore && r.Status != result.Skip {
					t.Errorf("before the burn-in judged: %s %s", r.Status, r.Message)
				}
				if (r.Status == result.Fail || r.Status == result.Warn) && r.Remedy == "" {
					t.Errorf("%s %s %s has no remedy", r.Status, r.ID, r.Subject)
				}
			}
		})
	}
}

func found(rs []result.Result, w want) bool {
	for _, r := range rs {
		if r.ID != w.id || r.Subject != w.subject || r.Status != w.status || r.Reason != w.reason {
			continue
		}
		ok := true
		for _, m := range w.msg {
			ok = ok && strings.Contains(r.Message, m)
		}
		if ok {
			return true
		}
	}
	return false
}

func dump(rs []result.Result) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %s %s %s %s: %s\n", r.Status, r.ID, r.Subject, r.Reason, r.Message)
	}
	return b.String()
}

// TestResetIsNeverAHugeDelta: a counter that goes down has no delta bigger
// than what it counted since.
func TestResetIsNeverAHugeDelta(t *testing.T) {
	s := clean(t)
	s.later(1, func(e *cf.Sample) { set(t, e, port0, "counters/symbol_error", 3) })
	ser, _ := s.judge(t)
	d := ser.Windows[1].Devices[0].Delta("counters/symbol_error")
	if ser.Windows[1].Devices[0].Device.Name != port0 || d == nil {
		t.Fatalf("window 2's first device is %s", ser.Windows[1].Devices[0].Device.Name)
	}
	if d.State != Reset || d.Change != 3 || d.From != 7 || d.To != 3 {
		t.Errorf("delta %+v, want a reset 7 → 3 counting at least 3", *d)
	}
}

func TestAttribution(t *testing.T) {
	s := clean(t)
	ser, _ := s.judge(t)
	w := ser.Windows[0]
	got := map[string][]string{}
	for _, dd := range w.Devices {
		for _, tr := range dd.Traffic {
			got[tr.Link.String()] = append(got[tr.Link.String()], dd.Device.Name)
		}
	}
	want := map[string][]string{
		// the port, its NIC's function and the switch port the NIC plugs into
		"rdma:mlx5_0/1": {port0, "0000:17:01.0", "0000:19:00.0"},
		// both ends of both links under the switch; not the switch's
		// upstream port (the hop between its ports is inside the switch)
		"gpu-nic:0000:18:00.0>mlx5_0": {dsp0, "0000:17:01.0", gpu0, "0000:19:00.0"},
		// GPU1 up to its root port: GPU1-dsp, usp-root port
		"gpu-host:0000:3a:00.0": {"0000:37:01.0", "0000:38:00.0", "0000:39:00.0", gpu1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("devices per link (-want +got):\n%s", d)
	}
	for _, dd := range w.Devices {
		switch dd.Device.Name {
		case port0:
			if dd.Bits != 4e13 || !strings.HasPrefix(dd.BitsFrom, "counters/port_rcv_data") {
				t.Errorf("port bits %g from %s, want 4e13 from port_rcv_data (4-byte words)", dd.Bits, dd.BitsFrom)
			}
		case "0000:19:00.0":
			// rdma and gpu-nic both cross the NIC's link with the same
			// 5 TB: the largest link, not their sum.
			if dd.Bits != 4e13 {
				t.Errorf("NIC function bits %g, want 4e13", dd.Bits)
			}
		}
	}
	if len(w.Unmeasured) != 1 || w.Unmeasured[0].Link != NVLinkLink(gpu0, 0) {
		t.Errorf("unmeasured %v, want the NVLink", w.Unmeasured)
	}
}

func TestAttributeRefuses(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(t *testing.T, s *series)
		want   string
	}{
		{"no baseline", func(_ *testing.T, s *series) { s.baseline = nil }, "no baseline sample"},
		{"sample inside a window", func(_ *testing.T, s *series) {
			s.ends[0] = at(s.ends[0], s.sched.Windows[0].End.Add(-time.Second), "early")
		}, "the end sample of window 1 (12:00:10–12:05:10): mlx5_0/1 was read at 12:05:09.000, before 12:05:10.000"},
		{"sample into the next window", func(_ *testing.T, s *series) {
			s.ends[0] = at(s.ends[0], s.sched.Windows[1].Start, "late")
		}, "after the next window started at 12:05:20.000"},
		{"baseline after the start", func(_ *testing.T, s *series) {
			s.baseline[0] = at(s.baseline[0], s.sched.Windows[0].Start, "late")
		}, "baseline sample 1"},
		{"too many ends", func(_ *testing.T, s *series) { s.ends = append(s.ends, s.ends[2]) }, "4 end samples for 3 windows"},
		{"unknown GPU", func(_ *testing.T, s *series) {
			s.sched.Windows[1].Traffic = append(s.sched.Windows[1].Traffic, Traffic{Link: GPUHostLink("0000:99:00.0"), Bytes: 1})
		}, "window 2: link gpu-host:0000:99:00.0: no GPU at 0000:99:00.0"},
		{"unknown port", func(_ *testing.T, s *series) {
			s.sched.Windows[0].Traffic = append(s.sched.Windows[0].Traffic, Traffic{Link: PortLink("mlx5_0", 2), Bytes: 1})
		}, "mlx5_0 has no port 2"},
		{"twice", func(_ *testing.T, s *series) {
			s.sched.Windows[0].Traffic = append(s.sched.Windows[0].Traffic, s.sched.Windows[0].Traffic[0])
		}, "link rdma:mlx5_0/1 listed twice"},
		{"overlap", func(_ *testing.T, s *series) {
			s.sched.Windows[1].Start = s.sched.Windows[0].End.Add(-time.Second)
		}, "window 2 starts (2026-12-05T12:05:09Z) before window 1 ends"},
		{"peer order", func(_ *testing.T, s *series) {
			s.sched.Windows[0].Traffic = append(s.sched.Windows[0].Traffic, Traffic{Link: Link{Kind: GPUPeer, GPU: gpu1, Peer: gpu0}, Bytes: 1})
		}, "the lower address comes first"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := clean(t)
			c.break_(t, s)
			_, err := Attribute(s.h, s.sched, s.baseline, s.ends)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestLinkText(t *testing.T) {
	links := []Link{
		PortLink("mlx5_0", 1), GPUNICLink(gpu0, "mlx5_3"), GPUHostLink(gpu1),
		GPUPeerLink(gpu1, gpu0), NVLinkLink(gpu0, 17),
	}
	want := []string{"rdma:mlx5_0/1", "gpu-nic:0000:18:00.0>mlx5_3", "gpu-host:0000:3a:00.0", "gpu-peer:0000:18:00.0>0000:3a:00.0", "nvlink:0000:18:00.0#17"}
	for i, l := range links {
		if l.String() != want[i] {
			t.Errorf("%v = %s, want %s", l, l, want[i])
		}
		back, err := ParseLink(l.String())
		if err != nil || back != l {
			t.Errorf("ParseLink(%s) = %v, %v", l, back, err)
		}
	}
	// JSON: the text form, usable as a map key.
	b, err := json.Marshal(map[Link]uint64{PortLink("mlx5_0", 1): 5})
	if err != nil || string(b) != `{"rdma:mlx5_0/1":5}` {
		t.Errorf("json %s %v", b, err)
	}
	var tr Traffic
	if err := json.Unmarshal([]byte(`{"link":"gpu-peer:0000:3A:00.0>18:00.0","bytes":3}`), &tr); err != nil || tr.Link != GPUPeerLink(gpu0, gpu1) {
		t.Errorf("unmarshal %v %v", tr, err)
	}
	bad := map[string]string{
		"":                              "want KIND:WHAT",
		"rdma:mlx5_0":                   "want rdma:DEVICE/PORT",
		"rdma:mlx5_0/x":                 "want rdma:DEVICE/PORT",
		"gpu-nic:0000:18:00.0":          "want gpu-nic:GPU-PCI-ADDRESS>NIC",
		"gpu-nic:zz>mlx5_0":             "want gpu-nic",
		"gpu-host:18":                   "want gpu-host",
		"gpu-peer:0000:18:00.0>18:00.0": "want gpu-peer",
		"nvlink:0000:18:00.0":           "want nvlink:GPU-PCI-ADDRESS#LINK",
		"nvlink:0000:18:00.0#-1":        "want nvlink",
		"pcie:0000:18:00.0":             `unknown kind "pcie"`,
	}
	for in, w := range bad {
		if _, err := ParseLink(in); err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("ParseLink(%q) = %v, want %q", in, err, w)
		}
	}
}

func TestPoissonBounds(t *testing.T) {
	// Exact one-sided 95% bounds (Garwood; chi-square quantiles / 2).
	cases := []struct {
		k            uint64
		lower, upper float64
	}{
		{0, 0, 2.995732},
		{1, 0.051293, 4.743865},
		{2, 0.355362, 6.295794},
		{5, 1.970150, 10.513035},
		{10, 5.425406, 16.962219},
		{100, 84.139277, 118.079273},
	}
	for _, c := range cases {
		lo, up := PoissonLower(c.k, 0.95), PoissonUpper(c.k, 0.95)
		if d := lo - c.lower; d > 1e-5 || d < -1e-5 {
			t.Errorf("lower(%d) = %.6f, want %.6f", c.k, lo, c.lower)
		}
		if d := up - c.upper; d > 1e-5 || d < -1e-5 {
			t.Errorf("upper(%d) = %.6f, want %.6f", c.k, up, c.upper)
		}
	}
	// Large counts: the normal approximation, k ± 1.645·sqrt(k).
	k := uint64(1e6)
	if up := PoissonUpper(k, 0.95); up < 1e6+1640 || up > 1e6+1650 {
		t.Errorf("upper(1e6) = %f", up)
	}
	// Either side of the switch to the approximation, the same bounds.
	for _, k := range []uint64{exactMax, exactMax + 1} {
		up, lo := PoissonUpper(k, 0.95), PoissonLower(k, 0.95)
		if d := (up-float64(k))/math.Sqrt(float64(k)) - 1.645; d > 0.01 || d < -0.01 {
			t.Errorf("upper(%d) = %f", k, up)
		}
		if d := (float64(k)-lo)/math.Sqrt(float64(k)) - 1.645; d > 0.01 || d < -0.01 {
			t.Errorf("lower(%d) = %f", k, lo)
		}
	}
	// At the switch the approximation agrees with the exact bounds.
	if ex, wh := solveMean(exactMax, 0.05), chi2Quantile(0.95, 2*exactMax+2)/2; math.Abs(ex-wh) > 1e-8*ex {
		t.Errorf("at %d: exact upper %f, approximation %f", exactMax, ex, wh)
	}
	if ex, wh := solveMean(exactMax-1, 0.95), chi2Quantile(0.05, 2*exactMax)/2; math.Abs(ex-wh) > 1e-8*ex {
		t.Errorf("at %d: exact lower %f, approximation %f", exactMax, ex, wh)
	}
	// A huge count (a corrupt capture) is answered at once.
	done := make(chan float64)
	go func() { done <- PoissonUpper(1<<63, 0.95) }()
	select {
	case up := <-done:
		if up < 1<<63 {
			t.Errorf("upper(2^63) = %g", up)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("upper(2^63) still computing after 5s")
	}
	if up := PoissonUpper(0, 0.99); up < 4.6051 || up > 4.6052 {
		t.Errorf("upper(0) at 99%% = %f, want -ln(0.01)", up)
	}
}

func TestRateVerdict(t *testing.T) {
	cases := []struct {
		k      uint64
		bits   float64
		status result.Status
	}{
		{0, 3e12, result.Pass},      // rule of three: 2.996/3e12 < 1e-12
		{0, 2.9e12, result.Unknown}, // not enough bits to prove it
		{1, 1e12, result.Unknown},   // estimate at the limit, bounds around it
		{1, 5e12, result.Pass},      // 4.74/5e12 < 1e-12
		{5, 2.5e12, result.Warn},    // 2e-12 estimated, lower 7.9e-13
		{10, 2e12, result.Fail},     // lower 5.43/2e12 = 2.7e-12
	}
	for _, c := range cases {
		st, _ := RateOf(c.k, c.bits, 0.95).verdict(1e-12)
		if st != c.status {
			t.Errorf("%d in %g bits: %s, want %s", c.k, c.bits, st, c.status)
		}
	}
}

func TestClassOf(t *testing.T) {
	cases := []struct {
		kind    DeviceKind
		counter string
		want    Class
	}{
		{PortDevice, "counters/link_downed", Fatal},
		{PortDevice, "counters/symbol_error", Correctable},
		{PortDevice, "counters/port_rcv_data", Info},
		{PortDevice, "hw_counters/out_of_sequence", Info},
		{PCIDevice, "aer_dev_fatal/DLP", Fatal},
		{PCIDevice, "aer_dev_nonfatal/TOTAL_ERR_NONFATAL", Fatal},
		{PCIDevice, "aer_dev_correctable/TOTAL_ERR_COR", Correctable},
		{PCIDevice, "aer_dev_correctable/RxErr", Info},
		{PCIDevice, "counters/link_downed", Info},
	}
	for _, c := range cases {
		if got := ClassOf(c.kind, c.counter); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.kind, c.counter, got, c.want)
		}
	}
	for _, n := range append(append([]string{}, portJudged...), functionJudged...) {
		kind := PortDevice
		if strings.HasPrefix(n, "aer_") {
			kind = PCIDevice
		}
		if ClassOf(kind, n) == Info {
			t.Errorf("%s is listed as judged but is not", n)
		}
	}
}

func TestReadSchedule(t *testing.T) {
	f, err := os.Open("testdata/schedule.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ReadSchedule("schedule.json", f)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := node(t)
	if err := s.Validate(h); err != nil {
		t.Fatal(err)
	}
	if len(s.Windows) != 2 || len(s.Windows[0].Traffic) != 5 || s.Windows[0].Traffic[3].Link != GPUPeerLink(gpu0, gpu1) {
		t.Fatalf("read %+v", s)
	}
	// It writes back to what it read (links in their text form, the peers
	// in order).
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadSchedule("again", strings.NewReader(string(b)))
	if err != nil || !cmp.Equal(back, s) {
		t.Errorf("round trip: %v\n%s", err, cmp.Diff(s, back))
	}

	bad := []struct{ name, in, want string }{
		{"bad link", `{"windows":[{"start":"2026-12-05T12:00:00Z","end":"2026-12-05T12:05:00Z","traffic":[{"link":"rdma:mlx5_0/1","bytes":1},{"link":"pcie:x","bytes":1}]}]}`,
			`s.json: windows[0].traffic[1].link: link "pcie:x": unknown kind "pcie"`},
		{"unknown field", "{\n\"windows\": [],\n\"extra\": 1}", `unknown field "extra"`},
		{"bad time", "{\"windows\": [\n{\"start\": \"noon\"}]}", `s.json:2: `},
		{"bad bytes", "{\"windows\": [{\"traffic\": [\n{\"link\": \"rdma:a/1\", \"bytes\": -5}]}]}", `s.json:2: unexpected JSON value: field "windows.traffic.bytes"`},
		{"truncated", "{\"windows\": [", "s.json:1: JSON ends early"},
	}
	for _, c := range bad {
		_, err := ReadSchedule("s.json", strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// TestReplayThroughTheDoor judges a recorded series end to end: each
// capture a snapshot archive of the node, read by collect/counters as a
// replay will, the schedule read from its JSON.
func TestReplayThroughTheDoor(t *testing.T) {
	base, err := os.ReadFile("testdata/gdr-node.host")
	if err != nil {
		t.Fatal(err)
	}
	capture := func(extra string, at time.Time, label string) (*topology.Host, *cf.Sample) {
		t.Helper()
		text := string(base)
		if extra != "" {
			b, err := os.ReadFile(extra)
			if err != nil {
				t.Fatal(err)
			}
			text += string(b)
		}
		spec, err := fakehost.Parse(label, strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		root, cleanup, err := snapshot.Open(fakehost.MaterializeArchive(t, spec))
		if err != nil {
			t.Fatal(err)
		}
		defer cleanup()
		h, err := discover.Discover(context.Background(), discover.WithRoot(root), discover.WithoutGPUFacts(), discover.WithoutNames())
		if err != nil {
			t.Fatal(err)
		}
		return h, cc.Read(root, h, label, func() time.Time { return at })
	}
	h, b := capture("", t0, "baseline")
	_, e1 := capture("testdata/series/end1.files", t0.Add(5*time.Minute+15*time.Second), "end1")
	_, e2 := capture("testdata/series/end2.files", t0.Add(10*time.Minute+25*time.Second), "end2")
	f, err := os.Open("testdata/schedule.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sched, err := ReadSchedule("schedule.json", f)
	if err != nil {
		t.Fatal(err)
	}
	ser, err := Attribute(h, *sched, []*cf.Sample{b}, []*cf.Sample{e1, e2})
	if err != nil {
		t.Fatal(err)
	}
	rs := Judge(ser, Options{})
	for _, w := range []want{
		{IDFatal, port0, result.Fail, "LinkDowned", []string{"window 2 (12:05:20–12:10:20)", "link_downed +1 (1 → 2)", "rdma:mlx5_0/1 (5 TB)"}},
		{IDErrorRate, dsp0, result.Fail, "ErrorRateAboveSpec", []string{"window 1 (12:00:10–12:05:10)", "TOTAL_ERR_COR 2000 in 4e+13 bits", "gpu-nic:0000:18:00.0>mlx5_0 (5 TB)"}},
		{IDErrorRate, port0, result.Pass, "ErrorRateWithinSpec", []string{"symbol_error over 2 window(s): 0 in 8e+13 bits"}},
		{IDBefore, port0, result.Skip, "CountedBeforeBurn", []string{"link_downed=1, symbol_error=7"}},
		{IDUnmeasured, "nvlink:0000:18:00.0#0", result.Unknown, "NotMeasured", nil},
	} {
		if !found(rs, w) {
			t.Errorf("no %s %s %s %s with %q in:\n%s", w.id, w.subject, w.status, w.reason, w.msg, dump(rs))
		}
	}
	// The verdicts as a reader sees them, and the port's deltas in window 2
	// as JSON (the form the dossier will carry).
	var txt strings.Builder
	result.Sort(rs)
	for _, r := range rs {
		fmt.Fprintf(&txt, "%s %s %s %s\n  %s\n", r.Status, r.ID, r.Subject, r.Reason, r.Message)
		if r.Remedy != "" {
			fmt.Fprintf(&txt, "  remedy: %s\n", r.Remedy)
		}
	}
	goldenfile.Check(t, "testdata/golden/replay.results.txt", []byte(txt.String()), *update)
	js, err := json.MarshalIndent(ser.Windows[1].Devices[0], "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, "testdata/golden/replay.window2.mlx5_0-1.json", append(js, '\n'), *update)

	// Those two faults fail (the bridge's in its window and over the run),
	// nothing else fails or warns.
	bad := map[string]bool{}
	for _, r := range rs {
		if r.Status == result.Fail || r.Status == result.Warn {
			bad[r.ID+" "+r.Subject] = true
		}
	}
	if d := cmp.Diff(map[string]bool{IDFatal + " " + port0: true, IDErrorRate + " " + dsp0: true}, bad); d != "" {
		t.Errorf("failing (-want +got):\n%s", d)
	}
}

func TestThresholdOfUnknownLinkLayer(t *testing.T) {
	ts := map[string]Threshold{"InfiniBand": {BER: 1e-12}, "Ethernet": {BER: 1e-13}, "PCIe": {BER: 1e-12}}
	cases := []struct {
		medium string
		ber    float64
		name   string
	}{
		{"InfiniBand", 1e-12, "InfiniBand"},
		{"PCIe", 1e-12, "PCIe"},
		{"", 1e-13, "Ethernet (the stricter; link layer unknown)"},
		{"Omni-Path", 1e-13, "Ethernet (the stricter; link layer unknown)"},
	}
	for _, c := range cases {
		thr, name := thresholdOf(ts, Device{Medium: c.medium})
		if thr.BER != c.ber || name != c.name {
			t.Errorf("%q: %g %q, want %g %q", c.medium, thr.BER, name, c.ber, c.name)
		}
	}
	for m, thr := range Thresholds {
		if thr.BER <= 0 || thr.Source == "" {
			t.Errorf("%s: threshold %g without a source %q", m, thr.BER, thr.Source)
		}
	}
}
