// Package machine is the one door to the machine under test. Every read of
// sysfs, procfs and captured command output goes through a Root, so the same
// code runs on the live host ("/"), on a captured snapshot directory, and on
// fixtures materialised by tests.
package machine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// DefaultMaxRead bounds every attribute read: sysfs attributes are a page at
// most, and a snapshot must never make us slurp a huge file by accident.
const DefaultMaxRead = 4 << 20

// maxLinkHops is the number of symbolic links followed while resolving one
// path before giving up with ErrLinkLoop (Linux uses 40).
const maxLinkHops = 40

// ErrLinkLoop reports a symbolic-link cycle inside the root.
var ErrLinkLoop = errors.New("too many levels of symbolic links")

// Root is a directory that stands for "/" of the host being examined.
// Paths given to its methods are slash-separated and relative to the root
// ("sys/bus/pci/devices"); a leading "/" is accepted and ignored.
type Root struct {
	dir   string
	label string
	rec   *Recorder
	cache *dirCache
}

// dirCache remembers resolved directories: sysfs does not change during a
// run, and resolving every component of every attribute path is most of
// discovery's cost otherwise.
type dirCache struct {
	mu sync.Mutex
	m  map[string]string
}

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

// NewRoot returns a Root for dir ("" or "/" means the live host).
func NewRoot(dir string) Root {
	if dir == "" {
		dir = "/"
	}
	return Root{dir: filepath.Clean(dir), cache: &dirCache{m: map[string]string{}}}
}

// WithRecorder returns a copy of the root that notes every path it reads,
// so a snapshot can capture exactly what the tool looked at.
func (r Root) WithRecorder(rec *Recorder) Root {
	r.rec = rec
	// A fresh cache, so every path this root resolves is seen and noted.
	r.cache = &dirCache{m: map[string]string{}}
	return r
}

// Dir is the directory on this machine that the root maps to.
func (r Root) Dir() string { return r.dir }

// Live reports whether the root is the running host's own "/".
func (r Root) Live() bool { return r.dir == "/" }

// clean normalises a root-relative path.
func clean(rel string) string {
	rel = path.Clean("/" + filepath.ToSlash(rel))
	return strings.TrimPrefix(rel, "/")
}

// Path maps a root-relative path to a path on this machine.
func (r Root) Path(rel string) string {
	return filepath.Join(r.dir, filepath.FromSlash(clean(rel)))
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
	return r.Path(rel)
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
	res, err := r.Resolve(rel)
	if err != nil {
		return nil, err
	}
	r.rec.note(res, noteFile)
	f, err := os.Open(r.Path(res))
	if err != nil {
		return nil, r.wrap("read", rel, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, r.wrap("read", rel, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("read %s: larger than %d bytes", r.Display(rel), max)
	}
	return b, nil
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
	res, err := r.Resolve(rel)
	if err != nil {
		return nil, err
	}
	r.rec.note(res, noteDir)
	ents, err := os.ReadDir(r.Path(res))
	if err != nil {
		return nil, r.wrap("list", rel, err)
	}
	for _, e := range ents {
		r.rec.note(res+"/"+e.Name(), noteEntry)
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

// Readlink returns the raw target of a symbolic link under the root.
func (r Root) Readlink(rel string) (string, error) {
	r.rec.note(clean(rel), noteEntry)
	t, err := os.Readlink(r.Path(rel))
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

// Exists reports whether a path exists under the root (links followed).
func (r Root) Exists(rel string) bool {
	res, err := r.Resolve(rel)
	if err != nil {
		return false
	}
	_, err = os.Stat(r.Path(res))
	return err == nil
}

// Resolve returns the root-relative path that rel names once every symbolic
// link on it is followed. Absolute link targets are taken relative to the
// root, ".." never climbs above the root, and a cycle gives ErrLinkLoop. The
// final element need not exist.
func (r Root) Resolve(rel string) (string, error) {
	c := clean(rel)
	dir, base := path.Split(c)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" || base == "" || base == ".." {
		return r.resolve(c)
	}
	rd, ok := r.cache.get(dir)
	if !ok {
		var err error
		if rd, err = r.resolve(dir); err != nil {
			return "", err
		}
		r.cache.put(dir, rd)
	}
	full := base
	if rd != "" {
		full = rd + "/" + base
	}
	r.rec.note(full, noteEntry)
	fi, err := os.Lstat(r.Path(full))
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return full, nil
	}
	// The last element is a link: resolve it the long way.
	return r.resolve(full)
}

// resolve walks every element of a cleaned path, following links.
func (r Root) resolve(rel string) (string, error) {
	todo := strings.Split(clean(rel), "/")
	var done []string
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
		cur := append(done, elem)
		curRel := strings.Join(cur, "/")
		p := r.Path(curRel)
		r.rec.note(curRel, noteEntry)
		fi, err := os.Lstat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				// Keep what is left unresolved; the caller's open reports it.
				done = append(cur, todo...)
				return strings.Join(done, "/"), nil
			}
			return "", r.wrap("resolve", rel, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = cur
			continue
		}
		hops++
		if hops > maxLinkHops {
			return "", fmt.Errorf("resolve %s: %w", r.Display(rel), ErrLinkLoop)
		}
		t, err := os.Readlink(p)
		if err != nil {
			return "", r.wrap("resolve", rel, err)
		}
		t = filepath.ToSlash(t)
		parts := strings.Split(t, "/")
		if strings.HasPrefix(t, "/") {
			done = nil
		}
		todo = append(parts, todo...)
	}
	return strings.Join(done, "/"), nil
}

func (r Root) wrap(op, rel string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
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
