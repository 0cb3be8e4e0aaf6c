package node

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseIMEXStatus(t *testing.T) {
	for _, c := range []struct {
		file         string
		nodes, cells int
		state        string
		versions     []string
		notConnected []string
	}{
		{"imex-ctl-N-healthy-gb200-nvl72-18node-aws-pcs-doc.txt", 18, 324, "UP", []string{"570.172"}, nil},
		{"imex-ctl-q-N-healthy-gh200-2node-jpsnips.txt", 2, 4, "UP", []string{""}, nil},
		{"imex-ctl-q-N-gh200-1node-up-but-import-fails-jpsnips.txt", 1, 1, "UP", []string{""}, nil},
		{"synthetic-3node-version-mismatch-degraded.txt", 3, 9, "DEGRADED", []string{"570.172", "575.57"}, []string{"0->2 !V!", "1->2 !V!", "2->0 !V!", "2->1 !V!"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "imex", c.file))
			if err != nil {
				t.Fatal(err)
			}
			_, text, _ := strings.Cut(string(b), "\n---\n")
			d, err := ParseIMEXStatus(text)
			if err != nil {
				t.Fatal(err)
			}
			var versions []string
			for _, n := range d.Nodes {
				if !slices.Contains(versions, n.Version) {
					versions = append(versions, n.Version)
				}
				if n.State != "READY" {
					t.Errorf("node %d: state %q", n.Index, n.State)
				}
			}
			if len(d.Nodes) != c.nodes || d.Cells != c.cells || d.State != c.state || !slices.Equal(versions, c.versions) || !slices.Equal(d.NotConnected, c.notConnected) {
				t.Errorf("%d nodes, %d cells, state %q, versions %v, not connected %v", len(d.Nodes), d.Cells, d.State, versions, d.NotConnected)
			}
		})
	}
	if _, err := ParseIMEXStatus("nvidia-imex-ctl: failed to connect to the IMEX daemon\n"); err == nil {
		t.Error("no error for output without nodes or state")
	}
}
