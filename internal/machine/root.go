// Package machine is the one door to the machine under test. Every read of
// sysfs, procfs and captured command output goes through a Root, so the same
// code runs on the live host ("/"), on a captured snapshot (a directory, or
// an archive read into memory), and on in-memory trees built by tests; and
// no read leaves the root.
package machine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// DefaultMaxRead bounds every attribute read: sysfs attributes are a page at
// most, and a snapshot must never make us slurp a huge file by accident.
const DefaultMaxRead = 4 << 20

// maxLinkHops is the number of symbolic links followed while resolving one
// path before giving up with ErrLinkLoop (Linux uses 40).
const maxLinkHops = 40

// maxPathBytes bounds a path while it is resolved. No path gdrcheck reads
// comes near it (the deepest sysfs device paths of real PCIe trees are a
// few hundred bytes), and resolving costs the square of a path's depth, so
// a chain of bridges built to be thousands deep stops here.
const maxPathBytes = 1024

// ErrLinkLoop reports a symbolic-link cycle inside the root.
var ErrLinkLoop = errors.New("too many levels of symbolic links")

// Root is a tree that stands for "/" of the host being examined: the live
// host, a snapshot directory, or an in-memory tree built by a test. Paths
// given to its methods are slash-separated and relative to the root
// ("sys/bus/pci/devices"); a leading "/" is accepted and ignored.
//
// Every read, listing and link resolution stays inside the root by
// construction. A directory is opened as an os.Root, which never follows
// a link or ".." out of it; and the root resolves symbolic links
// itself, one element at a time, taking absolute link targets relative to
// the root (a snapshot's sysfs links are absolute or climb with ".."),
// before it hands the operating system a path free of links. The zero Root
// reads nothing.
//
// Only regular files are read and only directories listed: a named pipe,
// a device node or a socket is refused (ErrSpecialFile) before it is
// opened, so nothing a root holds can block a read or trigger a device.
// A root given a context (WithContext) fails every read once it is done,
// and on the live host a read that blocks in the kernel past it returns
// its error.
type Root struct {
	fsys  fs.FS  // the tree; root-relative paths, "." for the top
	dir   string // the directory on this machine; "" for an in-memory tree
	label string
	rec   *Recorder
	cache *dirCache
	ctx   context.Context // nil: no deadline
}

// ErrSpecialFile reports a path that is neither a regular file nor a
// directory (a named pipe, a device node, a socket): it is never opened.
var ErrSpecialFile = errors.New("not a regular file or directory (special files are never read)")

// dirCache remembers resolved directories: sysfs does not change during a
// run, and resolving every component of every attribute path is most of
// discovery's cost otherwise.
type dirCache struct {
	mu sync.Mutex
	m  map[string]string
}

func newDirCache() *dirCache { return &dirCache{m: map[string]string{}} }

func (c *dirCache) get(k string) (string, bool) {
	if c == nil {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *dirCache) put(k, v string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.m[k] = v
	c.mu.Unlock()
}

// NewRoot returns a Root for dir ("" or "/" means the live host). The
// directory is opened as an os.Root; if that fails, every read through the
// root reports why.
func NewRoot(dir string) Root {
	if dir == "" {
		dir = "/"
	}
	r := Root{dir: filepath.Clean(dir), cache: newDirCache()}
	or, err := os.OpenRoot(r.dir)
	if err != nil {
		r.fsys = failedFS{err}
		return r
	}
	r.fsys = newOSTree(or)
	return r
}

// NewRootFS returns a Root over a file system tree, such as a
// testing/fstest.MapFS. Symbolic links are seen only when fsys implements
// fs.ReadLinkFS. name stands for the root in messages.
func NewRootFS(fsys fs.FS, name string) Root {
	return Root{fsys: fsys, label: name, cache: newDirCache()}
}

// failedFS is the tree of a directory that could not be opened.
type failedFS struct{ err error }

func (f failedFS) Open(string) (fs.File, error) { return nil, f.err }

var errZeroRoot = errors.New("no root (the zero machine.Root)")

// tree is the file system the root reads.
func (r Root) tree() fs.FS {
	if r.fsys == nil {
		return failedFS{errZeroRoot}
	}
	return r.fsys
}

// WithRecorder returns a copy of the root that notes every path it reads,
// so a snapshot can capture exactly what the tool looked at.
func (r Root) WithRecorder(rec *Recorder) Root {
	r.rec = rec
	// A fresh cache, so every path this root resolves is seen and noted.
	r.cache = newDirCache()
	return r
}

// WithContext returns a copy of the root whose reads and listings end
// with ctx: once ctx is done each of them fails with its error at once.
// On the live host, where a sysfs attribute of a hung device can block in
// the kernel, a read that blocks returns ctx's error when ctx ends,
// leaving the stuck call behind. A snapshot cannot block a read: special
// files are refused before they are opened.
func (r Root) WithContext(ctx context.Context) Root {
	r.ctx = ctx
	return r
}

// bounded runs op under the root's context. Only the live host's reads
// run on a goroutine of their own, which costs about 10 µs a read.
func bounded[T any](r Root, op func() (T, error)) (T, error) {
	var zero T
	if r.ctx == nil {
		return op()
	}
	if err := r.ctx.Err(); err != nil {
		return zero, err
	}
	if r.ctx.Done() == nil || !r.Live() {
		return op()
	}
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() {
		v, err := op()
		ch <- res{v, err}
	}()
	select {
	case x := <-ch:
		return x.v, x.err
	case <-r.ctx.Done():
		return zero, r.ctx.Err()
	}
}

// Dir is the directory on this machine that the root maps to, or "" for a
// root over an in-memory tree.
func (r Root) Dir() string { return r.dir }

// Live reports whether the root is the running host's own "/".
func (r Root) Live() bool { return r.dir == "/" }

// clean normalises a root-relative path.
func clean(rel string) string {
	rel = path.Clean("/" + filepath.ToSlash(rel))
	return strings.TrimPrefix(rel, "/")
}

// fsPath is a cleaned root-relative path as io/fs spells it.
func fsPath(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

func join(dir, base string) string {
	if dir == "" {
		return base
	}
	return dir + "/" + base
}

// Display is the path as a person should see it in a message: the host path
// when live, the path inside the snapshot otherwise.
func (r Root) Display(rel string) string {
	switch {
	case r.Live():
		return "/" + clean(rel)
	case r.label != "":
		return r.label + "/" + clean(rel)
	}
	return filepath.Join(r.dir, filepath.FromSlash(clean(rel)))
}

// WithLabel names the root in messages (the archive a snapshot was
// extracted from, rather than its temporary directory).
func (r Root) WithLabel(label string) Root {
	r.label = label
	return r
}

// ReadFile reads at most DefaultMaxRead bytes of a file under the root. The
// path's symbolic links are resolved inside the root, so an absolute link in
// a snapshot never escapes to the live host.
func (r Root) ReadFile(rel string) ([]byte, error) {
	return r.ReadFileLimit(rel, DefaultMaxRead)
}

// ReadFileLimit is ReadFile with an explicit size bound; a file longer than
// max is an error rather than silently truncated.
func (r Root) ReadFileLimit(rel string, max int64) ([]byte, error) {
	b, err := bounded(r, func() ([]byte, error) { return r.readFile(rel, max) })
	if err != nil {
		return nil, r.wrap("read", rel, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("read %s: larger than %d bytes", r.Display(rel), max)
	}
	return b, nil
}

// readFile reads at most max+1 bytes of a regular file.
func (r Root) readFile(rel string, max int64) ([]byte, error) {
	res, err := r.resolve(rel)
	if err != nil {
		return nil, err
	}
	r.rec.note(res, noteFile)
	f, err := r.tree().Open(fsPath(res))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return nil, syscall.EISDIR
		}
		return nil, specialFile(fi.Mode())
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}

// specialFile is ErrSpecialFile naming the kind of file.
func specialFile(m fs.FileMode) error {
	kind := "special file"
	switch {
	case m&fs.ModeNamedPipe != 0:
		kind = "named pipe"
	case m&fs.ModeSocket != 0:
		kind = "socket"
	case m&fs.ModeCharDevice != 0:
		kind = "character device"
	case m&fs.ModeDevice != 0:
		kind = "block device"
	}
	return fmt.Errorf("%s: %w", kind, ErrSpecialFile)
}

// ReadString reads a small attribute file and trims surrounding white space.
func (r Root) ReadString(rel string) (string, error) {
	b, err := r.ReadFileLimit(rel, 64<<10)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadDir lists a directory under the root, sorted by name.
func (r Root) ReadDir(rel string) ([]fs.DirEntry, error) {
	ents, err := bounded(r, func() ([]fs.DirEntry, error) {
		res, err := r.resolve(rel)
		if err != nil {
			return nil, err
		}
		r.rec.note(res, noteDir)
		ents, err := fs.ReadDir(r.tree(), fsPath(res))
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			r.rec.note(join(res, e.Name()), noteEntry)
		}
		return ents, nil
	})
	if err != nil {
		return nil, r.wrap("list", rel, err)
	}
	return ents, nil
}

// Names lists the entry names of a directory; a missing directory is an
// empty list, not an error.
func (r Root) Names(rel string) ([]string, error) {
	ents, err := r.ReadDir(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out, nil
}

// Readlink returns the raw target of a symbolic link under the root. The
// links on the way to it are resolved inside the root; the target itself is
// only read, never followed.
func (r Root) Readlink(rel string) (string, error) {
	p, err := r.locate(rel)
	if err != nil {
		return "", r.wrap("readlink", rel, err)
	}
	t, err := fs.ReadLink(r.tree(), fsPath(p))
	if err != nil {
		return "", r.wrap("readlink", rel, err)
	}
	return t, nil
}

// LinkBase is the last element of a symbolic link's target: the driver name
// of .../driver, the group number of .../iommu_group.
func (r Root) LinkBase(rel string) (string, error) {
	t, err := r.Readlink(rel)
	if err != nil {
		return "", err
	}
	return path.Base(filepath.ToSlash(t)), nil
}

// Lstat describes a path under the root without following its last
// element when that is a symbolic link.
func (r Root) Lstat(rel string) (fs.FileInfo, error) {
	p, err := r.locate(rel)
	if err != nil {
		return nil, r.wrap("lstat", rel, err)
	}
	fi, err := fs.Lstat(r.tree(), fsPath(p))
	if err != nil {
		return nil, r.wrap("lstat", rel, err)
	}
	return fi, nil
}

// Exists reports whether a path exists under the root (links followed).
func (r Root) Exists(rel string) bool {
	res, err := r.resolve(rel)
	if err != nil {
		return false
	}
	_, err = fs.Stat(r.tree(), fsPath(res))
	return err == nil
}

// Resolve returns the root-relative path that rel names once every symbolic
// link on it is followed. Absolute link targets are taken relative to the
// root, ".." never climbs above the root, and a cycle gives ErrLinkLoop. The
// final element need not exist; every element before it must be a
// directory (or a link to one), as the kernel demands: "missing/../x" and
// "file/../x" do not name x.
func (r Root) Resolve(rel string) (string, error) {
	res, err := r.resolve(rel)
	if err != nil {
		return "", r.wrap("resolve", rel, err)
	}
	return res, nil
}

// resolve is Resolve with an unwrapped error.
func (r Root) resolve(rel string) (string, error) {
	p, err := r.locate(rel)
	if err != nil {
		return "", err
	}
	fi, err := fs.Lstat(r.tree(), fsPath(p))
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return p, nil
	}
	// The last element is a link: resolve it the long way.
	return r.walk(p)
}

// locate resolves every element of rel but the last, which it does not
// follow: the path of the entry rel names, itself possibly a link.
func (r Root) locate(rel string) (string, error) {
	c := clean(rel)
	dir, base := path.Split(c)
	dir = strings.TrimSuffix(dir, "/")
	if base == "" {
		return "", nil
	}
	rd, ok := r.cache.get(dir)
	if !ok {
		// Start from the nearest ancestor already resolved: a device deep
		// in a PCIe tree then costs the elements below its parent, not
		// its whole path again (a deep chain would be quadratic).
		from, rest := "", dir
		for a := dir; a != "" && a != "."; {
			a = path.Dir(a)
			if ra, ok := r.cache.get(a); ok && a != "." {
				from, rest = ra, strings.TrimPrefix(dir, a+"/")
				break
			}
		}
		var err error
		if rd, err = r.walkFrom(from, rest); err != nil {
			return "", err
		}
		r.cache.put(dir, rd)
	}
	full := join(rd, base)
	r.rec.note(full, noteEntry)
	return full, nil
}

// walk resolves a path one element at a time, following links.
func (r Root) walk(rel string) (string, error) { return r.walkFrom("", rel) }

// walkFrom resolves rel below start, a path already resolved (no links).
func (r Root) walkFrom(start, rel string) (string, error) {
	todo := strings.Split(clean(rel), "/")
	var done []string
	if start != "" {
		done = strings.Split(start, "/")
	}
	hops := 0
	for len(todo) > 0 {
		elem := todo[0]
		todo = todo[1:]
		switch elem {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		cur := join(strings.Join(done, "/"), elem)
		if len(cur) > maxPathBytes {
			return "", syscall.ENAMETOOLONG
		}
		r.rec.note(cur, noteEntry)
		fi, err := fs.Lstat(r.tree(), cur)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && !more(todo) {
				// The final element need not exist; the caller's open
				// reports it.
				return cur, nil
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() && more(todo) {
				return "", syscall.ENOTDIR
			}
			done = append(done, elem)
			continue
		}
		hops++
		if hops > maxLinkHops {
			return "", ErrLinkLoop
		}
		t, err := fs.ReadLink(r.tree(), cur)
		if err != nil {
			return "", err
		}
		t = filepath.ToSlash(t)
		if strings.HasPrefix(t, "/") {
			done = done[:0]
		}
		todo = append(strings.Split(t, "/"), todo...)
	}
	return strings.Join(done, "/"), nil
}

// more reports whether path elements other than "" and "." remain.
func more(todo []string) bool {
	return slices.ContainsFunc(todo, func(e string) bool { return e != "" && e != "." })
}

// wrap names the path in an error. The cause is kept, spelled the same
// whatever tree the root is over: an in-memory tree's fs.ErrNotExist reads
// as the operating system's "no such file or directory".
func (r Root) wrap(op, rel string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch err {
	case fs.ErrNotExist:
		err = syscall.ENOENT
	case fs.ErrInvalid:
		err = syscall.EINVAL
	case fs.ErrPermission:
		err = syscall.EACCES
	}
	return &PathError{Op: op, Path: r.Display(rel), Err: err}
}

// PathError is an error reading one path under the root. It unwraps to the
// underlying cause, so errors.Is(err, fs.ErrNotExist) and
// errors.Is(err, fs.ErrPermission) work.
type PathError struct {
	Op   string
	Path string
	Err  error
}

func (e *PathError) Error() string { return e.Op + " " + e.Path + ": " + e.Err.Error() }
func (e *PathError) Unwrap() error { return e.Err }
