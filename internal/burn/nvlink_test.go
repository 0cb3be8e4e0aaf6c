package burn

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// nvSeries is the three-window series of clean(t) with GPU readings whose
// NVLink counters a case plants faults in: GPU0's NVLinks 0 and 1 are up,
// link 0 carries the schedule's 2 TB a window and receives 1e9 KiB.
type nvSeries struct {
	*series
	base []*GPUReading
	ends []*GPUReading
}

func nvReading(at time.Time, counters map[int]map[string]uint64, missing map[string]string) *GPUReading {
	g := gpu.GPU{BusID: gpu0, NVLinkQueried: true, NVLinks: []gpu.NVLink{{Link: 0, Active: true}, {Link: 1, Active: true}}}
	for _, n := range []int{0, 1} {
		g.NVLinkCounters = append(g.NVLinkCounters, gpu.NVLinkCounters{Link: n, Values: maps.Clone(counters[n]), Missing: maps.Clone(missing)})
	}
	return &GPUReading{At: at, Facts: &gpu.Facts{GPUs: []gpu.GPU{g}}}
}

// hopper are an NVLink's counters on a GPU before Blackwell: the data-link
// counters and the throughput; NVLink 5's refused.
func hopper(rxKiB uint64) map[string]uint64 {
	return map[string]uint64{gpu.NVLinkCRCFlit: 0, gpu.NVLinkCRCData: 0, gpu.NVLinkReplay: 0, gpu.NVLinkRecovery: 0, gpu.NVLinkRxKiB: rxKiB, gpu.NVLinkTxKiB: rxKiB}
}

var nvlink5Refused = map[string]string{
	gpu.NVLinkRecoveryFailed: "nvmlDeviceGetFieldValues field 214: Not Supported", gpu.NVLinkEffectiveErrors: "nvmlDeviceGetFieldValues field 219: Not Supported",
}

func cleanNV(t *testing.T) *nvSeries {
	s := &nvSeries{series: clean(t)}
	s.base = []*GPUReading{nvReading(t0, map[int]map[string]uint64{0: hopper(0), 1: hopper(0)}, nvlink5Refused)}
	for i, w := range s.sched.Windows {
		rx := uint64(i+1) * 1e9
		s.ends = append(s.ends, nvReading(w.End.Add(time.Second), map[int]map[string]uint64{0: hopper(rx), 1: hopper(0)}, nvlink5Refused))
	}
	return s
}

// link is GPU0's NVLink n's counters at window i's end.
func (s *nvSeries) link(i, n int) *gpu.NVLinkCounters {
	return &s.ends[i].Facts.GPUs[0].NVLinkCounters[n]
}

func (s *nvSeries) judge(t *testing.T) (*Series, []result.Result) {
	t.Helper()
	ser, err := Attribute(s.h, s.sched, s.baseline, s.series.ends)
	if err != nil {
		t.Fatal(err)
	}
	ser.AddNVLinks(s.h, s.sched, s.base, s.ends)
	return ser, Judge(ser, s.opts)
}

const nv0 = "0000:18:00.0#0"

func TestJudgeNVLinkPlanted(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(s *nvSeries)
		want  []want
		not   []want // must not be there
		clean bool
	}{
		{
			name:  "clean series",
			plant: func(*nvSeries) {},
			clean: true,
			want: []want{
				{IDFatal, nv0, result.Pass, "NoFatalErrors", []string{"0000:18:00.0 (GPU0) NVLink 0: no fatal error counted in the 3 window(s)"}},
				{IDNVLinkCRC, nv0, result.Pass, "NoNVLinkCRCErrors", []string{"crc_flit_errors: no CRC error in 3 window(s) over 2.46e+13 bits"}},
				{IDNVLinkCRC, nv0, result.Pass, "NoNVLinkCRCErrors", []string{"crc_data_errors"}},
			},
			not: []want{{IDUnmeasured, "nvlink:" + nv0, result.Unknown, "NotMeasured", nil}},
		},
		{
			name: "NVLink CRC on one link in window 2",
			plant: func(s *nvSeries) {
				for i := 1; i < 3; i++ {
					s.link(i, 0).Values[gpu.NVLinkCRCFlit] = 12
				}
			},
			want: []want{{IDNVLinkCRC, nv0, result.Warn, "NVLinkCRCErrors", []string{"window 2 (12:05:20–12:10:20)", "0000:18:00.0 (GPU0) NVLink 0", "crc_flit_errors +12 (0 → 12)", "nvlink:0000:18:00.0#0 (2 TB)", "12 in 8.19e+12 bits", "100 per second fails (DCGM"}}},
			not:  []want{{IDNVLinkCRC, nv0, result.Pass, "NoNVLinkCRCErrors", []string{"crc_flit_errors"}}},
		},
		{
			name: "NVLink CRC at 100 per second fails",
			plant: func(s *nvSeries) {
				s.link(0, 0).Values[gpu.NVLinkCRCData] = 30000 // 300 s windows
				for i := 1; i < 3; i++ {
					s.link(i, 0).Values[gpu.NVLinkCRCData] = 30000
				}
			},
			want: []want{{IDNVLinkCRC, nv0, result.Fail, "NVLinkCRCRate", []string{"window 1", "crc_data_errors +30000", "100 per second"}}},
		},
		{
			name:  "a replay on one link in window 3 fails",
			plant: func(s *nvSeries) { s.link(2, 1).Values[gpu.NVLinkReplay] = 1 },
			want:  []want{{IDFatal, "0000:18:00.0#1", result.Fail, "NVLinkReplay", []string{"window 3 (12:10:30–12:15:30)", "(GPU0) NVLink 1", "replay_errors +1 (0 → 1)", "while it carried no scheduled traffic"}}},
		},
		{
			name: "a recovery on the loaded link fails",
			plant: func(s *nvSeries) {
				for i := range 3 {
					s.link(i, 0).Values[gpu.NVLinkRecovery] = 2
				}
			},
			want: []want{{IDFatal, nv0, result.Fail, "NVLinkRecovery", []string{"window 1", "recovery_errors +2 (0 → 2)", "nvlink:0000:18:00.0#0 (2 TB)"}}},
		},
		{
			name: "a counter going backwards is a reset, never subtracted",
			plant: func(s *nvSeries) {
				for _, n := range []int{0} {
					s.base[0].Facts.GPUs[0].NVLinkCounters[n].Values[gpu.NVLinkCRCFlit] = 40
					s.base[0].Facts.GPUs[0].NVLinkCounters[n].Values[gpu.NVLinkReplay] = 9
					s.link(0, n).Values[gpu.NVLinkCRCFlit] = 40
					s.link(0, n).Values[gpu.NVLinkReplay] = 9
				}
			},
			want: []want{
				{IDFatal, nv0, result.Unknown, "CounterReset", []string{"window 2", "replay_errors at least +0 (went down from 9 to 0"}},
				{IDNVLinkCRC, nv0, result.Unknown, "CounterNotExact", []string{"over the run cannot be told: window 2", "crc_flit_errors at least +0 (went down from 40 to 0"}},
				{IDBefore, nv0, result.Skip, "CountedBeforeBurn", []string{"crc_flit_errors=40", "replay_errors=9"}},
			},
			clean: true,
		},
		{
			name: "a link up at the baseline and down at window 3's end fails",
			plant: func(s *nvSeries) {
				g := &s.ends[2].Facts.GPUs[0]
				g.NVLinks[0].Active = false
				g.NVLinkCounters = g.NVLinkCounters[1:] // only active links are read
			},
			want: []want{
				{IDFatal, "nvlink:" + nv0, result.Fail, "NVLinkDown", []string{"window 3 (12:10:30–12:15:30): 0000:18:00.0 (GPU0) NVLink 0 was up at the baseline and down", "nvlink:0000:18:00.0#0 (2 TB)"}},
				{IDFatal, nv0, result.Unknown, "CounterNotRead", []string{"window 3"}},
			},
		},
		{
			name: "counters refused at a window's end: unknown, never a pass",
			plant: func(s *nvSeries) {
				l := s.link(1, 0)
				for _, k := range []string{gpu.NVLinkCRCFlit, gpu.NVLinkCRCData, gpu.NVLinkReplay, gpu.NVLinkRecovery} {
					delete(l.Values, k)
					l.Miss(k, "nvmlDeviceGetNvLinkErrorCounter: Insufficient Permissions")
				}
			},
			clean: true,
			want: []want{
				{IDFatal, nv0, result.Unknown, "CounterNotRead", []string{"carried traffic in windows 2, 3", "at the end: nvmlDeviceGetNvLinkErrorCounter: Insufficient Permissions"}},
				{IDNVLinkCRC, nv0, result.Unknown, "CounterNotRead", []string{"crc_flit_errors could not be read in windows 2, 3"}},
			},
			not: []want{{IDFatal, nv0, result.Pass, "NoFatalErrors", nil}},
		},
		{
			name: "no GPU readings: the NVLink stays unmeasured",
			plant: func(s *nvSeries) {
				s.ends = nil
			},
			clean: true,
			want:  []want{{IDUnmeasured, "nvlink:" + nv0, result.Unknown, "NotMeasured", []string{"6 TB in window(s) 1, 2, 3", "its NVLink counters were not read"}}},
		},
		{
			name: "Blackwell: the data-link counters refused, NVLink 5's read; an effective error fails",
			plant: func(s *nvSeries) {
				for _, r := range append(append([]*GPUReading{}, s.base...), s.ends...) {
					for n := range r.Facts.GPUs[0].NVLinkCounters {
						l := &r.Facts.GPUs[0].NVLinkCounters[n]
						l.Missing = map[string]string{}
						for _, k := range []string{gpu.NVLinkCRCFlit, gpu.NVLinkCRCData, gpu.NVLinkReplay, gpu.NVLinkRecovery} {
							delete(l.Values, k)
							l.Miss(k, "nvmlDeviceGetNvLinkErrorCounter: Not Supported")
						}
						l.Values[gpu.NVLinkRecoveryFailed], l.Values[gpu.NVLinkEffectiveErrors] = 0, 0
					}
				}
				s.link(2, 0).Values[gpu.NVLinkEffectiveErrors] = 1
			},
			want: []want{{IDFatal, nv0, result.Fail, "NVLinkErrors", []string{"window 3", "effective_errors +1 (0 → 1)"}}},
			not: []want{
				{IDFatal, nv0, result.Unknown, "CounterNotRead", nil},
				{IDUnmeasured, "nvlink:" + nv0, result.Unknown, "NotMeasured", nil},
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := cleanNV(t)
			c.plant(s)
			_, rs := s.judge(t)
			for _, w := range c.want {
				if !found(rs, w) {
					t.Errorf("no %s %s %s %s with %q in:\n%s", w.id, w.subject, w.status, w.reason, w.msg, dump(rs))
				}
			}
			for _, w := range c.not {
				if found(rs, w) {
					t.Errorf("%s %s %s %s is there:\n%s", w.id, w.subject, w.status, w.reason, dump(rs))
				}
			}
			for _, r := range rs {
				if c.clean && (r.Status == result.Fail || r.Status == result.Warn) && (strings.Contains(r.Subject, "#") || r.ID == IDNVLinkCRC) {
					t.Errorf("clean NVLinks: %s %s %s: %s", r.Status, r.ID, r.Subject, r.Message)
				}
				if strings.Contains(r.Subject, "#") && (strings.Contains(r.Remedy, "perfquery") || strings.Contains(r.Remedy, "mlxlink")) {
					t.Errorf("an NVLink told to see to an RDMA port: %s %s: %s", r.ID, r.Subject, r.Remedy)
				}
				if (r.Status == result.Fail || r.Status == result.Warn) && r.Remedy == "" {
					t.Errorf("%s %s %s has no remedy", r.Status, r.ID, r.Subject)
				}
			}
		})
	}
}

// The link's bits are its own received payload when that counted exactly,
// and a reset CRC counter is never a huge delta.
func TestNVLinkDeltas(t *testing.T) {
	s := cleanNV(t)
	s.base[0].Facts.GPUs[0].NVLinkCounters[0].Values[gpu.NVLinkCRCFlit] = 50
	s.link(0, 0).Values[gpu.NVLinkCRCFlit] = 3
	ser, _ := s.judge(t)
	var dd *DeviceDeltas
	for i := range ser.Windows[0].Devices {
		if ser.Windows[0].Devices[i].Device.Name == nv0 {
			dd = &ser.Windows[0].Devices[i]
		}
	}
	if dd == nil {
		t.Fatal("no NVLink 0 in window 1")
	}
	if dd.Bits != 1e9*1024*8 || !strings.HasPrefix(dd.BitsFrom, "rx_data_kib") || dd.Device.Kind != NVLinkDevice {
		t.Errorf("bits %g from %q", dd.Bits, dd.BitsFrom)
	}
	if d := dd.Delta(gpu.NVLinkCRCFlit); d == nil || d.State != Reset || d.Change != 3 {
		t.Errorf("crc delta %+v, want a reset counting at least 3", d)
	}
	// NVLink 5's counters, refused at both ends, are none of this link's.
	if d := dd.Delta(gpu.NVLinkEffectiveErrors); d != nil {
		t.Errorf("a counter refused at both ends listed: %+v", d)
	}
}
