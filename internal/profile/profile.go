// Package profile is the site profile (--expect): what a node must have,
// so that a missing GPU or a 200G port is a failure rather than a surprise.
// Every judge reads it from here: the checks, the model's expectations of
// benchmarks and analyzed outputs, and the fleet's hardware classes.
package profile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gdrcheck/gdrcheck/internal/facts/node"
	"github.com/gdrcheck/gdrcheck/internal/facts/pci"
)

// Profile is a site profile: what this node must have, so that a missing
// GPU or a 200G port is a failure rather than a surprise. YAML or JSON.
type Profile struct {
	GPUs     *GPUs     `yaml:"gpus" json:"gpus,omitempty"`
	NICs     *NICs     `yaml:"nics" json:"nics,omitempty"`
	Versions *Versions `yaml:"versions" json:"versions,omitempty"`
	GDR      *GDR      `yaml:"gdr" json:"gdr,omitempty"`
	// MemlockKB is the smallest acceptable RLIMIT_MEMLOCK ("unlimited" or KiB).
	MemlockKB string `yaml:"memlock_kb" json:"memlock_kb,omitempty"`
	// Layout is the node's real PCIe layout where the PCI tree it shows is
	// not (a passthrough VM flattens it): which GPUs and NICs share a PCIe
	// switch on the host below. gdrcheck topo --nccl-topo-file writes it
	// into NCCL's topology file.
	Layout []SwitchGroup `yaml:"layout" json:"layout,omitempty"`
}

// SwitchGroup is GPUs and NICs that share one PCIe switch.
type SwitchGroup struct {
	// GPUs are PCI addresses as the node shows them ("0000:18:00.0").
	GPUs []string `yaml:"gpus" json:"gpus,omitempty"`
	// NICs are RDMA devices ("mlx5_0") or PCI addresses.
	NICs []string `yaml:"nics" json:"nics,omitempty"`
	// NUMA is the NUMA node the switch hangs off (nil: its devices' own).
	NUMA *int `yaml:"numa" json:"numa,omitempty"`
}

// GPUs describes the GPUs.
type GPUs struct {
	Count     int    `yaml:"count" json:"count,omitempty"`
	Model     string `yaml:"model" json:"model,omitempty"` // substring of the name, e.g. "H100"
	NVLinks   int    `yaml:"nvlinks" json:"nvlinks,omitempty"`
	PCIeGen   int    `yaml:"pcie_gen" json:"pcie_gen,omitempty"`
	PCIeWidth int    `yaml:"pcie_width" json:"pcie_width,omitempty"`
}

// NICs describes the RDMA NICs that carry GPU traffic (the rails).
type NICs struct {
	Count     int     `yaml:"count" json:"count,omitempty"`
	RateGbps  float64 `yaml:"rate_gbps" json:"rate_gbps,omitempty"`
	LinkLayer string  `yaml:"link_layer" json:"link_layer,omitempty"` // InfiniBand or Ethernet
	MTU       int     `yaml:"mtu" json:"mtu,omitempty"`               // netdev MTU (RoCE)
	PCIeGen   int     `yaml:"pcie_gen" json:"pcie_gen,omitempty"`
	PCIeWidth int     `yaml:"pcie_width" json:"pcie_width,omitempty"`
}

// Versions pins software and firmware versions (exact, or a prefix
// ending in "*").
type Versions struct {
	Driver      string `yaml:"driver" json:"driver,omitempty"`
	CUDA        string `yaml:"cuda" json:"cuda,omitempty"`
	NCCL        string `yaml:"nccl" json:"nccl,omitempty"`
	Kernel      string `yaml:"kernel" json:"kernel,omitempty"`
	NICFirmware string `yaml:"nic_firmware" json:"nic_firmware,omitempty"`
	RDMACore    string `yaml:"rdma_core" json:"rdma_core,omitempty"`
}

// GDR says which GPU Direct RDMA path the site relies on.
type GDR struct {
	// Required: true, the node is not ready without a GPU Direct RDMA
	// path; false, a node without one is ready (a node not meant for
	// GDR); unset (nil), a node without one is degraded.
	Required *bool  `yaml:"required" json:"required,omitempty"`
	Mode     string `yaml:"mode" json:"mode,omitempty"` // any, peermem, dmabuf
}

var reYAMLType = regexp.MustCompile(` in type profile\.(\w+)`)

// MaxBytes bounds a site profile: a profile is a few hundred bytes,
// and --expect /dev/zero must not read until memory runs out.
const MaxBytes = 1 << 20

// Load reads a site profile of at most MaxBytes. Errors name
// the file, the line and the field.
func Load(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--expect: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("--expect: %w", err)
	} else if fi.Mode()&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeDir) != 0 {
		return nil, fmt.Errorf("--expect %s: not a file (%s)", path, fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--expect: %w", err)
	}
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("--expect %s: larger than %d bytes: not a site profile", path, MaxBytes)
	}
	return Parse(path, b)
}

// Parse parses a site profile from bytes.
func Parse(name string, b []byte) (*Profile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var e Profile
	if err := dec.Decode(&e); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty site profile", name)
		}
		// yaml.v3 says "yaml: line 3: field foo not found in type ..."
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
		msg = reYAMLType.ReplaceAllStringFunc(msg, func(m string) string {
			if sec := strings.ToLower(reYAMLType.FindStringSubmatch(m)[1]); sec != "profile" {
				return " (" + sec + ")"
			}
			return ""
		})
		return nil, fmt.Errorf("%s: %s", name, msg)
	}
	if bad := e.validate(); bad != nil {
		if line := lineOf(b, bad.path); line > 0 {
			return nil, fmt.Errorf("%s: line %d: %s: %s", name, line, bad.path, bad.msg)
		}
		return nil, fmt.Errorf("%s: %s: %s", name, bad.path, bad.msg)
	}
	return &e, nil
}

// fieldError is a bad value in a site profile: the field's dotted path
// and what is wrong with it.
type fieldError struct {
	path, msg string
}

// validate refuses values that cannot mean anything, naming the first bad
// field.
func (e *Profile) validate() *fieldError {
	var bad *fieldError
	check := func(ok bool, path, msg string) {
		if !ok && bad == nil {
			bad = &fieldError{path, msg}
		}
	}
	gen, width := "must be a PCIe generation, 1 to 7", "must be a PCIe link width, 1 to 32"
	if g := e.GPUs; g != nil {
		check(g.Count >= 0, "gpus.count", "must not be negative")
		check(g.NVLinks >= 0, "gpus.nvlinks", "must not be negative")
		check(g.PCIeGen >= 0 && g.PCIeGen <= 7, "gpus.pcie_gen", gen)
		check(g.PCIeWidth >= 0 && g.PCIeWidth <= 32, "gpus.pcie_width", width)
	}
	if n := e.NICs; n != nil {
		check(n.Count >= 0, "nics.count", "must not be negative")
		check(n.RateGbps >= 0, "nics.rate_gbps", "must not be negative")
		check(n.MTU >= 0, "nics.mtu", "must not be negative")
		check(n.PCIeGen >= 0 && n.PCIeGen <= 7, "nics.pcie_gen", gen)
		check(n.PCIeWidth >= 0 && n.PCIeWidth <= 32, "nics.pcie_width", width)
		check(n.LinkLayer == "" || n.LinkLayer == "InfiniBand" || n.LinkLayer == "Ethernet", "nics.link_layer", fmt.Sprintf("%q, want InfiniBand or Ethernet", n.LinkLayer))
	}
	if g := e.GDR; g != nil {
		check(slices.Contains([]string{"", "any", "peermem", "dmabuf"}, g.Mode), "gdr.mode", fmt.Sprintf("%q, want any, peermem or dmabuf", g.Mode))
	}
	if e.MemlockKB != "" && e.MemlockKB != "unlimited" {
		_, err := node.ParseKB(e.MemlockKB)
		check(err == nil, "memlock_kb", fmt.Sprint(err))
	}
	seen := map[string]string{}
	for i, g := range e.Layout {
		at := fmt.Sprintf("layout[%d]", i)
		check(len(g.GPUs)+len(g.NICs) > 0, at, "names no GPU and no NIC")
		check(g.NUMA == nil || *g.NUMA >= 0, at+".numa", "must not be negative")
		for k, a := range g.GPUs {
			f := fmt.Sprintf("%s.gpus[%d]", at, k)
			addr, err := pci.ParseAddress(a)
			check(err == nil, f, fmt.Sprintf("%q is not a PCI address", a))
			if err == nil {
				check(seen[addr.String()] == "", f, fmt.Sprintf("%s is in %s already", a, seen[addr.String()]))
				seen[addr.String()] = at
			}
		}
		for k, n := range g.NICs {
			f := fmt.Sprintf("%s.nics[%d]", at, k)
			check(strings.TrimSpace(n) != "", f, "empty")
			key := n
			if addr, err := pci.ParseAddress(n); err == nil {
				key = addr.String()
			}
			check(seen[key] == "", f, fmt.Sprintf("%s is in %s already", n, seen[key]))
			seen[key] = at
		}
	}
	return bad
}

// lineOf is the line of the value at a dotted path in a YAML document; 0
// when the document has no such path.
func lineOf(b []byte, path string) int {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	n := doc.Content[0]
	for part := range strings.SplitSeq(path, ".") {
		key, idx, _ := strings.Cut(part, "[")
		var next *yaml.Node
		for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return 0
		}
		n = next
		// "layout[2]": the sequence's item.
		for idx != "" {
			var k int
			if _, err := fmt.Sscanf(idx, "%d]", &k); err != nil || n.Kind != yaml.SequenceNode || k < 0 || k >= len(n.Content) {
				return 0
			}
			n = n.Content[k]
			_, idx, _ = strings.Cut(idx, "[")
		}
	}
	return n.Line
}

// GDRRequired reads gdr.required: whether the profile requires GPU Direct
// RDMA, and whether it says at all (nil profile or unset field: not
// stated).
func (e *Profile) GDRRequired() (required, stated bool) {
	if e == nil || e.GDR == nil || e.GDR.Required == nil {
		return false, false
	}
	return *e.GDR.Required, true
}

// VersionMatches compares a found version with an expected one: exact, or
// a prefix when the expectation ends in "*".
func VersionMatches(found, want string) bool {
	if strings.HasSuffix(want, "*") {
		return strings.HasPrefix(found, strings.TrimSuffix(want, "*"))
	}
	return found == want
}
