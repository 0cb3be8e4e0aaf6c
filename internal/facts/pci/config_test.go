package pci

import (
	"encoding/binary"
	"testing"
)

// config builds a config space with a PCIe capability at 0x40 and,
// optionally, ACS at 0x100.
func config(port PortType, lnkcap, lnksta uint32, devctl uint16, acs *uint16) []byte {
	b := make([]byte, ExtendedConfigLen)
	binary.LittleEndian.PutUint16(b[0:], 0x10de)
	binary.LittleEndian.PutUint16(b[2:], 0x2335)
	binary.LittleEndian.PutUint16(b[6:], 0x10)
	b[0x34] = 0x40
	b[0x40] = CapPCIExpress
	binary.LittleEndian.PutUint16(b[0x42:], uint16(2|int(port)<<4))
	binary.LittleEndian.PutUint32(b[0x44:], 2) // 512 B max payload supported
	binary.LittleEndian.PutUint16(b[0x48:], devctl)
	binary.LittleEndian.PutUint32(b[0x4c:], lnkcap)
	binary.LittleEndian.PutUint16(b[0x52:], uint16(lnksta))
	if acs != nil {
		binary.LittleEndian.PutUint32(b[0x100:], uint32(ExtCapACS)|1<<16)
		binary.LittleEndian.PutUint16(b[0x104:], 0x5f)
		binary.LittleEndian.PutUint16(b[0x106:], *acs)
	}
	return b
}

func TestParseConfig(t *testing.T) {
	acsOn := uint16(ACSSourceValidation | ACSRequestRedirect | ACSCompletionRedirect | ACSUpstreamForwarding)
	full := config(PortDownstream, 5|16<<4, 1|16<<4, 2<<12|1<<5|1<<4, &acsOn)
	c, err := ParseConfig(full)
	if err != nil {
		t.Fatal(err)
	}
	e := c.Express
	if e == nil || e.PortType != PortDownstream || e.LinkCapSpeed.Gen() != 5 || e.LinkCapWidth != 16 || e.LinkStaSpeed.Gen() != 1 || e.LinkStaWidth != 16 {
		t.Fatalf("express = %+v", e)
	}
	if e.MaxReadReq != 512 || e.MaxPayload != 256 || e.MaxPayloadCap != 512 || !e.RelaxedOrder {
		t.Errorf("devctl decoded as mrrs %d mps %d cap %d ro %v", e.MaxReadReq, e.MaxPayload, e.MaxPayloadCap, e.RelaxedOrder)
	}
	if c.ACS == nil || c.ACS.P2PBlocking() != ACSRequestRedirect|ACSCompletionRedirect {
		t.Errorf("acs = %+v", c.ACS)
	}
	if got := ACSFlags(c.ACS.Control); got != "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-" {
		t.Errorf("ACSFlags = %q", got)
	}

	// Non-root: 64 bytes, header only, nothing claimed about capabilities.
	short, err := ParseConfig(full[:UnprivilegedConfigLen])
	if err != nil || short.CapsReadable() || short.Express != nil || short.Extended {
		t.Errorf("short read parsed as %+v, %v", short, err)
	}
	// 256 bytes: standard capabilities, but ACS cannot be judged.
	std, err := ParseConfig(full[:StandardConfigLen])
	if err != nil || std.Express == nil || std.Extended || std.ACS != nil {
		t.Errorf("256-byte read parsed as %+v, %v", std, err)
	}
	// A device that fell off the bus reads all ones.
	gone := make([]byte, 256)
	for i := range gone {
		gone[i] = 0xff
	}
	if _, err := ParseConfig(gone); err == nil {
		t.Error("all-ones config space accepted")
	}
	if _, err := ParseConfig([]byte{1, 2}); err == nil {
		t.Error("2-byte config space accepted")
	}
}

func TestParseConfigLoops(t *testing.T) {
	b := config(PortRootPort, 4|16<<4, 4|16<<4, 0, nil)
	b[0x41] = 0x40 // capability points at itself
	binary.LittleEndian.PutUint32(b[0x100:], uint32(ExtCapAER)|1<<16|0x100<<20)
	c, err := ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Problems) != 2 {
		t.Errorf("problems = %v, want a standard and an extended loop", c.Problems)
	}
	if c.Express == nil || c.Express.PortType != PortRootPort {
		t.Errorf("express lost: %+v", c.Express)
	}
}

func FuzzParseConfig(f *testing.F) {
	acs := uint16(0x1d)
	f.Add(config(PortDownstream, 5|16<<4, 5|16<<4, 0x2020, &acs))
	f.Add(config(PortEndpoint, 4|8<<4, 1|8<<4, 0, nil)[:256])
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			return
		}
		if c.Len != len(b) {
			t.Fatalf("len %d, want %d", c.Len, len(b))
		}
		if !c.CapsReadable() && (c.Express != nil || c.ACS != nil) {
			t.Fatal("capabilities from a header-only read")
		}
	})
}
