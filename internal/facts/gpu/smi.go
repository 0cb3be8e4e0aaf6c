package gpu

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// smiLog mirrors the parts of `nvidia-smi -q -x` gdrcheck reads.
type smiLog struct {
	Driver string   `xml:"driver_version"`
	CUDA   string   `xml:"cuda_version"`
	GPUs   []smiGPU `xml:"gpu"`
}

type smiGPU struct {
	ID           string `xml:"id,attr"`
	Name         string `xml:"product_name"`
	Architecture string `xml:"product_architecture"`
	Persistence  string `xml:"persistence_mode"`
	Serial       string `xml:"serial"`
	UUID         string `xml:"uuid"`
	Minor        string `xml:"minor_number"`
	MIG          struct {
		Current string `xml:"current_mig"`
	} `xml:"mig_mode"`
	PCI struct {
		BusID string `xml:"pci_bus_id"`
		Link  struct {
			Gen struct {
				Max string `xml:"max_link_gen"`
				Cur string `xml:"current_link_gen"`
			} `xml:"pcie_gen"`
			Widths struct {
				Max string `xml:"max_link_width"`
				Cur string `xml:"current_link_width"`
			} `xml:"link_widths"`
		} `xml:"pci_gpu_link_info"`
		Replay string `xml:"replay_counter"`
	} `xml:"pci"`
	Clocks struct {
		SM string `xml:"sm_clock"`
	} `xml:"clocks"`
	MaxClocks struct {
		SM string `xml:"sm_clock"`
	} `xml:"max_clocks"`
	Power struct {
		Instant string `xml:"instant_power_draw"`
		Draw    string `xml:"power_draw"` // drivers before 535
		Limit   string `xml:"current_power_limit"`
	} `xml:"gpu_power_readings"`
	OldPower struct {
		Draw  string `xml:"power_draw"`
		Limit string `xml:"power_limit"`
	} `xml:"power_readings"`
	Temperature struct {
		GPU string `xml:"gpu_temp"`
	} `xml:"temperature"`
	ClockEvents smiReasons `xml:"clocks_event_reasons"`
	// Drivers before 535 call them clocks_throttle_reasons.
	ClockThrottle smiReasons `xml:"clocks_throttle_reasons"`
	FB            struct {
		Total string `xml:"total"`
	} `xml:"fb_memory_usage"`
	ECCMode struct {
		Current string `xml:"current_ecc"`
		Pending string `xml:"pending_ecc"`
	} `xml:"ecc_mode"`
	ECCErrors struct {
		Volatile  smiECCCounts `xml:"volatile"`
		Aggregate smiECCCounts `xml:"aggregate"`
	} `xml:"ecc_errors"`
	Retired struct {
		SBE struct {
			Count string `xml:"retired_count"`
		} `xml:"multiple_single_bit_retirement"`
		DBE struct {
			Count string `xml:"retired_count"`
		} `xml:"double_bit_retirement"`
		Pending string `xml:"pending_retirement"`
	} `xml:"retired_pages"`
	Remapped struct {
		Corr    string `xml:"remapped_row_corr"`
		Unc     string `xml:"remapped_row_unc"`
		Pending string `xml:"remapped_row_pending"`
		Failure string `xml:"remapped_row_failure"`
	} `xml:"remapped_rows"`
	Fabric struct {
		State   string `xml:"state"`
		Status  string `xml:"status"`
		Clique  string `xml:"cliqueId"`
		Cluster string `xml:"clusterUuid"`
		Health  struct {
			Summary string `xml:"summary"`
		} `xml:"health"`
	} `xml:"fabric"`
}

type smiReasons struct {
	Items []smiReason `xml:",any"`
}

type smiReason struct {
	XMLName xml.Name
	Value   string `xml:",chardata"`
}

type smiECCCounts struct {
	// Newer drivers split SRAM/DRAM; older ones print single_bit/double_bit.
	SRAMCorr      string `xml:"sram_correctable"`
	SRAMUncParity string `xml:"sram_uncorrectable_parity"`
	SRAMUncSECDED string `xml:"sram_uncorrectable_secded"`
	SRAMUnc       string `xml:"sram_uncorrectable"`
	DRAMCorr      string `xml:"dram_correctable"`
	DRAMUnc       string `xml:"dram_uncorrectable"`
	SingleTotal   string `xml:"single_bit>total"`
	DoubleTotal   string `xml:"double_bit>total"`
}

// ParseSMIQuery turns `nvidia-smi -q -x` output into Facts. It knows no
// NVLink peers and no P2P verdicts: those stay unknown.
func ParseSMIQuery(name string, b []byte) (*Facts, error) {
	var log smiLog
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = false
	// nvidia-smi names a DTD that is not shipped; ignore it.
	d.Entity = xml.HTMLEntity
	if err := checkXMLDepth(b); err != nil {
		return nil, fmt.Errorf("%s: not nvidia-smi -q -x output: %v", name, err)
	}
	if err := decodeSMILog(d, &log); err != nil && err != io.EOF {
		line, _ := d.InputPos()
		return nil, fmt.Errorf("%s:%d: not nvidia-smi -q -x output: %v", name, line, err)
	}
	if log.Driver == "" && len(log.GPUs) == 0 {
		return nil, fmt.Errorf("%s: no <nvidia_smi_log> driver_version or gpu elements", name)
	}
	f := &Facts{Source: "nvidia-smi -q -x", DriverVersion: na(log.Driver), CUDADriverVersion: na(log.CUDA)}
	for i, sg := range log.GPUs {
		g := GPU{Index: i, Name: na(sg.Name), UUID: na(sg.UUID), Serial: na(sg.Serial), Architecture: na(sg.Architecture)}
		bus := sg.PCI.BusID
		if bus == "" {
			bus = sg.ID
		}
		g.BusID = pci.NormalizeBusID(bus)
		g.MinorNumber = atoiPtr(sg.Minor)
		g.Persistence = enabledPtr(sg.Persistence)
		g.MIGEnabled = enabledPtr(sg.MIG.Current)
		if v := atoiPtr(strings.TrimSuffix(strings.TrimSpace(sg.FB.Total), " MiB")); v != nil {
			g.MemoryMiB = new(uint64(*v))
		}
		g.ECC.Current = enabledPtr(sg.ECCMode.Current)
		g.ECC.Pending = enabledPtr(sg.ECCMode.Pending)
		g.ECC.VolatileUncorrected = sg.ECCErrors.Volatile.uncorrected()
		g.ECC.AggregateUncorrected = sg.ECCErrors.Aggregate.uncorrected()
		g.ECC.VolatileCorrected = sg.ECCErrors.Volatile.corrected()
		g.ECC.AggregateCorrected = sg.ECCErrors.Aggregate.corrected()
		g.Retired.SingleBit = u64Ptr(sg.Retired.SBE.Count)
		g.Retired.DoubleBit = u64Ptr(sg.Retired.DBE.Count)
		g.Retired.Pending = yesPtr(sg.Retired.Pending)
		g.Remapped = Remapped{Correctable: u64Ptr(sg.Remapped.Corr), Uncorrectable: u64Ptr(sg.Remapped.Unc), Pending: yesPtr(sg.Remapped.Pending), Failure: yesPtr(sg.Remapped.Failure)}
		reasons := sg.ClockEvents.Items
		prefix := "clocks_event_reason_"
		if len(reasons) == 0 {
			reasons, prefix = sg.ClockThrottle.Items, "clocks_throttle_reason_"
		}
		if len(reasons) > 0 {
			g.ClockEvents = []string{}
			for _, r := range reasons {
				if strings.TrimSpace(r.Value) == "Active" {
					g.ClockEvents = append(g.ClockEvents, strings.TrimPrefix(r.XMLName.Local, prefix))
				}
			}
		}
		g.PCIe.MaxGen = atoiPtr(sg.PCI.Link.Gen.Max)
		g.PCIe.CurGen = atoiPtr(sg.PCI.Link.Gen.Cur)
		g.PCIe.MaxWidth = atoiPtr(strings.TrimSuffix(strings.TrimSpace(sg.PCI.Link.Widths.Max), "x"))
		g.PCIe.CurWidth = atoiPtr(strings.TrimSuffix(strings.TrimSpace(sg.PCI.Link.Widths.Cur), "x"))
		g.PCIe.ReplayCounter = u64Ptr(sg.PCI.Replay)
		g.Sensors = Sensors{SMClockMHz: unitU32(sg.Clocks.SM, "MHz"), MaxSMClockMHz: unitU32(sg.MaxClocks.SM, "MHz"),
			PowerW:      unitF64(cmp.Or(na(sg.Power.Instant), na(sg.Power.Draw), na(sg.OldPower.Draw)), "W"),
			PowerLimitW: unitF64(cmp.Or(na(sg.Power.Limit), na(sg.OldPower.Limit)), "W"), TempC: unitU32(sg.Temperature.GPU, "C")}
		if st := na(sg.Fabric.State); st != "" {
			g.Fabric.Supported = !strings.EqualFold(st, "Not Supported")
			g.Fabric.State = strings.ToLower(strings.ReplaceAll(st, " ", "-"))
			g.Fabric.Status = strings.ToLower(na(sg.Fabric.Status))
			if v := atoiPtr(sg.Fabric.Clique); v != nil {
				g.Fabric.CliqueID = new(uint32(*v))
			}
			g.Fabric.ClusterUUID = na(sg.Fabric.Cluster)
			g.Fabric.Health = strings.ToLower(na(sg.Fabric.Health.Summary))
		}
		f.GPUs = append(f.GPUs, g)
	}
	return f, nil
}

// maxXMLDepth bounds the nesting of nvidia-smi -q -x output, which is 5
// deep: the decoder keeps a frame for every open element.
const maxXMLDepth = 32

// checkXMLDepth scans b, allocating nothing, and refuses elements nested
// deeper than maxXMLDepth. It counts as the decoder does: a start tag opens
// an element unless it ends in "/>", an end tag closes one (a mismatched
// one too, in non-strict mode); comments, CDATA sections, processing
// instructions and declarations open nothing, and a quoted attribute value
// may hold '>' and "/>". Syntax errors are left to the decoder.
func checkXMLDepth(b []byte) error {
	depth := 0
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '<')
		if j < 0 {
			return nil
		}
		i += j
		rest := b[i:]
		var end []byte
		switch {
		case bytes.HasPrefix(rest, []byte("<!--")):
			end = []byte("-->")
		case bytes.HasPrefix(rest, []byte("<![CDATA[")):
			end = []byte("]]>")
		case bytes.HasPrefix(rest, []byte("<?")):
			end = []byte("?>")
		}
		if end != nil {
			k := bytes.Index(rest, end)
			if k < 0 {
				return nil
			}
			i += k + len(end)
			continue
		}
		// A tag: find its '>' outside quotes.
		k, quote := 1, byte(0)
		for ; k < len(rest); k++ {
			c := rest[k]
			if quote != 0 {
				if c == quote {
					quote = 0
				}
				continue
			}
			if c == '"' || c == '\'' {
				quote = c
			} else if c == '>' {
				break
			}
		}
		if k == len(rest) {
			return nil
		}
		switch {
		case rest[1] == '/':
			depth--
		case rest[1] == '!' || rest[k-1] == '/':
		default:
			if depth++; depth > maxXMLDepth {
				return fmt.Errorf("line %d: elements nested more than %d deep", 1+bytes.Count(b[:i], []byte("\n")), maxXMLDepth)
			}
		}
		i += k + 1
	}
	return nil
}

// decodeSMILog decodes the first element of d into log one child at a
// time, so that a document of a million empty <gpu/> elements stops at
// MaxGPUs instead of decoding them all. (The decoder itself refuses
// nesting deeper than 10,000 elements.)
func decodeSMILog(d *xml.Decoder, log *smiLog) error {
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		if _, ok := tok.(xml.StartElement); ok {
			break
		}
	}
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		var el xml.StartElement
		switch t := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			el = t
		default:
			continue
		}
		switch el.Name.Local {
		case "driver_version":
			err = d.DecodeElement(&log.Driver, &el)
		case "cuda_version":
			err = d.DecodeElement(&log.CUDA, &el)
		case "gpu":
			if len(log.GPUs) == MaxGPUs {
				return fmt.Errorf("more than %d <gpu> elements", MaxGPUs)
			}
			var g smiGPU
			err = d.DecodeElement(&g, &el)
			log.GPUs = append(log.GPUs, g)
		default:
			err = d.Skip()
		}
		if err != nil {
			return err
		}
	}
}

// UnmarshalXML keeps at most maxClockEvents reasons.
func (r *smiReasons) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			if len(r.Items) == maxClockEvents {
				return fmt.Errorf("<%s> lists more than %d reasons", start.Name.Local, maxClockEvents)
			}
			item := smiReason{XMLName: t.Name}
			if err := d.DecodeElement(&item.Value, &t); err != nil {
				return err
			}
			r.Items = append(r.Items, item)
		}
	}
}

func (c smiECCCounts) uncorrected() *uint64 {
	if c.DRAMUnc != "" || c.SRAMUncParity != "" || c.SRAMUncSECDED != "" || c.SRAMUnc != "" {
		return sumPtr(c.DRAMUnc, c.SRAMUncParity, c.SRAMUncSECDED, c.SRAMUnc)
	}
	return u64Ptr(c.DoubleTotal)
}

func (c smiECCCounts) corrected() *uint64 {
	if c.DRAMCorr != "" || c.SRAMCorr != "" {
		return sumPtr(c.DRAMCorr, c.SRAMCorr)
	}
	return u64Ptr(c.SingleTotal)
}

// na maps nvidia-smi's "N/A" and friends to "".
func na(s string) string {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "n/a", "[n/a]", "not available", "[not supported]", "unknown error":
		return ""
	}
	return s
}

// unitU32 reads "810 MHz" (the unit as given); nil when it is not that.
func unitU32(s, unit string) *uint32 {
	v, ok := strings.CutSuffix(na(s), " "+unit)
	if !ok {
		return nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return nil
	}
	return new(uint32(n))
}

// unitF64 reads "83.49 W"; nil when it is not that.
func unitF64(s, unit string) *float64 {
	v, ok := strings.CutSuffix(na(s), " "+unit)
	if !ok {
		return nil
	}
	f, ok := textio.ParseFloat(v)
	if !ok {
		return nil
	}
	return &f
}

func atoiPtr(s string) *int {
	v, err := strconv.Atoi(na(s))
	if err != nil {
		return nil
	}
	return &v
}

func u64Ptr(s string) *uint64 {
	v, err := strconv.ParseUint(na(s), 10, 64)
	if err != nil {
		return nil
	}
	return &v
}

func sumPtr(ss ...string) *uint64 {
	var total uint64
	any := false
	for _, s := range ss {
		if v := u64Ptr(s); v != nil {
			total += *v
			any = true
		}
	}
	if !any {
		return nil
	}
	return &total
}

func enabledPtr(s string) *bool { return wordPtr(s, "enabled", "disabled") }

func yesPtr(s string) *bool { return wordPtr(s, "yes", "no") }

// wordPtr reads a boolean that nvidia-smi writes as the word yes or no (in
// any case); nil for anything else, N/A included.
func wordPtr(s, yes, no string) *bool {
	switch strings.ToLower(na(s)) {
	case yes:
		return new(true)
	case no:
		return new(false)
	}
	return nil
}
