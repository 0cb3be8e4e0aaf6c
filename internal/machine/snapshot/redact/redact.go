// Package redact replaces the identifiers in a snapshot's files with
// pseudonyms: GPU serial numbers and UUIDs, the PCIe Device Serial Number,
// MAC addresses, InfiniBand GUIDs and GIDs, host names and IP addresses.
//
// A pseudonym is derived from the value with an HMAC under a key drawn at
// random for each snapshot and never stored: within one snapshot the same
// value always gets the same pseudonym, in every file and every spelling
// (a port GUID in node_guid, in a GID and in ibv_devinfo's output), so
// pairing and the matching of driver facts to PCI devices work on the
// redacted snapshot as on the original; across snapshots, and back to
// the original, nothing links. A pseudonym has the shape of its value
// (a UUID stays a UUID, a MAC a unicast MAC), so every reader parses it.
// The PCIe Device Serial Number is zeroed, as are values that identify
// nothing (all zeros, broadcast, loopback).
//
// Redactor.File is a pure function of a file's path and content; it is
// the snapshot writer's Transform (snapshot.Options).
package redact

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
)

// The classes of identifiers a Redactor replaces, as the manifest names
// them.
const (
	GPUSerial = "gpu-serial" // serial numbers (nvml.json, nvidia-smi -q -x)
	UUID      = "uuid"       // GPU and MIG UUIDs, any UUID
	PCIeDSN   = "pcie-dsn"   // the Device Serial Number capability, sysfs serial_number
	MAC       = "mac"        // Ethernet and IPoIB hardware addresses
	IBGUID    = "ib-guid"    // node, system image and port GUIDs; GIDs' interface ids
	Hostname  = "hostname"   // the host's names, MASTER_ADDR
	IPAddress = "ip-address" // IPv4, IPv4-mapped and non-link-local GID prefixes
)

// Classes lists every class, for the manifest.
var Classes = []string{GPUSerial, UUID, PCIeDSN, MAC, IBGUID, Hostname, IPAddress}

// Redactor holds one snapshot's key and the host names to replace.
type Redactor struct {
	key   []byte
	hosts []*regexp.Regexp // the host's names, longest first
}

// New returns a Redactor with a fresh random key. hosts are the host's
// names (its hostname; a fully qualified one is also replaced by its first
// label); they are replaced wherever they stand as a word.
func New(hosts ...string) *Redactor {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	return NewWithKey(key, hosts...)
}

// NewWithKey is New with a given key (tests).
func NewWithKey(key []byte, hosts ...string) *Redactor {
	var names []string
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		short, _, _ := strings.Cut(h, ".")
		for _, n := range []string{h, short} {
			if len(n) >= 2 && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) })
	r := &Redactor{key: key}
	for _, n := range names {
		r.hosts = append(r.hosts, regexp.MustCompile(regexp.QuoteMeta(n)))
	}
	return r
}

// sum is the HMAC of a class and a value's canonical form.
func (r *Redactor) sum(class, canon string) []byte {
	h := hmac.New(sha256.New, r.key)
	h.Write([]byte(class))
	h.Write([]byte{0})
	h.Write([]byte(canon))
	return h.Sum(nil)
}

// File returns the redacted content of the snapshot file rel; b is not
// modified.
func (r *Redactor) File(rel string, b []byte) []byte {
	base := path.Base(rel)
	sys := strings.HasPrefix(rel, "sys/")
	switch {
	case sys && base == "config":
		return zeroDSN(b)
	case sys && base == "serial_number":
		return []byte(reHexDigit.ReplaceAllString(string(b), "0"))
	case bytes.IndexByte(b, 0) >= 0:
		return b // binary: nothing here is text
	case rel == snapshot.HostnameFile || rel == "etc/hostname":
		s := string(b)
		name := strings.TrimSpace(s)
		if name == "" {
			return b
		}
		return []byte(strings.Replace(s, name, r.host(name), 1))
	}
	s := string(b)
	s = reXMLSerial.ReplaceAllStringFunc(s, func(m string) string { return r.field(reXMLSerial, m) })
	s = reJSONSerial.ReplaceAllStringFunc(s, func(m string) string { return r.field(reJSONSerial, m) })
	s = replaceBounded(s, reUUID, isHexOrDash, r.uuid)
	s = replaceBounded(s, reGID, isHexOrColon, r.gid)
	s = replaceBounded(s, reGUID, isHexOrColon, r.guid)
	s = replaceBounded(s, reHWAddr, isHexOrColon, r.hwaddr)
	if !sys {
		// sysfs holds no IPv4 address as text, but versions that look
		// like one (sys/module/vsock/version: 1.0.2.0-k).
		s = replaceBounded(s, reIPv4, isVersionChar, r.ipv4)
	}
	if rel == snapshot.EnvironFile {
		s = reMasterAddr.ReplaceAllStringFunc(s, func(m string) string {
			k, v, _ := strings.Cut(m, "=")
			if v == "" || reIPv4.MatchString(v) {
				return m
			}
			return k + "=" + r.host(v)
		})
	}
	if !sys || base == "node_desc" {
		for _, h := range r.hosts {
			s = replaceBounded(s, h, isHostChar, r.host)
		}
	}
	return []byte(s)
}

var (
	reHexDigit   = regexp.MustCompile(`[0-9a-fA-F]`)
	reXMLSerial  = regexp.MustCompile(`<(\w*serial\w*)>([^<]*)</`)
	reJSONSerial = regexp.MustCompile(`"(\w*serial\w*)"(\s*:\s*)"([^"]*)"`)
	reUUID       = regexp.MustCompile(`(?:GPU-|MIG-)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	reGID        = regexp.MustCompile(`[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}`)
	reGUID       = regexp.MustCompile(`[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){3}`)
	reHWAddr     = regexp.MustCompile(`[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5,19}`)
	reIPv4       = regexp.MustCompile(`[0-9]{1,3}(?:\.[0-9]{1,3}){3}`)
	reMasterAddr = regexp.MustCompile(`(?m)^MASTER_ADDR=.*$`)
)

func isHexOrDash(c byte) bool  { return isHex(c) || c == '-' }
func isHexOrColon(c byte) bool { return isHex(c) || c == ':' }
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
func isWord(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}
func isVersionChar(c byte) bool { return isWord(c) || c == '.' || c == '-' }
func isHostChar(c byte) bool    { return isWord(c) || c == '-' }

// replaceBounded replaces each match of re in s that stands alone (the
// bytes either side are not inside(c)) with f(match); f returns the match
// itself to keep it.
func replaceBounded(s string, re *regexp.Regexp, inside func(byte) bool, f func(string) string) string {
	var out strings.Builder
	last := 0
	for _, m := range re.FindAllStringIndex(s, -1) {
		i, j := m[0], m[1]
		if i > 0 && inside(s[i-1]) || j < len(s) && inside(s[j]) {
			continue
		}
		out.WriteString(s[last:i])
		out.WriteString(f(s[i:j]))
		last = j
	}
	if last == 0 {
		return s
	}
	out.WriteString(s[last:])
	return out.String()
}

// field redacts the value of a serial-number element or member.
func (r *Redactor) field(re *regexp.Regexp, m string) string {
	sm := re.FindStringSubmatchIndex(m)
	i, j := sm[len(sm)-2], sm[len(sm)-1] // the value is the last group
	return m[:i] + r.serial(m[i:j]) + m[j:]
}

// serial keeps the shape of a serial number: digits become digits,
// letters letters of the same case; a value that identifies nothing
// ("N/A", all zeros) is kept.
func (r *Redactor) serial(v string) string {
	if strings.Trim(v, "0 ") == "" || notAValue[strings.ToLower(v)] {
		return v
	}
	h := r.sum(GPUSerial, v)
	out := []byte(v)
	for i, c := range out {
		x := h[i%len(h)] ^ byte(i/len(h))
		switch {
		case '0' <= c && c <= '9':
			out[i] = '0' + x%10
		case 'A' <= c && c <= 'Z':
			out[i] = 'A' + x%26
		case 'a' <= c && c <= 'z':
			out[i] = 'a' + x%26
		}
	}
	return string(out)
}

// notAValue are what the tools print where a serial number is missing.
var notAValue = map[string]bool{"n/a": true, "[n/a]": true, "not available": true, "not supported": true, "[not supported]": true, "unknown": true, "none": true}

// sameCase writes hex digits in the case of the value they replace.
func sameCase(orig, hexs string) string {
	if strings.ToUpper(orig) == orig && strings.ToLower(orig) != orig {
		return strings.ToUpper(hexs)
	}
	return hexs
}

// uuid redacts a UUID, keeping NVIDIA's GPU- or MIG- prefix; the same
// UUID gets the same pseudonym with or without it.
func (r *Redactor) uuid(v string) string {
	prefix, u := "", v
	if len(v) > 36 {
		prefix, u = v[:4], v[4:]
	}
	canon := strings.ToLower(strings.ReplaceAll(u, "-", ""))
	if strings.Trim(canon, "0") == "" {
		return v
	}
	x := hex.EncodeToString(r.sum(UUID, canon)[:16])
	return prefix + sameCase(u, x[:8]+"-"+x[8:12]+"-"+x[12:16]+"-"+x[16:20]+"-"+x[20:])
}

// guid64 is the pseudonym of a 64-bit GUID.
func (r *Redactor) guid64(g uint64) uint64 {
	if g == 0 {
		return 0
	}
	return binary.BigEndian.Uint64(r.sum(IBGUID, fmt.Sprintf("%016x", g)))
}

// mac48 is the pseudonym of a MAC address: a locally administered unicast
// address.
func (r *Redactor) mac48(m [6]byte) [6]byte {
	if m == [6]byte{} || m == [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} {
		return m
	}
	var out [6]byte
	copy(out[:], r.sum(MAC, hex.EncodeToString(m[:])))
	out[0] = out[0]&^0x01 | 0x02
	return out
}

// ip4 is the pseudonym of an IPv4 address, in 10.0.0.0/8; unspecified,
// loopback and broadcast addresses are kept.
func (r *Redactor) ip4(a [4]byte) [4]byte {
	if a == [4]byte{} || a[0] == 127 || a == [4]byte{255, 255, 255, 255} {
		return a
	}
	h := r.sum(IPAddress, fmt.Sprintf("%d.%d.%d.%d", a[0], a[1], a[2], a[3]))
	return [4]byte{10, h[0], h[1], h[2]}
}

func (r *Redactor) host(v string) string {
	return "host-" + hex.EncodeToString(r.sum(Hostname, strings.ToLower(v))[:4])
}

// groups reads colon-separated hex groups.
func groups(v string) []uint64 {
	var out []uint64
	for g := range strings.SplitSeq(v, ":") {
		n, _ := strconv.ParseUint(g, 16, 64)
		out = append(out, n)
	}
	return out
}

// guid redacts xxxx:xxxx:xxxx:xxxx.
func (r *Redactor) guid(v string) string {
	g := groups(v)
	return sameCase(v, fmtGroups(r.guid64(g[0]<<48|g[1]<<32|g[2]<<16|g[3]), 4))
}

// fmtGroups writes the low n 16-bit groups of x.
func fmtGroups(x uint64, n int) string {
	parts := make([]string, n)
	for i := range n {
		parts[i] = fmt.Sprintf("%04x", x>>(16*(n-1-i))&0xffff)
	}
	return strings.Join(parts, ":")
}

// gid redacts a 128-bit GID (an IPv6 address in full form): an
// IPv4-mapped one (RoCE v2 over IPv4) as its IPv4 address; otherwise the
// interface id as the MAC it was made from (RoCE, EUI-64) or as a port
// GUID (InfiniBand), and the prefix, unless link-local, as an address.
func (r *Redactor) gid(v string) string {
	g := groups(v)
	hi := g[0]<<48 | g[1]<<32 | g[2]<<16 | g[3]
	lo := g[4]<<48 | g[5]<<32 | g[6]<<16 | g[7]
	if hi == 0 && lo == 0 {
		return v
	}
	if hi == 0 && lo>>32 == 0xffff {
		a := r.ip4([4]byte{byte(lo >> 24), byte(lo >> 16), byte(lo >> 8), byte(lo)})
		return sameCase(v, fmtGroups(hi, 4)+":"+fmtGroups(0xffff<<32|uint64(binary.BigEndian.Uint32(a[:])), 4))
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], lo)
	if b[3] == 0xff && b[4] == 0xfe {
		m := r.mac48([6]byte{b[0] ^ 0x02, b[1], b[2], b[5], b[6], b[7]})
		lo = binary.BigEndian.Uint64([]byte{m[0] ^ 0x02, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]})
	} else {
		lo = r.guid64(lo)
	}
	if hi != 0xfe80<<48 {
		hi = 0xfd<<56 | binary.BigEndian.Uint64(r.sum(IPAddress, fmt.Sprintf("%016x", hi)))>>8
	}
	return sameCase(v, fmtGroups(hi, 4)+":"+fmtGroups(lo, 4))
}

// hwaddr redacts a hardware address: a 6-byte MAC, or a 20-byte IPoIB
// address (4 bytes of flags and queue pair, then the port's GID).
func (r *Redactor) hwaddr(v string) string {
	var b []byte
	for p := range strings.SplitSeq(v, ":") {
		n, _ := strconv.ParseUint(p, 16, 8)
		b = append(b, byte(n))
	}
	switch len(b) {
	case 6:
		m := r.mac48([6]byte(b))
		b = m[:]
	case 20:
		var gid []string
		for i := 4; i < 20; i += 2 {
			gid = append(gid, fmt.Sprintf("%02x%02x", b[i], b[i+1]))
		}
		red := groups(r.gid(strings.Join(gid, ":")))
		for i, g := range red {
			b[4+2*i], b[5+2*i] = byte(g>>8), byte(g)
		}
	default:
		return v
	}
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("%02x", c)
	}
	return sameCase(v, strings.Join(parts, ":"))
}

func (r *Redactor) ipv4(v string) string {
	var a [4]byte
	for i, p := range strings.Split(v, ".") {
		n, err := strconv.Atoi(p)
		if err != nil || n > 255 || len(p) > 1 && p[0] == '0' {
			return v // a version number, not an address
		}
		a[i] = byte(n)
	}
	a = r.ip4(a)
	return fmt.Sprintf("%d.%d.%d.%d", a[0], a[1], a[2], a[3])
}

// zeroDSN returns config space with the 8 serial bytes of the Device
// Serial Number extended capability (ID 0x0003) zeroed.
func zeroDSN(b []byte) []byte {
	out, copied := b, false
	for off, n := 0x100, 0; off >= 0x100 && off+4 <= len(b) && n < 1024; n++ {
		hdr := binary.LittleEndian.Uint32(b[off:])
		if hdr == 0 || hdr == 0xffffffff {
			break
		}
		if hdr&0xffff == 0x0003 && off+12 <= len(b) {
			if !copied {
				out, copied = slices.Clone(b), true
			}
			clear(out[off+4 : off+12])
		}
		off = int(hdr>>20) &^ 3
	}
	return out
}
