package burn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/textio"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// Schedule is what a burn-in's workload did: its windows in order, and in
// each the links that carried traffic and how many bytes. A workload names
// every link one transfer crosses (a GPU Direct RDMA loopback is both its
// gpu-nic path and its rdma port).
type Schedule struct {
	Windows []Window `json:"windows"`
}

// Window is one stretch of the workload, between two counter samples.
type Window struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Traffic []Traffic `json:"traffic"`
}

// Traffic is how many bytes one link carried in a window.
type Traffic struct {
	Link  Link   `json:"link"`
	Bytes uint64 `json:"bytes"`
}

// Name is the window as messages show it: "window 2 (12:05:00–12:10:00)",
// numbered from 1.
func (s *Schedule) Name(i int) string {
	w := s.Windows[i]
	return fmt.Sprintf("window %d (%s–%s)", i+1, w.Start.UTC().Format("15:04:05"), w.End.UTC().Format("15:04:05"))
}

// Validate checks the schedule against the node: windows in order, not
// overlapping and not empty; each link once per window, naming a GPU, NIC,
// port or NVLink the node has. Errors name the window and the link.
func (s *Schedule) Validate(h *topology.Host) error {
	if len(s.Windows) == 0 {
		return fmt.Errorf("schedule: no windows")
	}
	for i, w := range s.Windows {
		name := fmt.Sprintf("window %d", i+1)
		if w.Start.IsZero() || w.End.IsZero() {
			return fmt.Errorf("schedule: %s: start and end must be given", name)
		}
		if !w.End.After(w.Start) {
			return fmt.Errorf("schedule: %s: ends (%s) before it starts (%s)", name, w.End.Format(time.RFC3339), w.Start.Format(time.RFC3339))
		}
		if i > 0 && w.Start.Before(s.Windows[i-1].End) {
			return fmt.Errorf("schedule: %s starts (%s) before window %d ends (%s)", name, w.Start.Format(time.RFC3339), i, s.Windows[i-1].End.Format(time.RFC3339))
		}
		seen := map[Link]bool{}
		for _, t := range w.Traffic {
			if seen[t.Link] {
				return fmt.Errorf("schedule: %s: link %s listed twice", name, t.Link)
			}
			seen[t.Link] = true
			if err := checkLink(h, t.Link); err != nil {
				return fmt.Errorf("schedule: %s: link %s: %v", name, t.Link, err)
			}
		}
	}
	return nil
}

// checkLink says what of a link the node does not have.
func checkLink(h *topology.Host, l Link) error {
	gpu := func(a string) (*topology.GPU, error) {
		g := h.GPUByAddress(a)
		if g == nil {
			return nil, fmt.Errorf("no GPU at %s on this node", a)
		}
		return g, nil
	}
	nic := func(n string) (*topology.NIC, error) {
		x := h.NICByName(n)
		if x == nil {
			return nil, fmt.Errorf("no RDMA device %s on this node", n)
		}
		return x, nil
	}
	switch l.Kind {
	case RDMAPort:
		n, err := nic(l.NIC)
		if err != nil {
			return err
		}
		for _, p := range n.Ports {
			if p.Number == l.Num {
				return nil
			}
		}
		return fmt.Errorf("%s has no port %d", l.NIC, l.Num)
	case GPUNIC:
		if _, err := gpu(l.GPU); err != nil {
			return err
		}
		n, err := nic(l.NIC)
		if err != nil {
			return err
		}
		if n.Dev == nil {
			return fmt.Errorf("%s is on no PCI function", l.NIC)
		}
		return nil
	case GPUHost:
		_, err := gpu(l.GPU)
		return err
	case GPUPeer:
		if l.GPU == l.Peer {
			return fmt.Errorf("a GPU with itself")
		}
		if l.Peer < l.GPU {
			return fmt.Errorf("the lower address comes first (GPUPeerLink orders them)")
		}
		if _, err := gpu(l.GPU); err != nil {
			return err
		}
		_, err := gpu(l.Peer)
		return err
	case NVLink:
		g, err := gpu(l.GPU)
		if err != nil {
			return err
		}
		if g.NVLinkKnown && l.Num >= len(g.NVLinks) {
			return fmt.Errorf("the GPU has %d NVLinks", len(g.NVLinks))
		}
		return nil
	}
	return fmt.Errorf("unknown link kind %q", l.Kind)
}

// ReadSchedule reads a schedule as JSON (what a workload writes beside its
// captures): {"windows": [{"start", "end", "traffic": [{"link", "bytes"}]}]},
// times in RFC 3339, links in their text form. Unknown fields are refused;
// an error names the file and the line, or the field of a bad link
// ("windows[2].traffic[0].link"). It checks the form only: Validate checks
// the schedule against the node.
func ReadSchedule(name string, r io.Reader) (*Schedule, error) {
	type rawTraffic struct {
		Link  string `json:"link"`
		Bytes uint64 `json:"bytes"`
	}
	type rawWindow struct {
		Start   time.Time    `json:"start"`
		End     time.Time    `json:"end"`
		Traffic []rawTraffic `json:"traffic"`
	}
	var raw struct {
		Windows []rawWindow `json:"windows"`
	}
	b, err := io.ReadAll(io.LimitReader(r, maxSchedule+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(b) > maxSchedule {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, maxSchedule)
	}
	lc := textio.NewLineCounter(bytes.NewReader(b))
	dec := json.NewDecoder(lc)
	dec.DisallowUnknownFields()
	if err := lc.DecodeAll(name, dec, &raw); err != nil {
		return nil, err
	}
	s := &Schedule{Windows: make([]Window, 0, len(raw.Windows))}
	for i, w := range raw.Windows {
		win := Window{Start: w.Start, End: w.End, Traffic: make([]Traffic, 0, len(w.Traffic))}
		for j, t := range w.Traffic {
			l, err := ParseLink(t.Link)
			if err != nil {
				return nil, fmt.Errorf("%s: windows[%d].traffic[%d].link: %v", name, i, j, err)
			}
			win.Traffic = append(win.Traffic, Traffic{Link: l, Bytes: t.Bytes})
		}
		s.Windows = append(s.Windows, win)
	}
	return s, nil
}

// maxSchedule bounds a schedule file: a day of one-minute windows over a few
// hundred links is far below it.
const maxSchedule = 64 << 20
