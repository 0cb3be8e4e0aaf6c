package html

import (
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Hop is one step of a GPU's data path as the page shows it: the
// dossier's hop with its evidence references resolved to words.
type Hop struct {
	Kind   string
	Name   string
	Detail string
	// Status is the dossier's verdict of the hop: the worst of what its
	// evidence says; unknown when nothing looked at it.
	Status result.Status
	// Proof is how the hop was established (measured, checked, not
	// exercised, failed); "" in reports written before proof levels.
	Proof    result.Proof
	Evidence []string
}

// DataPath is one GPU's path (the dossier's, GPU memory → PCIe switches →
// NIC → port → fabric) and its links to the other GPUs.
type DataPath struct {
	GPU     string
	Address string
	Status  result.Status
	NIC     string
	Level   string
	GDR     string
	GDRWhy  string
	// GDRUsed is what the included jobs measured of it ("" none).
	GDRUsed string
	Hops    []Hop
	Peers   []Hop
	// PeersStatus is the worst of the peer links' statuses.
	PeersStatus result.Status
}

// hopNames are the hop kinds in words.
var hopNames = map[string]string{
	dossier.HopGPUMemory: "GPU memory", dossier.HopPCIeSwitch: "PCIe switch", dossier.HopRootPort: "root port",
	dossier.HopHostBridge: "host bridge", dossier.HopNIC: "NIC", dossier.HopRegistration: "registration", dossier.HopPort: "port", dossier.HopFabric: "fabric",
}

// dataPaths turns the dossier's data paths and GPU links into the page's,
// each piece of evidence resolved against the document.
func dataPaths(r *dossier.Report, x *refIndex) []DataPath {
	var out []DataPath
	for _, p := range r.Topology.DataPaths {
		dp := DataPath{GPU: fmt.Sprintf("GPU%d", p.GPU), Address: p.GPUBusID, Status: p.Status, NIC: p.NIC, Level: p.Level, GDR: p.GDR, GDRWhy: p.GDRWhy, GDRUsed: p.GDRUsed}
		for _, h := range p.Hops {
			kind := hopNames[h.Kind]
			if kind == "" {
				kind = h.Kind
			}
			dp.Hops = append(dp.Hops, Hop{Kind: kind, Name: h.Name, Detail: h.Detail, Status: h.Status, Proof: h.Proof, Evidence: x.resolve(h.Evidence)})
		}
		for _, l := range r.Topology.GPULinks {
			if l.A != p.GPU && l.B != p.GPU {
				continue
			}
			peer := l.B
			if peer == p.GPU {
				peer = l.A
			}
			detail := l.Level
			switch {
			case l.NVLinks > 0:
				detail += fmt.Sprintf(", %d NVLink(s)", l.NVLinks)
			case l.NVLinks == 0:
				detail += ", no NVLink"
			default:
				detail += ", NVLink unknown"
			}
			dp.Peers = append(dp.Peers, Hop{Kind: "GPU ↔ GPU", Name: fmt.Sprintf("GPU%d", peer), Detail: detail, Status: l.Status, Proof: l.Proof, Evidence: x.resolve(l.Evidence)})
			dp.PeersStatus = worse(dp.PeersStatus, l.Status)
		}
		out = append(out, dp)
	}
	return out
}

// refIndex resolves the dossier's evidence references ("result:ID
// SUBJECT", "measurement:ID", "nccl:RUN") to lines a person reads.
type refIndex struct {
	j      *judged
	copies map[string]dossier.CopyMeasurement
	colls  map[string]dossier.CollectiveMeasurement
	runs   map[string]dossier.NCCLRun
}

func newRefIndex(r *dossier.Report, j *judged) *refIndex {
	x := &refIndex{j: j, copies: map[string]dossier.CopyMeasurement{}, colls: map[string]dossier.CollectiveMeasurement{}, runs: map[string]dossier.NCCLRun{}}
	for _, c := range r.Measurements.Copies {
		x.copies[c.ID] = c
	}
	for _, c := range r.Measurements.Collectives {
		x.colls[c.ID] = c
	}
	for _, n := range r.NCCL {
		x.runs[n.Name] = n
	}
	return x
}

func (x *refIndex) resolve(refs []string) []string {
	var out []string
	for _, ref := range refs {
		out = append(out, x.line(ref))
	}
	return out
}

// line is one reference in words; a reference the document does not
// hold is said to be missing, not dropped.
func (x *refIndex) line(ref string) string {
	switch {
	case strings.HasPrefix(ref, dossier.RefResult):
		key := strings.TrimPrefix(ref, dossier.RefResult)
		r, ok := x.j.byRef[key]
		if !ok {
			return "result " + key + ": not in this report"
		}
		s := fmt.Sprintf("[%s] %s %s: %s", r.Status, r.ID, r.Subject, r.Message)
		for _, e := range r.Evidence {
			s += fmt.Sprintf(" · %s = %s", e.Source, e.Value)
		}
		return s
	case strings.HasPrefix(ref, dossier.RefMeasurement):
		id := strings.TrimPrefix(ref, dossier.RefMeasurement)
		if c, ok := x.copies[id]; ok {
			return copyLine(c)
		}
		if c, ok := x.colls[id]; ok {
			s := fmt.Sprintf("[%s] %s %d ranks at %s: busbw %s GB/s", statusWord(c.Status), c.Collective, c.Ranks, BytesLabel(float64(c.Bytes)), Number(c.BusBW))
			if c.ExpectedBusBW != nil {
				s += fmt.Sprintf(", expected %s GB/s", Number(*c.ExpectedBusBW))
			}
			return s
		}
		return "measurement " + id + ": not in this report"
	case strings.HasPrefix(ref, dossier.RefNCCL):
		name := strings.TrimPrefix(ref, dossier.RefNCCL)
		n, ok := x.runs[name]
		if !ok {
			return "NCCL run " + name + ": not in this report"
		}
		var ts []string
		for _, t := range n.Transports {
			ts = append(ts, fmt.Sprintf("%s %d line(s) (%d inter-node)", t.Transport, t.Lines, t.Inter))
		}
		s := "NCCL run " + n.Name + ": transports " + strings.Join(ts, ", ")
		if len(n.GDR.GPUs) > 0 {
			s += "; GPU Direct RDMA: " + strings.Join(n.GDR.GPUs, ", ")
		}
		return s
	}
	return ref
}

// copyLine is a copy measurement in words.
func copyLine(c dossier.CopyMeasurement) string {
	s := fmt.Sprintf("[%s] %s: %s GB/s", statusWord(c.Status), c.ID, Number(c.GBps))
	if c.ExpectedGBps != nil {
		s += fmt.Sprintf(", expected %s GB/s", Number(*c.ExpectedGBps))
	}
	if c.Fraction != nil {
		s += fmt.Sprintf(" (%.0f%%)", 100**c.Fraction)
	}
	if c.LimitGBps > 0 {
		s += fmt.Sprintf(", limit %s GB/s (%s)", Number(c.LimitGBps), c.Limit)
	}
	if c.Error != "" {
		s += "; error: " + c.Error
	} else if !c.Valid {
		s += "; data check failed"
	}
	return s
}

// intraNCCL are NCCL's transports inside the node (P2P, SHM, NVLS), per
// run: what NCCL's own channel lines say GPU ↔ GPU traffic used.
func intraNCCL(r *dossier.Report) []string {
	var out []string
	for _, n := range r.NCCL {
		for _, t := range n.Transports {
			switch t.Class {
			case "p2p", "shm", "nvls":
				out = append(out, fmt.Sprintf("%s: %s, %d channel line(s)", n.Name, t.Transport, t.Lines))
			}
		}
	}
	return out
}
