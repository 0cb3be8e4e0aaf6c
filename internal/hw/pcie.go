package hw

// PCIe generations: the per-lane transfer rate of the PCI Express Base
// Specification (2.5, 5, 8, 16, 32, 64, 128 GT/s for Gen1 to Gen7) and the
// share of it that carries data after line encoding: 8b/10b for Gen1-2,
// 128b/130b for Gen3-5, and for Gen6-7 FLIT mode, 236 bytes of TLP in each
// 256-byte flit (PCI-SIG, https://pcisig.com/specifications/pciexpress).
var pcieGTs = [...]float64{2.5, 5, 8, 16, 32, 64, 128}

// PCIeSource is where the PCIe rates come from.
const PCIeSource = "PCI Express Base Specification 1.0-7.0 (PCI-SIG), https://pcisig.com/specifications/pciexpress"

// PCIeGenerations is the number of PCIe generations known (1 to this).
const PCIeGenerations = len(pcieGTs)

// PCIeGTs is the per-lane transfer rate of a PCIe generation in GT/s, 0
// for an unknown generation.
func PCIeGTs(gen int) float64 {
	if gen < 1 || gen > len(pcieGTs) {
		return 0
	}
	return pcieGTs[gen-1]
}

// PCIeGenOfGTs is the generation of a per-lane rate in GT/s, 0 when it is
// none of them.
func PCIeGenOfGTs(gts float64) int {
	for i, g := range pcieGTs {
		if gts > g-0.01 && gts < g+0.01 {
			return i + 1
		}
	}
	return 0
}

// PCIeEncoding is the share of the line rate that carries data.
func PCIeEncoding(gen int) float64 {
	switch {
	case gen < 1 || gen > len(pcieGTs):
		return 0
	case gen <= 2:
		return 0.8
	case gen <= 5:
		return 128.0 / 130
	}
	return 236.0 / 256
}

// PCIeLaneGBps is one lane's data rate per direction after encoding, GB/s.
func PCIeLaneGBps(gen int) float64 { return PCIeGTs(gen) * PCIeEncoding(gen) / 8 }

// PCIeGBps is a link's data rate per direction after encoding, GB/s
// (before packet overheads): Gen5 x16 is 63.0 GB/s.
func PCIeGBps(gen, width int) float64 { return PCIeLaneGBps(gen) * float64(width) }
