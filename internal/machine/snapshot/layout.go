package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/machine"
)

// The layout of a snapshot, relative to its root, is defined here:
//
//	snapshot.json            the Manifest, with the format version
//	sys/..., proc/..., etc/..., usr/share/misc/pci.ids
//	                         what the tool read, at the host's own paths
//	commands/<key>           the output of each machine.Command (KnownCommands;
//	                         two are kept only for people to read)
//	commands/nvml.json       the driver's GPU facts
//	commands/environ.txt     the job's environment (NAME=value lines)
//	commands/libraries.json  the user-space libraries found
//
// A snapshot from before the manifest existed has none; it is read as it
// is.
const (
	// Format is the layout version this gdrcheck writes and the newest it
	// opens. Adding a file that older readers may ignore keeps it; moving
	// a file or changing what one holds needs the next number.
	Format = 1

	// ManifestFile describes a snapshot: when, where, by what, and what
	// failed.
	ManifestFile = "snapshot.json"
	// CommandsDir holds captured command outputs and the tool's own
	// records.
	CommandsDir = machine.CommandsDir
	// FactsFile holds the driver's facts (gpu.Facts) as JSON.
	FactsFile = CommandsDir + "/" + gpu.FactsFile
	// EnvironFile holds the job-relevant environment.
	EnvironFile = CommandsDir + "/environ.txt"
	// LibrariesFile holds the user-space libraries found, as JSON.
	LibrariesFile = CommandsDir + "/libraries.json"
)

// CommandFile is where a snapshot keeps the output of a command.
func CommandFile(c machine.Command) string { return CommandsDir + "/" + c.Key }

// ErrNewerFormat means a snapshot was written in a layout newer than this
// gdrcheck reads.
var ErrNewerFormat = errors.New("snapshot format is newer than this gdrcheck reads")

// CheckFormat refuses a root whose manifest cannot be read, is empty (a
// capture that did not finish), is not a manifest, or declares a newer
// format than Format. A root without a manifest (a host directory, an
// older capture) passes.
func CheckFormat(r machine.Root) error {
	_, err := ReadManifest(r)
	return err
}

// ReadManifest reads a root's manifest: nil, nil when the root has none
// (a host directory, an older capture); an error when it is unreadable,
// empty, not a manifest, or of a newer format than Format.
func ReadManifest(r machine.Root) (*Manifest, error) {
	b, err := r.ReadFile(ManifestFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot manifest unreadable: %w", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%s: empty snapshot manifest: the capture did not finish; take the snapshot again", r.Display(ManifestFile))
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: not a snapshot manifest: %w", r.Display(ManifestFile), err)
	}
	if m.Format < 1 {
		return nil, fmt.Errorf("%s: not a snapshot manifest: no format number", r.Display(ManifestFile))
	}
	if m.Format > Format {
		return nil, fmt.Errorf("%s: format %d: %w (format %d and older); read it with a newer gdrcheck", r.Display(ManifestFile), m.Format, ErrNewerFormat, Format)
	}
	return &m, nil
}
