package snapshot

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/machine"
)

// Limits on what Extract accepts from an archive.
const (
	MaxArchiveBytes   = 2 << 30
	MaxArchiveEntries = 1 << 20
)

// Open returns a root for a --root argument: a directory as is, or a
// .tgz/.tar.gz/.tar snapshot extracted into a temporary directory (removed
// by the returned cleanup). A snapshot of a newer format than this gdrcheck
// reads is refused (CheckFormat).
func Open(p string) (machine.Root, func(), error) {
	if p == "" || p == "/" {
		return machine.NewRoot("/"), func() {}, nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return machine.Root{}, nil, fmt.Errorf("--root %s: %w", p, err)
	}
	if fi.IsDir() {
		r := machine.NewRoot(p)
		if err := CheckFormat(r); err != nil {
			return machine.Root{}, nil, err
		}
		return r, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "gdrcheck-root-")
	if err != nil {
		return machine.Root{}, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := Extract(p, dir); err != nil {
		cleanup()
		return machine.Root{}, nil, err
	}
	// An archive made with a top folder (tar czf x.tgz snapdir) holds the
	// root one level down.
	top := dir
	if ents, _ := os.ReadDir(dir); len(ents) == 1 && ents[0].IsDir() && !isRootDir(ents[0].Name()) {
		top = filepath.Join(dir, ents[0].Name())
	}
	r := machine.NewRoot(top).WithLabel(p)
	if err := CheckFormat(r); err != nil {
		cleanup()
		return machine.Root{}, nil, err
	}
	return r, cleanup, nil
}

func isRootDir(n string) bool { return n == "sys" || n == "proc" || n == CommandsDir }

// Extract unpacks a snapshot archive into dir. Entries with absolute names
// or ".." are refused; symbolic links are kept as they are (machine.Root never
// lets them escape the root). Every entry is written through an os.Root on
// dir, so none lands outside it, not even through a link an earlier entry
// made.
func Extract(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	dirs := &openDir{root: root}
	defer dirs.close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%s: %w", archive, err)
		}
		defer gz.Close()
		r = gz
	}
	tr := tar.NewReader(r)
	var total int64
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if n == 0 {
				return fmt.Errorf("%s: empty archive", archive)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: entry %d: %w", archive, n+1, err)
		}
		if n >= MaxArchiveEntries {
			return fmt.Errorf("%s: more than %d entries", archive, MaxArchiveEntries)
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		if name == "" {
			continue
		}
		if strings.HasPrefix(hdr.Name, "/") || hasDotDot(hdr.Name) {
			return fmt.Errorf("%s: entry %q escapes the archive", archive, hdr.Name)
		}
		rel := filepath.FromSlash(name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(rel, 0o755)
		case tar.TypeSymlink:
			var d *os.Root
			if d, err = dirs.get(filepath.Dir(rel)); err == nil {
				if err = d.Symlink(hdr.Linkname, filepath.Base(rel)); errors.Is(err, fs.ErrExist) {
					err = nil
				}
			}
		case tar.TypeReg:
			total += hdr.Size
			if total > MaxArchiveBytes {
				return fmt.Errorf("%s: more than %d bytes", archive, int64(MaxArchiveBytes))
			}
			var d *os.Root
			if d, err = dirs.get(filepath.Dir(rel)); err == nil {
				err = writeEntry(d, filepath.Base(rel), io.LimitReader(tr, hdr.Size))
			}
		default:
			// Hard links, devices, FIFOs: never part of a snapshot.
		}
		if err != nil {
			return fmt.Errorf("%s: %s: %w", archive, name, err)
		}
	}
}

// openDir keeps open the directory the last entry went to (an archive
// lists a directory's entries together), so that writing an entry is one
// open rather than one per path element. It is an os.Root inside the
// extraction root, as confined as the root itself.
type openDir struct {
	root *os.Root
	name string
	dir  *os.Root
}

// get creates the directory name (relative to the root) if need be and
// returns it open.
func (o *openDir) get(name string) (*os.Root, error) {
	if name == "." {
		return o.root, nil
	}
	if o.dir != nil && o.name == name {
		return o.dir, nil
	}
	o.close()
	if err := o.root.MkdirAll(name, 0o755); err != nil {
		return nil, err
	}
	d, err := o.root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	o.name, o.dir = name, d
	return d, nil
}

func (o *openDir) close() {
	if o.dir != nil {
		o.dir.Close()
		o.dir = nil
	}
}

func writeEntry(root *os.Root, rel string, r io.Reader) error {
	out, err := root.OpenFile(rel, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

func hasDotDot(name string) bool {
	for _, p := range strings.Split(name, "/") {
		if p == ".." {
			return true
		}
	}
	return false
}
