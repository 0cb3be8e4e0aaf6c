package counters

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// NIC is what one sample read of an RDMA NIC's temperature and of the
// optical modules in its ports: the NIC's own hwmon temperature sensors
// (mlx5 registers them on the NIC's PCI function, drivers/net/ethernet/
// mellanox/mlx5/core/hwmon.c, Linux 6.6 and later) and, per port, the
// module's digital diagnostics as `ethtool -m NETDEV` prints them.
//
// What could not be read says why (SensorsMissing, Module.Missing); no
// value is ever a zero standing for "not read".
type NIC struct {
	Device   string    `json:"device"` // mlx5_0
	ReadAt   time.Time `json:"read_at"`
	ReadDone time.Time `json:"read_done"`
	// Sensors are the hwmon temperature channels of the NIC's PCI function.
	Sensors []TempSensor `json:"sensors,omitempty"`
	// SensorsMissing says why there are none: NotExposed when the NIC's
	// function has no hwmon directory (an older kernel or driver).
	SensorsMissing string `json:"sensors_missing,omitempty"`
	// Modules are the NIC's ports' modules, one per port.
	Modules []Module `json:"modules"`
}

// TempSensor is one hwmon temperature channel (tempN_*), in degrees C.
type TempSensor struct {
	// Name is the channel as "hwmon3/temp1".
	Name string `json:"name"`
	// Label is its tempN_label ("asic", "sensor64" for the module's
	// sensor); "" when the driver gives none.
	Label string `json:"label,omitempty"`
	// TempC is tempN_input; HighestC tempN_highest (the highest since
	// reset); CritC tempN_crit (mlx5: the sensor's high threshold from the
	// MTMP register). nil when not read (see Missing).
	TempC    *float64 `json:"temp_c,omitempty"`
	HighestC *float64 `json:"highest_c,omitempty"`
	CritC    *float64 `json:"crit_c,omitempty"`
	// Missing says why each file looked for gave no value, by file name
	// ("temp1_input").
	Missing map[string]string `json:"missing,omitempty"`
}

// Module is one port's optical module as a sample read it.
type Module struct {
	Port   int    `json:"port"`
	Netdev string `json:"netdev,omitempty"`
	// Missing says why there are no diagnostics: no netdev to ask, the
	// command failed or was not captured, its output did not parse.
	Missing string `json:"missing,omitempty"`
	DDM     *DDM   `json:"ddm,omitempty"`
}

// Key names the module as "mlx5_0/1 (eth2)".
func (m *Module) Key(dev string) string {
	k := PortKey(dev, m.Port)
	if m.Netdev != "" {
		k += " (" + m.Netdev + ")"
	}
	return k
}

// Module memory-map layouts, as the identifier gives them.
const (
	LayoutSFF8472 = "SFF-8472" // SFP, SFP+
	LayoutSFF8636 = "SFF-8636" // QSFP+, QSFP28 (4 lanes)
	LayoutCMIS    = "CMIS"     // QSFP-DD, OSFP, QSFP112 and later
)

// DDM is a module's digital diagnostics (DDM/DOM) as ethtool -m decodes
// them: its monitors and the alarm and warning thresholds the module
// carries in its own memory. Powers are in mW (ethtool prints mW and
// dBm; 0 mW is −∞ dBm, which JSON cannot hold).
type DDM struct {
	Identifier string   `json:"identifier"` // "0x18 (QSFP-DD Double Density 8X Pluggable Transceiver (INF-8628))"
	Layout     string   `json:"layout"`     // LayoutCMIS, ...
	Types      []string `json:"transceiver_types,omitempty"`
	Vendor     string   `json:"vendor,omitempty"`
	PN         string   `json:"pn,omitempty"`
	SN         string   `json:"sn,omitempty"`
	// TempC is the module's temperature, VoltageV its supply voltage.
	TempC    *float64 `json:"temp_c,omitempty"`
	VoltageV *float64 `json:"voltage_v,omitempty"`
	// RxOMA says the module reports received power as OMA, not average.
	RxOMA bool   `json:"rx_oma,omitempty"`
	Lanes []Lane `json:"lanes,omitempty"`
	// Thresholds are the module's own; absent when it prints none.
	Temp    *Limits `json:"temp_thresholds_c,omitempty"`
	Voltage *Limits `json:"voltage_thresholds_v,omitempty"`
	Bias    *Limits `json:"bias_thresholds_ma,omitempty"`
	TxPower *Limits `json:"tx_power_thresholds_mw,omitempty"`
	RxPower *Limits `json:"rx_power_thresholds_mw,omitempty"`
	// FlagsImplemented is the module's "Alarm/warning flags implemented"
	// (SFF-8472, SFF-8636); nil where ethtool prints no such line (CMIS).
	FlagsImplemented *bool `json:"flags_implemented,omitempty"`
	// Flags are the module's own alarm, warning and status flags, On or
	// Off, in the order ethtool printed them; none when it printed none.
	Flags []Flag `json:"flags,omitempty"`
}

// Flag is one of a module's own flags as ethtool -m prints it: an alarm or
// warning ("Laser rx power low alarm (Channel 3) : On"), or a lane status
// ("Rx loss of signal : [ Yes, No, No, No ]"). A status line printed as
// "None" (no lane has it) is one Flag with Lane 0, Off.
//
// SFF-8636 and CMIS flags are latched: set when the condition occurs,
// cleared when read (SFF-8636 §6.2.3, "Interrupt Flags"; CMIS 5.2 Tables
// 8-80 and 8-81, every lane flag "Latched ..., RO/COR": clear on read;
// docs/burn.md says how these were sourced), so an On flag says the
// condition occurred since the module's flags were last read, by anyone.
// SFF-8472's (A2h bytes 112–117) are the state at the module's last
// measurement, not latched.
type Flag struct {
	// Name is ethtool's, without the lane: "Module temperature high
	// warning", "Laser bias current low alarm", "Tx fault".
	Name string `json:"name"`
	// Lane is 1-based as ethtool numbers it; 0 for a module-level flag
	// and for a status line printed as "None".
	Lane int  `json:"lane,omitempty"`
	On   bool `json:"on,omitempty"`
}

// Kinds of flag (Flag.Kind).
const (
	FlagAlarm   = "alarm"
	FlagWarning = "warning"
	FlagLOS     = "loss of signal"
	FlagLOL     = "loss of lock"
	FlagTxFault = "Tx fault"
	FlagEqFault = "adaptive equalisation fault"
)

// Kind classes the flag by its name: FlagAlarm, FlagWarning, FlagLOS,
// FlagLOL, FlagTxFault, FlagEqFault; "" for a name it does not know.
func (f Flag) Kind() string {
	switch {
	case strings.HasSuffix(f.Name, " alarm"):
		return FlagAlarm
	case strings.HasSuffix(f.Name, " warning"):
		return FlagWarning
	case strings.HasSuffix(f.Name, " loss of signal"):
		return FlagLOS
	case strings.HasSuffix(f.Name, " loss of lock"):
		return FlagLOL
	case f.Name == "Tx fault":
		return FlagTxFault
	case f.Name == "Tx adaptive eq fault":
		return FlagEqFault
	}
	return ""
}

// LaneCertain says whether the flag's lane is the lane the module raised
// it on. Not so for CMIS's per-lane alarm and warning flags: ethtool
// prints lane N's line On when the flag byte ANDed with N-1 is not zero
// (cmis.c: `page_11h[...offset] & chan`, in every version read for this,
// from its first CMIS flags to the JSON-output rework of 2024),
// so lane 1's line is always Off, lane 3's shows lane 2's bit, lane 8's
// lanes 1–3's, and lanes 4–8's own bits never show. An On line there
// proves the flag is raised on some lane, not on which.
func (d *DDM) LaneCertain(f Flag) bool {
	if d.Layout != LayoutCMIS || f.Lane == 0 {
		return true
	}
	k := f.Kind()
	return k != FlagAlarm && k != FlagWarning
}

// Monitored says whether the module printed any monitor at all (a passive
// copper cable prints none).
func (d *DDM) Monitored() bool {
	return d != nil && (d.TempC != nil || d.VoltageV != nil || len(d.Lanes) > 0)
}

// Lane is one channel's monitors (1-based, as ethtool numbers them).
type Lane struct {
	Lane   int      `json:"lane"`
	BiasMA *float64 `json:"bias_ma,omitempty"`
	TxMW   *float64 `json:"tx_mw,omitempty"`
	RxMW   *float64 `json:"rx_mw,omitempty"`
}

// Dark says the lane carries nothing: no bias, no light out, no light
// in (the unused lanes of a QSFP-DD running 4 of its 8).
func (l Lane) Dark() bool {
	z := func(p *float64) bool { return p != nil && *p == 0 }
	return z(l.BiasMA) && z(l.TxMW) && z(l.RxMW)
}

// Limits are a monitor's four thresholds; nil where not printed.
type Limits struct {
	HighAlarm *float64 `json:"high_alarm,omitempty"`
	HighWarn  *float64 `json:"high_warning,omitempty"`
	LowWarn   *float64 `json:"low_warning,omitempty"`
	LowAlarm  *float64 `json:"low_alarm,omitempty"`
}

// DBm is a power in mW as dBm (−Inf for 0).
func DBm(mw float64) float64 { return 10 * math.Log10(mw) }

var (
	channel = regexp.MustCompile(`^(.*?) \((?:Channel|Chan) (\d+)\)$`)
)

// awMonitors and awLevels make the alarm and warning flags' names:
// "<monitor> <level>", then " (Chan N)" or " (Channel N)" on a lane's.
var (
	awMonitors = []string{"Module temperature", "Module voltage", "Laser bias current", "Laser output power", "Laser tx power", "Laser rx power"}
	awLevels   = map[string]bool{"high alarm": true, "low alarm": true, "high warning": true, "low warning": true}
)

// statusFlags are the lane-status lines (SFF-8636 and CMIS), printed as
// "None" or "[ Yes, No, ... ]" one entry a lane.
var statusFlags = map[string]bool{
	"Rx loss of signal": true, "Tx loss of signal": true,
	"Rx loss of lock": true, "Tx loss of lock": true,
	"Tx fault": true, "Tx adaptive eq fault": true,
}

// ethtoolKey normalises a key of ethtool -m's output: runs of spaces are
// one, and "power(Channel 1)" is "power (Channel 1)".
func ethtoolKey(k string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(k, "(", " (")), " ")
}

// threshold keys: "<monitor> <high|low> <alarm|warning> threshold".
var thresholdOf = map[string]func(*DDM) **Limits{
	"Module temperature": func(d *DDM) **Limits { return &d.Temp },
	"Module voltage":     func(d *DDM) **Limits { return &d.Voltage },
	"Laser bias current": func(d *DDM) **Limits { return &d.Bias },
	"Laser output power": func(d *DDM) **Limits { return &d.TxPower },
	"Laser rx power":     func(d *DDM) **Limits { return &d.RxPower },
}

// ParseEthtoolModule reads the output of `ethtool -m NETDEV` (ethtool's
// decoding of a module's EEPROM: SFF-8472 for SFP, SFF-8636 for QSFP,
// CMIS for QSFP-DD and OSFP) into the module's diagnostics. name is the
// file's name in errors. Lines it does not use are skipped; an output
// without an "Identifier" line (a hex dump, an error) is refused, and so
// is a monitor or threshold whose value is not a number, a flag that is
// not On/Off (alarms, warnings) or None/[ Yes, No, ... ] (loss of signal,
// loss of lock, Tx fault), or any of them given twice, naming the line.
func ParseEthtoolModule(name, s string) (*DDM, error) {
	d := &DDM{}
	seen := map[string]int{}
	lanes := map[int]*Lane{}
	var order []int
	lane := func(n int) *Lane {
		if l := lanes[n]; l != nil {
			return l
		}
		lanes[n] = &Lane{Lane: n}
		order = append(order, n)
		return lanes[n]
	}
	for i, raw := range strings.Split(s, "\n") {
		n := i + 1
		line := strings.TrimRight(raw, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, val := ethtoolKey(k), strings.TrimSpace(v)
		// Only the values read must be given once: ethtool repeats
		// descriptive keys ("Transceiver type", "Option").
		used := true
		num := func(unit string) (*float64, error) {
			f, err := leadingNumber(val, unit)
			if err != nil {
				return nil, textio.Errorf(name, n, "%s: %v", key, err)
			}
			return &f, nil
		}
		var err error
		switch {
		case key == "Identifier":
			d.Identifier = val
			d.Layout = layoutOf(val)
		case key == "Transceiver type":
			d.Types = append(d.Types, val)
		case key == "Vendor name":
			d.Vendor = val
		case key == "Vendor PN":
			d.PN = val
		case key == "Vendor SN":
			d.SN = val
		case key == "Module temperature":
			d.TempC, err = num("degrees C")
		case key == "Module voltage":
			d.VoltageV, err = num("V")
		// SFF-8472 (one lane): no channel in the key.
		case key == "Laser bias current":
			lane(1).BiasMA, err = num("mA")
		case key == "Laser output power":
			lane(1).TxMW, err = num("mW")
		case key == "Receiver signal average optical power":
			lane(1).RxMW, err = num("mW")
		case key == "Receiver signal OMA":
			d.RxOMA = true
			lane(1).RxMW, err = num("mW")
		case strings.HasSuffix(key, " threshold"):
			used, err = d.threshold(name, n, key, val)
		case key == "Alarm/warning flags implemented":
			switch val {
			case "Yes", "No":
				d.FlagsImplemented = new(val == "Yes")
			default:
				err = textio.Errorf(name, n, "%s: want Yes or No, got %s", key, quote(val))
			}
		case statusFlags[key]:
			err = d.statusFlag(name, n, key, val)
		default:
			var flag bool
			if flag, err = d.awFlag(name, n, key, val); flag || err != nil {
				break
			}
			// Per-lane monitors.
			var m []string
			if strings.HasPrefix(key, "Laser tx bias current (") || strings.HasPrefix(key, "Transmit avg optical power (") || strings.HasPrefix(key, "Rcvr signal ") {
				m = channel.FindStringSubmatch(key)
			}
			if m == nil {
				used = false
				break
			}
			c, _ := strconv.Atoi(m[2])
			switch m[1] {
			case "Laser tx bias current":
				lane(c).BiasMA, err = num("mA")
			case "Transmit avg optical power":
				lane(c).TxMW, err = num("mW")
			case "Rcvr signal avg optical power":
				lane(c).RxMW, err = num("mW")
			case "Rcvr signal OMA":
				d.RxOMA = true
				lane(c).RxMW, err = num("mW")
			default:
				used = false
			}
		}
		if err != nil {
			return nil, err
		}
		if !used || key == "Transceiver type" {
			continue
		}
		if prev, dup := seen[key]; dup {
			return nil, textio.Errorf(name, n, "%s given twice (first on line %d)", quote(key), prev)
		}
		seen[key] = n
	}
	if d.Identifier == "" {
		return nil, textio.Errorf(name, 1, "no Identifier line: not ethtool's decoding of a module (a hex dump, or an error message?)")
	}
	for _, c := range order {
		d.Lanes = append(d.Lanes, *lanes[c])
	}
	return d, nil
}

// awFlag records an alarm or warning flag, "On" or "Off", saying whether
// key is one. A laser flag without a lane is SFF-8472's, whose one lane
// is lane 1.
func (d *DDM) awFlag(name string, n int, key, val string) (bool, error) {
	base, lane := key, ""
	if i := strings.LastIndex(key, " ("); i > 0 && strings.HasSuffix(key, ")") {
		inner := key[i+2 : len(key)-1]
		var ok bool
		if lane, ok = strings.CutPrefix(inner, "Chan "); !ok {
			if lane, ok = strings.CutPrefix(inner, "Channel "); !ok {
				return false, nil
			}
		}
		base = key[:i]
	}
	known := false
	for _, mon := range awMonitors {
		if level, ok := strings.CutPrefix(base, mon+" "); ok && awLevels[level] {
			known = true
			break
		}
	}
	if !known {
		return false, nil
	}
	f := Flag{Name: base}
	switch {
	case lane != "":
		c, err := strconv.Atoi(lane)
		if err != nil || c < 1 {
			return true, textio.Errorf(name, n, "%s: lane %s not a lane number", key, quote(lane))
		}
		f.Lane = c
	case strings.HasPrefix(base, "Laser "):
		f.Lane = 1
	}
	switch val {
	case "On":
		f.On = true
	case "Off":
	default:
		return true, textio.Errorf(name, n, "%s: want On or Off, got %s", key, quote(val))
	}
	d.Flags = append(d.Flags, f)
	return true, nil
}

// statusFlag records a lane-status line: "None" (no lane has it) or
// "[ Yes, No, No, No ]", lane 1 first.
func (d *DDM) statusFlag(name string, n int, key, val string) error {
	if val == "None" {
		d.Flags = append(d.Flags, Flag{Name: key})
		return nil
	}
	inner, ok := strings.CutPrefix(val, "[")
	if ok {
		inner, ok = strings.CutSuffix(inner, "]")
	}
	if !ok || strings.TrimSpace(inner) == "" {
		return textio.Errorf(name, n, "%s: want None or [ Yes, No, ... ] a lane, got %s", key, quote(val))
	}
	for i, e := range strings.Split(inner, ",") {
		switch strings.TrimSpace(e) {
		case "Yes":
			d.Flags = append(d.Flags, Flag{Name: key, Lane: i + 1, On: true})
		case "No":
			d.Flags = append(d.Flags, Flag{Name: key, Lane: i + 1})
		default:
			return textio.Errorf(name, n, "%s: lane %d: want Yes or No, got %s", key, i+1, quote(strings.TrimSpace(e)))
		}
	}
	return nil
}

// CMISFlagLanes are the lanes whose bits ethtool's CMIS decoding shows
// on the per-lane alarm or warning line it prints for lane printed (see
// LaneCertain): ethtool ANDs the byte of the lane's bank (8 lanes a bank)
// with printed−1, so the lanes are the bank's bits set in printed−1. None
// for lane 1.
func CMISFlagLanes(printed int) []int {
	if printed < 1 {
		return nil
	}
	chan_ := printed - 1
	bank := chan_ / 8
	var out []int
	for b := range 8 {
		if chan_&(1<<b) != 0 {
			out = append(out, bank*8+b+1)
		}
	}
	return out
}

// Flag is the flag of that name on that lane as read: on says it was On,
// read that the module printed the flag at all (a status line printed
// "None" reads every lane Off).
func (d *DDM) Flag(name string, lane int) (on, read bool) {
	if d == nil {
		return false, false
	}
	for _, f := range d.Flags {
		if f.Name != name {
			continue
		}
		read = true
		if f.Lane == lane && f.On {
			return true, true
		}
	}
	return false, read
}

// threshold records "<monitor> <high|low> <alarm|warning> threshold".
func (d *DDM) threshold(name string, n int, key, val string) (bool, error) {
	rest, ok := strings.CutSuffix(key, " threshold")
	if !ok {
		return false, nil
	}
	var which string
	for _, w := range []string{" high alarm", " high warning", " low warning", " low alarm"} {
		if r, ok := strings.CutSuffix(rest, w); ok {
			rest, which = r, w
			break
		}
	}
	get, ok := thresholdOf[rest]
	if which == "" || !ok {
		return false, nil
	}
	unit := map[string]string{"Module temperature": "degrees C", "Module voltage": "V", "Laser bias current": "mA"}[rest]
	if unit == "" {
		unit = "mW"
	}
	f, err := leadingNumber(val, unit)
	if err != nil {
		return true, textio.Errorf(name, n, "%s: %v", key, err)
	}
	lp := get(d)
	if *lp == nil {
		*lp = &Limits{}
	}
	dst := map[string]**float64{" high alarm": &(*lp).HighAlarm, " high warning": &(*lp).HighWarn, " low warning": &(*lp).LowWarn, " low alarm": &(*lp).LowAlarm}[which]
	*dst = &f
	return true, nil
}

// leadingNumber reads "70.49 degrees C / 158.89 degrees F", "3.2186 V",
// "1.5975 mW / 2.03 dBm": the first number, which must be followed by
// unit.
func leadingNumber(val, unit string) (float64, error) {
	first, _, _ := strings.Cut(val, "/")
	first = strings.TrimSpace(first)
	num, ok := strings.CutSuffix(first, unit)
	if !ok {
		return 0, fmt.Errorf("want a number in %s, got %s", unit, quote(val))
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a number in %s, got %s", unit, quote(val))
	}
	return f, nil
}

// layoutOf is the memory map an identifier ("0x11 (QSFP28)") implies
// (SFF-8024's identifier table): "" for one this reader does not know.
func layoutOf(id string) string {
	code, _, _ := strings.Cut(strings.TrimSpace(id), " ")
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(code), "0x"), 16, 8)
	if err != nil {
		return ""
	}
	switch v {
	case 0x03:
		return LayoutSFF8472
	case 0x0c, 0x0d, 0x11:
		return LayoutSFF8636
	case 0x18, 0x19, 0x1e, 0x1f, 0x20:
		return LayoutCMIS
	}
	return ""
}
