package diff

import (
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// versions: the kernel, the driver, the libraries, the NICs' firmware.
// A version that changed is a change, not a loss; a library that loaded
// and now does not is worse.
func (c *comparer) versions(o, n *dossier.Report) {
	oi, ni := o.Inventory, n.Inventory
	const why = "version changed"
	c.field(SectionVersions, "kernel", "", oi.Kernel, ni.Kernel, Changed, why)
	c.field(SectionVersions, "driver", "", oi.Driver, ni.Driver, Changed, why)
	c.field(SectionVersions, "CUDA driver API", "", oi.CUDADriver, ni.CUDADriver, Changed, why)
	c.field(SectionVersions, "NVML", "", oi.NVML, ni.NVML, Changed, why)
	c.field(SectionVersions, "rdma-core", "", oi.RDMACore, ni.RDMACore, Changed, why)
	c.field(SectionVersions, "mlx5_core", "", oi.MLX5Core, ni.MLX5Core, Changed, why)
	c.library("CUDA runtime", oi.CUDARuntime, ni.CUDARuntime)
	c.library("NCCL", oi.NCCL, ni.NCCL)
	c.field(SectionVersions, "gdrcheck", "", o.Run.Version+" ("+o.Run.Commit+")", n.Run.Version+" ("+n.Run.Commit+")", Changed, "another build of gdrcheck wrote the report")
	on, nn := nicsByKey(oi.NICs), nicsByKey(ni.NICs)
	for _, k := range sortedKeys(on, nn) {
		a, okA := on[k]
		b, okB := nn[k]
		if okA && okB {
			c.field(SectionVersions, nicSubject(b), "firmware", a.Firmware, b.Firmware, Changed, "firmware changed")
		}
	}
}

func (c *comparer) library(name string, a, b dossier.Library) {
	state := func(l dossier.Library) string {
		switch {
		case !l.Probed:
			return ""
		case l.Loaded:
			return l.Version
		}
		return "not loaded"
	}
	sa, sb := state(a), state(b)
	effect, why := Changed, "version changed"
	switch {
	case a.Probed && b.Probed && a.Loaded && !b.Loaded:
		effect, why = Worse, "it no longer loads: "+value(b.Error)
	case a.Probed && b.Probed && !a.Loaded && b.Loaded:
		effect, why = Better, "it loads now"
	case !a.Probed || !b.Probed:
		why = "probed in one run only"
	}
	c.field(SectionVersions, name, "", sa, sb, effect, why)
}

// settings: the run's profile and site profile, whether it finished, and
// the environment the checks read (their "environment" evidence).
func (c *comparer) settings(o, n *dossier.Report) {
	c.field(SectionSettings, "profile", "", o.Profile, n.Profile, Changed, "another benchmark profile: other sizes and collectives")
	c.field(SectionSettings, "expect", "", o.Expect, n.Expect, Changed, "judged against another site profile")
	complete := func(r *dossier.Report) string {
		if r.Complete {
			return "complete"
		}
		if r.Interrupted != "" {
			return "incomplete (" + r.Interrupted + ")"
		}
		return "incomplete"
	}
	if o.Complete && !n.Complete {
		// NEW did not finish: what it lacks was not looked at, so an old
		// failure absent from it is no fix.
		c.field(SectionSettings, "run", "", complete(o), complete(n), Worse, "NEW is incomplete: what it did not run is not compared, and an old failure missing from it is not a fix")
	} else {
		c.field(SectionSettings, "run", "", complete(o), complete(n), Changed, "a run cut short measured less: what it lacks is listed as not compared")
	}
	oe, ne := environment(o.Results), environment(n.Results)
	for _, k := range sortedKeys(oe, ne) {
		c.field(SectionSettings, "environment "+k, "", oe[k], ne[k], Changed, "the environment the checks read changed")
	}
}

// environment is the NAME=VALUE evidence of the checks, by name.
func environment(rs []result.Result) map[string]string {
	env := map[string]string{}
	for _, r := range rs {
		for _, e := range r.Evidence {
			if e.Source != "environment" {
				continue
			}
			if k, v, ok := strings.Cut(e.Value, "="); ok {
				env[k] = v
			}
		}
	}
	return env
}

func nicKey(n dossier.NIC) string {
	if n.BusID != "" {
		return n.BusID
	}
	return n.Name
}

func nicsByKey(ns []dossier.NIC) map[string]dossier.NIC {
	m := make(map[string]dossier.NIC, len(ns))
	for _, n := range ns {
		m[nicKey(n)] = n
	}
	return m
}

func nicSubject(n dossier.NIC) string {
	if n.BusID != "" && n.BusID != n.Name {
		return "NIC " + n.BusID + " (" + n.Name + ")"
	}
	return "NIC " + n.Name
}

func gpusByBus(gs []dossier.GPU) map[string]dossier.GPU {
	m := make(map[string]dossier.GPU, len(gs))
	for _, g := range gs {
		m[g.BusID] = g
	}
	return m
}

func gpuSubject(g dossier.GPU) string { return fmt.Sprintf("GPU %s (GPU%d)", g.BusID, g.Index) }

// topology: GPUs and NICs added or lost (by bus id), their links, NVLinks,
// ports, and the GDR state of each GPU's data path.
func (c *comparer) topology(o, n *dossier.Report) {
	og, ng := gpusByBus(o.Inventory.GPUs), gpusByBus(n.Inventory.GPUs)
	presence(c, og, ng, "GPU", func(_ string, g dossier.GPU) string { return gpuSubject(g) }, func(g dossier.GPU) string { return value(g.Name) }, func(_ string, a, b dossier.GPU) { c.gpu(a, b) })
	on, nn := nicsByKey(o.Inventory.NICs), nicsByKey(n.Inventory.NICs)
	presence(c, on, nn, "NIC", func(_ string, x dossier.NIC) string { return nicSubject(x) }, func(x dossier.NIC) string { return value(x.HCAType) }, func(_ string, a, b dossier.NIC) { c.nic(a, b) })
	if a, b := len(o.Inventory.NVSwitches), len(n.Inventory.NVSwitches); a != b {
		c.add(Change{Section: SectionTopology, Subject: "NVSwitches", Field: "count", Old: fmt.Sprint(a), New: fmt.Sprint(b), Effect: byRank(b, a), Reason: say(byRank(b, a), "NVSwitches lost", "NVSwitches added", "")})
	}
	c.dataPaths(o.Topology.DataPaths, n.Topology.DataPaths)
	c.gpuLinks(o, n)
}

func (c *comparer) gpu(a, b dossier.GPU) {
	s := gpuSubject(b)
	c.field(SectionTopology, s, "name", a.Name, b.Name, Changed, "another GPU model in this slot")
	c.field(SectionTopology, s, "serial", a.Serial, b.Serial, Changed, "another GPU in this slot (or another node)")
	if a.PCIe.CurWidth > 0 && b.PCIe.CurWidth > 0 {
		c.field(SectionTopology, s, "PCIe width", fmt.Sprintf("x%d", a.PCIe.CurWidth), fmt.Sprintf("x%d", b.PCIe.CurWidth), byRank(b.PCIe.CurWidth, a.PCIe.CurWidth), say(byRank(b.PCIe.CurWidth, a.PCIe.CurWidth), "the GPU's PCIe link trained narrower", "the GPU's PCIe link trained wider", ""))
	}
	if a.PCIe.CurSpeed > 0 && b.PCIe.CurSpeed > 0 {
		c.field(SectionTopology, s, "PCIe speed", a.PCIe.CurSpeed.String(), b.PCIe.CurSpeed.String(), byRank(int(b.PCIe.CurSpeed*10), int(a.PCIe.CurSpeed*10)), say(byRank(int(b.PCIe.CurSpeed*10), int(a.PCIe.CurSpeed*10)), "the GPU's PCIe link trained slower", "the GPU's PCIe link trained faster", ""))
	}
	if a.NVLinksActive >= 0 && b.NVLinksActive >= 0 {
		c.field(SectionTopology, s, "NVLinks active", fmt.Sprint(a.NVLinksActive), fmt.Sprint(b.NVLinksActive), byRank(b.NVLinksActive, a.NVLinksActive), say(byRank(b.NVLinksActive, a.NVLinksActive), "fewer active NVLinks", "more active NVLinks", ""))
	} else if a.NVLinksActive >= 0 && b.NVLinksActive < 0 {
		c.field(SectionTopology, s, "NVLinks active", fmt.Sprint(a.NVLinksActive), "unknown", Changed, "NVLink state no longer read")
	}
}

// portRank orders port states: higher is worse.
func portRank(state string) int {
	if strings.EqualFold(state, "ACTIVE") {
		return 0
	}
	if state == "" {
		return -1
	}
	return 1
}

func (c *comparer) nic(a, b dossier.NIC) {
	s := nicSubject(b)
	c.field(SectionTopology, s, "HCA type", a.HCAType, b.HCAType, Changed, "another NIC model in this slot")
	op, np := map[string]dossier.Port{}, map[string]dossier.Port{}
	for _, p := range a.Ports {
		op[fmt.Sprint(p.Number)] = p
	}
	for _, p := range b.Ports {
		np[fmt.Sprint(p.Number)] = p
	}
	port := func(k string, _ dossier.Port) string { return s + " port " + k }
	presence(c, op, np, "port", port, func(p dossier.Port) string { return p.State }, func(k string, pa, pb dossier.Port) {
		ps := port(k, pa)
		c.field(SectionTopology, ps, "state", pa.State, pb.State, byRank(portRank(pa.State), portRank(pb.State)), say(byRank(portRank(pa.State), portRank(pb.State)), "the port is no longer ACTIVE", "the port is ACTIVE now", "port state changed"))
		c.field(SectionTopology, ps, "physical state", pa.PhysState, pb.PhysState, Changed, "physical port state changed")
		c.field(SectionTopology, ps, "link layer", pa.LinkLayer, pb.LinkLayer, Changed, "link layer changed")
		if pa.RateGbps > 0 && pb.RateGbps > 0 && pa.RateGbps != pb.RateGbps {
			effect := Worse
			if pb.RateGbps > pa.RateGbps {
				effect = Better
			}
			c.add(Change{Section: SectionTopology, Subject: ps, Field: "rate", Old: num(pa.RateGbps) + " Gb/s", New: num(pb.RateGbps) + " Gb/s", Delta: pct(pa.RateGbps, pb.RateGbps), Effect: effect, Reason: "port rate changed"})
		}
		if pa.MTU > 0 && pb.MTU > 0 {
			c.field(SectionTopology, ps, "MTU", fmt.Sprint(pa.MTU), fmt.Sprint(pb.MTU), Changed, "MTU changed")
		}
	})
}

// presence compares two inventories of one kind keyed alike: one lost is
// worse, one added better (named by subject, shown by shown), one in both
// is compared by both.
func presence[T any](c *comparer, om, nm map[string]T, what string, subject func(string, T) string, shown func(T) string, both func(k string, a, b T)) {
	for _, k := range sortedKeys(om, nm) {
		a, okA := om[k]
		b, okB := nm[k]
		switch {
		case !okB:
			c.add(Change{Section: SectionTopology, Subject: subject(k, a), Old: shown(a), New: "(absent)", Effect: Worse, Reason: what + " lost"})
		case !okA:
			c.add(Change{Section: SectionTopology, Subject: subject(k, b), Old: "(absent)", New: shown(b), Effect: Better, Reason: what + " added"})
		default:
			both(k, a, b)
		}
	}
}

// gdrRank orders GDR states: higher is worse.
func gdrRank(s string) int {
	switch s {
	case dossier.GDREnabled:
		return 0
	case dossier.GDRPathOnly:
		return 1
	case dossier.GDRNoPath, dossier.GDRNoNIC:
		return 2
	}
	return -1
}

func (c *comparer) dataPaths(a, b []dossier.DataPath) {
	om, nm := map[string]dossier.DataPath{}, map[string]dossier.DataPath{}
	for _, p := range a {
		om[p.GPUBusID] = p
	}
	for _, p := range b {
		nm[p.GPUBusID] = p
	}
	for _, k := range sortedKeys(om, nm) {
		pa, okA := om[k]
		pb, okB := nm[k]
		if !okA || !okB {
			continue // the GPU itself was added or lost
		}
		s := fmt.Sprintf("data path GPU %s (GPU%d)", k, pb.GPU)
		c.field(SectionTopology, s, "GDR", gdrText(pa), gdrText(pb), byRank(gdrRank(pa.GDR), gdrRank(pb.GDR)), say(byRank(gdrRank(pa.GDR), gdrRank(pb.GDR)), "the GPU's pairing lost GPU Direct RDMA", "the GPU's pairing gained GPU Direct RDMA", "GPU Direct RDMA state of the GPU's pairing changed"))
		nic := func(p dossier.DataPath) string {
			if p.NIC == "" {
				return ""
			}
			return fmt.Sprintf("%s/%d (%s)", p.NIC, p.Port, p.Level)
		}
		c.field(SectionTopology, s, "NIC", nic(pa), nic(pb), Changed, "the GPU pairs with another NIC")
	}
}

func gdrText(p dossier.DataPath) string {
	if p.GDRWhy != "" && p.GDR != dossier.GDREnabled {
		return p.GDR + ": " + p.GDRWhy
	}
	return p.GDR
}

// gpuLinks compares the NVLink count of each GPU pair, named by bus ids
// (indices shift when a GPU is lost).
func (c *comparer) gpuLinks(o, n *dossier.Report) {
	links := func(r *dossier.Report) map[string]dossier.GPULink {
		bus := map[int]string{}
		for _, g := range r.Inventory.GPUs {
			bus[g.Index] = g.BusID
		}
		m := map[string]dossier.GPULink{}
		for _, l := range r.Topology.GPULinks {
			x, y := bus[l.A], bus[l.B]
			if x == "" || y == "" {
				continue
			}
			if y < x {
				x, y = y, x
			}
			m[x+" ↔ "+y] = l
		}
		return m
	}
	om, nm := links(o), links(n)
	for _, k := range sortedKeys(om, nm) {
		la, okA := om[k]
		lb, okB := nm[k]
		if !okA || !okB || la.NVLinks < 0 || lb.NVLinks < 0 {
			continue
		}
		s := fmt.Sprintf("GPU link %s (GPU%d-GPU%d)", k, lb.A, lb.B)
		c.field(SectionTopology, s, "NVLinks", fmt.Sprintf("%d (%s)", la.NVLinks, la.Level), fmt.Sprintf("%d (%s)", lb.NVLinks, lb.Level), byRank(lb.NVLinks, la.NVLinks), say(byRank(lb.NVLinks, la.NVLinks), "fewer NVLinks between the pair", "more NVLinks between the pair", ""))
	}
}

// checks: the node verdict, and every result's status by source, id and
// subject. A result that went from pass to warn or fail, or a warning or
// failure that is new, is worse; a failure that vanished is better when
// the result is still there and passes, a change when it is absent.
func (c *comparer) checks(o, n *dossier.Report) {
	va, vb := o.Verdict.Status, n.Verdict.Status
	c.field(SectionChecks, "verdict", "", va, vb, byRank(verdictRank(va), verdictRank(vb)), say(byRank(verdictRank(va), verdictRank(vb)), "the node verdict went down", "the node verdict went up", "the node verdict changed"))
	key := func(r result.Result) string {
		k := r.ID + " " + r.Subject
		if r.Source != "" && r.Source != result.SourceCheck {
			k = r.Source + ":" + k
		}
		return k
	}
	index := func(rs []result.Result) map[string]result.Result {
		m := make(map[string]result.Result, len(rs))
		for _, r := range rs {
			m[key(r)] = r
		}
		return m
	}
	om, nm := index(o.Results), index(n.Results)
	for _, k := range sortedKeys(om, nm) {
		a, okA := om[k]
		b, okB := nm[k]
		switch {
		case okA && okB:
			if a.Status == b.Status {
				continue
			}
			effect := byRank(statusRank(a.Status), statusRank(b.Status))
			why := fmt.Sprintf("%s → %s", a.Status, b.Status)
			switch {
			case statusRank(a.Status) < 0 && statusRank(b.Status) > 0:
				effect, why = Worse, "new "+string(b.Status)+" ("+why+")"
			case effect == Changed:
				why += ": judged in one run only"
			}
			c.add(Change{Section: SectionChecks, Subject: k, Field: "status", Old: string(a.Status) + " " + a.Reason, New: string(b.Status) + " " + b.Reason, Effect: effect, Reason: why + reasonSuffix(b)})
		case okB && statusRank(b.Status) > 0:
			c.add(Change{Section: SectionChecks, Subject: k, Old: "(absent)", New: string(b.Status) + " " + b.Reason, Effect: Worse, Reason: "new " + string(b.Status) + reasonSuffix(b)})
		case okA && statusRank(a.Status) > 0:
			c.add(Change{Section: SectionChecks, Subject: k, Old: string(a.Status) + " " + a.Reason, New: "(absent)", Effect: Changed, Reason: "the " + string(a.Status) + " is no longer reported: the result is absent, not passed"})
		}
	}
}

func reasonSuffix(r result.Result) string {
	if r.Message == "" || statusRank(r.Status) <= 0 {
		return ""
	}
	return ": " + r.Message
}

// say picks the reason for an effect.
func say(effect, worse, better, changed string) string {
	switch effect {
	case Worse:
		return worse
	case Better:
		return better
	}
	return changed
}
