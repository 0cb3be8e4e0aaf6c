// Package fleet rolls many node reports (report.json, gdrcheck.report/v1)
// up into one cluster report: a line per node, version consistency,
// measurement outliers within each hardware class by median and MAD, ports
// at a lower rate or another MTU, missing GPUs or NICs, and a ranked list
// of nodes to drain with their reasons. It is pure: Summarize reads one
// report's bytes into the small Node it keeps, Aggregate judges the lot.
// docs/fleet.md describes it.
package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
)

// Node is what the roll-up keeps of one report: a few hundred bytes,
// whatever the report's size.
type Node struct {
	Source string `json:"source"`
	Host   string `json:"host"`
	// ReadAt is when the node was read (the report's verdict.time): of
	// two reports of one host, the newer is kept.
	ReadAt  time.Time `json:"read_at,omitzero"`
	Verdict string    `json:"verdict"`
	Failing []string  `json:"failing,omitempty"`
	// Degrading are the checks that made a node DEGRADED (none failing).
	Degrading []string `json:"degrading,omitempty"`
	// Versions, "" where the report does not say.
	Driver      string `json:"driver,omitempty"`
	CUDA        string `json:"cuda,omitempty"`
	NCCL        string `json:"nccl,omitempty"`
	Kernel      string `json:"kernel,omitempty"`
	NICFirmware string `json:"nic_firmware,omitempty"` // the distinct firmware versions, sorted, comma-separated
	RDMACore    string `json:"rdma_core,omitempty"`
	// Settings are what the node's check results say of its settings
	// (NCCL_* variables, memlock, IOMMU, peer memory, ACS, MaxReadReq),
	// sorted by name; NCCLEnv is true when nccl.env saw the environment.
	Settings []Setting `json:"settings,omitempty"`
	NCCLEnv  bool      `json:"nccl_env,omitempty"`
	GPUModel string    `json:"gpu_model"`
	GPUs     int       `json:"gpus"`
	NICs     int       `json:"nics"`
	// RateGbps is the fastest port's rate (0 none known): the NIC rate of
	// the node's hardware class.
	RateGbps     float64   `json:"nic_rate_gbps"`
	Ports        []Port    `json:"ports,omitempty"`
	Measurements []Measure `json:"measurements,omitempty"`
}

// Port is one NIC port.
type Port struct {
	Name      string  `json:"name"` // NIC:PORT
	LinkLayer string  `json:"link_layer,omitempty"`
	RateGbps  float64 `json:"rate_gbps"` // 0 unknown
	MTU       int     `json:"mtu,omitempty"`
	// Rail is true for a port of a NIC paired with a GPU (the report's
	// data paths): the ports the profile's nics.rate_gbps and nics.mtu
	// speak of.
	Rail bool `json:"rail,omitempty"`
}

// Measure is one measurement, higher better: a collective's bus bandwidth
// (the algorithm bandwidth for a one-rank run, whose bus bandwidth is 0 by
// definition) or a copy's GB/s. Key is the dossier row's Key, "all_reduce
// 64M (8 ranks)" or "copy d2d GPU0 64M": the size and the ranks are part
// of it, so a quick dossier's 64 MiB copy is not compared with a full
// one's 4 GiB copy. Unit is dossier.UnitBusBW, UnitAlgBW or UnitCopy.
type Measure struct {
	Key   string  `json:"key"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	// What decides the measurement's noise (internal/report/noise): a
	// collective row's time and whether the model called it
	// latency-bound; a copy's test.
	TimeUS  float64 `json:"time_us,omitempty"`
	Latency bool    `json:"latency,omitempty"`
	Test    string  `json:"test,omitempty"`
}

// Class is the node's hardware class: GPU model, GPU count, NIC rate.
func (n *Node) Class() string {
	return dossier.HardwareClass(n.GPUModel, n.GPUs, n.NICs, n.RateGbps)
}

// slim is the part of report.json the roll-up reads; members skips the
// rest without decoding it. Its tags are dossier.Document's
// (TestSlimMatchesDossier holds them together).
type slim struct {
	Schema  string `json:"schema"`
	Verdict struct {
		Status    string    `json:"status"`
		Host      string    `json:"host"`
		Time      time.Time `json:"time"`
		Failing   []string  `json:"failing"`
		Degrading []string  `json:"degrading"`
	} `json:"verdict"`
	Inventory struct {
		Host        string `json:"host"`
		Kernel      string `json:"kernel"`
		Driver      string `json:"driver_version"`
		CUDADriver  string `json:"cuda_driver_version"`
		CUDARuntime struct {
			Version string `json:"version"`
		} `json:"cuda_runtime"`
		NCCL struct {
			Version string `json:"version"`
		} `json:"nccl"`
		RDMACore string `json:"rdma_core_version"`
		GPUs     []struct {
			Name string `json:"name"`
		} `json:"gpus"`
		NICs []struct {
			Name     string `json:"name"`
			Firmware string `json:"firmware"`
			Ports    []struct {
				Number    int     `json:"port"`
				LinkLayer string  `json:"link_layer"`
				RateGbps  float64 `json:"rate_gbps"`
				MTU       int     `json:"mtu"`
			} `json:"ports"`
		} `json:"nics"`
	} `json:"inventory"`
	Measurements struct {
		Collectives []collectiveRow
		Copies      []copyRow
		RDMA        []dossier.RDMAMeasurement
	}
}

type collectiveRow struct {
	Collective string
	Ranks      int
	Bytes      uint64
	BusBW      float64
	AlgBW      float64
	TimeUS     float64
	Bottleneck string
	// Nodes and Variant: an included job's row (dossier.CollectiveMeasurement).
	Nodes   int
	Variant string
}

type copyRow struct {
	Test   string
	Device int
	Peer   int
	Bytes  uint64
	GBps   float64
	Valid  bool
}

// Summarize reads one report.json's bytes into its Node; source names it
// (its path). A document of another schema is an error.
func Summarize(b []byte, source string) (Node, error) {
	var s slim
	top, err := members(b, "schema", "verdict", "inventory", "measurements", "topology", "results") // in this order below
	if err != nil {
		return Node{}, err
	}
	if s.Schema, err = str(top[0], "schema"); err != nil {
		return Node{}, err
	}
	if s.Schema != dossier.Schema {
		return Node{}, fmt.Errorf("schema %q, want %q", s.Schema, dossier.Schema)
	}
	for _, m := range []struct {
		name string
		v    any
	}{{"verdict", &s.Verdict}, {"inventory", &s.Inventory}} {
		raw := top[1]
		if m.name == "inventory" {
			raw = top[2]
		}
		if raw == nil {
			continue
		}
		if err := json.Unmarshal(raw, m.v); err != nil {
			return Node{}, fmt.Errorf("%s: %w", m.name, err)
		}
	}
	if raw := top[3]; raw != nil && !bytes.Equal(raw, []byte("null")) {
		if err := s.measurements(raw); err != nil {
			return Node{}, fmt.Errorf("measurements.%w", err)
		}
	}
	rails, err := railNICs(top[4])
	if err != nil {
		return Node{}, fmt.Errorf("topology.%w", err)
	}
	sets, ncclEnv, err := settings(top[5])
	if err != nil {
		return Node{}, fmt.Errorf("results%w", err)
	}
	inv := &s.Inventory
	n := Node{Settings: sets, NCCLEnv: ncclEnv, RDMACore: inv.RDMACore,
		Source: source, Host: inv.Host, ReadAt: s.Verdict.Time, Verdict: s.Verdict.Status, Failing: s.Verdict.Failing, Degrading: s.Verdict.Degrading,
		Driver: inv.Driver, CUDA: inv.CUDARuntime.Version, NCCL: inv.NCCL.Version, Kernel: inv.Kernel,
		GPUs: len(inv.GPUs), NICs: len(inv.NICs), GPUModel: "no GPU",
	}
	if n.Host == "" {
		n.Host = s.Verdict.Host
	}
	if n.CUDA == "" {
		n.CUDA = inv.CUDADriver
	}
	if len(inv.GPUs) > 0 {
		n.GPUModel = inv.GPUs[0].Name
	}
	var fw []string
	for _, nic := range inv.NICs {
		if nic.Firmware != "" && !slices.Contains(fw, nic.Firmware) {
			fw = append(fw, nic.Firmware)
		}
		for _, p := range nic.Ports {
			n.Ports = append(n.Ports, Port{Name: nic.Name + ":" + strconv.Itoa(p.Number), LinkLayer: p.LinkLayer, RateGbps: p.RateGbps, MTU: p.MTU, Rail: slices.Contains(rails, nic.Name)})
			n.RateGbps = max(n.RateGbps, p.RateGbps)
		}
	}
	slices.Sort(fw)
	n.NICFirmware = strings.Join(fw, ",")
	m := &s.Measurements
	n.Measurements = make([]Measure, 0, len(m.Collectives)+len(m.Copies)+len(m.RDMA))
	for _, c := range m.Collectives {
		row := dossier.CollectiveMeasurement{Collective: c.Collective, Ranks: c.Ranks, Bytes: c.Bytes, BusBW: c.BusBW, AlgBW: c.AlgBW, Nodes: c.Nodes, Variant: c.Variant}
		if v, unit := row.Compared(); v > 0 {
			n.Measurements = append(n.Measurements, Measure{Key: row.Key(), Unit: unit, Value: v, TimeUS: c.TimeUS, Latency: c.Bottleneck == "latency"})
		}
	}
	for _, c := range m.Copies {
		if c.Valid && c.GBps > 0 {
			row := dossier.CopyMeasurement{Test: c.Test, Device: c.Device, Peer: c.Peer, Bytes: c.Bytes}
			n.Measurements = append(n.Measurements, Measure{Key: row.Key(), Unit: dossier.UnitCopy, Value: c.GBps, Test: c.Test})
		}
	}
	for _, r := range m.RDMA {
		if r.Error == "" && r.Gbps > 0 {
			n.Measurements = append(n.Measurements, Measure{Key: r.Key(), Unit: dossier.UnitRDMA, Value: r.Gbps, Test: "rdma"})
		}
	}
	return n, nil
}

var (
	measurementNames = []string{"collectives", "copies", "rdma"}
	rdmaNames        = []string{"test", "gpu", "nic", "memory", "peer", "gbps", "error"}
	collectiveNames  = []string{"collective", "ranks", "bytes", "busbw_gbps", "algbw_gbps", "time_us", "bottleneck", "nodes", "variant"}
	copyNames        = []string{"test", "device", "peer", "bytes", "gbps", "valid"}
)

// measurements reads the collectives' and copies' rows field by field:
// encoding/json's reflection costs most of a report's reading otherwise.
func (s *slim) measurements(raw []byte) error {
	var ms [3][]byte
	if err := membersInto(raw, measurementNames, ms[:]); err != nil {
		return err
	}
	var f [9][]byte
	m := &s.Measurements
	if ms[0] != nil {
		err := elements(ms[0], func(_ int, raw []byte) error {
			if err := membersInto(raw, collectiveNames, f[:]); err != nil {
				return err
			}
			r := row{f[:], collectiveNames, nil}
			m.Collectives = append(m.Collectives, collectiveRow{Collective: r.str(0), Ranks: int(r.num(1)), Bytes: uint64(r.num(2)),
				BusBW: r.num(3), AlgBW: r.num(4), TimeUS: r.num(5), Bottleneck: r.str(6), Nodes: int(r.num(7)), Variant: r.str(8)})
			return r.err
		})
		if err != nil {
			return fmt.Errorf("collectives%w", err)
		}
	}
	if ms[1] != nil {
		err := elements(ms[1], func(_ int, raw []byte) error {
			if err := membersInto(raw, copyNames, f[:6]); err != nil {
				return err
			}
			r := row{f[:6], copyNames, nil}
			m.Copies = append(m.Copies, copyRow{Test: r.str(0), Device: int(r.num(1)), Peer: int(r.num(2)), Bytes: uint64(r.num(3)), GBps: r.num(4), Valid: r.boolean(5)})
			return r.err
		})
		if err != nil {
			return fmt.Errorf("copies%w", err)
		}
	}
	if ms[2] != nil {
		err := elements(ms[2], func(_ int, raw []byte) error {
			if err := membersInto(raw, rdmaNames, f[:7]); err != nil {
				return err
			}
			r := row{f[:7], rdmaNames, nil}
			m.RDMA = append(m.RDMA, dossier.RDMAMeasurement{Test: r.str(0), GPU: int(r.num(1)), NIC: r.str(2), Memory: r.str(3), Peer: r.str(4), Gbps: r.num(5), Error: r.str(6)})
			return r.err
		})
		if err != nil {
			return fmt.Errorf("rdma%w", err)
		}
	}
	return nil
}

var topologyNames, dataPathNames = []string{"data_paths"}, []string{"nic"}

// railNICs are the NICs the report's data paths pair with a GPU.
func railNICs(topo []byte) ([]string, error) {
	if topo == nil || string(topo) == "null" {
		return nil, nil
	}
	var t [1][]byte
	if err := membersInto(topo, topologyNames, t[:]); err != nil {
		return nil, err
	}
	if t[0] == nil {
		return nil, nil
	}
	var rails []string
	var f [1][]byte
	err := elements(t[0], func(_ int, row []byte) error {
		if err := membersInto(row, dataPathNames, f[:]); err != nil {
			return err
		}
		nic, err := str(f[0], "nic")
		if err == nil && nic != "" && !slices.Contains(rails, nic) {
			rails = append(rails, nic)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("data_paths%w", err)
	}
	return rails, nil
}
