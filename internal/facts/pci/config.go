package pci

import (
	"encoding/binary"
	"fmt"
)

// Sizes of config space regions.
const (
	// UnprivilegedConfigLen is what Linux lets a non-root reader see of a
	// device's config file: the standard header only.
	UnprivilegedConfigLen = 64
	StandardConfigLen     = 256
	ExtendedConfigLen     = 4096
)

// Capability IDs used here.
const (
	CapPCIExpress = 0x10
	ExtCapACS     = 0x000D
	ExtCapAER     = 0x0001
)

// PortType is the Device/Port Type field of the PCI Express capability.
type PortType int

// Port types as the PCIe specification numbers them, plus Unknown.
const (
	PortEndpoint         PortType = 0x0
	PortLegacyEndpoint   PortType = 0x1
	PortRootPort         PortType = 0x4
	PortUpstream         PortType = 0x5
	PortDownstream       PortType = 0x6
	PortPCIeToPCI        PortType = 0x7
	PortPCIToPCIe        PortType = 0x8
	PortRCIntegrated     PortType = 0x9
	PortRCEventCollector PortType = 0xa
	PortUnknown          PortType = -1
)

func (p PortType) String() string {
	switch p {
	case PortEndpoint:
		return "endpoint"
	case PortLegacyEndpoint:
		return "legacy-endpoint"
	case PortRootPort:
		return "root-port"
	case PortUpstream:
		return "switch-upstream"
	case PortDownstream:
		return "switch-downstream"
	case PortPCIeToPCI:
		return "pcie-to-pci-bridge"
	case PortPCIToPCIe:
		return "pci-to-pcie-bridge"
	case PortRCIntegrated:
		return "rc-integrated-endpoint"
	case PortRCEventCollector:
		return "rc-event-collector"
	}
	return "unknown"
}

// MarshalText makes port types readable in JSON.
func (p PortType) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText is the inverse of MarshalText.
func (p *PortType) UnmarshalText(b []byte) error {
	for _, c := range []PortType{PortEndpoint, PortLegacyEndpoint, PortRootPort, PortUpstream, PortDownstream, PortPCIeToPCI, PortPCIToPCIe, PortRCIntegrated, PortRCEventCollector} {
		if c.String() == string(b) {
			*p = c
			return nil
		}
	}
	*p = PortUnknown
	return nil
}

// ACS is the Access Control Services capability: which controls the port
// supports and which are enabled. Bit meanings per the PCIe specification.
type ACS struct {
	Offset  int    `json:"offset"`
	Cap     uint16 `json:"cap"`
	Control uint16 `json:"control"`
}

// ACS control bits.
const (
	ACSSourceValidation   = 1 << 0
	ACSTranslationBlock   = 1 << 1
	ACSRequestRedirect    = 1 << 2
	ACSCompletionRedirect = 1 << 3
	ACSUpstreamForwarding = 1 << 4
	ACSEgressControl      = 1 << 5
	ACSDirectTranslated   = 1 << 6
)

// P2PBlocking is the subset of enabled controls that force peer-to-peer
// traffic up to the root complex (request/completion redirect, egress
// control): what breaks GPUDirect P2P and RDMA through a switch.
func (a ACS) P2PBlocking() uint16 {
	return a.Control & (ACSRequestRedirect | ACSCompletionRedirect | ACSEgressControl)
}

// ACSFlags names the set bits of an ACS register, like lspci's "SrcValid+ ReqRedir-".
func ACSFlags(v uint16) string {
	names := []struct {
		bit  uint16
		name string
	}{{ACSSourceValidation, "SrcValid"}, {ACSTranslationBlock, "TransBlk"}, {ACSRequestRedirect, "ReqRedir"}, {ACSCompletionRedirect, "CmpltRedir"}, {ACSUpstreamForwarding, "UpstreamFwd"}, {ACSEgressControl, "EgressCtrl"}, {ACSDirectTranslated, "DirectTrans"}}
	s := ""
	for i, n := range names {
		if i > 0 {
			s += " "
		}
		if v&n.bit != 0 {
			s += n.name + "+"
		} else {
			s += n.name + "-"
		}
	}
	return s
}

// Express holds the fields of the PCI Express capability gdrcheck uses.
type Express struct {
	Offset        int       `json:"offset"`
	PortType      PortType  `json:"port_type"`
	MaxPayloadCap int       `json:"max_payload_supported"` // bytes
	MaxPayload    int       `json:"max_payload"`           // bytes, from Device Control
	MaxReadReq    int       `json:"max_read_request"`      // bytes
	RelaxedOrder  bool      `json:"relaxed_ordering"`
	NoSnoop       bool      `json:"no_snoop"`
	LinkCapSpeed  LinkSpeed `json:"link_cap_speed"`
	LinkCapWidth  int       `json:"link_cap_width"`
	LinkStaSpeed  LinkSpeed `json:"link_status_speed"`
	LinkStaWidth  int       `json:"link_status_width"`
	HasLink       bool      `json:"has_link"` // the capability is long enough to hold link registers
}

// Config is what was parsed out of a device's config space bytes.
type Config struct {
	Len        int      `json:"len"` // bytes that were readable
	VendorID   uint16   `json:"vendor_id"`
	DeviceID   uint16   `json:"device_id"`
	HeaderType uint8    `json:"header_type"`
	Express    *Express `json:"express,omitempty"`
	ACS        *ACS     `json:"acs,omitempty"`
	ExtCaps    []uint16 `json:"ext_caps,omitempty"`
	// Extended is true when the extended region (past 256 bytes) was
	// readable, so a missing ACS capability really means "none".
	Extended bool `json:"extended"`
	// Problems found while walking capability lists (loops, bad pointers).
	Problems []string `json:"problems,omitempty"`
}

// CapsReadable says whether the capability lists could be read at all.
func (c *Config) CapsReadable() bool { return c != nil && c.Len > UnprivilegedConfigLen }

// ParseConfig parses config space bytes as read from sysfs. Short reads
// (non-root: 64 bytes) parse the header and leave capabilities unknown.
// Malformed capability lists (loops, out-of-range pointers) are reported in
// Problems, never followed forever.
func ParseConfig(b []byte) (*Config, error) {
	if len(b) < 16 {
		return nil, fmt.Errorf("config space: %d bytes, need at least 16", len(b))
	}
	c := &Config{Len: len(b)}
	c.VendorID = binary.LittleEndian.Uint16(b[0:])
	c.DeviceID = binary.LittleEndian.Uint16(b[2:])
	c.HeaderType = b[0x0e] & 0x7f
	if c.VendorID == 0xffff {
		return c, fmt.Errorf("config space: vendor id 0xffff (device gone or not responding)")
	}
	if len(b) <= UnprivilegedConfigLen {
		return c, nil
	}
	status := binary.LittleEndian.Uint16(b[6:])
	if status&0x10 != 0 {
		c.parseStandard(b)
	}
	if len(b) > StandardConfigLen {
		c.Extended = true
		c.parseExtended(b)
	}
	return c, nil
}

func (c *Config) parseStandard(b []byte) {
	limit := len(b)
	if limit > StandardConfigLen {
		limit = StandardConfigLen
	}
	ptr := int(b[0x34] & 0xfc)
	seen := map[int]bool{}
	for ptr != 0 {
		if ptr < 0x40 || ptr+2 > limit {
			c.Problems = append(c.Problems, fmt.Sprintf("capability pointer 0x%02x out of range", ptr))
			return
		}
		if seen[ptr] {
			c.Problems = append(c.Problems, fmt.Sprintf("capability list loops at 0x%02x", ptr))
			return
		}
		seen[ptr] = true
		id := b[ptr]
		next := int(b[ptr+1] & 0xfc)
		if id == CapPCIExpress && c.Express == nil {
			c.Express = parseExpress(b[:limit], ptr)
		}
		ptr = next
	}
}

func parseExpress(b []byte, off int) *Express {
	e := &Express{Offset: off, PortType: PortUnknown}
	rd16 := func(o int) (uint16, bool) {
		if off+o+2 > len(b) {
			return 0, false
		}
		return binary.LittleEndian.Uint16(b[off+o:]), true
	}
	rd32 := func(o int) (uint32, bool) {
		if off+o+4 > len(b) {
			return 0, false
		}
		return binary.LittleEndian.Uint32(b[off+o:]), true
	}
	if flags, ok := rd16(2); ok {
		e.PortType = PortType((flags >> 4) & 0xf)
	}
	if devcap, ok := rd32(4); ok {
		e.MaxPayloadCap = 128 << (devcap & 0x7)
	}
	if devctl, ok := rd16(8); ok {
		e.MaxPayload = 128 << ((devctl >> 5) & 0x7)
		e.MaxReadReq = 128 << ((devctl >> 12) & 0x7)
		e.RelaxedOrder = devctl&(1<<4) != 0
		e.NoSnoop = devctl&(1<<11) != 0
	}
	if lnkcap, ok := rd32(0x0c); ok {
		e.HasLink = true
		e.LinkCapSpeed = SpeedOfGen(int(lnkcap & 0xf))
		e.LinkCapWidth = int((lnkcap >> 4) & 0x3f)
	}
	if lnksta, ok := rd16(0x12); ok {
		e.LinkStaSpeed = SpeedOfGen(int(lnksta & 0xf))
		e.LinkStaWidth = int((lnksta >> 4) & 0x3f)
	}
	return e
}

func (c *Config) parseExtended(b []byte) {
	ptr := StandardConfigLen
	seen := map[int]bool{}
	for ptr != 0 {
		if ptr < StandardConfigLen || ptr+4 > len(b) || ptr&3 != 0 {
			c.Problems = append(c.Problems, fmt.Sprintf("extended capability pointer 0x%03x out of range", ptr))
			return
		}
		if seen[ptr] {
			c.Problems = append(c.Problems, fmt.Sprintf("extended capability list loops at 0x%03x", ptr))
			return
		}
		seen[ptr] = true
		hdr := binary.LittleEndian.Uint32(b[ptr:])
		if hdr == 0 || hdr == 0xffffffff {
			// No extended capabilities (or config space not implemented).
			return
		}
		id := uint16(hdr & 0xffff)
		next := int(hdr >> 20)
		if id != 0 {
			c.ExtCaps = append(c.ExtCaps, id)
		}
		if id == ExtCapACS && c.ACS == nil && ptr+8 <= len(b) {
			c.ACS = &ACS{Offset: ptr, Cap: binary.LittleEndian.Uint16(b[ptr+4:]), Control: binary.LittleEndian.Uint16(b[ptr+6:])}
		}
		ptr = next
	}
}
