package burn

import (
	"fmt"
	"slices"
	"strings"
)

// CellState is what one device showed in one window, in the order of
// severity the dossier draws: a fatal event over anything else.
type CellState string

// Cell states.
const (
	// CellFatal: a judged fatal counter counted at least one event.
	CellFatal CellState = "fatal"
	// CellCorrectable: correctable errors counted (judged as a rate: the
	// verdict says whether the rate is too high).
	CellCorrectable CellState = "correctable"
	// CellReset: a judged counter went down (cleared, wrapped, a reboot);
	// what it counted since is a lower bound.
	CellReset CellState = "reset"
	// CellUnread: a judged counter was not read at one end of the window.
	CellUnread CellState = "unread"
	// CellClean: every judged counter read at both ends and unchanged,
	// with traffic through the device.
	CellClean CellState = "clean"
	// CellIdle: every judged counter read and unchanged, but no traffic
	// crossed the device (none scheduled, or none its own data counter
	// saw): clean, but nothing was proven.
	CellIdle CellState = "idle"
	// CellUnsampled: the window has no end sample (a burn-in cut short).
	CellUnsampled CellState = "unsampled"
)

// Cell is one device's window in the timeline.
type Cell struct {
	State CellState `json:"state"`
	// Bits is what the device's receivers are taken to have seen
	// (DeviceDeltas.Bits).
	Bits float64 `json:"bits"`
	// Fatal and Correctable are the events its judged counters counted.
	Fatal       uint64 `json:"fatal"`
	Correctable uint64 `json:"correctable"`
	// Counters name each judged counter that moved or could not be
	// counted: "symbol_error +3", "link_downed reset", "TOTAL_ERR_COR missing".
	Counters []string `json:"counters,omitempty"`
}

// TimelineRow is one device's cells, one per window of the schedule.
type TimelineRow struct {
	Device Device `json:"device"`
	Cells  []Cell `json:"cells"`
}

// Timeline lays the series out as one row per device that any window
// sampled and one cell per window: the burn-in's per-link, per-window
// picture. The rows are in the order the first window lists the devices
// (ports, then PCI functions by address), devices seen only later after
// them. Only judged counters (Fatal or Correctable by ClassOf) count;
// data and informational counters do not.
func (s *Series) Timeline() []TimelineRow {
	if s == nil {
		return nil
	}
	n := len(s.Windows)
	for _, u := range s.Unsampled {
		n = max(n, u+1)
	}
	var rows []TimelineRow
	index := map[Device]int{}
	row := func(d Device) *TimelineRow {
		i, ok := index[d]
		if !ok {
			i = len(rows)
			index[d] = i
			cells := make([]Cell, n)
			for k := range cells {
				cells[k].State = CellUnsampled
			}
			rows = append(rows, TimelineRow{Device: d, Cells: cells})
		}
		return &rows[i]
	}
	for _, w := range s.Windows {
		for _, dd := range w.Devices {
			if w.Index < 0 || w.Index >= n {
				continue
			}
			row(dd.Device).Cells[w.Index] = cellOf(dd)
		}
	}
	return rows
}

// cellOf is one device's window.
func cellOf(dd DeviceDeltas) Cell {
	c := Cell{Bits: dd.Bits}
	var reset, unread bool
	// An AER file's TOTAL_ line sums its fields: the events are its
	// total where it was counted, else the sum of its fields.
	totals := map[string]uint64{}
	for _, dl := range dd.Deltas {
		if file, field, ok := strings.Cut(dl.Counter, "/"); ok && dd.Device.Kind == PCIDevice && strings.HasPrefix(field, "TOTAL_") && dl.State != Missing {
			totals[file] = dl.Change
		}
	}
	for _, dl := range dd.Deltas {
		cl := ClassOf(dd.Device.Kind, dl.Counter)
		if cl == Info {
			continue
		}
		name := shortName(dl.Counter)
		switch dl.State {
		case Missing:
			unread = true
			c.Counters = append(c.Counters, name+" missing")
			continue
		case Reset:
			reset = true
			c.Counters = append(c.Counters, name+" reset")
		}
		if dl.Change == 0 {
			continue
		}
		if dl.State != Reset {
			c.Counters = append(c.Counters, fmt.Sprintf("%s +%d", name, dl.Change))
		}
		file, field, _ := strings.Cut(dl.Counter, "/")
		if _, summed := totals[file]; summed && !strings.HasPrefix(field, "TOTAL_") {
			continue // counted in its file's total
		}
		if cl == Fatal {
			c.Fatal += dl.Change
		} else {
			c.Correctable += dl.Change
		}
	}
	slices.SortFunc(c.Counters, strings.Compare)
	switch {
	case c.Fatal > 0:
		c.State = CellFatal
	case c.Correctable > 0:
		c.State = CellCorrectable
	case reset:
		c.State = CellReset
	case unread:
		c.State = CellUnread
	case len(dd.Traffic) == 0 || dd.Bits == 0:
		// Nothing scheduled through it, or a port whose own data counter
		// saw none of what was scheduled (a loopback inside the NIC).
		c.State = CellIdle
	default:
		c.State = CellClean
	}
	return c
}
