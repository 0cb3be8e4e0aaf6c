package sysinfo

import (
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
)

// The files ForSharing filters.
var (
	cmdlineFile   = "proc/cmdline"
	kernelLogFile = snapshot.CommandFile(machine.CmdDmesg)
)

// ForSharing is the transform every snapshot's files go through
// (snapshot.Options.Transform): the kernel log keeps only the Xid lines,
// the kernel command line only the IOMMU parameters, the environment only
// what FilterEnviron keeps. Other files are returned as they are.
func ForSharing(rel string, b []byte) []byte {
	switch rel {
	case cmdlineFile:
		s := node.FilterCmdline(string(b))
		if s != "" {
			s += "\n"
		}
		return []byte(s)
	case kernelLogFile:
		return node.KernelLogLines(b)
	case snapshot.EnvironFile:
		return node.FormatEnviron(node.ParseEnviron(b))
	}
	return b
}

// LeftOut says, for a snapshot's manifest, what ForSharing leaves out.
func LeftOut() []string {
	return []string{
		"environment: only " + strings.Join(node.EnvironPrefixes, "*, ") + "* and " + strings.Join(node.EnvironNames, ", ") + " are kept; values that look like secrets are masked",
		kernelLogFile + ": only the kernel log's " + node.XidMarker + " lines",
		cmdlineFile + ": only the parameters " + strings.Join(node.CmdlineParams, ", "),
	}
}
