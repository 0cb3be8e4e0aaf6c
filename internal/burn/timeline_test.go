package burn

import (
	"strings"
	"testing"

	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
)

// TestTimeline lays planted series out per device and window: each cell
// says what the device's judged counters did, data counters never count,
// and a burn-in cut short leaves its last windows unsampled.
func TestTimeline(t *testing.T) {
	type cellWant struct {
		dev     string
		window  int
		state   CellState
		fatal   uint64
		corr    uint64
		counter string // a substring of one of Counters
	}
	cases := []struct {
		name  string
		plant func(t *testing.T, s *series)
		want  []cellWant
	}{
		{"clean", func(*testing.T, *series) {}, []cellWant{
			{port0, 0, CellClean, 0, 0, ""},
			{port0, 2, CellClean, 0, 0, ""},
			{dsp0, 1, CellClean, 0, 0, ""},
			// GPU1's AER files are not exposed in the fixture.
			{gpu1, 0, CellUnread, 0, 0, "TOTAL_ERR_COR missing"},
		}},
		{"link_downed in window 2", func(t *testing.T, s *series) {
			s.later(1, func(e *cf.Sample) { add(t, e, port0, "counters/link_downed", 1) })
		}, []cellWant{
			{port0, 0, CellClean, 0, 0, ""},
			{port0, 1, CellFatal, 1, 0, "link_downed +1"},
			{port0, 2, CellClean, 0, 0, ""},
		}},
		{"symbol errors beside a fatal one", func(t *testing.T, s *series) {
			add(t, s.ends[2], port0, "counters/symbol_error", 5000)
			add(t, s.ends[2], port0, "counters/excessive_buffer_overrun_errors", 2)
		}, []cellWant{
			{port0, 2, CellFatal, 2, 5000, "symbol_error +5000"},
		}},
		{"an uncorrectable AER error counted once, not once per field and again in the total", func(t *testing.T, s *series) {
			s.later(1, func(e *cf.Sample) {
				add(t, e, dsp0, "aer_dev_fatal/DLP", 1)
				add(t, e, dsp0, "aer_dev_fatal/TOTAL_ERR_FATAL", 1)
			})
		}, []cellWant{
			{dsp0, 1, CellFatal, 1, 0, "aer_dev_fatal/DLP +1"},
		}},
		{"correctable AER on the switch port", func(t *testing.T, s *series) {
			s.later(0, func(e *cf.Sample) { add(t, e, dsp0, "aer_dev_correctable/TOTAL_ERR_COR", 4) })
		}, []cellWant{
			{dsp0, 0, CellCorrectable, 0, 4, "TOTAL_ERR_COR +4"},
			{dsp0, 1, CellClean, 0, 0, ""},
		}},
		{"a reset", func(t *testing.T, s *series) {
			s.later(1, func(e *cf.Sample) { set(t, e, port0, "counters/symbol_error", 0) })
		}, []cellWant{
			{port0, 1, CellReset, 0, 0, "symbol_error reset"},
		}},
		{"scheduled traffic the port's own counter never saw (a loopback inside the NIC)", func(t *testing.T, s *series) {
			s.later(1, func(e *cf.Sample) {
				v, _, _ := reading(t, e, port0).Get("counters/port_rcv_data")
				set(t, e, port0, "counters/port_rcv_data", v-5*tb/4)
			})
		}, []cellWant{
			{port0, 0, CellClean, 0, 0, ""},
			{port0, 1, CellIdle, 0, 0, ""},
		}},
		{"cut short after window 1", func(t *testing.T, s *series) {
			s.ends = s.ends[:1]
		}, []cellWant{
			{port0, 0, CellClean, 0, 0, ""},
			{port0, 1, CellUnsampled, 0, 0, ""},
			{port0, 2, CellUnsampled, 0, 0, ""},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := clean(t)
			c.plant(t, s)
			ser, _ := s.judge(t)
			rows := ser.Timeline()
			for _, r := range rows {
				if len(r.Cells) != 3 {
					t.Fatalf("%s: %d cells, want one per window (3)", r.Device.Name, len(r.Cells))
				}
			}
			for _, w := range c.want {
				var cell *Cell
				for i := range rows {
					if rows[i].Device.Name == w.dev {
						cell = &rows[i].Cells[w.window]
					}
				}
				if cell == nil {
					t.Fatalf("no row for %s", w.dev)
				}
				if cell.State != w.state || cell.Fatal != w.fatal || cell.Correctable != w.corr {
					t.Errorf("%s window %d: %s fatal %d correctable %d, want %s %d %d (%v)", w.dev, w.window+1, cell.State, cell.Fatal, cell.Correctable, w.state, w.fatal, w.corr, cell.Counters)
				}
				if w.counter != "" && !strings.Contains(strings.Join(cell.Counters, "; "), w.counter) {
					t.Errorf("%s window %d: counters %v, want one with %q", w.dev, w.window+1, cell.Counters, w.counter)
				}
				if w.state == CellClean && cell.Bits == 0 {
					t.Errorf("%s window %d: clean with no bits", w.dev, w.window+1)
				}
			}
		})
	}
}
