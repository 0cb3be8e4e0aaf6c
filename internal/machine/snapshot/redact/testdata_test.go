package redact_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/facts/node"
)

// TestCommittedSnapshotsAreShareSafe is review row 134 (S4): the committed
// captures of the H200 held its serial, its UUIDs, the Device Serial Number
// in its config space, the full kernel log, the kernel command line and
// the job's environment. testdata/snapshots/scrub.go re-captured them.
func TestCommittedSnapshotsAreShareSafe(t *testing.T) {
	never := []string{"1654024075980", "3bc6dcad-d8ba-24b2-eea8-bd103cbfe5a4", "5613ee61-97e1-15cb-2ff3-8c213572e16c",
		string(binary.LittleEndian.AppendUint64(nil, 0xc477de65d32db048)), string(binary.LittleEndian.AppendUint64(nil, 0x58d0708eb72db048)),
		"Command line", "--auth-required", "NVIDIA_REQUIRE_CUDA"}
	for _, name := range []string{"h200x1-live-gdrcheck.tgz", "h200x1-vm.tgz"} {
		files := 0
		for rel, b := range archive(t, "../../../../testdata/snapshots/"+name) {
			files++
			for _, s := range never {
				if bytes.Contains(b, []byte(s)) {
					t.Errorf("%s: %s holds %q", name, rel, s)
				}
			}
			switch {
			case rel == "commands/dmesg.txt":
				for line := range strings.Lines(string(b)) {
					if !strings.Contains(line, "NVRM: Xid") {
						t.Errorf("%s: kernel log line %q", name, line)
					}
				}
			case rel == "commands/environ.txt":
				for line := range strings.Lines(string(b)) {
					if k, _, _ := strings.Cut(line, "="); !node.KeepEnviron(k) {
						t.Errorf("%s: environment holds %s", name, k)
					}
				}
			case rel == "proc/cmdline":
				if s := strings.TrimSpace(string(b)); s != node.FilterCmdline(s) {
					t.Errorf("%s: kernel command line %q", name, s)
				}
			case path.Base(rel) == "config" && len(b) > 0x100:
				if got := redactKeyless(rel, b); !bytes.Equal(got, b) {
					t.Errorf("%s: %s has a Device Serial Number", name, rel)
				}
			}
		}
		if files < 50 {
			t.Errorf("%s: %d files", name, files)
		}
	}
}

// archive returns the regular files of a .tgz by path in the snapshot.
func archive(t *testing.T, p string) map[string][]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[strings.TrimPrefix(h.Name, "./")] = b
		}
	}
}
