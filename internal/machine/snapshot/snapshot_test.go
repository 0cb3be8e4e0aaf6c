package snapshot_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

func render(t *testing.T, h *topology.Host) string {
	t.Helper()
	var b bytes.Buffer
	h.BuildMatrix().WriteText(&b, topology.RenderOptions{})
	h.Pairing().WriteText(&b)
	return b.String()
}

// TestRoundTrip: what a snapshot captures is enough to reproduce the same
// discovery, and it leaves out side-effecting files.
func TestRoundTrip(t *testing.T) {
	for _, out := range []string{"dir", "snap.tgz"} {
		t.Run(out, func(t *testing.T) {
			t.Parallel()
			spec, err := fakehost.Load("../../../testdata/hosts/hgx-h200-8gpu-10nic.host")
			if err != nil {
				t.Fatal(err)
			}
			fsys, err := spec.FS()
			if err != nil {
				t.Fatal(err)
			}
			src := machine.NewRootFS(fsys, spec.Name)
			// BARs next to the GPU: never to be read.
			gpu, _ := src.Resolve("sys/bus/pci/devices/0000:18:00.0")
			fsys[gpu+"/resource0"] = &fstest.MapFile{Data: make([]byte, 1<<10)}
			// The host's own PCI ID database, which names its GPUs.
			fsys["usr/share/misc/pci.ids"] = &fstest.MapFile{Data: []byte("10de  NVIDIA\n\t2335  This host's H200\n")}
			rec := machine.NewRecorder()
			h1, err := discover.Discover(context.Background(), discover.WithRoot(src.WithRecorder(rec)))
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), out)
			m, err := snapshot.Write(context.Background(), src, rec, dst, snapshot.Options{Tool: "test", Facts: h1.GPUFacts})
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Errors) != 0 || m.Files == 0 || m.Links == 0 {
				t.Errorf("manifest = %+v", m)
			}
			root, cleanup, err := snapshot.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer cleanup()
			if root.Exists(gpu + "/resource0") {
				t.Error("resource0 was captured")
			}
			h2, err := discover.Discover(context.Background(), discover.WithRoot(root))
			if err != nil {
				t.Fatal(err)
			}
			if h1.GPUs[0].Dev.Name != "This host's H200" || h2.GPUs[0].Dev.Name != h1.GPUs[0].Dev.Name {
				t.Errorf("PCI names: live %q, snapshot %q", h1.GPUs[0].Dev.Name, h2.GPUs[0].Dev.Name)
			}
			if a, b := render(t, h1), render(t, h2); a != b {
				t.Errorf("snapshot discovery differs:\n%s\nvs live:\n%s", b, a)
			}
			if h2.GPUFacts == nil || !strings.Contains(h2.GPUFacts.Source, "nvml.json") {
				t.Errorf("facts not replayed from nvml.json: %+v", h2.GPUFacts)
			}
			if len(h2.Problems) != 0 {
				t.Errorf("problems reading the snapshot: %+v", h2.Problems)
			}
		})
	}
}

func tarball(t *testing.T, entries ...tar.Header) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range entries {
		h := h
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len("x"))
		}
		h.Mode = 0o644
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte("x"))
		}
	}
	tw.Close()
	gz.Close()
	p := filepath.Join(t.TempDir(), "x.tgz")
	os.WriteFile(p, buf.Bytes(), 0o644)
	return p
}

func TestExtractRefusesEscapes(t *testing.T) {
	cases := []struct {
		name string
		h    tar.Header
		err  string
	}{
		{"dotdot", tar.Header{Name: "sys/../../etc/passwd", Typeflag: tar.TypeReg}, "escapes"},
		{"absolute", tar.Header{Name: "/etc/passwd", Typeflag: tar.TypeReg}, "escapes"},
		{"fine", tar.Header{Name: "sys/class/net/eth0/mtu", Typeflag: tar.TypeReg}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := snapshot.ReadArchive(context.Background(), tarball(t, c.h))
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Errorf("err = %v, want %q", err, c.err)
			}
		})
	}
	// A link pointing outside stays a link; reads through the root stay inside it.
	p := tarball(t, tar.Header{Name: "sys/evil", Typeflag: tar.TypeSymlink, Linkname: "/etc/hostname"})
	root, cleanup, err := snapshot.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if _, err := root.ReadFile("sys/evil"); err == nil {
		t.Error("a snapshot link read a file of the live host")
	}
	// A later entry below an earlier link (or file) is refused.
	outside := t.TempDir()
	p = tarball(t, tar.Header{Name: "sys/out", Typeflag: tar.TypeSymlink, Linkname: outside},
		tar.Header{Name: "sys/out/planted", Typeflag: tar.TypeReg})
	if _, _, err := snapshot.Open(p); err == nil || !strings.Contains(err.Error(), "sys/out is not a directory") {
		t.Errorf("an entry below a link of the archive: err = %v", err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "planted")); err == nil {
		t.Error("an archive entry was written outside the archive")
	}
	p = tarball(t, tar.Header{Name: "sys/f", Typeflag: tar.TypeReg}, tar.Header{Name: "sys/f/x", Typeflag: tar.TypeReg})
	if _, err := snapshot.ReadArchive(context.Background(), p); err == nil {
		t.Error("an entry below a file of the archive was accepted")
	}
	// tar czf x.tgz snapdir: the root is the folder.
	r, _, err := snapshot.Open(tarball(t, tar.Header{Name: "snapdir/", Typeflag: tar.TypeDir}, tar.Header{Name: "snapdir/sys/class/net/eth0/mtu", Typeflag: tar.TypeReg}))
	if err != nil || !r.Exists("sys/class/net/eth0/mtu") {
		t.Errorf("archive with a top folder: %v", err)
	}
	if _, _, err := snapshot.Open(filepath.Join(t.TempDir(), "missing.tgz")); err == nil {
		t.Error("missing archive opened")
	}
	bad := filepath.Join(t.TempDir(), "bad.tgz")
	os.WriteFile(bad, []byte("\x1f\x8bgarbage"), 0o644)
	if _, _, err := snapshot.Open(bad); err == nil {
		t.Error("garbage archive opened")
	}
}

// TestOpenChecksTheFormat: a snapshot of a newer format is refused with a
// message naming the manifest and both versions; one of this format, and
// one from before the manifest existed, open.
func TestOpenChecksTheFormat(t *testing.T) {
	newer := fmt.Sprintf(`{"format": %d, "tool": "gdrcheck from the future"}`, snapshot.Format+1)
	dirWith := func(t *testing.T, manifest string) string {
		t.Helper()
		dir := t.TempDir()
		if err := os.CopyFS(dir, fstest.MapFS{
			"sys/bus/pci/devices":   &fstest.MapFile{Mode: fs.ModeDir | 0o755},
			snapshot.ManifestFile:   &fstest.MapFile{Data: []byte(manifest)},
			snapshot.EnvironFile:    &fstest.MapFile{Data: []byte("NCCL_DEBUG=INFO\n")},
			"commands/ulimit-a.txt": &fstest.MapFile{Data: []byte("unlimited\n")},
		}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir := dirWith(t, newer)
	_, _, err := snapshot.Open(dir)
	want := fmt.Sprintf("%s: format %d: snapshot format is newer than this gdrcheck reads (format %d and older)", filepath.Join(dir, snapshot.ManifestFile), snapshot.Format+1, snapshot.Format)
	if !errors.Is(err, snapshot.ErrNewerFormat) || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("newer snapshot directory: err = %v, want %q", err, want)
	}
	tgz := filepath.Join(t.TempDir(), "future.tgz")
	if out, err := exec.Command("tar", "czf", tgz, "-C", dir, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	_, _, err = snapshot.Open(tgz)
	if !errors.Is(err, snapshot.ErrNewerFormat) || !strings.Contains(err.Error(), tgz+"/"+snapshot.ManifestFile) {
		t.Errorf("newer snapshot archive: err = %v", err)
	}
	if _, _, err := snapshot.Open(dirWith(t, "{not json")); err == nil || !strings.Contains(err.Error(), "not a snapshot manifest") {
		t.Errorf("broken manifest: err = %v", err)
	}
	r, cleanup, err := snapshot.Open(dirWith(t, fmt.Sprintf(`{"format": %d}`, snapshot.Format)))
	if err != nil {
		t.Fatalf("current format: %v", err)
	}
	cleanup()
	if s, err := r.ReadString(snapshot.EnvironFile); err != nil || s != "NCCL_DEBUG=INFO" {
		t.Errorf("%s = %q, %v", snapshot.EnvironFile, s, err)
	}
	// A capture from before the manifest (as testdata/snapshots/*.tgz,
	// which the topology tests open).
	r, cleanup, err = snapshot.Open(tarball(t, tar.Header{Name: "sys/class/net/eth0/mtu", Typeflag: tar.TypeReg}))
	if err != nil {
		t.Fatalf("capture without a manifest: %v", err)
	}
	defer cleanup()
	if !r.Exists("sys/class/net/eth0/mtu") {
		t.Error("capture without a manifest: content missing")
	}
}

// TestWriteFollowsTheLayout: Write puts every file where the layout says,
// with the current format in the manifest.
func TestWriteFollowsTheLayout(t *testing.T) {
	src := t.TempDir()
	if err := os.CopyFS(src, fstest.MapFS{"proc/sys/kernel/hostname": &fstest.MapFile{Data: []byte("node-1\n")}}); err != nil {
		t.Fatal(err)
	}
	root := machine.NewRoot(src)
	rec := machine.NewRecorder()
	if _, err := root.WithRecorder(rec).ReadString("proc/sys/kernel/hostname"); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := machine.Command{Key: "echo.txt", Name: "echo", Args: []string{"captured"}}
	m, err := snapshot.Write(context.Background(), root, rec, out, snapshot.Options{
		Tool: "test", Commands: []machine.Command{cmd}, Facts: &gpu.Facts{Source: "test"},
		Extra: map[string][]byte{snapshot.EnvironFile: []byte("A=1\n"), "libraries.json": []byte("[]")},
	})
	if err != nil || m.Format != snapshot.Format || m.Hostname != "node-1" {
		t.Fatalf("manifest %+v, %v", m, err)
	}
	snap := machine.NewRoot(out)
	for _, p := range []string{snapshot.ManifestFile, snapshot.CommandFile(cmd), snapshot.FactsFile, snapshot.EnvironFile, snapshot.LibrariesFile, "proc/sys/kernel/hostname"} {
		if !snap.Exists(p) {
			t.Errorf("%s missing from the snapshot", p)
		}
	}
	b, err := snap.ReadFile(snapshot.ManifestFile)
	var back snapshot.Manifest
	if err != nil || json.Unmarshal(b, &back) != nil || back.Format != snapshot.Format {
		t.Errorf("manifest read back: %s, %v", b, err)
	}
}
