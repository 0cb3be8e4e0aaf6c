package machine

import (
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// maxOpenDirs bounds the directories an osTree keeps open.
const maxOpenDirs = 256

// osTree is a directory of this machine read through an os.Root, which
// confines every open, stat and readlink to it. An os.Root opens a
// path one element at a time; to keep a sysfs attribute read at one open,
// osTree keeps the directories it was last asked about open as roots of
// their own and opens names relative to them.
type osTree struct {
	root *os.Root
	mu   sync.Mutex
	dirs map[string]*os.Root // open directories by root-relative path
}

func newOSTree(r *os.Root) *osTree { return &osTree{root: r, dirs: map[string]*os.Root{}} }

var _ fs.ReadLinkFS = (*osTree)(nil)

// do runs op on the directory that holds name, with name's last element.
// The lock is held while op runs, so no directory is closed under it.
func (t *osTree) do(opName, name string, op func(dir *os.Root, base string) error) error {
	if !fs.ValidPath(name) {
		return &fs.PathError{Op: opName, Path: name, Err: fs.ErrInvalid}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	dir, base := path.Split(name)
	if len(t.dirs) >= maxOpenDirs {
		for k, d := range t.dirs {
			d.Close()
			delete(t.dirs, k)
		}
	}
	d, err := t.dir(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return err
	}
	return op(d, base)
}

// dir returns the open directory rel, opening it (and the directories
// above it) relative to its parent. The caller holds t.mu.
func (t *osTree) dir(rel string) (*os.Root, error) {
	if rel == "" {
		return t.root, nil
	}
	if d, ok := t.dirs[rel]; ok {
		return d, nil
	}
	parent, base := path.Split(rel)
	p, err := t.dir(strings.TrimSuffix(parent, "/"))
	if err != nil {
		return nil, err
	}
	// Opening a named pipe blocks until a writer comes, and OpenRoot opens
	// without O_DIRECTORY: look before opening.
	fi, err := p.Stat(base)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: syscall.ENOTDIR}
	}
	d, err := p.OpenRoot(base)
	if err != nil {
		return nil, err
	}
	t.dirs[rel] = d
	return d, nil
}

// Open opens a regular file or a directory. Anything else is refused
// before it is opened (a named pipe would block, a device node may act on
// open); it is opened non-blocking and checked again, in case the entry
// changed between the two.
func (t *osTree) Open(name string) (fs.File, error) {
	var f *os.File
	err := t.do("open", name, func(d *os.Root, base string) error {
		fi, err := d.Stat(base)
		if err != nil {
			return err
		}
		if !plain(fi.Mode()) {
			return &fs.PathError{Op: "open", Path: name, Err: specialFile(fi.Mode())}
		}
		if f, err = d.OpenFile(base, os.O_RDONLY|syscall.O_NONBLOCK, 0); err != nil {
			return err
		}
		if fi, err = f.Stat(); err != nil || !plain(fi.Mode()) {
			f.Close()
			f = nil
			if err == nil {
				err = &fs.PathError{Op: "open", Path: name, Err: specialFile(fi.Mode())}
			}
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// plain reports whether m is a regular file or a directory.
func plain(m fs.FileMode) bool { return m.IsRegular() || m.IsDir() }

func (t *osTree) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := t.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.(*os.File).ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

func (t *osTree) Stat(name string) (fi fs.FileInfo, err error) {
	err = t.do("stat", name, func(d *os.Root, base string) (err error) {
		fi, err = d.Stat(base)
		return err
	})
	return fi, err
}

func (t *osTree) Lstat(name string) (fi fs.FileInfo, err error) {
	err = t.do("lstat", name, func(d *os.Root, base string) (err error) {
		fi, err = d.Lstat(base)
		return err
	})
	return fi, err
}

func (t *osTree) ReadLink(name string) (s string, err error) {
	err = t.do("readlink", name, func(d *os.Root, base string) (err error) {
		s, err = d.Readlink(base)
		return err
	})
	return s, err
}
