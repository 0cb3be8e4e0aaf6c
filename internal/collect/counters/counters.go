// Package counters reads one sample of a node's error counters through the
// door (machine.Root): every RDMA port's counters/ and hw_counters/, and the
// AER statistics of every GPU, every RDMA NIC's PCI function and every bridge
// above them (which covers each GPU→NIC path, and each GPU's and NIC's link to
// the host). What it fills is facts/counters.Sample; a burn-in reads one
// before its workload and one at every window boundary, and
// internal/burn judges them.
//
// A counter that is not there is recorded as not exposed, one that cannot be
// read or parsed with its error; neither is ever a zero.
package counters

import (
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"time"

	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// maxFile bounds one counter or AER file (a page in sysfs).
const maxFile = 64 << 10

// Read reads one sample of h's counters through root. now stamps each
// port's and function's reading (time.Now when nil). It never fails: what
// could not be read is recorded in each reading's Missing.
func Read(root machine.Root, h *topology.Host, label string, now func() time.Time) *cf.Sample {
	if now == nil {
		now = time.Now
	}
	s := &cf.Sample{Label: label, Ports: []cf.Port{}, Functions: []cf.Function{}}
	for _, n := range h.NICs {
		for _, p := range n.Ports {
			s.Ports = append(s.Ports, readPort(root, n.Name, p.Number, now))
		}
	}
	for _, f := range Functions(h) {
		s.Functions = append(s.Functions, readFunction(root, f, now))
	}
	return s
}

// Function is a PCI function whose AER statistics a sample reads, and why.
type Function struct {
	Dev  *topology.Device
	Role string // "gpu", "nic", "bridge"
}

// Functions are the PCI functions a sample reads, in h.Devices order: every
// GPU, every RDMA NIC on a PCI function, and every bridge above either.
func Functions(h *topology.Host) []Function {
	role := map[*topology.Device]string{}
	mark := func(d *topology.Device, r string) {
		if d == nil {
			return
		}
		if _, ok := role[d]; !ok || r != "bridge" {
			role[d] = r
		}
		for _, up := range h.PathToRoot(d) {
			if _, ok := role[up]; !ok {
				role[up] = "bridge"
			}
		}
	}
	for _, g := range h.GPUs {
		mark(g.Dev, "gpu")
	}
	for _, n := range h.NICs {
		mark(n.Dev, "nic")
	}
	var out []Function
	for _, d := range h.Devices {
		if r, ok := role[d]; ok {
			out = append(out, Function{Dev: d, Role: r})
		}
	}
	return out
}

// PortDir is the root-relative directory of an RDMA port.
func PortDir(dev string, port int) string {
	return "sys/class/infiniband/" + dev + "/ports/" + strconv.Itoa(port)
}

func readPort(root machine.Root, dev string, port int, now func() time.Time) cf.Port {
	p := cf.Port{Device: dev, Port: port}
	p.Dir = PortDir(dev, port)
	p.ReadAt = now()
	readGroup(root, &p.Reading, cf.GroupPMA, cf.PMACounters)
	readGroup(root, &p.Reading, cf.GroupHW, cf.HWCounters)
	p.ReadDone = now()
	return p
}

// readGroup reads the named files of one counter directory of r.Dir. A
// directory that is not there makes the whole group not exposed; a name it
// does not list, that counter.
func readGroup(root machine.Root, r *cf.Reading, group string, names []string) {
	dir := r.Dir + "/" + group
	ents, err := root.ReadDir(dir)
	if err != nil {
		r.Miss(group, why(err))
		return
	}
	have := make([]string, 0, len(ents))
	for _, e := range ents {
		have = append(have, e.Name())
	}
	for _, c := range names {
		name := group + "/" + c
		if !slices.Contains(have, c) {
			r.Miss(name, cf.NotExposed)
			continue
		}
		b, err := root.ReadFileLimit(dir+"/"+c, maxFile)
		if err != nil {
			r.Miss(name, why(err))
			continue
		}
		v, err := cf.ParseValue(root.Display(dir+"/"+c), string(b))
		if err != nil {
			r.Miss(name, err.Error())
			continue
		}
		r.Set(name, v)
	}
}

func readFunction(root machine.Root, f Function, now func() time.Time) cf.Function {
	out := cf.Function{Address: f.Dev.Address, Role: f.Role}
	out.Dir = f.Dev.SysPath
	out.ReadAt = now()
	for _, file := range cf.AERFiles {
		rel := f.Dev.SysPath + "/" + file
		b, err := root.ReadFileLimit(rel, maxFile)
		if err != nil {
			out.Miss(file, why(err))
			continue
		}
		fields, err := cf.ParseAER(file, root.Display(rel), string(b))
		if err != nil {
			out.Miss(file, err.Error())
			continue
		}
		for k, v := range fields {
			out.Set(file+"/"+k, v)
		}
	}
	out.ReadDone = now()
	return out
}

// why is a read error as a Missing reason: NotExposed for a file or
// directory that is not there, else the error.
func why(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return cf.NotExposed
	}
	return err.Error()
}
