// Package pci parses what Linux exposes about PCI functions: sysfs attribute
// values (addresses, ids, link speed and width, CPU lists) and the bytes of
// config space (capabilities, PCIe port type, link, device control, ACS).
// Parsers never panic; bad input gives an error that quotes it.
package pci

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Address is a PCI function address: domain:bus:device.function.
type Address struct {
	Domain   uint32
	Bus      uint8
	Device   uint8
	Function uint8
}

// ParseAddress reads "0000:00:06.0" and the forms NVML and nvidia-smi print
// ("00000000:00:06.0", "00:06.0" meaning domain 0). Hex is case-insensitive.
func ParseAddress(s string) (Address, error) {
	orig := s
	s = strings.TrimSpace(s)
	var a Address
	parts := strings.Split(s, ":")
	switch len(parts) {
	case 2:
		parts = append([]string{"0"}, parts...)
	case 3:
	default:
		return a, fmt.Errorf("pci address %s: want domain:bus:device.function", Quote(orig))
	}
	df := strings.Split(parts[2], ".")
	if len(df) != 2 {
		return a, fmt.Errorf("pci address %s: want device.function after the bus", Quote(orig))
	}
	dom, err := strconv.ParseUint(parts[0], 16, 32)
	if err != nil || len(parts[0]) == 0 || len(parts[0]) > 8 {
		return a, fmt.Errorf("pci address %s: bad domain %s", Quote(orig), Quote(parts[0]))
	}
	bus, err := strconv.ParseUint(parts[1], 16, 8)
	if err != nil || len(parts[1]) == 0 || len(parts[1]) > 2 {
		return a, fmt.Errorf("pci address %s: bad bus %s", Quote(orig), Quote(parts[1]))
	}
	dev, err := strconv.ParseUint(df[0], 16, 8)
	if err != nil || dev > 0x1f || len(df[0]) == 0 || len(df[0]) > 2 {
		return a, fmt.Errorf("pci address %s: bad device %s", Quote(orig), Quote(df[0]))
	}
	fn, err := strconv.ParseUint(df[1], 16, 8)
	if err != nil || fn > 7 || len(df[1]) != 1 {
		return a, fmt.Errorf("pci address %s: bad function %s", Quote(orig), Quote(df[1]))
	}
	return Address{Domain: uint32(dom), Bus: uint8(bus), Device: uint8(dev), Function: uint8(fn)}, nil
}

// String is the sysfs form, e.g. "0000:00:06.0" (a wide domain keeps its width).
func (a Address) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", a.Domain, a.Bus, a.Device, a.Function)
}

// Less orders addresses as nvidia-smi enumerates GPUs (PCI bus order).
func (a Address) Less(b Address) bool {
	if a.Domain != b.Domain {
		return a.Domain < b.Domain
	}
	if a.Bus != b.Bus {
		return a.Bus < b.Bus
	}
	if a.Device != b.Device {
		return a.Device < b.Device
	}
	return a.Function < b.Function
}

// NormalizeBusID turns any address form into the sysfs form, or returns the
// input unchanged (lower-cased) when it is not an address.
func NormalizeBusID(s string) string {
	a, err := ParseAddress(s)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(s))
	}
	return a.String()
}

// ParseHex reads a sysfs hex attribute such as "0x030200" or "10de".
func ParseHex(s string, bitSize int) (uint64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
	if t == "" {
		return 0, fmt.Errorf("hex value %s: empty", Quote(s))
	}
	v, err := strconv.ParseUint(t, 16, bitSize)
	if err != nil {
		return 0, fmt.Errorf("hex value %s: not a %d-bit hex number", Quote(s), bitSize)
	}
	return v, nil
}

// ParseInt reads a decimal sysfs attribute such as numa_node ("-1").
func ParseInt(s string) (int, error) {
	t := strings.TrimSpace(s)
	v, err := strconv.Atoi(t)
	if err != nil {
		return 0, fmt.Errorf("integer value %s: not a decimal number", Quote(s))
	}
	return v, nil
}

// LinkSpeed is a PCIe link speed in GT/s; 0 means unknown.
type LinkSpeed float64

// genSpeeds are the per-lane rates of PCIe generations 1..7 in GT/s.
var genSpeeds = [...]float64{2.5, 5, 8, 16, 32, 64, 128}

// Gen is the PCIe generation of a speed (1..7), 0 when unknown.
func (s LinkSpeed) Gen() int {
	for i, g := range genSpeeds {
		if float64(s) > g-0.01 && float64(s) < g+0.01 {
			return i + 1
		}
	}
	return 0
}

// SpeedOfGen is the per-lane speed of a PCIe generation, 0 if unknown.
func SpeedOfGen(gen int) LinkSpeed {
	if gen < 1 || gen > len(genSpeeds) {
		return 0
	}
	return LinkSpeed(genSpeeds[gen-1])
}

// String prints "32 GT/s" or "unknown".
func (s LinkSpeed) String() string {
	if s <= 0 {
		return "unknown"
	}
	return strconv.FormatFloat(float64(s), 'f', -1, 64) + " GT/s"
}

// ParseLinkSpeed reads current_link_speed / max_link_speed: "32.0 GT/s PCIe",
// "8 GT/s", "2.5 GT/s". "Unknown" (a link that is down or a virtual device)
// gives 0 and no error.
func ParseLinkSpeed(s string) (LinkSpeed, error) {
	t := strings.TrimSpace(s)
	if t == "" || strings.EqualFold(t, "unknown") || strings.EqualFold(t, "unknown speed") {
		return 0, nil
	}
	f := strings.Fields(t)
	if len(f) < 2 || !strings.EqualFold(f[1], "GT/s") {
		return 0, fmt.Errorf("link speed %s: want \"<n> GT/s\"", Quote(s))
	}
	v, ok := textio.ParseFloat(f[0])
	if !ok || v <= 0 || v > 1024 {
		return 0, fmt.Errorf("link speed %s: bad number %s", Quote(s), Quote(f[0]))
	}
	return LinkSpeed(v), nil
}

// ParseLinkWidth reads current_link_width / max_link_width ("16"). Zero and
// 255 (nothing trained, or a virtual device) give 0, meaning unknown.
func ParseLinkWidth(s string) (int, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "x")
	if t == "" {
		return 0, nil
	}
	v, err := strconv.Atoi(t)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("link width %s: not a lane count", Quote(s))
	}
	if v == 255 || v > 32 {
		return 0, nil
	}
	return v, nil
}

// CPUSet is a set of CPU numbers, in increasing order.
type CPUSet []int

// Bounds on a CPU set read from sysfs. Linux numbers at most NR_CPUS CPUs,
// which is 8192 at most on any architecture today (x86-64 with MAXSMP,
// ppc64); a list or mask naming more is not what a kernel writes, and
// holding it would let one short attribute (a "0-65535" repeated to fill a
// page) cost megabytes on every PCI function.
const (
	// MaxCPUs is the most CPUs a set may hold.
	MaxCPUs = 8192
	// MaxCPU is the highest CPU number accepted.
	MaxCPU = 1<<20 - 1
)

// cpuRange is the inclusive range lo..hi.
type cpuRange struct{ lo, hi int }

// ParseCPUList reads the kernel's list form, "0-63,128-191" or "" (none).
// Ranges may overlap and repeat; they are merged before any CPU is listed,
// so the work and the memory are bounded by the input's length and
// MaxCPUs, whatever the ranges say.
func ParseCPUList(s string) (CPUSet, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return nil, nil
	}
	ranges := make([]cpuRange, 0, strings.Count(t, ",")+1)
	for part := range strings.SplitSeq(t, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("cpu list %s: bad element %s", Quote(s), Quote(part))
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			if err != nil || b < a {
				return nil, fmt.Errorf("cpu list %s: bad range %s", Quote(s), Quote(part))
			}
		}
		if b-a >= MaxCPUs || b > MaxCPU {
			return nil, fmt.Errorf("cpu list %s: range %s too large", Quote(s), Quote(part))
		}
		ranges = append(ranges, cpuRange{a, b})
	}
	slices.SortFunc(ranges, func(x, y cpuRange) int { return cmp.Compare(x.lo, y.lo) })
	merged := ranges[:1]
	total := 0
	for _, r := range ranges[1:] {
		last := &merged[len(merged)-1]
		if r.lo <= last.hi+1 {
			last.hi = max(last.hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	for _, r := range merged {
		total += r.hi - r.lo + 1
	}
	if total > MaxCPUs {
		return nil, fmt.Errorf("cpu list %s: %d CPUs, more than %d", Quote(s), total, MaxCPUs)
	}
	out := make(CPUSet, 0, total)
	for _, r := range merged {
		for c := r.lo; c <= r.hi; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// ParseCPUMask reads the kernel's mask form, "ffffffff,00000000" (comma
// separated 32-bit words, most significant first). Leading zero words are
// accepted however many there are; a set bit above MaxCPU, or more than
// MaxCPUs set bits, is an error.
func ParseCPUMask(s string) (CPUSet, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return nil, nil
	}
	words := strings.Split(t, ",")
	var out CPUSet
	for i := range words {
		w := words[len(words)-1-i]
		v, err := strconv.ParseUint(w, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("cpu mask %s: bad word %s", Quote(s), Quote(w))
		}
		if v == 0 {
			continue
		}
		if i*32+bits.Len64(v)-1 > MaxCPU || len(out)+bits.OnesCount64(v) > MaxCPUs {
			return nil, fmt.Errorf("cpu mask %s: more than %d CPUs or a CPU above %d", Quote(s), MaxCPUs, MaxCPU)
		}
		for v != 0 {
			b := bits.TrailingZeros64(v)
			out = append(out, i*32+b)
			v &^= 1 << uint(b)
		}
	}
	return out, nil
}

// maxQuoted is how much of a bad value an error message quotes.
const maxQuoted = 64

// Quote quotes a value read from the machine for an error message, at most
// its first 64 bytes: a value of a page must not make every message about
// it a page long.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// String prints the kernel's list form, "0-63,128-191".
func (c CPUSet) String() string {
	var sb strings.Builder
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		if j == i {
			sb.WriteString(strconv.Itoa(c[i]))
		} else {
			sb.WriteString(strconv.Itoa(c[i]) + "-" + strconv.Itoa(c[j]))
		}
		i = j + 1
	}
	return sb.String()
}

// Intersects reports whether two sets share a CPU.
func (c CPUSet) Intersects(o CPUSet) bool {
	i, j := 0, 0
	for i < len(c) && j < len(o) {
		switch {
		case c[i] == o[j]:
			return true
		case c[i] < o[j]:
			i++
		default:
			j++
		}
	}
	return false
}
