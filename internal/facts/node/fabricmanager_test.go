package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// body is a corpus file's text after its source/hardware/notes header.
func body(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fabricmanager", name))
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(b), "\n---\n")
	if !ok {
		t.Fatalf("%s: no --- line after the header", name)
	}
	return text
}

// Fabric manager's version line and its refusal of another driver
// version, on real outputs (testdata/fabricmanager: each file says where
// it was published).
func TestFabricManagerOutputs(t *testing.T) {
	for _, c := range []struct {
		file, version string
		fm, driver    string
		line          int
	}{
		{"fm-version-output-450-nvswitch-jear-median.txt", "450.102.04", "", "", 0},
		{"fm-version-mismatch-journal-530-gpu-operator-544.txt", "", "530.30.02", "530.41.03", 1},
		// The reporter wrapped the line: the driver version ends it.
		{"fm-version-mismatch-590-vs-580-h200-driver-container-735.txt", "", "590.48.01", "580.126.09", 1},
		{"fm-systemctl-status-failed-version-mismatch-550-akash-docs.txt", "", "550.127.05", "550.120", 3},
		// A start and a failed restart, neither about versions.
		{"fm-journal-start-then-restart-fail-h20-nvtrust-128.txt", "", "", "", 0},
		// Fabric manager on a host without NVSwitch: nothing to do.
		{"fm-journal-nv-warn-nothing-to-do-no-nvswitch-cube-studio-29.txt", "", "", "", 0},
	} {
		t.Run(c.file, func(t *testing.T) {
			text := body(t, c.file)
			if got := ParseFabricManagerVersion(text); got != c.version {
				t.Errorf("version %q, want %q", got, c.version)
			}
			m := FabricManagerMismatch(text)
			switch {
			case c.fm == "" && m != nil:
				t.Errorf("a refusal found: %+v", m)
			case c.fm != "" && (m == nil || m.FabricManager != c.fm || m.Driver != c.driver || m.Line != c.line):
				t.Errorf("refusal %+v, want %s against %s on line %d", m, c.fm, c.driver, c.line)
			}
		})
	}
	if ParseFabricManagerVersion("nv-fabricmanager: command not found\n") != "" || FabricManagerMismatch("") != nil {
		t.Error("a version or refusal read from nothing")
	}
}
