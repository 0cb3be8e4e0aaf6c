package gpu

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSMIQueryH200(t *testing.T) {
	b, err := os.ReadFile("testdata/h200x1-vm-nvidia-smi-q-x.xml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseSMIQuery("h200.xml", b)
	if err != nil {
		t.Fatal(err)
	}
	if f.DriverVersion != "580.159.04" || f.CUDADriverVersion != "13.0" || len(f.GPUs) != 1 {
		t.Fatalf("facts = %+v", f)
	}
	g := f.GPUs[0]
	type view struct {
		Bus, Name string
		Persist   bool
		ECC       bool
		Unc       uint64
		MaxGen    int
		Width     int
		Events    []string
		Pending   bool
	}
	want := view{"0000:00:06.0", "NVIDIA H200", true, true, 0, 5, 16, []string{"gpu_idle"}, false}
	got := view{g.BusID, g.Name, *g.Persistence, *g.ECC.Current, *g.ECC.AggregateUncorrected, *g.PCIe.MaxGen, *g.PCIe.CurWidth, g.ClockEvents, *g.Remapped.Pending}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	// Sensors: the idle clock, the power drawn and its limit, the temperature.
	if sn := g.Sensors; sn.SMClockMHz == nil || *sn.SMClockMHz != 345 || *sn.MaxSMClockMHz != 1980 || *sn.PowerW != 78.29 || *sn.PowerLimitW != 700 || *sn.TempC != 34 {
		t.Errorf("sensors %+v", sn)
	}
	if g.NVLinkQueried || g.Retired.SingleBit != nil || g.Fabric.Supported {
		t.Errorf("facts nvidia-smi -q -x does not give were claimed: %+v", g)
	}
}

// The volatile corrected count the burn-in judges as a rate: SRAM and
// DRAM summed where the driver splits them (535 and later), the
// single-bit total where it does not, unread where it prints N/A.
func TestParseSMIQueryCorrectedECC(t *testing.T) {
	doc := func(volatile string) []byte {
		return []byte(`<nvidia_smi_log><driver_version>580</driver_version><gpu id="00000000:18:00.0"><ecc_errors><volatile>` +
			volatile + `</volatile></ecc_errors></gpu></nvidia_smi_log>`)
	}
	for _, c := range []struct {
		name, volatile string
		want           *uint64
	}{
		{"SRAM and DRAM", "<sram_correctable>2</sram_correctable><sram_uncorrectable_parity>0</sram_uncorrectable_parity><dram_correctable>5</dram_correctable><dram_uncorrectable>0</dram_uncorrectable>", new(uint64(7))},
		{"single and double bit", "<single_bit><total>4</total></single_bit><double_bit><total>0</total></double_bit>", new(uint64(4))},
		{"N/A", "<sram_correctable>N/A</sram_correctable><dram_correctable>N/A</dram_correctable>", nil},
	} {
		f, err := ParseSMIQuery("q.xml", doc(c.volatile))
		if err != nil || len(f.GPUs) != 1 {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := cmp.Diff(c.want, f.GPUs[0].ECC.VolatileCorrected); d != "" {
			t.Errorf("%s: volatile corrected (-want +got)\n%s", c.name, d)
		}
	}
}

func TestParseSMIQueryErrors(t *testing.T) {
	for _, in := range []string{"", "not xml at all", "<nvidia_smi_log><gpu id=", "<other/>"} {
		if _, err := ParseSMIQuery("bad.xml", []byte(in)); err == nil || !strings.HasPrefix(err.Error(), "bad.xml") {
			t.Errorf("ParseSMIQuery(%q) err = %v, want one naming the file", in, err)
		}
	}
}

func FuzzParseSMIQuery(f *testing.F) {
	if b, err := os.ReadFile("testdata/h200x1-vm-nvidia-smi-q-x.xml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("<nvidia_smi_log><driver_version>1</driver_version><gpu id=\"0:1:2.3\"></gpu></nvidia_smi_log>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseSMIQuery("fuzz.xml", b)
	})
}

func TestUnitF64(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"83.49 W", 83.49, true},
		{" 700.00 W", 700, true},
		{"N/A", 0, false},
		{"inf W", 0, false},
		{"nan W", 0, false},
		{"1e999 W", 0, false},
		{"83 MHz", 0, false},
	} {
		got := unitF64(c.in, "W")
		if (got != nil) != c.ok || got != nil && *got != c.want {
			t.Errorf("unitF64(%q) = %v, want %v (ok %v)", c.in, got, c.want, c.ok)
		}
	}
}
