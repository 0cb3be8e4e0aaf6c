package snapshot

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"testing/fstest"

	"github.com/gdrcheck/gdrcheck/internal/machine"
)

// Limits on what Open accepts from an archive, which it holds in memory. A
// real snapshot has about a thousand entries and a few megabytes (sysfs
// attributes, captured outputs and pci.ids, each file at most
// MaxFileSize); the limits leave a hundred times that, and bound the
// memory an archive can cost (docs/performance.md).
const (
	// MaxArchiveBytes bounds the sum of the entries' sizes, data and
	// names, as the archive declares them (what is skipped counts too:
	// reading past it costs as much).
	MaxArchiveBytes = 64 << 20
	// MaxArchiveEntries bounds the entries of every kind, counted as they
	// are read, and the tree they make (with the parent directories their
	// names imply).
	MaxArchiveEntries = 100_000
	// maxNameBytes bounds one entry's name and link target (PATH_MAX).
	maxNameBytes = 4096
)

// ErrNotArchive means a --root file is not a tar or tar.gz archive.
var ErrNotArchive = errors.New("not a tar or tar.gz archive")

// Open returns a root for a --root argument: a directory as is, or a
// .tgz/.tar.gz/.tar snapshot read into memory (nothing is written to
// disk; the returned cleanup has nothing left to do for an archive, and
// is there for the caller's defer). A snapshot of a newer format than
// this gdrcheck reads is refused, and so is one whose manifest cannot be
// read (CheckFormat).
func Open(p string) (machine.Root, func(), error) {
	return OpenContext(context.Background(), p)
}

// OpenContext is Open that stops reading an archive when ctx ends.
func OpenContext(ctx context.Context, p string) (machine.Root, func(), error) {
	if p == "" || p == "/" {
		return machine.NewRoot("/"), func() {}, nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return machine.Root{}, nil, fmt.Errorf("--root %s: %w", p, err)
	}
	var r machine.Root
	switch {
	case fi.IsDir():
		r = machine.NewRoot(p)
	case fi.Mode().IsRegular():
		tree, err := ReadArchive(ctx, p)
		if err != nil {
			return machine.Root{}, nil, err
		}
		r = machine.NewRootFS(Indexed(tree), p)
	default:
		return machine.Root{}, nil, fmt.Errorf("--root %s: neither a directory nor a snapshot archive (%s)", p, fi.Mode().Type())
	}
	if err := CheckFormat(r); err != nil {
		return machine.Root{}, nil, err
	}
	return r, func() {}, nil
}

func isRootDir(n string) bool { return n == "sys" || n == "proc" || n == CommandsDir }

// ReadArchive reads a snapshot archive (.tgz, .tar.gz or .tar) into an
// in-memory tree, within MaxArchiveEntries and MaxArchiveBytes, checked
// entry by entry as it goes; it stops when ctx ends. Entries with
// absolute names or ".." are refused, and so is an entry below a link or
// a file of the archive; symbolic links are kept as they are
// (machine.Root never lets them escape the root). Hard links, devices and
// FIFOs are left out. An archive made with a top folder (tar czf x.tgz
// snapdir) gives the tree inside that folder.
func ReadArchive(ctx context.Context, archive string) (fstest.MapFS, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (%v)", archive, ErrNotArchive, err)
		}
		defer gz.Close()
		r = gz
	}
	tr := tar.NewReader(r)
	tree := fstest.MapFS{}
	var total int64
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: reading interrupted: %w", archive, err)
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if n == 0 {
				return nil, fmt.Errorf("%s: empty archive", archive)
			}
			return topFolder(tree), nil
		}
		if err != nil {
			if n == 0 {
				return nil, fmt.Errorf("%s: %w (%v)", archive, ErrNotArchive, err)
			}
			return nil, fmt.Errorf("%s: entry %d: %w", archive, n+1, err)
		}
		if n >= MaxArchiveEntries {
			return nil, fmt.Errorf("%s: more than %d entries; a snapshot has a few thousand", archive, MaxArchiveEntries)
		}
		if len(hdr.Name) > maxNameBytes || len(hdr.Linkname) > maxNameBytes {
			return nil, fmt.Errorf("%s: entry %d: a name longer than %d bytes", archive, n+1, maxNameBytes)
		}
		total += max(hdr.Size, 0) + int64(len(hdr.Name)+len(hdr.Linkname))
		if total > MaxArchiveBytes {
			return nil, fmt.Errorf("%s: more than %d bytes; a snapshot has a few megabytes", archive, int64(MaxArchiveBytes))
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		if name == "" {
			continue
		}
		if strings.HasPrefix(hdr.Name, "/") || slices.Contains(strings.Split(hdr.Name, "/"), "..") {
			return nil, fmt.Errorf("%s: entry %q escapes the archive", archive, hdr.Name)
		}
		var file *fstest.MapFile
		switch hdr.Typeflag {
		case tar.TypeDir:
			file = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
		case tar.TypeSymlink:
			file = &fstest.MapFile{Data: []byte(hdr.Linkname), Mode: fs.ModeSymlink | 0o777}
		case tar.TypeReg:
			b := make([]byte, hdr.Size)
			if _, err := io.ReadFull(tr, b); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", archive, name, err)
			}
			file = &fstest.MapFile{Data: b, Mode: 0o644}
		default:
			continue
		}
		if err := add(tree, name, file); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", archive, name, err)
		}
		// The directories an entry implies count too: deep names must
		// not multiply the tree.
		if len(tree) > MaxArchiveEntries {
			return nil, fmt.Errorf("%s: more than %d entries (with the directories they imply); a snapshot has a few thousand", archive, MaxArchiveEntries)
		}
	}
}

// add puts one archive entry into the tree, listing its parents as
// directories. A parent that is a link or a file is refused: writing
// through it would put the entry somewhere else. A later file replaces an
// earlier one; a directory or link named again stays as it was.
func add(tree fstest.MapFS, name string, file *fstest.MapFile) error {
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		p, ok := tree[d]
		if !ok {
			tree[d] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
			continue
		}
		if !p.Mode.IsDir() {
			return fmt.Errorf("%s is not a directory of the archive (a link or a file)", d)
		}
	}
	old, ok := tree[name]
	switch {
	case !ok || file.Mode.IsRegular() && old.Mode.IsRegular():
		tree[name] = file
	case file.Mode.IsRegular() || file.Mode.IsDir() && old.Mode.IsRegular():
		return errors.New("already in the archive as another kind of entry")
	}
	return nil
}

// topFolder returns the tree inside a lone top folder that is not itself
// part of a root (sys, proc, commands).
func topFolder(tree fstest.MapFS) fstest.MapFS {
	var top string
	for name := range tree {
		first, _, _ := strings.Cut(name, "/")
		if top != "" && first != top {
			return tree
		}
		top = first
	}
	if f := tree[top]; f == nil || !f.Mode.IsDir() || isRootDir(top) {
		return tree
	}
	inner := fstest.MapFS{}
	for name, f := range tree {
		if rest, ok := strings.CutPrefix(name, top+"/"); ok {
			inner[rest] = f
		}
	}
	return inner
}
