package burn

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// DeltaState says how much a counter's change over a window is known.
type DeltaState string

// Delta states. Only Counted is exact; Reset and Saturated give a lower
// bound; Missing gives nothing.
const (
	// Counted: read at both ends, not lower at the end, below its limit.
	Counted DeltaState = "counted"
	// Reset: lower at the end than at the start: the counter was cleared
	// (or wrapped, or the machine rebooted) within the window. It is
	// never subtracted; what it counted since is a lower bound on the
	// window's events.
	Reset DeltaState = "reset"
	// Saturated: at its width's maximum at the end (what it counted is a
	// lower bound) or already at the start (it could not count at all).
	Saturated DeltaState = "saturated"
	// Missing: not read at one end or both (not exposed, unreadable).
	Missing DeltaState = "missing"
)

// Delta is one counter's change over a window.
type Delta struct {
	Counter string     `json:"counter"` // "counters/symbol_error"
	State   DeltaState `json:"state"`
	From    uint64     `json:"from"`
	To      uint64     `json:"to"`
	// Change is To-From when counted; the events at least when reset
	// (To: what it counted since it was cleared) or saturated; 0 when
	// missing.
	Change uint64 `json:"change"`
	// Why says what the state means for this counter (the reason it is
	// missing, the limit it reached).
	Why string `json:"why,omitempty"`
	// Gone is set when the counter was read at the start and its file is
	// not there at the end: the device or port went away within the window
	// (fell off the bus, driver unbound), or the counters with it.
	Gone bool `json:"gone,omitempty"`
}

// DeviceKind is what a Device is.
type DeviceKind string

// Device kinds.
const (
	PortDevice DeviceKind = "rdma-port"
	PCIDevice  DeviceKind = "pci"
)

// Device is something whose counters a sample read: an RDMA port or a PCI
// function.
type Device struct {
	Kind DeviceKind `json:"kind"`
	// Name is the port as "mlx5_0/1" or the function's PCI address.
	Name string `json:"name"`
	// Label is how messages name it: "mlx5_0 port 1",
	// "0000:18:00.0 (GPU0)", "0000:17:00.0 (bridge)".
	Label string `json:"label"`
	// Medium is what its correctable errors are judged against:
	// "InfiniBand" or "Ethernet" (a port's link layer; "" when unknown),
	// "PCIe" for a function.
	Medium string `json:"medium"`
	// Dir is where its counters were read, under the root.
	Dir string `json:"dir"`
}

// DeviceDeltas is one device's counter changes over one window, and the
// traffic that crossed it.
type DeviceDeltas struct {
	Device Device `json:"device"`
	// Traffic are the links that carried traffic through the device in the
	// window, with their bytes.
	Traffic []Traffic `json:"traffic,omitempty"`
	// Bits is how many bits the device's receivers are taken to have seen
	// in the window, and BitsFrom where that number comes from: a port's
	// own received-data counter ("counters/port_rcv_data", in 4-byte
	// words), else the schedule. A PCI function's bits are the most any
	// one link through it carried ("schedule (largest link)"): one
	// transfer may be named under several links (a GDR loopback is its
	// gpu-nic path and its rdma port), so summing could only overstate them.
	Bits     float64 `json:"bits"`
	BitsFrom string  `json:"bits_from,omitempty"`
	// Note says what the reader of the bits should know (a port that
	// received much less than the schedule put on it).
	Note   string  `json:"note,omitempty"`
	Deltas []Delta `json:"deltas"`
}

// Delta is the change of one counter, nil when the device has none.
func (d *DeviceDeltas) Delta(counter string) *Delta {
	for i := range d.Deltas {
		if d.Deltas[i].Counter == counter {
			return &d.Deltas[i]
		}
	}
	return nil
}

// WindowDeltas are one window's deltas.
type WindowDeltas struct {
	Index   int            `json:"index"` // 0-based; messages count from 1
	Name    string         `json:"name"`  // "window 1 (12:00:00–12:05:00)"
	Window  Window         `json:"window"`
	Devices []DeviceDeltas `json:"devices"`
	// Unmeasured are links that carried traffic in the window through no
	// device whose counters were read (an NVLink whose counters were not
	// read at both ends: Series.AddNVLinks).
	Unmeasured []Traffic `json:"unmeasured,omitempty"`
	// NVLinksDown are the NVLinks up at the baseline and down at the
	// window's end (Series.AddNVLinks).
	NVLinksDown []NVLinkDown `json:"nvlinks_down,omitempty"`
}

// Moved is a counter that counted before the workload started.
type Moved struct {
	Device Device `json:"device"`
	Delta  Delta  `json:"delta"`
	// Between names the two baseline samples it moved between; "" when
	// it is the first baseline's value (counted since boot or since the
	// counters were last cleared).
	Between string `json:"between,omitempty"`
}

// Series is a burn-in's counters, window by window.
type Series struct {
	Windows []WindowDeltas `json:"windows"`
	// Before are the judged counters that were not zero in the first
	// baseline sample, or moved between baseline samples: reported, never
	// judged.
	Before []Moved `json:"before,omitempty"`
	// Unsampled are the windows (0-based) with no end sample (a burn-in
	// cut short): not judged.
	Unsampled []int `json:"unsampled,omitempty"`
}

// Attribute computes every window's counter deltas and the links that carried
// traffic through each device. baseline are the samples taken before the
// workload (at least one; the last is the first window's start), ends the
// sample at each window's end, in order; fewer ends than windows leaves the
// rest unsampled. Every reading must fall between the windows it separates
// (a reading taken while traffic still flowed would split that traffic's
// errors between two windows); an error names the sample, the device and
// the window.
func Attribute(h *topology.Host, s Schedule, baseline, ends []*cf.Sample) (*Series, error) {
	if err := s.Validate(h); err != nil {
		return nil, err
	}
	if len(baseline) == 0 {
		return nil, fmt.Errorf("no baseline sample: the counters before the workload are needed to tell its errors from earlier ones")
	}
	if len(ends) > len(s.Windows) {
		return nil, fmt.Errorf("%d end samples for %d windows", len(ends), len(s.Windows))
	}
	var prevDone time.Time
	for j, b := range baseline {
		if err := readBetween(b, fmt.Sprintf("baseline sample %d", j+1), prevDone, s.Windows[0].Start); err != nil {
			return nil, err
		}
		prevDone = lastRead(b)
	}
	for i, e := range ends {
		var next time.Time
		if i+1 < len(s.Windows) {
			next = s.Windows[i+1].Start
		}
		if err := readBetween(e, fmt.Sprintf("the end sample of %s", s.Name(i)), s.Windows[i].End, next); err != nil {
			return nil, err
		}
	}
	a := attributor{h: h, devs: devices(h), paths: map[Link][]string{}}
	out := &Series{Windows: []WindowDeltas{}}
	out.Before = a.before(baseline)
	from := baseline[len(baseline)-1]
	for i, to := range ends {
		out.Windows = append(out.Windows, a.window(s, i, from, to))
		from = to
	}
	for i := len(ends); i < len(s.Windows); i++ {
		out.Unsampled = append(out.Unsampled, i)
	}
	return out, nil
}

// readBetween checks that every reading of a sample started at or after
// notBefore and ended at or before notAfter (either zero: no bound).
func readBetween(s *cf.Sample, name string, notBefore, notAfter time.Time) error {
	if s == nil {
		return fmt.Errorf("%s: no sample", name)
	}
	check := func(who string, r *cf.Reading) error {
		if r.ReadAt.IsZero() || r.ReadDone.IsZero() {
			return fmt.Errorf("%s: %s has no read time", name, who)
		}
		if !notBefore.IsZero() && r.ReadAt.Before(notBefore) {
			return fmt.Errorf("%s: %s was read at %s, before %s: its counters would miss traffic of the window before", name, who, stamp(r.ReadAt), stamp(notBefore))
		}
		if !notAfter.IsZero() && r.ReadDone.After(notAfter) {
			return fmt.Errorf("%s: %s was read until %s, after the next window started at %s: its counters would take in that window's traffic", name, who, stamp(r.ReadDone), stamp(notAfter))
		}
		return nil
	}
	for i := range s.Ports {
		if err := check(s.Ports[i].Key(), &s.Ports[i].Reading); err != nil {
			return err
		}
	}
	for i := range s.Functions {
		if err := check(s.Functions[i].Address, &s.Functions[i].Reading); err != nil {
			return err
		}
	}
	return nil
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// lastRead is when a sample's last reading ended.
func lastRead(s *cf.Sample) time.Time {
	var t time.Time
	for i := range s.Ports {
		if s.Ports[i].ReadDone.After(t) {
			t = s.Ports[i].ReadDone
		}
	}
	for i := range s.Functions {
		if s.Functions[i].ReadDone.After(t) {
			t = s.Functions[i].ReadDone
		}
	}
	return t
}

// attributor holds what every window shares: the node's devices and which
// devices each link's traffic crosses.
type attributor struct {
	h     *topology.Host
	devs  map[string]Device // by Device.Name
	paths map[Link][]string
}

// devices names every port and PCI function of the node as messages show them.
func devices(h *topology.Host) map[string]Device {
	out := map[string]Device{}
	for _, n := range h.NICs {
		for _, p := range n.Ports {
			k := cf.PortKey(n.Name, p.Number)
			out[k] = Device{Kind: PortDevice, Name: k, Label: fmt.Sprintf("%s port %d", n.Name, p.Number), Medium: p.LinkLayer}
		}
	}
	for _, d := range h.Devices {
		label := d.Address + " (bridge)"
		if !d.IsBridge() {
			label = d.Address
		}
		if g := h.GPUByAddress(d.Address); g != nil {
			label = fmt.Sprintf("%s (GPU%d)", d.Address, g.Index)
		}
		for _, n := range h.NICs {
			if n.Dev == d {
				label = fmt.Sprintf("%s (%s)", d.Address, n.Name)
			}
		}
		out[d.Address] = Device{Kind: PCIDevice, Name: d.Address, Label: label, Medium: "PCIe", Dir: d.SysPath}
	}
	return out
}

// device is the Device of a reading; one the node model does not know (a
// sample from another node) is named by what the sample says.
func (a *attributor) device(kind DeviceKind, name, dir string) Device {
	d, ok := a.devs[name]
	if !ok || d.Kind != kind {
		d = Device{Kind: kind, Name: name, Label: name}
		if kind == PCIDevice {
			d.Medium = "PCIe"
		}
	}
	d.Dir = dir
	return d
}

// path is the devices (by name) whose counters see a link's traffic: an rdma
// port and its NIC's PCIe link; the functions at either end of every PCIe link
// a GPU's path crosses; nothing for NVLink (its counters are the GPU
// readings', which Series.AddNVLinks attributes).
func (a *attributor) path(l Link) []string {
	if p, ok := a.paths[l]; ok {
		return p
	}
	var devs []*topology.Device
	dev := func(addr string) *topology.Device {
		if g := a.h.GPUByAddress(addr); g != nil {
			return g.Dev
		}
		return nil
	}
	var names []string
	switch l.Kind {
	case RDMAPort:
		names = append(names, cf.PortKey(l.NIC, l.Num))
		if n := a.h.NICByName(l.NIC); n != nil && n.Dev != nil {
			devs = append(devs, n.Dev)
			if p := n.Dev.ParentDevice(); p != nil && physical(n.Dev, p) {
				devs = append(devs, p)
			}
		}
	case GPUNIC:
		if n := a.h.NICByName(l.NIC); n != nil {
			devs = crossed(a.h, dev(l.GPU), n.Dev)
		}
	case GPUHost:
		devs = crossed(a.h, dev(l.GPU), nil)
	case GPUPeer:
		devs = crossed(a.h, dev(l.GPU), dev(l.Peer))
	}
	for _, d := range devs {
		if !slices.Contains(names, d.Address) {
			names = append(names, d.Address)
		}
	}
	a.paths[l] = names
	return names
}

// physical reports whether a device and its parent are joined by a PCIe
// link: every parent but a switch's upstream port above its own downstream
// ports (that hop is inside the switch).
func physical(d, parent *topology.Device) bool {
	return !(parent.PortType == pci.PortUpstream && d.PortType == pci.PortDownstream)
}

// crossed lists the functions at either end of every PCIe link that traffic
// between a and b crosses (b nil: between a and the root complex), a's side
// first, from a upwards. Errors on a link may be counted at either end
// (the kernel's AER statistics are "as seen by" each device), so both ends
// are attributed.
func crossed(h *topology.Host, a, b *topology.Device) []*topology.Device {
	if a == nil {
		return nil
	}
	var out []*topology.Device
	add := func(d *topology.Device) {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	up := func(from *topology.Device, other *topology.Device) {
		stop := map[*topology.Device]bool{}
		if other != nil {
			stop[other] = true
			for _, p := range h.PathToRoot(other) {
				stop[p] = true
			}
		}
		for x := from; x != nil && !stop[x]; x = x.ParentDevice() {
			p := x.ParentDevice()
			if p == nil {
				break
			}
			if physical(x, p) {
				add(x)
				add(p)
			}
		}
	}
	up(a, b)
	if b != nil {
		up(b, a)
	}
	return out
}

// window computes one window's deltas.
func (a *attributor) window(s Schedule, i int, from, to *cf.Sample) WindowDeltas {
	w := s.Windows[i]
	out := WindowDeltas{Index: i, Name: s.Name(i), Window: w, Devices: []DeviceDeltas{}}
	through := map[string][]Traffic{}
	for _, t := range w.Traffic {
		if t.Bytes == 0 {
			continue
		}
		for _, d := range a.path(t.Link) {
			through[d] = append(through[d], t)
		}
	}
	seen := map[string]bool{}
	for _, p := range unionPorts(from, to) {
		fr, tr := portReading(from.Port(p.Device, p.Port)), portReading(to.Port(p.Device, p.Port))
		dd := DeviceDeltas{Device: a.device(PortDevice, p.Key(), dirOf(fr, tr)), Traffic: through[p.Key()]}
		dd.Deltas = deltas(fr, tr, portJudged)
		a.portBits(&dd, PortLink(p.Device, p.Port))
		seen[p.Key()] = true
		out.Devices = append(out.Devices, dd)
	}
	for _, addr := range unionFunctions(from, to) {
		fr, tr := functionReading(from.Function(addr)), functionReading(to.Function(addr))
		dd := DeviceDeltas{Device: a.device(PCIDevice, addr, dirOf(fr, tr)), Traffic: through[addr]}
		dd.Deltas = deltas(fr, tr, functionJudged)
		for _, t := range dd.Traffic {
			if b := float64(t.Bytes) * 8; b > dd.Bits {
				dd.Bits, dd.BitsFrom = b, "schedule (largest link)"
			}
		}
		seen[addr] = true
		out.Devices = append(out.Devices, dd)
	}
	for _, t := range w.Traffic {
		if t.Bytes == 0 {
			continue
		}
		measured := false
		for _, d := range a.path(t.Link) {
			measured = measured || seen[d]
		}
		if !measured {
			out.Unmeasured = append(out.Unmeasured, t)
		}
	}
	return out
}

// portBits sets a port's bits: its own received-data counter when that
// counted exactly (even nothing: traffic the schedule put on the port that
// the port did not receive never crossed its link), else the schedule's
// bytes for its link. When the port received less than half of what the
// schedule put on it, Note says so.
func (a *attributor) portBits(dd *DeviceDeltas, l Link) {
	var sched float64
	for _, t := range dd.Traffic {
		if t.Link == l {
			sched = float64(t.Bytes) * 8
		}
	}
	if d := dd.Delta(cf.GroupPMA + "/port_rcv_data"); d != nil && d.State == Counted {
		dd.Bits = float64(d.Change) * cf.DataWordBytes * 8
		dd.BitsFrom = "counters/port_rcv_data (4-byte words)"
		if sched > 2*dd.Bits {
			dd.Note = fmt.Sprintf("the port received %s while the schedule put %s on it: traffic looped back inside the NIC may not cross the link",
				bytesText(dd.Bits/8), bytesText(sched/8))
		}
		return
	}
	if sched > 0 {
		dd.Bits, dd.BitsFrom = sched, "schedule"
	}
}

func portReading(p *cf.Port) *cf.Reading {
	if p == nil {
		return nil
	}
	return &p.Reading
}

func functionReading(f *cf.Function) *cf.Reading {
	if f == nil {
		return nil
	}
	return &f.Reading
}

func dirOf(a, b *cf.Reading) string {
	if b != nil {
		return b.Dir
	}
	if a != nil {
		return a.Dir
	}
	return ""
}

// unionPorts are the ports of to, then those only in from.
func unionPorts(from, to *cf.Sample) []cf.Port {
	out := slices.Clone(to.Ports)
	for _, p := range from.Ports {
		if to.Port(p.Device, p.Port) == nil {
			out = append(out, p)
		}
	}
	return out
}

// unionFunctions are the functions of to, then those only in from.
func unionFunctions(from, to *cf.Sample) []string {
	var out []string
	for _, f := range to.Functions {
		out = append(out, f.Address)
	}
	for _, f := range from.Functions {
		if to.Function(f.Address) == nil {
			out = append(out, f.Address)
		}
	}
	return out
}

// deltas are the changes of every counter either reading has, and of the
// judged counters even where neither has them (missing then), by name.
func deltas(from, to *cf.Reading, judged []string) []Delta {
	names := slices.Clone(judged)
	for _, r := range []*cf.Reading{from, to} {
		if r != nil {
			for k := range r.Values {
				names = append(names, k)
			}
		}
	}
	sort.Strings(names)
	names = slices.Compact(names)
	out := make([]Delta, 0, len(names))
	for _, n := range names {
		out = append(out, diff(from, to, n))
	}
	return out
}

// diff is one counter's change between two readings.
func diff(from, to *cf.Reading, name string) Delta {
	d := Delta{Counter: name}
	fv, fwhy, fok := from.Get(name)
	tv, twhy, tok := to.Get(name)
	d.From, d.To = fv, tv
	if !fok || !tok {
		d.State = Missing
		var why []string
		if !fok {
			why = append(why, "at the start: "+fwhy)
		}
		if !tok {
			why = append(why, "at the end: "+twhy)
		}
		d.Why = strings.Join(why, "; ")
		d.Gone = fok && twhy == cf.NotExposed
		return d
	}
	sat := cf.Saturation(name)
	switch {
	case tv < fv:
		d.State, d.Change = Reset, tv
		d.Why = fmt.Sprintf("went down from %d to %d: cleared, wrapped or rebooted within the window; at least %d since", fv, tv, tv)
	case sat > 0 && fv == sat:
		d.State, d.Change = Saturated, tv-fv
		d.Why = fmt.Sprintf("already at its maximum %d: it cannot count (clear the port's counters before a burn-in)", sat)
	case sat > 0 && tv == sat:
		d.State, d.Change = Saturated, tv-fv
		d.Why = fmt.Sprintf("reached its maximum %d: at least %d", sat, tv-fv)
	default:
		d.State, d.Change = Counted, tv-fv
	}
	return d
}

// before lists the judged counters that were not zero in the first baseline
// sample (counted since boot or since the counters were last cleared), then
// those that moved between consecutive baseline samples.
func (a *attributor) before(baseline []*cf.Sample) []Moved {
	var out []Moved
	judged := func(kind DeviceKind, name string) bool { return ClassOf(kind, name) != Info }
	first := baseline[0]
	for i := range first.Ports {
		p := &first.Ports[i]
		for _, n := range p.Names() {
			if v := p.Values[n]; v > 0 && judged(PortDevice, n) {
				out = append(out, Moved{Device: a.device(PortDevice, p.Key(), p.Dir),
					Delta: Delta{Counter: n, State: Counted, To: v, Change: v, Why: "counted since boot or since the counters were last cleared"}})
			}
		}
	}
	for i := range first.Functions {
		f := &first.Functions[i]
		for _, n := range f.Names() {
			if v := f.Values[n]; v > 0 && judged(PCIDevice, n) {
				out = append(out, Moved{Device: a.device(PCIDevice, f.Address, f.Dir),
					Delta: Delta{Counter: n, State: Counted, To: v, Change: v, Why: "counted since boot"}})
			}
		}
	}
	for j := 1; j < len(baseline); j++ {
		from, to := baseline[j-1], baseline[j]
		between := fmt.Sprintf("baseline samples %d and %d", j, j+1)
		moved := func(dev Device, ds []Delta) {
			for _, d := range ds {
				if judged(dev.Kind, d.Counter) && (d.Change > 0 || d.State == Reset || d.State == Saturated) {
					out = append(out, Moved{Device: dev, Delta: d, Between: between})
				}
			}
		}
		for _, p := range unionPorts(from, to) {
			fr, tr := portReading(from.Port(p.Device, p.Port)), portReading(to.Port(p.Device, p.Port))
			moved(a.device(PortDevice, p.Key(), dirOf(fr, tr)), deltas(fr, tr, nil))
		}
		for _, addr := range unionFunctions(from, to) {
			fr, tr := functionReading(from.Function(addr)), functionReading(to.Function(addr))
			moved(a.device(PCIDevice, addr, dirOf(fr, tr)), deltas(fr, tr, nil))
		}
	}
	return out
}
