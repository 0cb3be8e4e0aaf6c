package dossier

import (
	"strconv"

	"github.com/gdrcheck/gdrcheck/internal/collective"
)

// Key is the collective row's identity across reports: what gdrcheck diff
// compares between two runs and gdrcheck fleet across the nodes of a
// class, "COLLECTIVE SIZE (N ranks)", e.g. "all_reduce 64M (8 ranks)";
// a job's row of several nodes says how many ("(16 ranks, 2 nodes)"), a
// variant follows the name ("all_reduce/hierarchical 64M (16 ranks, 2
// nodes)"). The size, the ranks and the nodes are part of it (a row of
// another size, over more ranks or across nodes is another measurement);
// ID is only the row's reference within its own report.
func (m CollectiveMeasurement) Key() string {
	rs := " ranks"
	if m.Ranks == 1 {
		rs = " rank"
	}
	if m.Nodes > 1 {
		rs += ", " + strconv.Itoa(m.Nodes) + " nodes"
	}
	name := m.Collective
	if m.Variant != "" {
		name += "/" + m.Variant
	}
	return name + " " + sizeText(m.Bytes) + " (" + strconv.Itoa(m.Ranks) + rs + ")"
}

// Compared is the bandwidth the row is compared by across reports and its
// unit: the bus bandwidth, or on one rank the algorithm bandwidth
// (ComparedBandwidth).
func (m CollectiveMeasurement) Compared() (gbps float64, unit string) {
	v, alg := ComparedBandwidth(m.Ranks, m.BusBW, m.AlgBW)
	if alg {
		return v, UnitAlgBW
	}
	return v, UnitBusBW
}

// The units of compared measurements.
const (
	UnitBusBW = "GB/s busbw"
	UnitAlgBW = "GB/s algbw"
	UnitCopy  = "GB/s"
)

// Key is the copy's identity across reports: "copy TEST GPUa SIZE" or
// "copy TEST GPUa-GPUb SIZE", e.g. "copy d2d GPU0 64M". The size is part
// of it: a 64 MiB device copy (a quick dossier's) does not reach a 4 GiB
// one's (a full dossier's), and is another measurement.
func (m CopyMeasurement) Key() string {
	gpus := "GPU" + strconv.Itoa(m.Device)
	if m.Peer >= 0 {
		gpus += "-GPU" + strconv.Itoa(m.Peer)
	}
	return "copy " + m.Test + " " + gpus + " " + sizeText(m.Bytes)
}

// Key is the RDMA run's identity across reports: "rdma TEST GPUn-NIC
// MEMORY loopback|cross-node", e.g. "rdma ib_write_bw GPU0-mlx5_3 cuda
// loopback". The peer's name is not part of it: rail r of every node
// meets another node's rail r, and the fleet compares them.
func (m RDMAMeasurement) Key() string {
	where := "loopback"
	if m.Peer != "" {
		where = "cross-node"
	}
	return "rdma " + m.Test + " GPU" + strconv.Itoa(m.GPU) + "-" + m.NIC + " " + m.Memory + " " + where
}

// UnitRDMA is the unit RDMA runs are compared by.
const UnitRDMA = "Gb/s"

// sizeText prints a message size as nccl-tests' -b/-e read it
// (collective.FormatSize), with "B" after a size in plain bytes.
func sizeText(b uint64) string {
	s := collective.FormatSize(b)
	if s == strconv.FormatUint(b, 10) {
		return s + "B"
	}
	return s
}

// HardwareClass is a node's hardware class, what gdrcheck fleet groups
// nodes by: GPU model, GPU count and the NIC rate (its fastest port), e.g.
// "NVIDIA H200 x8, 400 Gb/s"; "no RDMA NIC" for a node without one, "NIC
// rate unknown" when no port said.
func HardwareClass(gpuModel string, gpus, nics int, rateGbps float64) string {
	net := strconv.FormatFloat(rateGbps, 'f', -1, 64) + " Gb/s"
	switch {
	case nics == 0:
		net = "no RDMA NIC"
	case rateGbps <= 0:
		net = "NIC rate unknown"
	}
	return gpuModel + " x" + strconv.Itoa(gpus) + ", " + net
}

// GPUModel is the report's GPU model (its first GPU's), "" without GPUs.
func (inv Inventory) GPUModel() string {
	if len(inv.GPUs) == 0 {
		return ""
	}
	return inv.GPUs[0].Name
}

// Class is the report's HardwareClass.
func (inv Inventory) Class() string {
	model, rate := inv.GPUModel(), 0.0
	if model == "" {
		model = "no GPU"
	}
	for _, n := range inv.NICs {
		for _, p := range n.Ports {
			rate = max(rate, p.RateGbps)
		}
	}
	return HardwareClass(model, len(inv.GPUs), len(inv.NICs), rate)
}
