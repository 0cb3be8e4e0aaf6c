package machine

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestResolveStaysInsideRoot(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "sys/devices/pci0000:00/0000:00:01.0"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "sys/devices/pci0000:00/0000:00:01.0/class"), []byte("0x030200\n"), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "sys/bus/pci/devices"), 0o755))
	// relative link, as sysfs writes them
	must(os.Symlink("../../../devices/pci0000:00/0000:00:01.0", filepath.Join(dir, "sys/bus/pci/devices/0000:00:01.0")))
	// absolute link: must be taken relative to the root, never the live /
	must(os.Symlink("/sys/devices/pci0000:00/0000:00:01.0", filepath.Join(dir, "sys/abs")))
	// climbing above the root is clamped at the root
	must(os.Symlink("../../../../../../sys/devices", filepath.Join(dir, "sys/up")))
	must(os.Symlink("loop2", filepath.Join(dir, "sys/loop1")))
	must(os.Symlink("loop1", filepath.Join(dir, "sys/loop2")))
	r := NewRoot(dir)
	cases := []struct {
		in, want string
		err      error
	}{
		{"sys/bus/pci/devices/0000:00:01.0/class", "sys/devices/pci0000:00/0000:00:01.0/class", nil},
		{"/sys/abs/class", "sys/devices/pci0000:00/0000:00:01.0/class", nil},
		{"sys/up/pci0000:00", "sys/devices/pci0000:00", nil},
		{"sys/loop1/x", "", ErrLinkLoop},
		{"sys/missing/file", "sys/missing/file", nil},
	}
	for _, c := range cases {
		got, err := r.Resolve(c.in)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("Resolve(%q) err = %v, want %v", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	s, err := r.ReadString("/sys/abs/class")
	if err != nil || s != "0x030200" {
		t.Errorf("ReadString through absolute link = %q, %v", s, err)
	}
	_, err = r.ReadFile("sys/nothing")
	var pe *PathError
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), dir) {
		t.Errorf("missing file error = %v", err)
	}
	must(os.WriteFile(filepath.Join(dir, "big"), make([]byte, 100), 0o644))
	if _, err := r.ReadFileLimit("big", 10); err == nil || !strings.Contains(err.Error(), "larger than 10 bytes") {
		t.Errorf("oversized read: %v", err)
	}
}

func TestRecorderNotesEveryTouchedPath(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a/b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a/b/f"), []byte("x"), 0o644)
	os.Symlink("b", filepath.Join(dir, "a/l"))
	rec := NewRecorder()
	r := NewRoot(dir).WithRecorder(rec)
	if _, err := r.ReadFile("a/l/f"); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range rec.Entries() {
		paths = append(paths, e.Path)
	}
	got := strings.Join(paths, ",")
	for _, want := range []string{"a", "a/l", "a/b", "a/b/f"} {
		if !strings.Contains(","+got+",", ","+want+",") {
			t.Errorf("recorded %s, missing %s", got, want)
		}
	}
}

func TestRunReplayAndDeadline(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, CommandsDir), 0o755)
	os.WriteFile(filepath.Join(dir, CommandsDir, CmdUlimit.Key), []byte("max locked memory (kbytes, -l) unlimited\n"), 0o644)
	r := NewRoot(dir)
	b, err := r.Run(context.Background(), CmdUlimit)
	if err != nil || !strings.Contains(string(b), "unlimited") {
		t.Errorf("replayed command = %q, %v", b, err)
	}
	if _, err := r.Run(context.Background(), CmdNvidiaSMITopo); !errors.Is(err, ErrNotCaptured) {
		t.Errorf("missing capture err = %v", err)
	}
	start := time.Now()
	_, err = RunLive(context.Background(), Command{Name: "sh", Args: []string{"-c", "sleep 30"}, Timeout: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no answer within 100ms") || time.Since(start) > 5*time.Second {
		t.Errorf("hung command: %v after %s", err, time.Since(start))
	}
	_, err = RunLive(context.Background(), Command{Name: "sh", Args: []string{"-c", "echo oops >&2; exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "oops") {
		t.Errorf("failing command: %v", err)
	}
	_, err = RunLive(context.Background(), Command{Name: "gdrcheck-no-such-tool"})
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing tool: %v", err)
	}
}
