// Package level is the one vocabulary of path levels: how far apart two
// devices of a node are, with the names `nvidia-smi topo -m` prints and
// NCCL's topology uses (X, NV#, PIX, PXB, PHB, NODE, SYS).
package level

import (
	"fmt"
	"strconv"
	"strings"
)

// Level is how two devices are connected. Levels are ordered from closest
// to farthest, so a smaller level is a better path.
type Level int

// Levels, closest first.
const (
	Self    Level = iota // the device itself ("X")
	NVLink               // NVLink ("NV#" with the link count)
	PIX                  // at most one PCIe bridge (a switch counts as one)
	PXB                  // several bridges, no host bridge
	PHB                  // through one PCIe host bridge (the CPU's root complex)
	NODE                 // between host bridges of one NUMA node
	SYS                  // across the NUMA interconnect (or NUMA unknown)
	Unknown              // not known ("N/A")
)

// DefaultGDR is the farthest path over which NCCL uses GPU Direct RDMA by
// default (NCCL_NET_GDR_LEVEL defaults to PXB).
const DefaultGDR = PXB

var names = [...]string{Self: "X", NVLink: "NV", PIX: "PIX", PXB: "PXB", PHB: "PHB", NODE: "NODE", SYS: "SYS", Unknown: "N/A"}

// String is the level's name; NVLink prints as "NV" (the link count is
// not part of the level).
func (l Level) String() string {
	if l < 0 || int(l) >= len(names) {
		return "Level(" + strconv.Itoa(int(l)) + ")"
	}
	return names[l]
}

// MarshalText makes levels readable in JSON.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText is the inverse of MarshalText: it also takes "NV".
func (l *Level) UnmarshalText(b []byte) error {
	if string(b) == "NV" {
		*l = NVLink
		return nil
	}
	lv, _, err := Parse(string(b))
	*l = lv
	return err
}

// Parse reads a matrix cell: "X", "NV18", "PIX", ..., "N/A". It returns the
// NVLink count for NV# cells (a positive decimal without leading zeros).
func Parse(s string) (Level, int, error) {
	t := strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(t, "NV"); ok && rest != "" {
		if n, err := strconv.Atoi(rest); err == nil && n > 0 && strconv.Itoa(n) == rest {
			return NVLink, n, nil
		}
	}
	for l, n := range names {
		if n == t && Level(l) != NVLink {
			return Level(l), 0, nil
		}
	}
	return Unknown, 0, fmt.Errorf("topology level %q: want X, NV#, PIX, PXB, PHB, NODE or SYS", s)
}
