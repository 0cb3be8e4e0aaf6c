package counters

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
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

// onFlags lists a module's On flags as "NAME/LANE".
func onFlags(d *DDM) []string {
	var out []string
	for _, f := range d.Flags {
		if f.On {
			out = append(out, fmt.Sprintf("%s/%d", f.Name, f.Lane))
		}
	}
	return out
}

// TestParseEthtoolModuleFlags: the module's own flags on every real
// output (README.md names each source), and the shapes built from them.
func TestParseEthtoolModuleFlags(t *testing.T) {
	sff := readEthtool(t, "qsfp28-sff8636-mellanox-mma1b00-c100d.txt")
	cmis := readEthtool(t, "qsfpdd-cmis-arista-qdd-400g-xdr4.txt")
	// graft puts lines after the line holding anchor (the excerpts of
	// ethtool's status lines carry no Identifier of their own).
	graft := func(s, anchor, lines string) string {
		i := strings.Index(s, anchor)
		j := i + strings.Index(s[i:], "\n") + 1
		return s[:j] + lines + s[j:]
	}
	dropLines := func(s string, subs ...string) string {
		var keep []string
	next:
		for _, l := range strings.Split(s, "\n") {
			for _, sub := range subs {
				if strings.Contains(l, sub) {
					continue next
				}
			}
			keep = append(keep, l)
		}
		return strings.Join(keep, "\n")
	}
	// ethtool's later SFF-8636 layout (module-common.c, 2024): the lane
	// after the padded name, "Chan" for every flag.
	later := regexp.MustCompile(`(?m)^\t(Laser (?:bias current|tx power|rx power) (?:high|low) (?:alarm|warning))\s+\((?:Chan|Channel) (\d)\)\s+: (On|Off)$`)
	sffLater := later.ReplaceAllStringFunc(sff, func(l string) string {
		m := later.FindStringSubmatch(l)
		return fmt.Sprintf("\t%-41s (Chan %s) : %s", m[1], m[2], m[3])
	})
	for _, tc := range []struct {
		name, text string
		flags      int      // flags read
		on         []string // On, in order
		impl       string   // FlagsImplemented: "yes", "no", "" (nil)
		onByCheck  bool     // the On flags are checked by check
		check      func(t *testing.T, d *DDM)
	}{
		{name: "CMIS QSFP-DD, temperature warning on", text: cmis, flags: 8 + 12*8 + 5, on: []string{"Module temperature high warning/0"}, check: func(t *testing.T, d *DDM) {
			if on, read := d.Flag("Rx loss of signal", 3); on || !read {
				t.Errorf("Rx LOS lane 3 (None): on %v read %v", on, read)
			}
			if on, read := d.Flag("Laser rx power low alarm", 8); on || !read {
				t.Errorf("rx low alarm lane 8: on %v read %v", on, read)
			}
		}},
		{name: "SFF-8636 QSFP28, all off", text: sff, flags: 56, impl: "yes"},
		{name: "SFF-8472 SFP, all off, lanes 1", text: readEthtool(t, "sfp-sff8472-10g-sr.txt"), flags: 20, impl: "yes", check: func(t *testing.T, d *DDM) {
			for _, f := range d.Flags {
				if want := map[bool]int{true: 0, false: 1}[strings.HasPrefix(f.Name, "Module ")]; f.Lane != want {
					t.Errorf("%s: lane %d, want %d", f.Name, f.Lane, want)
				}
			}
		}},
		{name: "SFF-8636 QSFP28, laser off on a ConnectX-4", text: readEthtool(t, "qsfp28-sff8636-finisar-ftlc1152-laser-off.txt"), flags: 56, impl: "yes", on: []string{
			"Laser bias current low alarm/1", "Laser bias current low warning/1", "Laser bias current low alarm/2", "Laser bias current low warning/2",
			"Laser bias current low alarm/3", "Laser bias current low warning/3", "Laser bias current low alarm/4", "Laser bias current low warning/4",
			"Laser tx power low alarm/1", "Laser tx power low warning/1", "Laser tx power low alarm/2", "Laser tx power low warning/2",
			"Laser tx power low alarm/3", "Laser tx power low warning/3",
			"Laser tx power high alarm/4", "Laser tx power low alarm/4", "Laser tx power high warning/4", "Laser tx power low warning/4",
			"Laser rx power low alarm/1", "Laser rx power low warning/1", "Laser rx power low alarm/2", "Laser rx power low warning/2",
			"Laser rx power low alarm/3", "Laser rx power low warning/3", "Laser rx power low alarm/4", "Laser rx power low warning/4",
		}},
		{name: "SFF-8472 SFP, laser off on an X710", text: readEthtool(t, "sfp-sff8472-dell-m14mk-laser-off.txt"), flags: 20, impl: "yes", on: []string{
			"Laser bias current low alarm/1", "Laser bias current low warning/1", "Laser output power low alarm/1", "Laser output power low warning/1",
			"Laser rx power low alarm/1", "Laser rx power low warning/1",
		}},
		{name: "SFF-8636 status lines, interface down", text: graft(sff, "Revision Compliance", readEthtool(t, "sff8636-signals-aoc-interface-down.excerpt")), flags: 56 + 5*4, impl: "yes", on: []string{
			"Rx loss of signal/1", "Rx loss of signal/2", "Rx loss of signal/3", "Rx loss of signal/4",
			"Tx loss of signal/1", "Tx loss of signal/2", "Tx loss of signal/3", "Tx loss of signal/4",
			"Rx loss of lock/1", "Rx loss of lock/2", "Rx loss of lock/3", "Rx loss of lock/4",
			"Tx loss of lock/1", "Tx loss of lock/2", "Tx loss of lock/3", "Tx loss of lock/4",
			"Tx adaptive eq fault/1", "Tx adaptive eq fault/2", "Tx adaptive eq fault/3", "Tx adaptive eq fault/4",
		}},
		{name: "CMIS status lines, 16 lanes", text: graft(dropLines(cmis, "loss of", "Tx fault", "Module State"), "Revision compliance", readEthtool(t, "cmis-signals-16-lanes-interface-down.excerpt")), flags: 8 + 12*8 + 4*16, onByCheck: true, check: func(t *testing.T, d *DDM) {
			for lane := 1; lane <= 16; lane++ {
				rx, _ := d.Flag("Rx loss of signal", lane)
				tx, read := d.Flag("Tx loss of signal", lane)
				if !rx || tx != (lane <= 8) || !read {
					t.Errorf("lane %d: Rx LOS %v, Tx LOS %v", lane, rx, tx)
				}
			}
			if _, read := d.Flag("Tx fault", 0); read {
				t.Error("Tx fault not printed, read")
			}
			if len(onFlags(d)) != 16+8+8+8+1 {
				t.Errorf("on: %v", onFlags(d))
			}
		}},
		{name: "SFF-8636 in ethtool's later layout", text: sffLater, flags: 56, impl: "yes", check: func(t *testing.T, d *DDM) {
			if !strings.Contains(sffLater, "\tLaser bias current high alarm             (Chan 1) : Off") {
				t.Fatal("layout not rewritten")
			}
			if on, read := d.Flag("Laser tx power low warning", 4); on || !read {
				t.Errorf("got %v %v", on, read)
			}
		}},
		{name: "flags not implemented", text: strings.Replace(dropLines(sff, " alarm  ", " warning  ", " alarm ", " warning "), "flags implemented           : Yes", "flags implemented           : No", 1), impl: "no"},
		{name: "unknown flag-like lines are skipped", text: sff + "\tLaser wavelength drift alarm              : On\n\tModule State                              : 0x03 (ModuleReady)\n", flags: 56, impl: "yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseEthtoolModule(tc.name, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Flags) != tc.flags {
				t.Errorf("%d flags, want %d", len(d.Flags), tc.flags)
			}
			if got := onFlags(d); !tc.onByCheck && strings.Join(got, ";") != strings.Join(tc.on, ";") {
				t.Errorf("on:\n got %v\nwant %v", got, tc.on)
			}
			impl := ""
			if d.FlagsImplemented != nil {
				impl = map[bool]string{true: "yes", false: "no"}[*d.FlagsImplemented]
			}
			if impl != tc.impl {
				t.Errorf("flags implemented %q, want %q", impl, tc.impl)
			}
			if tc.check != nil {
				tc.check(t, d)
			}
		})
	}
}

// TestParseEthtoolModuleFlagErrors: a garbled flag is refused naming the
// file, line and field, as a garbled monitor is.
func TestParseEthtoolModuleFlagErrors(t *testing.T) {
	sff := readEthtool(t, "qsfp28-sff8636-mellanox-mma1b00-c100d.txt")
	cmis := readEthtool(t, "qsfpdd-cmis-arista-qdd-400g-xdr4.txt")
	for _, tc := range []struct{ name, text, wantErr string }{
		{"alarm neither On nor Off", strings.Replace(sff, "Laser rx power low alarm    (Channel 3)   : Off", "Laser rx power low alarm    (Channel 3)   : 0n", 1),
			`alarm neither On nor Off:90: Laser rx power low alarm (Channel 3): want On or Off, got "0n"`},
		{"module flag empty", strings.Replace(sff, "Module temperature high alarm             : Off", "Module temperature high alarm             :", 1),
			`module flag empty:57: Module temperature high alarm: want On or Off, got ""`},
		{"lane status garbled", strings.Replace(cmis, "Rx loss of signal                         : None", "Rx loss of signal                         : [ Yes, Maybe ]", 1),
			`lane status garbled:25: Rx loss of signal: lane 2: want Yes or No, got "Maybe"`},
		{"lane status bare", strings.Replace(cmis, "Tx fault                                  : None", "Tx fault                                  : Yes", 1),
			`lane status bare:29: Tx fault: want None or [ Yes, No, ... ] a lane, got "Yes"`},
		{"flag twice", sff + "\tModule voltage low warning                : On\n",
			`flag twice:117: "Module voltage low warning" given twice (first on line 64)`},
		{"lane not a number", strings.Replace(sff, "Laser rx power low alarm    (Channel 3)   : Off", "Laser rx power low alarm    (Channel x)   : Off", 1),
			`lane not a number:90: Laser rx power low alarm (Channel x): lane "x" not a lane number`},
		{"flags implemented garbled", strings.Replace(sff, "flags implemented           : Yes", "flags implemented           : yes", 1),
			`flags implemented garbled:28: Alarm/warning flags implemented: want Yes or No, got "yes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEthtoolModule(tc.name, tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestFlagKindAndLane(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
	}{
		{"Laser rx power low alarm", FlagAlarm}, {"Module temperature high warning", FlagWarning},
		{"Rx loss of signal", FlagLOS}, {"Tx loss of signal", FlagLOS}, {"Rx loss of lock", FlagLOL},
		{"Tx fault", FlagTxFault}, {"Tx adaptive eq fault", FlagEqFault}, {"Module State", ""},
	} {
		if got := (Flag{Name: tc.name}).Kind(); got != tc.kind {
			t.Errorf("%s: kind %q, want %q", tc.name, got, tc.kind)
		}
	}
	cmis, sff := &DDM{Layout: LayoutCMIS}, &DDM{Layout: LayoutSFF8636}
	for _, tc := range []struct {
		d       *DDM
		f       Flag
		certain bool
	}{
		{cmis, Flag{Name: "Laser rx power low alarm", Lane: 3}, false},
		{cmis, Flag{Name: "Module temperature high warning"}, true},
		{cmis, Flag{Name: "Rx loss of signal", Lane: 3}, true},
		{sff, Flag{Name: "Laser rx power low alarm", Lane: 3}, true},
	} {
		if got := tc.d.LaneCertain(tc.f); got != tc.certain {
			t.Errorf("%s %+v: certain %v", tc.d.Layout, tc.f, got)
		}
	}
}

// CMISFlagLanes follows ethtool's `page_11h[offset] & chan`.
func TestCMISFlagLanes(t *testing.T) {
	for printed, want := range map[int]string{1: "[]", 2: "[1]", 3: "[2]", 4: "[1 2]", 5: "[3]", 8: "[1 2 3]", 9: "[12]", 10: "[9 12]", 16: "[9 10 11 12]"} {
		if got := fmt.Sprint(CMISFlagLanes(printed)); got != want {
			t.Errorf("lane %d: %s, want %s", printed, got, want)
		}
	}
}
