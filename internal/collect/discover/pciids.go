package discover

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	_ "unsafe" // go:linkname, for go-nvlib's embedded database

	"github.com/NVIDIA/go-nvlib/pkg/pciids"

	"github.com/gdrcheck/gdrcheck/internal/machine"
)

// deviceNamer names a PCI device by vendor and device ID.
type deviceNamer interface {
	GetDeviceName(vendor, device uint16) (string, error)
}

var _ deviceNamer = pciids.Interface(nil)

// pciIDsPaths are where distributions install the PCI ID database,
// relative to the root, in the order go-nvlib's pciids package looks.
func pciIDsPaths() []string {
	return []string{"usr/share/misc/pci.ids", "usr/local/share/pci.ids", "usr/share/hwdata/pci.ids", "usr/share/pci.ids"}
}

// maxPCIIDs bounds the database read (it is about 1.5 MB).
const maxPCIIDs = 16 << 20

// nvlibPCIIDs is the copy of pci.ids that go-nvlib embeds. Its pciids
// package hands it out only behind the analysing machine's own files
// (pciids.NewDB reads /usr/share/misc/pci.ids first), so it is reached
// here directly. TestEmbeddedPCIIDs fails if go-nvlib renames it.
//
//go:linkname nvlibPCIIDs github.com/NVIDIA/go-nvlib/pkg/pciids.defaultPCIdb
var nvlibPCIIDs []byte

// loadPCINames reads the PCI ID database through the root: the live host's
// own, or the one a snapshot recorded; go-nvlib's embedded copy when the
// root holds none. It never reads the analysing machine's files, so a
// snapshot names its devices the same everywhere. Read on the live root,
// the database is recorded into snapshots.
func loadPCINames(r machine.Root) pciNames {
	for _, p := range pciIDsPaths() {
		if b, err := r.ReadFileLimit(p, maxPCIIDs); err == nil {
			return parsedPCIIDs(string(b))
		}
	}
	return parsedPCIIDs(embeddedPCIIDs())
}

// embeddedPCIIDs is go-nvlib's copy as a string, converted once.
var embeddedPCIIDs = sync.OnceValue(func() string { return string(nvlibPCIIDs) })

// pciIDsParsed holds the databases this process parsed, by their text: a
// process that discovers several roots holding the same database (the
// embedded copy, snapshots of one site, a test suite's fixtures) parses
// it once (BenchmarkLoadPCINames: a parse of the embedded copy is 5 ms
// and 3.4 MB, a cached load 4 µs). The names are never
// changed once parsed, so discoveries share them. At most
// maxPCIIDsParsed texts are kept.
var pciIDsParsed struct {
	sync.Mutex
	byText map[string]pciNames
}

const maxPCIIDsParsed = 4

// parsedPCIIDs is parsePCIIDs(text), parsed once per distinct text.
// Concurrent callers with the same text wait for one parse.
func parsedPCIIDs(text string) pciNames {
	pciIDsParsed.Lock()
	defer pciIDsParsed.Unlock()
	if n, ok := pciIDsParsed.byText[text]; ok {
		return n
	}
	if len(pciIDsParsed.byText) >= maxPCIIDsParsed || pciIDsParsed.byText == nil {
		pciIDsParsed.byText = map[string]pciNames{}
	}
	n := parsePCIIDs(text)
	pciIDsParsed.byText[text] = n
	return n
}

// pciNames maps vendor<<16|device to the device's name.
type pciNames map[uint32]string

// GetDeviceName is the name of a device, as go-nvlib's pciids.Interface
// spells the lookup.
func (n pciNames) GetDeviceName(vendor, device uint16) (string, error) {
	if s, ok := n[uint32(vendor)<<16|uint32(device)]; ok {
		return s, nil
	}
	return "", fmt.Errorf("no name for PCI device %04x:%04x", vendor, device)
}

// parsePCIIDs reads the vendor and device lines of a pci.ids file:
//
//	vvvv  Vendor name
//	<tab>dddd  Device name
//	<tab><tab>ssss ssss  Subsystem name (skipped)
//	C cc  Class name (ends the vendor list)
func parsePCIIDs(text string) pciNames {
	names := pciNames{}
	var vendor uint32
	inVendor := false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" || line[0] == '#':
		case strings.HasPrefix(line, "\t\t"):
		case line[0] == '\t':
			if id, name, ok := idAndName(line[1:]); ok && inVendor {
				names[vendor<<16|id] = name
			}
		default:
			vendor, _, inVendor = idAndName(line)
		}
	}
	return names
}

// idAndName splits "10de  NVIDIA Corporation".
func idAndName(s string) (uint32, string, bool) {
	if len(s) < 5 {
		return 0, "", false
	}
	id, err := strconv.ParseUint(s[:4], 16, 16)
	if err != nil {
		return 0, "", false
	}
	return uint32(id), strings.TrimSpace(s[4:]), true
}
