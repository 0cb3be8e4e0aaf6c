// Package dcgmi reads `dcgmi diag` output: the text tables of DCGM 3.x
// ("Pass - All", "Fail - GPU: 0") and 4.x (lower-case plugin names with
// "GPU0: Pass" sub-rows), cut-off tables included, and --json of both. It
// reports each test's result per GPU and tells a hardware failure from the
// diagnostic's own internal error.
package dcgmi

import (
	"bytes"
	"io"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Kind is the analyzer kind name.
const Kind = "dcgmi"

// Report is what one dcgmi diag output says.
type Report struct {
	Format string `json:"format"` // text or json
	// Paste says which paste prefixes were removed and which lines were
	// skipped (code fences of an issue) before the lines were read.
	Paste         *textio.PasteNote `json:"paste,omitempty"`
	DCGMVersion   string            `json:"dcgm_version,omitempty"`
	DriverVersion string            `json:"driver_version,omitempty"`
	DeviceIDs     []string          `json:"gpu_device_ids,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	Tests         []*Test           `json:"tests"`
	// Complete is false when a text table ends without its closing border.
	Complete bool `json:"complete"`
	// Errors are dcgmi's own error lines ("Error: Unable to ...").
	Errors []textio.Quote `json:"errors,omitempty"`
	// Orphans are table rows before the first header or section line: a
	// fragment of a table whose start was not pasted. They are not read.
	Orphans []int `json:"orphan_rows,omitempty"`
	// Headless is true when the table was read without its "| Diagnostic |
	// Result |" header: a paste that starts at a section border, or rows
	// alone. Which tests came before is not known, even when the table's
	// bottom border closes it.
	Headless bool `json:"headless,omitempty"`
}

// Test is one diagnostic test (plugin).
type Test struct {
	Name string `json:"name"`
	// Canonical is the DCGM 4 plugin name (pcie, memory, software, ...).
	Canonical string `json:"canonical"`
	Category  string `json:"category,omitempty"` // Deployment, Integration, Hardware, Stress
	// Result is Pass, Fail, Warn, Skip or Not Run.
	Result string      `json:"result"`
	GPUs   []GPUResult `json:"gpus,omitempty"`
	// AllGPUs is true for DCGM 3 "Pass - All" style results.
	AllGPUs  bool      `json:"all_gpus,omitempty"`
	Warnings []Message `json:"warnings,omitempty"`
	Info     []Message `json:"info,omitempty"`
	Line     int       `json:"line"`
}

// GPUResult is one GPU's result of a test.
type GPUResult struct {
	GPU    int    `json:"gpu"`
	Result string `json:"result"`
}

// Message is a warning or info text, possibly tied to one GPU.
type Message struct {
	Text     string `json:"text"`
	GPU      *int   `json:"gpu,omitempty"`
	ErrorID  *int   `json:"error_id,omitempty"`
	Category *int   `json:"error_category,omitempty"`
	// Error says the row was named "Error" (not "Warning"): a failure
	// whatever the test's own result says.
	Error bool `json:"error,omitempty"`
	Line  int  `json:"line"`
}

var (
	reDetectText = textio.MustCompile(`(?m)^\|\s*Diagnostic\s+\|\s*Result\s+\|\s*$|^[|+]-+\s+(?:Metadata|Deployment|Integration|Hardware|Stress)\s+-+\+`)
	reDetectJSON = textio.MustCompile(`"DCGM (?:GPU )?Diagnostic"`)
)

// Detect reports whether head looks like dcgmi diag output.
func Detect(head []byte) bool {
	if textio.StartsJSON(head) {
		return reDetectJSON.Match(head)
	}
	return reDetectText.Match(head) || (bytes.Contains(head, []byte("dcgmi diag")) && bytes.Contains(head, []byte("| Diagnostic")))
}

// Analyze reads a whole dcgmi diag output.
func Analyze(name string, r io.Reader) (*Report, []result.Result, error) {
	rep, err := textio.TextOrJSON(name, r, analyzeText, analyzeJSON)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range rep.Tests {
		t.Canonical = canonical(t.Name)
	}
	vs := verdicts(name, rep)
	result.SetSource(vs, Kind)
	return rep, vs, nil
}

// DCGM 3 display names and their DCGM 4 plugin names.
var canonicalNames = map[string]string{
	"pcie": "pcie", "gpu memory": "memory", "memory": "memory", "diagnostic": "diagnostic",
	"targeted stress": "targeted_stress", "targeted power": "targeted_power", "memory bandwidth": "memory_bandwidth",
	"sm stress": "sm_stress", "memtest": "memtest", "pulse test": "pulse_test", "eud": "eud",
	"nvbandwidth": "nvbandwidth", "context create": "context_create", "software": "software",
	"denylist": "software", "blacklist": "software", "nvml library": "software", "cuda main library": "software",
	"cuda toolkit libraries": "software", "permissions and os blocks": "software", "persistence mode": "software",
	"environment variables": "software", "page retirement/row remap": "software", "page retirement": "software",
	"graphics processes": "software", "inforom": "software", "fabric manager": "software",
}

func canonical(name string) string {
	k := strings.ToLower(strings.TrimSpace(name))
	if c, ok := canonicalNames[k]; ok {
		return c
	}
	return strings.NewReplacer(" ", "_", "/", "_").Replace(k)
}
