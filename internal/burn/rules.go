package burn

import "strings"

// Class is how a counter is judged.
type Class string

// Classes.
const (
	// Fatal: any new event in a window fails it.
	Fatal Class = "fatal"
	// Correctable: correctable errors, judged as events per bit moved against a
	// threshold.
	Correctable Class = "rate"
	// Info: shown with the deltas, not judged (data counters, congestion
	// and transport retry counters, AER fields summed in a TOTAL line).
	Info Class = "info"
)

// portClass is how an RDMA port's counters are judged
// (docs/burn.md, "Judging").
var portClass = map[string]Class{
	// The link went down, or the receive buffer overran (a credit or flow
	// control fault), or local physical errors crossed the port's own
	// LocalPhyErrors threshold: each is a fault, not a rate.
	"counters/link_downed":                     Fatal,
	"counters/excessive_buffer_overrun_errors": Fatal,
	"counters/local_link_integrity_errors":     Fatal,
	// Symbol errors, link retraining and received packets with errors
	// are what a marginal link shows at a low rate.
	"counters/symbol_error":        Correctable,
	"counters/link_error_recovery": Correctable,
	"counters/port_rcv_errors":     Correctable,
}

// portJudged and functionJudged are the judged counters a device's deltas
// always list, read or not.
var (
	portJudged = []string{
		"counters/excessive_buffer_overrun_errors", "counters/link_downed", "counters/link_error_recovery",
		"counters/local_link_integrity_errors", "counters/port_rcv_errors", "counters/symbol_error",
	}
	functionJudged = []string{
		"aer_dev_correctable/TOTAL_ERR_COR", "aer_dev_fatal/TOTAL_ERR_FATAL", "aer_dev_nonfatal/TOTAL_ERR_NONFATAL",
	}
)

// ClassOf is how a device's counter is judged: every field of a PCI
// function's aer_dev_fatal and aer_dev_nonfatal is fatal (an uncorrectable
// error), its TOTAL_ERR_COR is judged as a rate; a port's counters as
// portClass says, an NVLink's as nvlinkClass says; everything else is
// shown only.
func ClassOf(kind DeviceKind, counter string) Class {
	switch kind {
	case PCIDevice:
		switch {
		case strings.HasPrefix(counter, "aer_dev_fatal/"), strings.HasPrefix(counter, "aer_dev_nonfatal/"):
			return Fatal
		case counter == "aer_dev_correctable/TOTAL_ERR_COR":
			return Correctable
		}
	case PortDevice:
		if c, ok := portClass[counter]; ok {
			return c
		}
	case NVLinkDevice:
		if c, ok := nvlinkClass[counter]; ok {
			return c
		}
	}
	return Info
}

// Threshold is the highest error rate per bit a medium's links may show, and
// the public source it comes from.
type Threshold struct {
	BER    float64 `json:"ber"`
	Source string  `json:"source"`
}

// Thresholds are the error-rate ceilings per medium. Each is the medium's
// specified bit error ratio; an error event (a symbol error, an AER
// correctable message) is at least one bit in error, so events per bit is a
// lower bound on the bit error ratio and judging it against the spec's ratio
// can only be lenient, never strict. docs/burn.md cites them.
var Thresholds = map[string]Threshold{
	"InfiniBand": {BER: 1e-12, Source: "InfiniBand specification: fewer than one bit error per 1e12 bits (NVIDIA DGX SuperPOD cabling guide, docs.nvidia.com/dgx-superpod/design-guide-cabling-data-centers/latest/widths-rates.html; ibdiagnet's BER threshold 1e-12, and on HDR/NDR links symbol errors count what FEC did not correct)"},
	"Ethernet":   {BER: 1e-12, Source: "IEEE 802.3ba objective: bit error ratio of 1e-12 or better at the MAC/PLS service interface (40/100 Gb/s; 802.3bs set 1e-13 for 200/400 Gb/s)"},
	"PCIe":       {BER: 1e-12, Source: "PCI Express Base Specification: bit error ratio of 1e-12 or better per lane (PCI-SIG, \"PCI Express Electrical Basics\", 2014; Astera Labs, \"The Impact of Bit Errors in PCI Express Links\")"},
}

// thresholdOf is the threshold of ts a device is judged against; a port of
// unknown link layer gets the strictest of InfiniBand's and Ethernet's.
func thresholdOf(ts map[string]Threshold, d Device) (Threshold, string) {
	if t, ok := ts[d.Medium]; ok {
		return t, d.Medium
	}
	ib, eth := ts["InfiniBand"], ts["Ethernet"]
	if eth.BER < ib.BER {
		return eth, "Ethernet (the stricter; link layer unknown)"
	}
	return ib, "InfiniBand (the stricter; link layer unknown)"
}
