package snapshot_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
)

const secret = "TOPSECRET-live-file-content"

// evilRoots builds the review's rows 8 to 12 on the real H200 snapshot:
// links that reach files and directories of the analysing machine (a
// stand-in for its /etc, holding "shadow" and "ssh/") through absolute
// and climbing targets, through a missing element then "..", through a
// file then "..", and to /proc/self. It returns the tree as a directory
// and as a .tgz.
func evilRoots(t *testing.T) (dir, tgz string) {
	t.Helper()
	base := t.TempDir()
	etc := filepath.Join(base, "host-etc")
	for p, s := range map[string]string{"shadow": "root:" + secret + ":20228:0:99999:7:::\n", "secret.txt": secret + " line1\n", "ssh/ssh_config": "Host *\n", "passwd": secret + "\n"} {
		p = filepath.Join(etc, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := snapshot.ReadArchive(context.Background(), "../../../testdata/snapshots/h200x1-vm.tgz")
	if err != nil {
		t.Fatal(err)
	}
	link := func(target string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink | 0o777}
	}
	delete(tree, "sys/class/infiniband")
	for name, target := range map[string]string{
		// rows 9 and 10: a missing element, then "..".
		"proc/evil":                 etc,
		"proc/evil2":                etc,
		"proc/sys/kernel/osrelease": "nonexistent/../../../evil/secret.txt",
		"proc/sys/kernel/hostname":  "nonexistent/../../../evil2/shadow",
		"sys/class/infiniband":      "nonexistent/../../../proc/evil2/ssh",
		"sys/class/net/notdir":      "../../../proc/meminfo/../evil/secret.txt",
		// rows 7 and 8: absolute and climbing targets, /proc/self.
		"proc/cmdline":                     etc + "/shadow",
		"proc/version":                     "../../../../../../../.." + etc + "/passwd",
		"proc/modules":                     "/proc/self/environ",
		"sys/class/infiniband_verbs":       etc,
		"sys/bus/pci/devices/0000:ff:00.0": "/",
	} {
		tree[name] = link(target)
	}
	dir = filepath.Join(base, "evil")
	if err := os.CopyFS(dir, tree); err != nil {
		t.Fatal(err)
	}
	tgz = filepath.Join(base, "evil.tgz")
	if out, err := exec.Command("tar", "czf", tgz, "-C", dir, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	return dir, tgz
}

// TestEvilLinksStayInTheRoot (review S1, rows 7 to 12): whatever a
// snapshot's links point at, discovery, reads, listings and a new
// snapshot taken from it see only the snapshot, for directory and
// archive roots alike.
func TestEvilLinksStayInTheRoot(t *testing.T) {
	dir, tgz := evilRoots(t)
	for name, p := range map[string]string{"dir": dir, "tgz": tgz} {
		t.Run(name, func(t *testing.T) {
			r, cleanup, err := snapshot.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer cleanup()
			for _, rel := range []string{"proc/sys/kernel/osrelease", "proc/sys/kernel/hostname", "sys/class/net/notdir", "proc/cmdline", "proc/version", "proc/modules"} {
				if b, err := r.ReadFile(rel); err == nil {
					t.Errorf("ReadFile(%s) = %.60q", rel, b)
				}
			}
			for _, rel := range []string{"sys/class/infiniband", "sys/class/infiniband_verbs", "proc/evil"} {
				if n, _ := r.Names(rel); len(n) != 0 {
					t.Errorf("Names(%s) = %v: a listing of the analysing machine", rel, n)
				}
			}
			rec := machine.NewRecorder()
			h, err := discover.Discover(context.Background(), discover.WithRoot(r.WithRecorder(rec)))
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(h.Summarize())
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("ssh_config")) || len(h.NICs) != 0 {
				t.Errorf("discovery read the analysing machine: %d NICs, %s", len(h.NICs), b)
			}
			// Row 12: a snapshot of the evil root carries nothing of this
			// machine; its links stay links.
			out := filepath.Join(t.TempDir(), "resnap.tgz")
			m, err := snapshot.Write(context.Background(), r, rec, out, snapshot.Options{Tool: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(m.Hostname, secret) {
				t.Errorf("the manifest names the host %q", m.Hostname)
			}
			re, err := snapshot.ReadArchive(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			for name, f := range re {
				if bytes.Contains(f.Data, []byte(secret)) && f.Mode&fs.ModeSymlink == 0 {
					t.Errorf("%s in the new snapshot holds a file of the analysing machine", name)
				}
			}
		})
	}
}

// writeTar writes a tar (gzip'd when gz) of the entries made by add.
func writeTar(t *testing.T, gz bool, add func(tw *tar.Writer)) string {
	t.Helper()
	var buf bytes.Buffer
	var zw *gzip.Writer
	w := &buf
	tw := tar.NewWriter(w)
	if gz {
		zw = gzip.NewWriter(&buf)
		tw = tar.NewWriter(zw)
	}
	add(tw)
	tw.Flush()
	if zw != nil {
		zw.Close()
	}
	p := filepath.Join(t.TempDir(), "a.tgz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestArchiveLimits (review D21, D22, D6): an archive over the entry or
// byte budget is refused as soon as the budget is passed, without
// reading the rest (a header's declared size counts before its data is
// read); a file that is not an archive says so; a cancelled read stops.
func TestArchiveLimits(t *testing.T) {
	ctx := context.Background()
	many := writeTar(t, true, func(tw *tar.Writer) {
		for i := range snapshot.MaxArchiveEntries + 1 {
			tw.WriteHeader(&tar.Header{Name: "d/" + strings.Repeat("x", i%7) + string(rune('a'+i%26)), Typeflag: tar.TypeSymlink, Linkname: "y"})
		}
	})
	start := time.Now()
	if _, err := snapshot.ReadArchive(ctx, many); err == nil || !strings.Contains(err.Error(), "more than 100000 entries") {
		t.Errorf("too many entries: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("refusing too many entries took %s", d)
	}
	// A declared size over the budget is refused before its data is read
	// (the archive holds none).
	big := writeTar(t, true, func(tw *tar.Writer) {
		tw.WriteHeader(&tar.Header{Name: "sys/a", Typeflag: tar.TypeReg, Size: snapshot.MaxArchiveBytes + 1, Mode: 0o644})
	})
	if _, err := snapshot.ReadArchive(ctx, big); err == nil || !strings.Contains(err.Error(), "more than 67108864 bytes") {
		t.Errorf("too many bytes: %v", err)
	}
	// Deep names imply directories, which count: 60 entries of 2000
	// levels each would make 120,000.
	deep := writeTar(t, true, func(tw *tar.Writer) {
		for i := range 60 {
			tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("d%d/", i) + strings.Repeat("a/", 2000), Typeflag: tar.TypeDir, Mode: 0o755})
		}
	})
	if _, err := snapshot.ReadArchive(ctx, deep); err == nil || !strings.Contains(err.Error(), "more than 100000 entries") {
		t.Errorf("deep names: %v", err)
	}
	long := writeTar(t, false, func(tw *tar.Writer) {
		tw.WriteHeader(&tar.Header{Name: strings.Repeat("n/", 5000), Typeflag: tar.TypeDir, Mode: 0o755})
	})
	if _, err := snapshot.ReadArchive(ctx, long); err == nil || !strings.Contains(err.Error(), "longer than 4096 bytes") {
		t.Errorf("a long name: %v", err)
	}
	text := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(text, []byte(strings.Repeat("not an archive\n", 100)), 0o644)
	gzText := filepath.Join(t.TempDir(), "notes.gz")
	os.WriteFile(gzText, []byte("\x1f\x8bgarbage"), 0o644)
	for _, p := range []string{text, gzText} {
		if _, _, err := snapshot.Open(p); !errors.Is(err, snapshot.ErrNotArchive) || !strings.Contains(err.Error(), p+": not a tar or tar.gz archive") {
			t.Errorf("Open(%s) = %v", filepath.Base(p), err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := snapshot.OpenContext(cancelled, "../../../testdata/snapshots/h200x1-vm.tgz"); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled read: %v", err)
	}
	// A named pipe given as --root is refused, not opened.
	fifo := filepath.Join(t.TempDir(), "snap.tgz")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := snapshot.Open(fifo); err == nil || !strings.Contains(err.Error(), "neither a directory nor a snapshot archive") {
		t.Errorf("--root a named pipe: %v", err)
	}
}

// TestOpenRefusesBrokenManifests (review D11, row 92, and D9): a capture
// that did not finish (an empty snapshot.json), a manifest that is not
// one, or one that cannot be read (a named pipe) is refused with a
// message, not read as a host with nothing on it.
func TestOpenRefusesBrokenManifests(t *testing.T) {
	for manifest, want := range map[string]string{"": "empty snapshot manifest", " \n": "empty snapshot manifest", "{}": "no format number", "[1]": "not a snapshot manifest"} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, snapshot.ManifestFile), []byte(manifest), 0o644)
		if _, _, err := snapshot.Open(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("manifest %q: %v, want %q", manifest, err, want)
		}
	}
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, snapshot.ManifestFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := snapshot.Open(dir); !errors.Is(err, machine.ErrSpecialFile) {
		t.Errorf("a named pipe as the manifest: %v", err)
	}
}

// captureInputs is a small root and a recorder that read it.
func captureInputs(t *testing.T) (machine.Root, *machine.Recorder) {
	t.Helper()
	src := t.TempDir()
	if err := os.CopyFS(src, fstest.MapFS{"proc/sys/kernel/hostname": &fstest.MapFile{Data: []byte("node-2\n")}, "sys/class/net/eth0/mtu": &fstest.MapFile{Data: []byte("9000\n")}}); err != nil {
		t.Fatal(err)
	}
	rec := machine.NewRecorder()
	r := machine.NewRoot(src)
	for _, p := range []string{"proc/sys/kernel/hostname", "sys/class/net/eth0/mtu"} {
		if _, err := r.WithRecorder(rec).ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	return r, rec
}

// TestWriteIsAllOrNothing (review D7, rows 126 and 127; D11, row 92; D10,
// row 136; D22, row 31): an interrupted capture publishes nothing and
// leaves nothing behind; a directory that holds anything is refused and
// kept as it was; TMPDIR plays no part.
func TestWriteIsAllOrNothing(t *testing.T) {
	r, rec := captureInputs(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range []string{"snapdir", "snap.tgz"} {
		parent := t.TempDir()
		out := filepath.Join(parent, name)
		_, err := snapshot.Write(cancelled, r, rec, out, snapshot.Options{Tool: "test"})
		if !errors.Is(err, snapshot.ErrInterrupted) || !errors.Is(err, context.Canceled) {
			t.Errorf("%s: interrupted capture: err = %v", name, err)
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 0 {
			t.Errorf("%s: an interrupted capture left %v", name, ents)
		}
	}
	// -o DIR over an older snapshot: refused, the older one untouched.
	old := filepath.Join(t.TempDir(), "snap")
	if _, err := snapshot.Write(context.Background(), r, rec, old, snapshot.Options{Tool: "first"}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(old, snapshot.ManifestFile))
	if _, err := snapshot.Write(context.Background(), r, rec, old, snapshot.Options{Tool: "second"}); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("a second snapshot into the same directory: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(old, snapshot.ManifestFile)); !bytes.Equal(before, after) {
		t.Error("the older snapshot's manifest was replaced")
	}
	ents, _ := os.ReadDir(filepath.Dir(old))
	if len(ents) != 1 {
		t.Errorf("a refused capture left %v", ents)
	}
	// TMPDIR that does not exist does not matter.
	t.Setenv("TMPDIR", "/nonexistent/dir")
	for _, name := range []string{"d", "s.tgz", "slash/"} {
		out := t.TempDir() + "/" + name
		if m, err := snapshot.Write(context.Background(), r, rec, out, snapshot.Options{Tool: "test"}); err != nil || m.Files != 2 || m.Hostname != "node-2" {
			t.Errorf("%s with TMPDIR missing: %+v, %v", name, m, err)
		}
		sr, _, err := snapshot.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		if s, err := sr.ReadString("sys/class/net/eth0/mtu"); err != nil || s != "9000" {
			t.Errorf("%s read back: %q, %v", name, s, err)
		}
		if fi, err := os.Stat(out); err != nil || (fi.IsDir() && fi.Mode().Perm() != 0o755) {
			t.Errorf("%s: %v, %v", name, fi.Mode(), err)
		}
	}
}
