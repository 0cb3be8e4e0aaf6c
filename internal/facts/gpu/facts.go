// Package gpu holds the GPU facts that only the NVIDIA driver knows
// (NVLink state and peers, P2P support, ECC, row remapping, clock event
// reasons, PCIe generation as the GPU reports it) as types, and their
// parsers: the JSON a snapshot keeps (commands/nvml.json) and
// nvidia-smi -q -x. It reads nothing itself: collect/nvml reads the
// facts live (NVML) or from a snapshot, everything after it judges them.
// Every value that could not be read stays nil: unknown, never a default.
package gpu

import (
	"fmt"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// FactsFile is the snapshot file (under commands/) holding Facts as JSON.
const FactsFile = "nvml.json"

// Facts is everything gathered about the GPUs of one host.
type Facts struct {
	Source            string    `json:"source"` // "nvml", "snapshot nvml.json", "nvidia-smi -q -x"
	CollectedAt       time.Time `json:"collected_at"`
	DriverVersion     string    `json:"driver_version,omitempty"`
	NVMLVersion       string    `json:"nvml_version,omitempty"`
	CUDADriverVersion string    `json:"cuda_driver_version,omitempty"` // "13.0"
	GPUs              []GPU     `json:"gpus"`
	// P2P holds the driver's peer-to-peer verdict for every ordered GPU pair
	// it was asked about (by index in GPUs).
	P2P []P2P `json:"p2p,omitempty"`
	// Errors lists the calls that failed, "call: message".
	Errors []string `json:"errors,omitempty"`
}

// GPU holds one GPU's facts.
type GPU struct {
	Index        int     `json:"index"`
	BusID        string  `json:"bus_id"` // sysfs form, 0000:00:06.0
	UUID         string  `json:"uuid,omitempty"`
	Name         string  `json:"name,omitempty"`
	Serial       string  `json:"serial,omitempty"`
	Architecture string  `json:"architecture,omitempty"`
	MinorNumber  *int    `json:"minor_number,omitempty"`
	MemoryMiB    *uint64 `json:"memory_mib,omitempty"`
	NUMANode     *int    `json:"numa_node,omitempty"`

	Persistence *bool    `json:"persistence_mode,omitempty"`
	MIGEnabled  *bool    `json:"mig_enabled,omitempty"`
	ECC         ECC      `json:"ecc"`
	Retired     Retired  `json:"retired_pages"`
	Remapped    Remapped `json:"remapped_rows"`
	// ClockEvents lists the active clock event (throttle) reasons by name;
	// nil means unknown, empty means none active.
	ClockEvents []string `json:"clock_events"`
	// Sensors are the GPU's clock, power and temperature at the reading.
	Sensors Sensors `json:"sensors"`
	PCIe    PCIe    `json:"pcie"`
	// NVLinks has one entry per link the GPU has (supported or not); nil
	// when NVLink could not be queried.
	NVLinks       []NVLink `json:"nvlinks"`
	NVLinkQueried bool     `json:"nvlink_queried"`
	// NVLinkCounters are the error and data counters of each active
	// NVLink (nvlink.go); nil when they were not read.
	NVLinkCounters []NVLinkCounters `json:"nvlink_counters,omitempty"`
	Fabric         Fabric           `json:"fabric"`
}

// Sensors are what the GPU reads of itself at one moment; nil: not read.
type Sensors struct {
	SMClockMHz    *uint32  `json:"sm_clock_mhz,omitempty"`
	MaxSMClockMHz *uint32  `json:"max_sm_clock_mhz,omitempty"`
	PowerW        *float64 `json:"power_w,omitempty"`
	PowerLimitW   *float64 `json:"power_limit_w,omitempty"`
	TempC         *uint32  `json:"temp_c,omitempty"`
}

// ECC is the ECC mode and error counts.
type ECC struct {
	Current              *bool   `json:"current,omitempty"`
	Pending              *bool   `json:"pending,omitempty"`
	VolatileUncorrected  *uint64 `json:"volatile_uncorrected,omitempty"`
	AggregateUncorrected *uint64 `json:"aggregate_uncorrected,omitempty"`
	VolatileCorrected    *uint64 `json:"volatile_corrected,omitempty"`
	AggregateCorrected   *uint64 `json:"aggregate_corrected,omitempty"`
}

// Retired is dynamic page retirement (pre-Ampere GPUs).
type Retired struct {
	SingleBit *uint64 `json:"single_bit,omitempty"`
	DoubleBit *uint64 `json:"double_bit,omitempty"`
	Pending   *bool   `json:"pending,omitempty"`
}

// Remapped is row remapping (Ampere and later).
type Remapped struct {
	Correctable   *uint64 `json:"correctable,omitempty"`
	Uncorrectable *uint64 `json:"uncorrectable,omitempty"`
	Pending       *bool   `json:"pending,omitempty"`
	Failure       *bool   `json:"failure,omitempty"`
}

// PCIe is the link as the GPU itself reports it. Unlike sysfs, the maximum
// generation here is what the GPU and the slot can both do, and the current
// one drops while the GPU idles: judge training against MaxGen/MaxWidth.
type PCIe struct {
	MaxGen        *int    `json:"max_gen,omitempty"`
	CurGen        *int    `json:"cur_gen,omitempty"`
	MaxWidth      *int    `json:"max_width,omitempty"`
	CurWidth      *int    `json:"cur_width,omitempty"`
	ReplayCounter *uint64 `json:"replay_counter,omitempty"`
}

// NVLink is one NVLink of a GPU.
type NVLink struct {
	Link        int    `json:"link"`
	Active      bool   `json:"active"`
	Version     int    `json:"version,omitempty"`
	RemoteBusID string `json:"remote_bus_id,omitempty"`
	// RemoteType is "gpu", "nvswitch", "ibmnpu" or "unknown".
	RemoteType string `json:"remote_type,omitempty"`
}

// Fabric is the NVSwitch fabric registration of the GPU (fabric manager).
type Fabric struct {
	Supported bool    `json:"supported"`
	State     string  `json:"state,omitempty"`  // not-started, in-progress, completed
	Status    string  `json:"status,omitempty"` // success or the error
	CliqueID  *uint32 `json:"clique_id,omitempty"`
	// ClusterUUID is the NVLink domain the GPU belongs to: all zeros (or
	// empty) when the domain is this node's own; another value on a
	// multi-node NVLink system (GB200/GB300 NVL72), where the GPUs of
	// several nodes share memory through IMEX.
	ClusterUUID string `json:"cluster_uuid,omitempty"`
	// Health is the fabric health summary where the driver gives one
	// ("healthy", "unhealthy"; nvidia-smi -q's Fabric Health Summary).
	Health string `json:"health,omitempty"`
}

// MultiNode reports whether the GPU's NVLink domain spans nodes: a
// cluster UUID other than all zeros.
func (f Fabric) MultiNode() bool {
	u := strings.Trim(f.ClusterUUID, "0-")
	return u != "" && !strings.EqualFold(f.ClusterUUID, "N/A")
}

// P2P is the driver's peer-to-peer verdict from GPU A to GPU B.
type P2P struct {
	A       int    `json:"a"`
	B       int    `json:"b"`
	Read    string `json:"read"` // P2PStatus names
	Write   string `json:"write"`
	NVLink  string `json:"nvlink"`
	Atomics string `json:"atomics,omitempty"`
}

// P2P status names as gdrcheck prints them.
const (
	P2POK                   = "OK"
	P2PChipsetNotSupported  = "ChipsetNotSupported"
	P2PGPUNotSupported      = "GPUNotSupported"
	P2PTopologyNotSupported = "IOHTopologyNotSupported"
	P2PDisabledByRegkey     = "DisabledByRegKey"
	P2PNotSupported         = "NotSupported"
	P2PUnknown              = "Unknown"
)

// GPUByBusID finds a GPU's facts by its sysfs bus id.
func (f *Facts) GPUByBusID(bus string) *GPU {
	if f == nil {
		return nil
	}
	for i := range f.GPUs {
		if f.GPUs[i].BusID == bus {
			return &f.GPUs[i]
		}
	}
	return nil
}

// PeerStatus returns the P2P entry from GPU a to GPU b, or nil.
func (f *Facts) PeerStatus(a, b int) *P2P {
	if f == nil {
		return nil
	}
	for i := range f.P2P {
		if f.P2P[i].A == a && f.P2P[i].B == b {
			return &f.P2P[i]
		}
	}
	return nil
}

// DecodeFacts reads Facts from JSON, naming the file and the line in errors.
// A file whose arrays, strings or nesting exceed what any host has (see
// MaxGPUs) is refused before it is decoded.
func DecodeFacts(name string, b []byte) (*Facts, error) {
	if err := checkFactsShape(b); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var f Facts
	if err := textio.UnmarshalJSON(name, b, &f); err != nil {
		return nil, err
	}
	return &f, nil
}
