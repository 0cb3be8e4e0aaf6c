package snapshot

import (
	"io/fs"
	"maps"
	"path"
	"slices"
	"testing/fstest"
	"time"
)

// indexedFS is an in-memory tree that finds an entry, and lists a
// directory, through an index. fstest.MapFS alone scans every entry of the
// tree to answer for a name it does not hold (a missing attribute) and to
// list a directory, so an archive of 100,000 entries within the caps would
// cost hours of lookups instead of seconds; Open reads archives through
// this index.
type indexedFS struct {
	m    fstest.MapFS
	kids map[string][]string // a directory's entries, by base name, sorted
}

// Indexed returns m as a file system that answers through an index,
// listing every parent directory m leaves out (it adds them to m).
func Indexed(m fstest.MapFS) fs.FS { return newIndexedFS(m) }

func newIndexedFS(m fstest.MapFS) indexedFS {
	x := indexedFS{m: m, kids: map[string][]string{}}
	added := map[string]bool{}
	for _, n := range slices.Collect(maps.Keys(m)) {
		for c := n; c != "." && !added[c]; c = path.Dir(c) {
			added[c] = true
			d := path.Dir(c)
			if _, ok := m[d]; !ok && d != "." {
				m[d] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
			}
			x.kids[d] = append(x.kids[d], path.Base(c))
		}
	}
	for _, k := range x.kids {
		slices.Sort(k)
	}
	return x
}

func (x indexedFS) entry(op, name string) (*fstest.MapFile, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return &fstest.MapFile{Mode: fs.ModeDir | 0o755}, nil
	}
	f, ok := x.m[name]
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return f, nil
}

func (x indexedFS) Open(name string) (fs.File, error) {
	if _, err := x.entry("open", name); err != nil {
		return nil, err
	}
	return x.m.Open(name)
}

func (x indexedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := x.entry("readdir", name)
	if err != nil {
		return nil, err
	}
	if !f.Mode.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	out := make([]fs.DirEntry, 0, len(x.kids[name]))
	for _, k := range x.kids[name] {
		out = append(out, fs.FileInfoToDirEntry(info{k, x.m[path.Join(name, k)]}))
	}
	return out, nil
}

func (x indexedFS) Lstat(name string) (fs.FileInfo, error) {
	f, err := x.entry("lstat", name)
	if err != nil {
		return nil, err
	}
	return info{path.Base(name), f}, nil
}

func (x indexedFS) Stat(name string) (fs.FileInfo, error) {
	f, err := x.entry("stat", name)
	if err != nil {
		return nil, err
	}
	if f.Mode&fs.ModeSymlink != 0 {
		return x.m.Stat(name)
	}
	return info{path.Base(name), f}, nil
}

func (x indexedFS) ReadLink(name string) (string, error) {
	f, err := x.entry("readlink", name)
	if err != nil {
		return "", err
	}
	if f.Mode&fs.ModeSymlink == 0 {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	return string(f.Data), nil
}

// info describes one entry of the tree.
type info struct {
	name string
	f    *fstest.MapFile
}

func (i info) Name() string       { return i.name }
func (i info) Size() int64        { return int64(len(i.f.Data)) }
func (i info) Mode() fs.FileMode  { return i.f.Mode }
func (i info) ModTime() time.Time { return i.f.ModTime }
func (i info) IsDir() bool        { return i.f.Mode.IsDir() }
func (i info) Sys() any           { return nil }
