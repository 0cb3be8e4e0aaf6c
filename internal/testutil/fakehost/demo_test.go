package fakehost

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/demo from testdata/hosts")

// demoDir holds every fixture host as a snapshot any command reads
// (--root testdata/demo/NAME.tgz): the machines a user without the
// hardware can try the tool on (README's first example).
const demoDir = "../../../testdata/demo"

// TestDemoSnapshotsCurrent: each testdata/hosts/*.host has its snapshot
// in testdata/demo, and the snapshot is what the description makes now
// (-update writes them).
func TestDemoSnapshotsCurrent(t *testing.T) {
	hosts, err := filepath.Glob("../../../testdata/hosts/*.host")
	if err != nil || len(hosts) == 0 {
		t.Fatalf("no fixture hosts: %v", err)
	}
	for _, h := range hosts {
		name := strings.TrimSuffix(filepath.Base(h), ".host") + ".tgz"
		got := demoArchive(t, load(t, h))
		p := filepath.Join(demoDir, name)
		if *update {
			if err := os.WriteFile(p, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%s: %v (go test ./internal/testutil/fakehost -update writes it)", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what %s makes now: go test ./internal/testutil/fakehost -update", name, filepath.Base(h))
		}
	}
}

// demoArchive is s as a gzipped tar, byte for byte the same on every run:
// paths in order, one fixed time, no owner.
func demoArchive(t *testing.T, s *Spec) []byte {
	t.Helper()
	fsys, err := s.FS()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.ModTime = at
	tw := tar.NewWriter(zw)
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		h := &tar.Header{Name: p, ModTime: at, Mode: 0o644, Format: tar.FormatPAX}
		f := fsys[p]
		switch {
		case d.IsDir():
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, p+"/", 0o755
		case f != nil && f.Mode&fs.ModeSymlink != 0:
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, string(f.Data), 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			_, err = tw.Write(f.Data)
		}
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
