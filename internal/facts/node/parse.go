package node

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds on what the parsers keep of a file the door let through (at most
// machine.DefaultMaxRead bytes).
const (
	// MaxModules is the most module names kept of /proc/modules, beside
	// ModulesOfInterest, which are always kept: a host loads a few hundred.
	MaxModules = 1 << 13
	// maxModuleName is the longest module name Linux allows
	// (MODULE_NAME_LEN less its terminating NUL).
	maxModuleName = 55
	// MaxLine is the most of one line a fact quotes (a driver version line,
	// a limits line, an Xid line).
	MaxLine = 512
)

// clip shortens a line read from the machine to MaxLine bytes (on a
// character boundary), marking the cut.
func clip(s string) string {
	if len(s) <= MaxLine {
		return s
	}
	cut := MaxLine
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (%d bytes)", len(s))
}

// ParseModules reads /proc/modules: the first field of each line. It keeps
// at most MaxModules names (and every one of ModulesOfInterest); a field
// longer than any module name is not one.
func ParseModules(b []byte) map[string]bool {
	out := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		name := strings.TrimLeftFunc(line, unicode.IsSpace)
		if i := strings.IndexFunc(name, unicode.IsSpace); i >= 0 {
			name = name[:i]
		}
		if name == "" || len(name) > maxModuleName {
			continue
		}
		if len(out) < MaxModules || slices.Contains(ModulesOfInterest, name) {
			out[name] = true
		}
	}
	return out
}

var reDriverVersion = regexp.MustCompile(`Kernel Module(?: for [a-z0-9_]+)?\s+([0-9]+\.[0-9]+(?:\.[0-9]+)?)`)

// ParseDriver reads the first line of /proc/driver/nvidia/version.
func ParseDriver(source, text string) Driver {
	first := strings.SplitN(text, "\n", 2)[0]
	d := Driver{Source: source, Line: clip(first), Open: strings.Contains(first, "Open Kernel Module")}
	if m := reDriverVersion.FindStringSubmatch(first); m != nil {
		d.Version = m[1]
	} else {
		// Not the driver's version line (empty, cut, another format): the
		// module's kind and version are not known, never "proprietary".
		d.Open = false
		d.Err = fmt.Errorf("%s: no NVIDIA kernel module version in %q", source, d.Line)
	}
	return d
}

var (
	reLimitsMemlock = regexp.MustCompile(`(?m)^Max locked memory\s+(\S+)\s+(\S+)\s+bytes`)
	reUlimitMemlock = regexp.MustCompile(`(?m)max locked memory\s+\(kbytes, -l\)\s+(\S+)`)
)

// ParseKB reads a size in KiB.
func ParseKB(s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a size in KiB or unlimited", s)
	}
	return v, nil
}

// ParseLimits reads the soft locked-memory limit from /proc/self/limits;
// ok is false when the file has no such line.
func ParseLimits(source, text string) (m Memlock, ok bool) {
	sm := reLimitsMemlock.FindStringSubmatch(text)
	if sm == nil {
		return Memlock{}, false
	}
	m = Memlock{Source: source, Line: clip(strings.TrimSpace(sm[0]))}
	if sm[1] == "unlimited" {
		m.KB = -1
		return m, true
	}
	v, err := strconv.ParseInt(sm[1], 10, 64)
	if err != nil {
		m.Err = fmt.Errorf("unreadable limit %q", sm[1])
		return m, true
	}
	m.KB = v / 1024
	return m, true
}

// ParseUlimit reads the locked-memory limit from `ulimit -a` output.
func ParseUlimit(source, text string) Memlock {
	sm := reUlimitMemlock.FindStringSubmatch(text)
	if sm == nil {
		return Memlock{Source: source, Line: "no max locked memory line", Err: fmt.Errorf("no max locked memory line in %s", source)}
	}
	m := Memlock{Source: source, Line: clip(strings.TrimSpace(sm[0]))}
	if sm[1] == "unlimited" {
		m.KB = -1
		return m
	}
	m.KB, m.Err = ParseKB(sm[1])
	return m
}

var reXid = regexp.MustCompile(`NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+),`)

// ParseXids reads the Xid lines of `dmesg --time-format iso` output (lines
// without a time stamp are kept with a zero time). No line is too long to
// read: a log that cannot be read to its end must not look free of Xids.
// Every Xid is kept (the checks count them; the shortest Xid line is 22
// bytes, so a log of machine.DefaultMaxRead holds fewer than 200,000, about
// 15 MB of Xids), each quoting at most MaxLine bytes of its line.
func ParseXids(b []byte) []Xid {
	var out []Xid
	for line := range strings.Lines(string(b)) {
		if !strings.Contains(line, XidMarker) {
			continue
		}
		m := reXid.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		code, _ := strconv.Atoi(m[2])
		x := Xid{Bus: strings.ToLower(m[1]), Code: code, Line: clip(strings.TrimSpace(line))}
		if f := strings.Fields(line); len(f) > 0 {
			if t, err := time.Parse("2006-01-02T15:04:05,000000-07:00", f[0]); err == nil {
				x.When = t
			}
		}
		out = append(out, x)
	}
	return out
}

var reVerbs = regexp.MustCompile(`^libibverbs\.so\.1\.[0-9]+\.([0-9]+\.[0-9]+)$`)

// VerbsRelease is the rdma-core release a libibverbs file name belongs to
// (libibverbs.so.1.14.50.0 belongs to rdma-core 50.0), or "".
func VerbsRelease(name string) string {
	if m := reVerbs.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return ""
}

// reFMVersion is nv-fabricmanager --version's line, "Fabric Manager
// version is : 450.102.04".
var reFMVersion = regexp.MustCompile(`(?m)Fabric Manager version is\s*:\s*(\S+)`)

// ParseFabricManagerVersion is the version nv-fabricmanager --version
// printed, "" when it printed none.
func ParseFabricManagerVersion(s string) string {
	if m := reFMVersion.FindStringSubmatch(s); m != nil {
		return strings.TrimSpace(m[1])
	}
	return ""
}

// reFMMismatch is the line fabric manager logs when it refuses to start
// beside a driver of another version: "fabric manager NVIDIA GPU driver
// interface version 530.30.02 don't match with driver version 530.41.03."
// (nv-fabricmanager's wording, as public reports quote it).
var reFMMismatch = regexp.MustCompile(`(?i)fabric manager NVIDIA GPU driver interface version\s+(\S+)\s+don'?t match with driver version\s+([0-9][0-9.]*[0-9])`)

// FMMismatch is a fabric manager log line refusing the driver's version.
type FMMismatch struct {
	FabricManager, Driver string
	// Line is the 1-based line of the log; Text the line.
	Line int
	Text string
}

// FabricManagerMismatch finds the last line of a fabric manager log that
// refuses the driver's version; nil when there is none.
func FabricManagerMismatch(log string) *FMMismatch {
	var last *FMMismatch
	for i, line := range strings.Split(log, "\n") {
		if m := reFMMismatch.FindStringSubmatch(line); m != nil {
			last = &FMMismatch{FabricManager: m[1], Driver: m[2], Line: i + 1, Text: strings.TrimSpace(line)}
		}
	}
	return last
}
