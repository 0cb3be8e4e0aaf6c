package snapshot_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

func render(t *testing.T, h *topology.Host) string {
	t.Helper()
	var b bytes.Buffer
	h.BuildMatrix().WriteText(&b, topology.RenderOptions{})
	h.Pair().WriteText(&b)
	return b.String()
}

// TestRoundTrip: what a snapshot captures is enough to reproduce the same
// discovery, and it leaves out side-effecting files.
func TestRoundTrip(t *testing.T) {
	for _, out := range []string{"dir", "snap.tgz"} {
		t.Run(out, func(t *testing.T) {
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
			rec := machine.NewRecorder()
			h1, err := topology.Discover(context.Background(), topology.WithRoot(src.WithRecorder(rec)))
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
			h2, err := topology.Discover(context.Background(), topology.WithRoot(root))
			if err != nil {
				t.Fatal(err)
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
			err := snapshot.Extract(tarball(t, c.h), t.TempDir())
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
	// A later entry written through an earlier link must not land outside.
	outside := t.TempDir()
	p = tarball(t, tar.Header{Name: "sys/out", Typeflag: tar.TypeSymlink, Linkname: outside},
		tar.Header{Name: "sys/out/planted", Typeflag: tar.TypeReg})
	if err := snapshot.Extract(p, t.TempDir()); err == nil {
		t.Error("an entry was written through a link that leaves the archive")
	}
	if _, err := os.Lstat(filepath.Join(outside, "planted")); err == nil {
		t.Error("an archive entry was written outside the extraction directory")
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
