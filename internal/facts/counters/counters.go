// Package counters holds one reading of a node's error counters, the facts a
// burn-in compares over time: per RDMA port the kernel's counters/ and
// hw_counters/ files, and per PCI function its AER statistics
// (aer_dev_correctable, aer_dev_nonfatal, aer_dev_fatal), each with the
// time it was read; and the parsers of those files. It reads nothing:
// internal/collect/counters fills a Sample through the door, and
// internal/burn turns samples into deltas and verdicts.
//
// A counter that could not be read is never a zero: a Reading keeps the
// values it read and, apart, why each other counter it looked for is
// missing (not exposed by this kernel or device, or unreadable).
package counters

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Groups of counter names. A counter's name in a Reading is its group and
// its file or field, "counters/symbol_error", "hw_counters/out_of_sequence",
// "aer_dev_correctable/TOTAL_ERR_COR".
const (
	GroupPMA        = "counters"            // /sys/class/infiniband/DEV/ports/N/counters/
	GroupHW         = "hw_counters"         // /sys/class/infiniband/DEV/ports/N/hw_counters/
	GroupAERCor     = "aer_dev_correctable" // /sys/bus/pci/devices/ADDR/aer_dev_correctable
	GroupAERNonfat  = "aer_dev_nonfatal"
	GroupAERFatal   = "aer_dev_fatal"
	totalCorName    = "TOTAL_ERR_COR"
	totalNonfatName = "TOTAL_ERR_NONFATAL"
	totalFatalName  = "TOTAL_ERR_FATAL"
)

// AERFiles are the AER statistics files of a PCI function, in reading order.
var AERFiles = []string{GroupAERCor, GroupAERNonfat, GroupAERFatal}

// AERTotal is the name of the TOTAL_ line each AER file ends with
// ("aer_dev_correctable" -> "TOTAL_ERR_COR"); "" for another name.
func AERTotal(file string) string {
	switch file {
	case GroupAERCor:
		return totalCorName
	case GroupAERNonfat:
		return totalNonfatName
	case GroupAERFatal:
		return totalFatalName
	}
	return ""
}

// PMACounters are the files of a port's counters/ directory a sample reads:
// the InfiniBand PortCounters attributes the kernel exposes for every RDMA
// port with a performance management agent (drivers/infiniband/core/sysfs.c),
// errors first, then the data counters.
var PMACounters = []string{
	"symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
	"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
	"port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
	"excessive_buffer_overrun_errors", "VL15_dropped",
	"port_rcv_data", "port_xmit_data", "port_rcv_packets", "port_xmit_packets",
}

// HWCounters are the files of a port's hw_counters/ directory a sample reads:
// the RoCE transport and congestion counters of mlx5 (NVIDIA, "Understanding
// mlx5 Linux counters"); a device or link layer without them has them
// missing, not zero.
var HWCounters = []string{
	"out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "rnr_nak_retry_err",
	"implied_nak_seq_err", "duplicate_request", "out_of_buffer",
	"np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled", "rp_cnp_ignored",
}

// DataWordBytes is what one unit of port_rcv_data and port_xmit_data is:
// the kernel documents them as the "total number of data octets, divided by
// 4 (lanes)" (Documentation/ABI/stable/sysfs-class-infiniband), so bytes
// are the counter times 4 (whatever the link's width).
const DataWordBytes = 4

// pmaWidth is the width in bits of each PortCounters attribute as the kernel
// reads it from the PMA (PORT_PMA_ATTR in drivers/infiniband/core/sysfs.c).
// The InfiniBand PortCounters stop at all ones rather than wrap, so a value
// exactly at its width's maximum is saturated: it can no longer count. The
// data and packet counters are 32 bits in the basic table and 64 in the
// extended one (PORT_PMA_ATTR_EXT): a value above 2^32-1 is a 64-bit counter,
// and one sitting exactly at 2^32-1 is negligibly unlikely unless it is a
// saturated 32-bit counter, so that value alone is read as saturated.
var pmaWidth = map[string]uint{
	"symbol_error": 16, "link_error_recovery": 8, "link_downed": 8, "port_rcv_errors": 16,
	"port_rcv_remote_physical_errors": 16, "port_rcv_switch_relay_errors": 16, "port_xmit_discards": 16,
	"port_xmit_constraint_errors": 8, "port_rcv_constraint_errors": 8, "local_link_integrity_errors": 4,
	"excessive_buffer_overrun_errors": 4, "VL15_dropped": 16,
	"port_xmit_data": 32, "port_rcv_data": 32, "port_xmit_packets": 32, "port_rcv_packets": 32,
}

// Saturation is the value at which a counter stops counting (its name in a
// Reading, "counters/link_downed" -> 255): a reading exactly at it is
// saturated. 0 when it has no such limit (hw_counters and AER statistics are
// 64-bit).
func Saturation(name string) uint64 {
	g, f, ok := strings.Cut(name, "/")
	if !ok || g != GroupPMA {
		return 0
	}
	w, ok := pmaWidth[f]
	if !ok {
		return 0
	}
	return 1<<w - 1
}

// Missing reasons.
const (
	// NotExposed: the file does not exist (this kernel, driver or device
	// does not offer the counter).
	NotExposed = "not exposed"
)

// Reading is what one read of a port's or a function's counters gave.
type Reading struct {
	// Dir is the root-relative directory the files were read under.
	Dir string `json:"dir"`
	// ReadAt is when the reading started; ReadDone when it ended.
	ReadAt   time.Time `json:"read_at"`
	ReadDone time.Time `json:"read_done"`
	// Values are the counters read, by name ("counters/symbol_error").
	Values map[string]uint64 `json:"values,omitempty"`
	// Missing says why each other counter looked for has no value, by name
	// or, for a whole file or directory, by its group ("aer_dev_fatal"):
	// NotExposed, or the error that reading or parsing it gave.
	Missing map[string]string `json:"missing,omitempty"`
}

// Get is a counter's value, or why there is none: the counter's own entry
// in Missing, else its group's, else "not read".
func (r *Reading) Get(name string) (uint64, string, bool) {
	if r == nil {
		return 0, "not read", false
	}
	if v, ok := r.Values[name]; ok {
		return v, "", true
	}
	if why, ok := r.Missing[name]; ok {
		return 0, why, false
	}
	if g, _, ok := strings.Cut(name, "/"); ok {
		if why, ok := r.Missing[g]; ok {
			return 0, why, false
		}
	}
	return 0, "not read", false
}

// Set records a value.
func (r *Reading) Set(name string, v uint64) {
	if r.Values == nil {
		r.Values = map[string]uint64{}
	}
	r.Values[name] = v
	delete(r.Missing, name)
}

// Miss records why a counter (or a group) has no value.
func (r *Reading) Miss(name, why string) {
	if r.Missing == nil {
		r.Missing = map[string]string{}
	}
	r.Missing[name] = why
}

// Names are the counters read, sorted.
func (r *Reading) Names() []string {
	out := make([]string, 0, len(r.Values))
	for k := range r.Values {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Port is one RDMA port's reading.
type Port struct {
	Device string `json:"device"` // mlx5_0
	Port   int    `json:"port"`
	Reading
}

// Key is the port as "mlx5_0/1".
func (p *Port) Key() string { return PortKey(p.Device, p.Port) }

// PortKey names a port as "DEVICE/PORT".
func PortKey(dev string, port int) string { return dev + "/" + strconv.Itoa(port) }

// Function is one PCI function's AER reading.
type Function struct {
	Address string `json:"address"` // 0000:18:00.0
	// Role says why the function was read: "gpu", "nic", "bridge".
	Role string `json:"role"`
	Reading
}

// Sample is one reading of a node's counters.
type Sample struct {
	// Label names the sample in messages (a capture's name, "baseline",
	// "window 3 end"); free text.
	Label     string     `json:"label,omitempty"`
	Ports     []Port     `json:"ports"`
	Functions []Function `json:"functions"`
	// NICs are the RDMA NICs' temperatures and optical modules (optics.go);
	// absent from samples written before they were read.
	NICs []NIC `json:"nics,omitempty"`
}

// Port is the reading of a port, nil when the sample has none.
func (s *Sample) Port(dev string, port int) *Port {
	for i := range s.Ports {
		if s.Ports[i].Device == dev && s.Ports[i].Port == port {
			return &s.Ports[i]
		}
	}
	return nil
}

// Function is the reading of a PCI function, nil when the sample has none.
func (s *Sample) Function(addr string) *Function {
	for i := range s.Functions {
		if s.Functions[i].Address == addr {
			return &s.Functions[i]
		}
	}
	return nil
}

// ParseValue reads one sysfs counter file: a decimal number and a newline.
// The kernel prints "N/A (no PMA)" for a port whose performance management
// agent did not answer; that is ErrNoPMA (the counter is not exposed, not
// zero). name is the file's name in errors.
func ParseValue(name, s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "N/A") {
		return 0, fmt.Errorf("%s: %w", name, ErrNoPMA)
	}
	if strings.ContainsAny(t, "\n") {
		return 0, textio.Errorf(name, 2, "want one number, got more lines")
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return 0, textio.Errorf(name, 1, "want a decimal counter, got %s", quote(t))
	}
	return v, nil
}

// ErrNoPMA is a counter the kernel could not get from the port's
// performance management agent.
var ErrNoPMA = fmt.Errorf("N/A: the port's performance management agent did not answer")

// ParseAER reads one AER statistics file (drivers/pci/pcie/aer.c: one
// "NAME VALUE" line per error bit the kernel knows, then a TOTAL_ERR_*
// line). Every field is kept; names may hold spaces (kernels before 5.x
// printed "Receiver Error 2"). file is the group the file is
// (GroupAERCor, ...), name the path for errors. The fields come back under
// their names without the group; the TOTAL_ line must be the one file
// names, once.
func ParseAER(file, name, s string) (map[string]uint64, error) {
	want := AERTotal(file)
	if want == "" {
		return nil, fmt.Errorf("%s: %s is not an AER statistics file", name, quote(file))
	}
	out := map[string]uint64{}
	total := false
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, line := range lines {
		n := i + 1
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			if len(lines) == 1 {
				break
			}
			return nil, textio.Errorf(name, n, "empty line")
		}
		j := strings.LastIndexAny(line, " \t")
		if j < 0 {
			return nil, textio.Errorf(name, n, "want NAME VALUE, got %s", quote(line))
		}
		field, val := strings.TrimSpace(line[:j]), line[j+1:]
		if field == "" {
			return nil, textio.Errorf(name, n, "want NAME VALUE, got %s", quote(line))
		}
		v, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			return nil, textio.Errorf(name, n, "%s: want a decimal count, got %s", quote(field), quote(val))
		}
		if _, dup := out[field]; dup {
			return nil, textio.Errorf(name, n, "%s given twice", quote(field))
		}
		if strings.HasPrefix(field, "TOTAL_ERR_") {
			if field != want {
				return nil, textio.Errorf(name, n, "%s in %s: want %s", field, file, want)
			}
			total = true
		} else if total {
			return nil, textio.Errorf(name, n, "%s after the %s line", quote(field), want)
		}
		out[field] = v
	}
	if !total {
		return nil, textio.Errorf(name, len(lines), "no %s line (a cut-off file?)", want)
	}
	return out, nil
}

// quote shows input text in an error, clipped.
func quote(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strconv.Quote(s)
}
