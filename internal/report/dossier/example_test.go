package dossier_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/testutil/schematest"
)

// TestH200Example: the dossier the H200 machine wrote (docs/examples,
// docs/device-runs.md) validates against the published schema, decodes,
// says what the machine was, and its SHA256SUMS holds for every file.
func TestH200Example(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "docs", "examples", "h200x1-quick")
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := schematest.Validate(schematest.Compile(t, "report.schema.json"), b); err != nil {
		t.Fatalf("report.json against docs/schema/report.schema.json: %v", err)
	}
	r, err := dossier.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Complete || len(r.Inventory.GPUs) != 1 || !strings.Contains(r.Inventory.GPUs[0].Name, "H200") {
		t.Errorf("complete %v, GPUs %+v: want a complete report of one H200", r.Complete, r.Inventory.GPUs)
	}
	if len(r.Measurements.Collectives) == 0 || len(r.Measurements.Copies) == 0 {
		t.Errorf("no measurements: %d collectives, %d copies", len(r.Measurements.Collectives), len(r.Measurements.Copies))
	}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		f, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(f); hex.EncodeToString(h[:]) != sum {
			t.Errorf("%s: sha256 differs from SHA256SUMS", name)
		}
	}
}
