package counters

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readEthtool(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "ethtool-m", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func TestParseEthtoolModuleFixtures(t *testing.T) {
	type lane struct {
		n            int
		bias, tx, rx float64
		dark         bool
	}
	for _, tc := range []struct {
		file, layout, pn           string
		temp, volt                 float64
		lanes                      []lane
		tempHW, tempHA, rxLW, rxLA float64
	}{
		{"qsfpdd-cmis-arista-qdd-400g-xdr4.txt", LayoutCMIS, "QDD-400G-XDR4", 70.49, 3.2186,
			[]lane{{1, 83.806, 1.5975, 2.2489, false}, {4, 110.1, 1.4387, 1.8215, false}, {5, 0, 0, 0, true}, {8, 0, 0, 0, true}},
			70, 75, 0.2042, 0.1288},
		{"qsfp28-sff8636-mellanox-mma1b00-c100d.txt", LayoutSFF8636, "MMA1B00-C100D", 30.56, 3.235,
			[]lane{{1, 6.75, 1.3924, 0.972, false}, {4, 6.75, 1.3397, 1.134, false}},
			70, 80, 0.0933, 0.0467},
		{"sfp-sff8472-10g-sr.txt", LayoutSFF8472, "SFP-10G-SR", 42.59, 3.282,
			[]lane{{1, 6.986, 0.4678, 0.044, false}},
			85, 90, 0.0398, 0.0251},
	} {
		t.Run(tc.file, func(t *testing.T) {
			d, err := ParseEthtoolModule(tc.file, readEthtool(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if d.Layout != tc.layout || d.PN != tc.pn || val(d.TempC) != tc.temp || val(d.VoltageV) != tc.volt {
				t.Errorf("got layout %q pn %q temp %v volt %v", d.Layout, d.PN, val(d.TempC), val(d.VoltageV))
			}
			if !d.Monitored() {
				t.Error("not monitored")
			}
			for _, w := range tc.lanes {
				if w.n > len(d.Lanes) {
					t.Fatalf("lane %d: only %d lanes", w.n, len(d.Lanes))
				}
				l := d.Lanes[w.n-1]
				if l.Lane != w.n || val(l.BiasMA) != w.bias || val(l.TxMW) != w.tx || val(l.RxMW) != w.rx || l.Dark() != w.dark {
					t.Errorf("lane %d: got %+v bias %v tx %v rx %v dark %v", w.n, l.Lane, val(l.BiasMA), val(l.TxMW), val(l.RxMW), l.Dark())
				}
			}
			if d.Temp == nil || d.RxPower == nil {
				t.Fatalf("thresholds missing: %+v %+v", d.Temp, d.RxPower)
			}
			if val(d.Temp.HighWarn) != tc.tempHW || val(d.Temp.HighAlarm) != tc.tempHA || val(d.RxPower.LowWarn) != tc.rxLW || val(d.RxPower.LowAlarm) != tc.rxLA {
				t.Errorf("thresholds: temp %v/%v rx %v/%v", val(d.Temp.HighWarn), val(d.Temp.HighAlarm), val(d.RxPower.LowWarn), val(d.RxPower.LowAlarm))
			}
		})
	}
}

// TestParseEthtoolModuleShapes builds the other shapes from the real files.
func TestParseEthtoolModuleShapes(t *testing.T) {
	sff := readEthtool(t, "qsfp28-sff8636-mellanox-mma1b00-c100d.txt")
	cmis := readEthtool(t, "qsfpdd-cmis-arista-qdd-400g-xdr4.txt")
	drop := func(s, sub string) string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.Contains(l, sub) {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	// A passive copper cable: SFF-8636 without any monitor line.
	dac := drop(drop(drop(drop(drop(sff, "Module temperature"), "Module voltage"), "Laser"), "Transmit avg"), "Rcvr signal")
	for _, tc := range []struct {
		name, text, wantErr string
		check               func(t *testing.T, d *DDM)
	}{
		{name: "no thresholds (flags not implemented)", text: drop(sff, "threshold"), check: func(t *testing.T, d *DDM) {
			if d.Temp != nil || d.RxPower != nil || d.TempC == nil || len(d.Lanes) != 4 {
				t.Errorf("got %+v", d)
			}
		}},
		{name: "passive cable, no monitors", text: dac, check: func(t *testing.T, d *DDM) {
			if d.Monitored() || d.Layout != LayoutSFF8636 {
				t.Errorf("got %+v", d)
			}
		}},
		{name: "OMA receive power", text: strings.ReplaceAll(sff, "Rcvr signal avg optical power", "Rcvr signal OMA"), check: func(t *testing.T, d *DDM) {
			if !d.RxOMA || val(d.Lanes[2].RxMW) != 1.134 {
				t.Errorf("got %+v", d)
			}
		}},
		{name: "OSFP identifier", text: strings.Replace(cmis, "0x18 (QSFP-DD Double Density 8X Pluggable Transceiver (INF-8628))", "0x19 (OSFP 8X Pluggable Transceiver)", 1), check: func(t *testing.T, d *DDM) {
			if d.Layout != LayoutCMIS || len(d.Lanes) != 8 {
				t.Errorf("got %s %d lanes", d.Layout, len(d.Lanes))
			}
		}},
		{name: "CRLF line ends", text: strings.ReplaceAll(cmis, "\n", "\r\n"), check: func(t *testing.T, d *DDM) {
			if val(d.TempC) != 70.49 || len(d.Lanes) != 8 {
				t.Errorf("got %+v", d)
			}
		}},
		{name: "garbled temperature", text: strings.Replace(sff, "30.56 degrees C", "3O.56 degrees C", 1), wantErr: `garbled temperature:26: Module temperature: want a number in degrees C, got "3O.56 degrees C`},
		{name: "power without unit", text: strings.Replace(cmis, "2.2489 mW / 3.52 dBm", "2.2489", 1), wantErr: `power without unit:51: Rcvr signal avg optical power (Channel 1): want a number in mW`},
		{name: "garbled threshold", text: strings.Replace(sff, "0.0933 mW / -10.30 dBm", "n/a", 1), wantErr: `garbled threshold:116: Laser rx power low warning threshold: want a number in mW, got "n/a"`},
		{name: "monitor twice", text: sff + "\tModule temperature                        : 31.00 degrees C / 87.80 degrees F\n", wantErr: `monitor twice:117: "Module temperature" given twice (first on line 26)`},
		{name: "hex dump", text: "Offset\t\tValues\n------\t\t------\n0x0000:\t\t18 40 00 07\n", wantErr: "hex dump:1: no Identifier line"},
		{name: "empty", text: "", wantErr: "empty:1: no Identifier line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseEthtoolModule(tc.name, tc.text)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, d)
		})
	}
}

func TestDBm(t *testing.T) {
	for _, tc := range []struct{ mw, dbm float64 }{{1, 0}, {2.2489, 3.52}, {0.2042, -6.90}, {0.0467, -13.31}} {
		if got := DBm(tc.mw); math.Abs(got-tc.dbm) > 0.006 {
			t.Errorf("DBm(%v) = %v, want %v (ethtool's value)", tc.mw, got, tc.dbm)
		}
	}
	if !math.IsInf(DBm(0), -1) {
		t.Error("0 mW is not -inf dBm")
	}
}

// BenchmarkParseEthtoolModule: the 8-lane CMIS output, the largest a
// sample parses per port.
func BenchmarkParseEthtoolModule(b *testing.B) {
	s, err := os.ReadFile(filepath.Join("testdata", "ethtool-m", "qsfpdd-cmis-arista-qdd-400g-xdr4.txt"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ParseEthtoolModule("qsfpdd", string(s)); err != nil {
			b.Fatal(err)
		}
	}
}
