package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/gdrcheck/gdrcheck/internal/collect/counters"
	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot/redact"
)

// SnapshotOptions are a `gdrcheck snapshot` run's.
type SnapshotOptions struct {
	// Node is what the snapshot reads; its Timeout bounds the whole
	// snapshot, not only discovery.
	Node NodeOptions
	Out  string // a directory, or a .tgz/.tar.gz file
	// Redact replaces serials, UUIDs, MACs, GUIDs, host names and IP
	// addresses with pseudonyms (snapshot/redact).
	Redact bool
	// Force replaces an existing archive Out (--force).
	Force bool
}

// Snapshot is `gdrcheck snapshot`: it runs discovery and collection, the
// stages that read the machine, through a recording root, and writes what
// they read, so a snapshot holds what every later command needs by
// construction. The manifest names the session's tool.
func (s *Session) Snapshot(ctx context.Context, o SnapshotOptions) (*snapshot.Manifest, error) {
	if o.Node.Timeout <= 0 {
		return nil, toolErr(fmt.Errorf("--timeout %s: must be positive", o.Node.Timeout))
	}
	// Where it goes is checked before anything is read: a capture of
	// minutes must not end in "exists".
	if err := snapshot.CheckOut(o.Out, o.Force); err != nil {
		return nil, toolErr(fmt.Errorf("snapshot -o %s: %w", o.Out, err))
	}
	r, cleanup, err := snapshot.OpenContext(ctx, o.Node.source())
	if err != nil {
		return nil, toolErr(err)
	}
	defer cleanup()
	ctx, cancel := context.WithTimeout(ctx, o.Node.Timeout)
	defer cancel()
	rec := machine.NewRecorder()
	rr, stop, h, err := DiscoverWithin(ctx, r.WithRecorder(rec), o.Node.Timeout)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = fmt.Errorf("%w: %w", snapshot.ErrInterrupted, err)
		}
		return nil, err
	}
	defer stop()
	f := collectFacts(ctx, rr, h, isLive(o.Node.Root), nil)
	// The error counters a burn-in compares (RDMA ports, AER on every GPU,
	// NIC and bridge above them; the NICs' temperatures and, unless the
	// snapshot is redacted, their optical modules, whose output names
	// serial numbers): snapshots taken around a workload are then judged
	// as a series (burn --replay A B ...).
	_ = counters.Read(rr, h, "snapshot", s.Now)
	if !o.Redact {
		_ = counters.ReadNICs(ctx, rr, h, s.Now)
	}
	for _, c := range forHumansCommands {
		_, _ = rr.Run(ctx, c)
	}
	for _, rel := range forHumansFiles {
		_, _ = rr.ReadFile(rel)
	}
	so := snapshot.Options{Tool: "gdrcheck " + s.Tool.Version, Facts: h.GPUFacts, Extra: map[string][]byte{}, Replace: o.Force}
	if f.Environ.Known {
		so.Extra[snapshot.EnvironFile] = node.FormatEnviron(f.Environ.Vars)
	}
	if f.Libraries != nil {
		if b, err := f.Libraries.Marshal(); err == nil {
			so.Extra[snapshot.LibrariesFile] = b
		}
	}
	so.Transform, so.LeftOut = sysinfo.ForSharing, sysinfo.LeftOut()
	if o.Redact {
		so.Transform, so.Redacted = redactor(r), redact.Classes
		so.LeftOut = append(so.LeftOut, "ethtool -m (the optical modules' diagnostics name their serial numbers): not captured in a redacted snapshot")
	}
	if h.GPUFactsError != "" {
		so.FactsErr = fmt.Errorf("%s", h.GPUFactsError)
	}
	// Write reads under ctx: an interrupt or the deadline publishes
	// nothing, and an interrupt exits 130 (the error wraps
	// context.Canceled).
	m, err := snapshot.Write(ctx, r, rec, o.Out, so)
	if err != nil {
		return nil, toolErr(fmt.Errorf("snapshot -o %s: %w", o.Out, err))
	}
	return m, nil
}

// redactor is ForSharing followed by the redaction of r's identifiers,
// under a key of its own.
func redactor(r machine.Root) func(string, []byte) []byte {
	var hosts []string
	for _, f := range []string{snapshot.HostnameFile, "etc/hostname"} {
		if h, err := r.ReadString(f); err == nil {
			hosts = append(hosts, h)
		}
	}
	red := redact.New(hosts...)
	return func(rel string, b []byte) []byte { return red.File(rel, sysinfo.ForSharing(rel, b)) }
}

// forHumansCommands and forHumansFiles are captured whether or not a stage
// reads them: the vendor tools' own views and the host description a
// person compares gdrcheck's findings with when reading a snapshot
// (discovery reads proc/cpuinfo too, for the CPU an NCCL topology file
// names).
var (
	forHumansCommands = []machine.Command{machine.CmdNvidiaSMITopo, machine.CmdNvidiaSMIQuery, machine.CmdNvidiaSMINVLink, machine.CmdNvidiaSMINVLinkErrors, machine.CmdIbvDevinfo}
	forHumansFiles    = []string{"proc/version", "proc/meminfo", "proc/cpuinfo", "proc/driver/nvidia/params", "etc/os-release"}
)
