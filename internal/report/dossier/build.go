package dossier

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/hw"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// notCollected are the facts an inventory should hold that this release
// does not read.
func notCollected() []string {
	return []string{"GPU VBIOS and InfoROM versions (not read from NVML yet)"}
}

// NewInventory is the inventory of host h with its node facts f (nil:
// none collected).
func NewInventory(h *topology.Host, f *node.Facts) Inventory {
	inv := Inventory{Host: h.Hostname, Kernel: h.Kernel, Root: h.Root, GPUFactsError: h.GPUFactsError,
		GPUs: []GPU{}, NICs: []NIC{}, NVSwitches: []string{}, NotCollected: notCollected()}
	if x := h.GPUFacts; x != nil {
		inv.Driver, inv.CUDADriver, inv.NVML, inv.GPUFactsSource = x.DriverVersion, x.CUDADriverVersion, x.NVMLVersion, x.Source
	}
	if f != nil {
		if f.Libraries != nil {
			inv.CUDARuntime = library(f.Libraries.CUDARuntime)
			inv.NCCL = library(f.Libraries.NCCL)
		}
		inv.RDMACore = strings.TrimSpace(f.RDMACore.Version)
		inv.MLX5Core = strings.TrimSpace(f.MLX5Core.Value)
	}
	for _, d := range h.NVSwitches {
		inv.NVSwitches = append(inv.NVSwitches, d.Address)
	}
	for _, g := range h.GPUs {
		x := GPU{Index: g.Index, BusID: g.Address, Name: g.Name, UUID: g.UUID, NUMA: -1, NVLinksActive: -1, NVLinksTotal: -1}
		if g.Dev != nil {
			x.NUMA, x.PCIe = h.NUMAOf(g.Dev), g.Dev.Link
		}
		if g.Facts != nil {
			x.Serial, x.Architecture, x.MemoryMiB = g.Facts.Serial, g.Facts.Architecture, g.Facts.MemoryMiB
		}
		if spec, ok := hw.GPUByName(g.Name); ok && spec.FormFactor == "SXM" {
			x.NVLinksExpected = spec.NVLinks
		}
		if g.NVLinkKnown {
			x.NVLinksTotal, x.NVLinksActive = len(g.NVLinks), 0
			for _, l := range g.NVLinks {
				if l.Active {
					x.NVLinksActive++
				}
			}
		}
		inv.GPUs = append(inv.GPUs, x)
	}
	for _, n := range h.NICs {
		x := NIC{Name: n.Name, BusID: n.Address, HCAType: n.HCAType, BoardID: n.BoardID, Firmware: n.FWVersion, NodeGUID: n.NodeGUID,
			Driver: n.Driver, NUMA: -1, Ports: []Port{}}
		if n.Dev != nil {
			x.NUMA = h.NUMAOf(n.Dev)
			for _, p := range h.PathToRoot(n.Dev) {
				x.Upstream = append(x.Upstream, fmt.Sprintf("%s (%s)", p.Address, p.PortType))
			}
		}
		for _, p := range n.Ports {
			x.Ports = append(x.Ports, Port{Number: p.Number, State: p.State, PhysState: p.PhysState, LinkLayer: p.LinkLayer,
				RateGbps: p.RateGbps, Rate: p.RateText, NetDev: p.NetDev, MTU: p.MTU})
		}
		inv.NICs = append(inv.NICs, x)
	}
	return inv
}

func library(l node.Library) Library {
	return Library{Probed: true, Loaded: l.Loaded, Version: l.Version, Path: l.Path, Error: l.Error}
}

// evidence indexes what a hop can cite: results by subject, measurements
// by what they ran on, NCCL runs by the transports they saw.
type evidence struct {
	bySubject map[string][]result.Result
	node      []result.Result // subject "node" results of the GDR checks
	copies    []CopyMeasurement
	nccl      []NCCLRun
	// jobs are the included jobs; status is every result's status by its
	// reference (what a job's Results name).
	jobs   []Job
	status map[string]result.Status
}

func newEvidence(rs []result.Result, m Measurements, runs []NCCLRun, jobs []Job) *evidence {
	e := &evidence{bySubject: map[string][]result.Result{}, copies: m.Copies, nccl: runs, jobs: jobs, status: map[string]result.Status{}}
	for _, r := range rs {
		e.status[ResultRef(r)] = r.Status
		e.bySubject[r.Subject] = append(e.bySubject[r.Subject], r)
		if r.Subject == "node" && strings.HasPrefix(r.ID, "gdr.") {
			e.node = append(e.node, r)
		}
	}
	return e
}

// refs collects references and the statuses they carry.
type refs struct {
	ids []string
	sts []result.Status
	// traffic marks the references that are traffic (a measurement, an
	// NCCL run), not configuration read.
	traffic []bool
}

func (r *refs) results(rs ...result.Result) {
	for _, x := range rs {
		r.add(ResultRef(x), x.Status, false)
	}
}

// add cites one reference with the status it carries; traffic when it is
// a measurement or an NCCL run.
func (r *refs) add(id string, st result.Status, traffic bool) {
	r.ids = append(r.ids, id)
	r.sts = append(r.sts, st)
	r.traffic = append(r.traffic, traffic)
}

// proof is how what is cited establishes the hop: failed if anything
// failed; measured if traffic passed (or warned) through it; checked if a
// check passed (or warned); not exercised otherwise (nothing cited, or
// only skips, unknowns and errors: never a proof).
func (r *refs) proof() result.Proof {
	p := result.ProofNotExercised
	for i, st := range r.sts {
		switch {
		case st == result.Fail:
			return result.ProofFailed
		case st != result.Pass && st != result.Warn:
		case r.traffic[i]:
			p = result.ProofMeasured
		case p != result.ProofMeasured:
			p = result.ProofChecked
		}
	}
	return p
}

// merge cites everything o cites.
func (r *refs) merge(o refs) {
	for i, id := range o.ids {
		r.add(id, o.sts[i], o.traffic[i])
	}
}

func (r *refs) subjects(e *evidence, subjects ...string) {
	for _, s := range subjects {
		if s != "" {
			r.results(e.bySubject[s]...)
		}
	}
}

// status is the worst status cited; unknown when nothing was cited (a hop
// nobody judged is not a pass). Skip counts only when everything skipped.
func (r *refs) status() result.Status {
	if len(r.sts) == 0 {
		return result.Unknown
	}
	w := result.Skip
	for _, s := range r.sts {
		if s == result.Skip {
			continue
		}
		if w == result.Skip || s.Severity() < w.Severity() {
			w = s
		}
	}
	return w
}

func (r *refs) hop(kind, name, detail string) Hop {
	ids := r.ids
	if ids == nil {
		ids = []string{}
	}
	return Hop{Kind: kind, Name: name, Detail: detail, Status: r.status(), Proof: r.proof(), Evidence: ids}
}

var gpuPair = regexp.MustCompile(`^GPU\d+-GPU\d+$`)

// NewTopology is the topology section: the summary s of host h, and each
// GPU's data path and links judged from the results rs, the measurements
// m, the NCCL runs and the included jobs (whose results are among rs).
func NewTopology(h *topology.Host, s *topology.Summary, rs []result.Result, m Measurements, runs []NCCLRun, jobs []Job) Topology {
	t := Topology{Summary: s, DataPaths: []DataPath{}, GPULinks: []GPULink{}}
	e := newEvidence(rs, m, runs, jobs)
	var pairing *topology.Pairing
	if s != nil {
		pairing = s.Pairing
	}
	byGPU := map[int]topology.GPUNIC{}
	if pairing != nil {
		for _, p := range pairing.GPUs {
			byGPU[p.GPU] = p
		}
	}
	devs := map[string]*topology.Device{}
	for _, d := range h.Devices {
		devs[d.Address] = d
	}
	for _, g := range h.GPUs {
		t.DataPaths = append(t.DataPaths, e.dataPath(h, g, byGPU[g.Index], pairing, devs))
	}
	for i, a := range h.GPUs {
		for _, b := range h.GPUs[i+1:] {
			t.GPULinks = append(t.GPULinks, e.gpuLink(h, a, b))
		}
	}
	return t
}

func gpuLabel(i int) string { return fmt.Sprintf("GPU%d", i) }

func (e *evidence) dataPath(h *topology.Host, g *topology.GPU, p topology.GPUNIC, pairing *topology.Pairing, devs map[string]*topology.Device) DataPath {
	label := gpuLabel(g.Index)
	dp := DataPath{GPU: g.Index, GPUBusID: g.Address, NIC: p.NIC, Port: p.Port, Level: p.Level.String(), Hops: []Hop{}}
	// GPU memory: the GPU's own checks and its local copies; its NVLink
	// results are its links' (gpuLink), not its memory's.
	var r refs
	for _, s := range []string{label, g.Address} {
		for _, x := range e.bySubject[s] {
			if !isNVLink(x) {
				r.results(x)
			}
		}
	}
	var own []string
	for s := range e.bySubject {
		if strings.HasPrefix(s, label+"-") && !gpuPair.MatchString(s) && (p.NIC == "" || s != label+"-"+p.NIC) {
			own = append(own, s)
		}
	}
	slices.Sort(own)
	r.subjects(e, own...)
	for _, c := range e.copies {
		if c.Device == g.Index && c.Peer < 0 {
			r.add(RefMeasurement+c.ID, c.Status, true)
		}
	}
	name := g.Name
	if name == "" {
		name = label
	}
	dp.Hops = append(dp.Hops, r.hop(HopGPUMemory, label, name+" at "+g.Address))
	// What the included jobs moved from this GPU across the fabric.
	jf := e.fabric(g.Index)
	dp.GDRUsed = jf.used
	n := h.NICByName(p.NIC)
	if n == nil {
		dp.GDR, dp.GDRWhy = GDRNoNIC, "no RDMA NIC on this host"
		if len(h.NICs) > 0 {
			dp.GDRWhy = "no RDMA NIC paired with this GPU"
		}
		if jf.detail != "" {
			// Traffic left the node without an RDMA NIC: the fabric was
			// reached, through host memory and a socket as NCCL logged;
			// the GDR path it lacks is what gdr.used judged (SignOff).
			dp.Hops = append(dp.Hops, jf.refs.hop(HopFabric, jf.name, jf.detail))
			if jf.used == GDRUsedHostStaged || jf.used == GDRUsedMixed {
				dp.GDRWhy += "; measured: its traffic to other nodes was staged through host memory (" + strings.Join(jf.gdrRefs, ", ") + ")"
			}
		}
		dp.Status, dp.Proof = worstHop(dp.Hops), weakestHop(dp.Hops)
		return dp
	}
	// The PCIe hops between GPU and NIC.
	for _, via := range p.Path {
		var r refs
		r.subjects(e, via)
		kind, detail := HopPCIeSwitch, "PCIe switch"
		if d := devs[via]; d != nil {
			if d.PortType == pci.PortRootPort {
				kind, detail = HopRootPort, "root port"
			}
			if d.Name != "" {
				detail += ": " + d.Name
			}
		} else if strings.HasPrefix(via, "pci") {
			kind, detail = HopHostBridge, "host bridge (CPU)"
		}
		dp.Hops = append(dp.Hops, r.hop(kind, via, detail))
	}
	// The NIC: its own results and the GPU–NIC pair's, and what the
	// included bench rdma runs moved through it.
	rdmaGPU, rdmaAll, rdmaCross, rdmaDetail := e.rdma(g.Index, n.Name)
	r = refs{}
	r.subjects(e, n.Name, n.Address, label+"-"+n.Name)
	r.merge(rdmaAll)
	switch {
	case p.Level > level.DefaultGDR:
		dp.GDR, dp.GDRWhy = GDRNoPath, fmt.Sprintf("%s is at %s from %s, beyond PXB: NCCL stages its traffic through host memory", n.Name, p.Level, label)
	case pairing != nil && pairing.GDRBlocked != "":
		dp.GDR, dp.GDRWhy = GDRPathOnly, pairing.GDRBlocked
	default:
		dp.GDR = GDREnabled
	}
	detail := strings.TrimSpace(n.HCAType + " fw " + n.FWVersion)
	if n.FWVersion == "" {
		detail = n.HCAType
	}
	dp.Hops = append(dp.Hops, r.hop(HopNIC, n.Name, detail))
	// Registration: GPU memory registered with the NIC, which the node's
	// GDR checks judge (nvidia-peermem, dma-buf).
	r = refs{}
	r.results(e.node...)
	// What the jobs' traffic showed of the registration: GDRDMA in NCCL's
	// log is GPU memory the NIC read and wrote; host-staged fails it.
	for _, id := range jf.gdrRefs {
		r.add(id, e.status[id], true)
	}
	r.merge(rdmaGPU) // perftest moved GPU memory through the NIC
	dp.Hops = append(dp.Hops, r.hop(HopRegistration, label+" memory with "+n.Name, registrationDetail(dp)))
	// The port.
	r = refs{}
	portName := fmt.Sprintf("%s:%d", n.Name, p.Port)
	r.subjects(e, portName)
	r.merge(rdmaCross)
	dp.Hops = append(dp.Hops, r.hop(HopPort, portName, strings.TrimSpace(fmt.Sprintf("%s %s %s", p.PortState, p.LinkLayer, rateText(p.RateGbps)))))
	// The fabric: what NCCL's network transports say; a single-node run
	// does not reach it.
	r = jf.refs
	r.merge(rdmaCross)
	for _, run := range e.nccl {
		if e.isJob(run.Name) {
			continue // a job's ranks are placed on their GPUs (e.fabric)
		}
		for _, tr := range run.Transports {
			if (tr.Class == "net" || tr.Class == "collnet") && tr.Inter > 0 {
				r.add(RefNCCL+run.Name, result.Pass, true)
				break
			}
		}
	}
	fdetail := "not exercised: no inter-node traffic was measured from this node (bring a multi-node job in with run --include)"
	switch {
	case jf.detail != "" && rdmaDetail != "":
		fdetail = jf.detail + "; " + strings.TrimPrefix(rdmaDetail, "measured by ")
	case jf.detail != "":
		fdetail = jf.detail
	case rdmaDetail != "":
		fdetail = rdmaDetail
	case len(r.ids) > 0:
		fdetail = "NCCL carried inter-node traffic over the network"
	}
	fname := p.LinkLayer
	if jf.detail != "" {
		fname = jf.name
	}
	dp.Hops = append(dp.Hops, r.hop(HopFabric, fname, fdetail))
	dp.Status, dp.Proof = worstHop(dp.Hops), weakestHop(dp.Hops)
	return dp
}

// registrationDetail says what the GDR state means for the registration
// hop.
func registrationDetail(dp DataPath) string {
	switch dp.GDR {
	case GDREnabled:
		return "GPU memory can be registered with the NIC (GPU Direct RDMA)"
	case GDRPathOnly:
		return "GPU memory cannot be registered: " + dp.GDRWhy
	}
	return "GPU Direct RDMA not used: " + dp.GDRWhy
}

// weakestHop is the weakest proof level of the hops.
func weakestHop(hs []Hop) result.Proof {
	ps := make([]result.Proof, len(hs))
	for i, h := range hs {
		ps[i] = h.Proof
	}
	return result.Weakest(ps...)
}

func rateText(gbps float64) string {
	if gbps <= 0 {
		return ""
	}
	return fmt.Sprintf("%g Gb/s", gbps)
}

func worstHop(hs []Hop) result.Status {
	var r refs
	for _, h := range hs {
		r.sts = append(r.sts, h.Status)
	}
	return r.status()
}

func (e *evidence) gpuLink(h *topology.Host, a, b *topology.GPU) GPULink {
	rel := h.GPURelation(a, b)
	l := GPULink{A: a.Index, B: b.Index, Level: rel.String(), NVLinks: -1}
	if a.NVLinkKnown && b.NVLinkKnown {
		l.NVLinks = topology.NVLinksBetween(a, b)
	}
	var r refs
	r.subjects(e, gpuLabel(a.Index)+"-"+gpuLabel(b.Index), gpuLabel(b.Index)+"-"+gpuLabel(a.Index))
	if l.NVLinks > 0 {
		// An NVLink pair: each end's NVLink state is this link's evidence
		// (a degraded bundle is drawn on the link, not on GPU memory).
		for _, g := range []*topology.GPU{a, b} {
			for _, x := range e.bySubject[gpuLabel(g.Index)] {
				if isNVLink(x) {
					r.results(x)
				}
			}
		}
	}
	for _, c := range e.copies {
		if (c.Device == a.Index && c.Peer == b.Index) || (c.Device == b.Index && c.Peer == a.Index) {
			r.add(RefMeasurement+c.ID, c.Status, true)
		}
	}
	l.Status, l.Proof, l.Evidence = r.status(), r.proof(), r.ids
	if l.Evidence == nil {
		l.Evidence = []string{}
	}
	return l
}

// NewNCCLRun is the dossier's view of NCCL's log of one run: logs are the
// artifacts read, rep the analysis and vs its verdicts.
func NewNCCLRun(name string, logs []string, rep *ncclog.Report, vs []result.Result) NCCLRun {
	run := NCCLRun{Name: name, Logs: logs, Versions: []string{}, Transports: []Transport{}, Results: []string{}}
	if run.Logs == nil {
		run.Logs = []string{}
	}
	for _, v := range vs {
		run.Results = append(run.Results, ResultRef(v))
	}
	if rep == nil {
		return run
	}
	for _, v := range rep.Versions {
		run.Versions = append(run.Versions, v.Version)
	}
	for _, s := range rep.Network.Selected {
		run.Network = append(run.Network, s.Name)
	}
	for _, t := range rep.Channels.ByTransport {
		run.Transports = append(run.Transports, Transport{Transport: t.Transport, Class: t.Class, Lines: t.Lines, Intra: t.Intra, Inter: t.Inter})
	}
	run.GDR.DMABuf = rep.GDR.DMABuf
	for _, x := range rep.GDR.HCAs {
		run.GDR.HCAs = append(run.GDR.HCAs, fmt.Sprintf("%s %s", x.Name, enabled(x.Enabled)))
	}
	for _, x := range rep.GDR.GPUs {
		run.GDR.GPUs = append(run.GDR.GPUs, fmt.Sprintf("%s/HCA%d %s", x.GPU, x.HCA, enabled(x.Enabled)))
	}
	run.Errors, run.Warnings = rep.ErrorCount, rep.WarningCount
	return run
}

func enabled(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

// SignOff is how the segments a sign-off requires were established: the
// weakest proof level among them and, in order, those not measured. Every
// hop of every GPU's data path and every GPU-to-GPU link is required; a
// GPU with no RDMA NIC lacks its GPU Direct RDMA path, which counts as
// not exercised. gdr false (the site profile's gdr.required: false) leaves
// the GDR segments out: GPU memory and the GPU links remain.
func (t Topology) SignOff(gdr bool) (result.Proof, []string) {
	var ps []result.Proof
	var not []string
	add := func(name string, p result.Proof) {
		ps = append(ps, p)
		if p != result.ProofMeasured {
			not = append(not, fmt.Sprintf("%s (%s)", name, p))
		}
	}
	for _, dp := range t.DataPaths {
		label := gpuLabel(dp.GPU)
		for _, h := range dp.Hops {
			if h.Kind != HopGPUMemory && !gdr {
				continue
			}
			name := label + " " + h.Kind
			if h.Kind != HopGPUMemory && h.Name != "" {
				name += " " + h.Name
			}
			add(name, h.Proof)
		}
		if dp.GDR == GDRNoNIC && gdr {
			p := result.ProofNotExercised
			why := dp.GDRWhy
			if dp.GDRUsed == GDRUsedHostStaged || dp.GDRUsed == GDRUsedMixed {
				// Traffic was measured and did not use GPU Direct RDMA
				// (GDRWhy says so).
				p = result.ProofFailed
			}
			add(label+" GPU Direct RDMA path: "+why, p)
		}
	}
	for _, l := range t.GPULinks {
		add(fmt.Sprintf("GPU%d-GPU%d link", l.A, l.B), l.Proof)
	}
	return result.Weakest(ps...), not
}

// isNVLink says whether r judges a GPU's NVLinks (nvlink.*): evidence for
// its GPU-to-GPU links, not for its memory.
func isNVLink(r result.Result) bool { return strings.HasPrefix(r.ID, "nvlink.") }
