package machine

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

func TestResolveStaysInsideRoot(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "sys/devices/pci0000:00/0000:00:01.0"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "sys/devices/pci0000:00/0000:00:01.0/class"), []byte("0x030200\n"), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "sys/bus/pci/devices"), 0o755))
	// relative link, as sysfs writes them
	must(os.Symlink("../../../devices/pci0000:00/0000:00:01.0", filepath.Join(dir, "sys/bus/pci/devices/0000:00:01.0")))
	// absolute link: must be taken relative to the root, never the live /
	must(os.Symlink("/sys/devices/pci0000:00/0000:00:01.0", filepath.Join(dir, "sys/abs")))
	// climbing above the root is clamped at the root
	must(os.Symlink("../../../../../../sys/devices", filepath.Join(dir, "sys/up")))
	must(os.Symlink("loop2", filepath.Join(dir, "sys/loop1")))
	must(os.Symlink("loop1", filepath.Join(dir, "sys/loop2")))
	r := NewRoot(dir)
	cases := []struct {
		in, want string
		err      error
	}{
		{"sys/bus/pci/devices/0000:00:01.0/class", "sys/devices/pci0000:00/0000:00:01.0/class", nil},
		{"/sys/abs/class", "sys/devices/pci0000:00/0000:00:01.0/class", nil},
		{"sys/up/pci0000:00", "sys/devices/pci0000:00", nil},
		{"sys/loop1/x", "", ErrLinkLoop},
		{"sys/missing/file", "sys/missing/file", nil},
	}
	for _, c := range cases {
		got, err := r.Resolve(c.in)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("Resolve(%q) err = %v, want %v", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	s, err := r.ReadString("/sys/abs/class")
	if err != nil || s != "0x030200" {
		t.Errorf("ReadString through absolute link = %q, %v", s, err)
	}
	_, err = r.ReadFile("sys/nothing")
	var pe *PathError
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), dir) {
		t.Errorf("missing file error = %v", err)
	}
	must(os.WriteFile(filepath.Join(dir, "big"), make([]byte, 100), 0o644))
	if _, err := r.ReadFileLimit("big", 10); err == nil || !strings.Contains(err.Error(), "larger than 10 bytes") {
		t.Errorf("oversized read: %v", err)
	}
}

func TestRecorderNotesEveryTouchedPath(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a/b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a/b/f"), []byte("x"), 0o644)
	os.Symlink("b", filepath.Join(dir, "a/l"))
	rec := NewRecorder()
	r := NewRoot(dir).WithRecorder(rec)
	if _, err := r.ReadFile("a/l/f"); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range rec.Entries() {
		paths = append(paths, e.Path)
	}
	got := strings.Join(paths, ",")
	for _, want := range []string{"a", "a/l", "a/b", "a/b/f"} {
		if !strings.Contains(","+got+",", ","+want+",") {
			t.Errorf("recorded %s, missing %s", got, want)
		}
	}
}

func TestRunReplayAndDeadline(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, CommandsDir), 0o755)
	os.WriteFile(filepath.Join(dir, CommandsDir, CmdUlimit.Key), []byte("max locked memory (kbytes, -l) unlimited\n"), 0o644)
	r := NewRoot(dir)
	b, err := r.Run(context.Background(), CmdUlimit)
	if err != nil || !strings.Contains(string(b), "unlimited") {
		t.Errorf("replayed command = %q, %v", b, err)
	}
	if _, err := r.Run(context.Background(), CmdNvidiaSMITopo); !errors.Is(err, ErrNotCaptured) {
		t.Errorf("missing capture err = %v", err)
	}
	start := time.Now()
	_, err = RunLive(context.Background(), Command{Name: "sh", Args: []string{"-c", "sleep 30"}, Timeout: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no answer within 100ms") || time.Since(start) > 5*time.Second {
		t.Errorf("hung command: %v after %s", err, time.Since(start))
	}
	_, err = RunLive(context.Background(), Command{Name: "sh", Args: []string{"-c", "echo oops >&2; exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "oops") {
		t.Errorf("failing command: %v", err)
	}
	_, err = RunLive(context.Background(), Command{Name: "gdrcheck-no-such-tool"})
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing tool: %v", err)
	}
}

// escapeTree is a root whose links try every way out of it. outside is a
// directory of the analysing machine, next to the root, holding what must
// never be read: a file "secret" and a link "driver" to "HOSTDRIVER".
func escapeTree(outside string) fstest.MapFS {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s), Mode: 0o644} }
	link := func(t string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(t), Mode: fs.ModeSymlink | 0o777} }
	return fstest.MapFS{
		"sys/devices/dev/class":  file("inside\n"),
		"sys/devices/dev/driver": link("../../bus/drivers/good"),
		"sys/bus/drivers/good":   &fstest.MapFile{Mode: fs.ModeDir | 0o755},
		// An absolute link inside the snapshot means the snapshot's own path.
		"sys/abs": link("/sys/devices/dev"),
		// An absolute link to a directory of the analysing machine.
		"sys/host": link(outside),
		// A relative link that climbs out of the root to the same place.
		"sys/up": link("../../outside"),
		// evil leads out; the links below reach it through a missing
		// element or a file followed by "..".
		"evil":        link(outside),
		"sys/missing": link("nonexistent/../../evil"),
		"sys/notdir":  link("devices/dev/class/../../../evil"),
		"sys/loop1":   link("loop2"),
		"sys/loop2":   link("loop1"),
		// The reading process's own /proc.
		"sys/self": link("/proc/self"),
	}
}

// escapeRoots builds escapeTree as a directory (read through os.Root) and
// in memory.
func escapeRoots(t *testing.T) map[string]Root {
	t.Helper()
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("HOST\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("HOSTDRIVER", filepath.Join(outside, "driver")); err != nil {
		t.Fatal(err)
	}
	tree := escapeTree(outside)
	dir := filepath.Join(base, "root")
	if err := os.CopyFS(dir, tree); err != nil {
		t.Fatal(err)
	}
	return map[string]Root{"dir": NewRoot(dir), "memory": NewRootFS(tree, "snap")}
}

// TestReadsNeverLeaveTheRoot: whatever shape a link takes, reads, link
// reads, listings and existence checks see only the root.
func TestReadsNeverLeaveTheRoot(t *testing.T) {
	for name, r := range escapeRoots(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if s, err := r.ReadString("sys/abs/class"); err != nil || s != "inside" {
				t.Errorf("absolute link inside the root: %q, %v", s, err)
			}
			if d, err := r.LinkBase("sys/abs/driver"); err != nil || d != "good" {
				t.Errorf("LinkBase through an absolute link inside the root: %q, %v", d, err)
			}
			for _, via := range []string{"sys/host", "sys/up", "sys/missing", "sys/notdir", "nonexistent/../../../evil", "evil", "sys/self/cwd/outside"} {
				if b, err := r.ReadFile(via + "/secret"); err == nil {
					t.Errorf("ReadFile(%s/secret) read %q from outside the root", via, b)
				}
				if d, err := r.LinkBase(via + "/driver"); err == nil {
					t.Errorf("LinkBase(%s/driver) = %q from outside the root", via, d)
				}
				if d, err := r.Readlink(via + "/driver"); err == nil {
					t.Errorf("Readlink(%s/driver) = %q from outside the root", via, d)
				}
				if n, _ := r.Names(via); len(n) != 0 {
					t.Errorf("Names(%s) = %v from outside the root", via, n)
				}
				if r.Exists(via + "/secret") {
					t.Errorf("Exists(%s/secret) saw a file outside the root", via)
				}
				if fi, err := r.Lstat(via + "/driver"); err == nil {
					t.Errorf("Lstat(%s/driver) = %v from outside the root", via, fi.Mode())
				}
			}
			// A missing element or a file before "..": the path names
			// nothing, as the kernel would say.
			if _, err := r.Resolve("sys/missing/secret"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("link through a missing element: %v", err)
			}
			if _, err := r.Resolve("sys/notdir/secret"); !errors.Is(err, syscall.ENOTDIR) {
				t.Errorf("link through a file: %v", err)
			}
			// Loops end in ErrLinkLoop; the link itself still reads.
			if _, err := r.ReadFile("sys/loop1/x"); !errors.Is(err, ErrLinkLoop) {
				t.Errorf("loop: ReadFile err = %v", err)
			}
			if _, err := r.LinkBase("sys/loop1/driver"); !errors.Is(err, ErrLinkLoop) {
				t.Errorf("loop: LinkBase err = %v", err)
			}
			if n, err := r.Names("sys/loop1"); n != nil || !errors.Is(err, ErrLinkLoop) {
				t.Errorf("loop: Names = %v, %v", n, err)
			}
			if r.Exists("sys/loop1") {
				t.Error("loop: Exists")
			}
			if l, err := r.Readlink("sys/loop1"); err != nil || l != "loop2" {
				t.Errorf("Readlink of the loop's first link = %q, %v", l, err)
			}
			// /proc/self means the snapshot's, which has none.
			if b, err := r.ReadFile("sys/self/status"); err == nil {
				t.Errorf("read this process's /proc/self/status: %q", b)
			}
			if d, err := r.LinkBase("sys/self/exe"); err == nil {
				t.Errorf("LinkBase(sys/self/exe) = %q: this process's executable", d)
			}
			if n, _ := r.Names("sys/self/fd"); len(n) != 0 {
				t.Errorf("Names(sys/self/fd) = %v: this process's descriptors", n)
			}
			if r.Exists("sys/self") {
				t.Error("Exists(sys/self) followed the link to this process")
			}
		})
	}
}

// TestLiveRoot: the live root "/" reads this machine, /proc/self included.
func TestLiveRoot(t *testing.T) {
	r := NewRoot("/")
	if !r.Live() || r.Display("proc/self/status") != "/proc/self/status" {
		t.Errorf("live root: Live %v, Display %q", r.Live(), r.Display("proc/self/status"))
	}
	if s, err := r.ReadString("proc/self/status"); err != nil || !strings.Contains(s, "Pid:") {
		t.Errorf("ReadString(proc/self/status) = %.40q, %v", s, err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if d, err := r.LinkBase("proc/self/exe"); err != nil || d != filepath.Base(exe) {
		t.Errorf("LinkBase(proc/self/exe) = %q, %v; want %q", d, err, filepath.Base(exe))
	}
	if n, err := r.Names("proc/self/fd"); err != nil || len(n) == 0 {
		t.Errorf("Names(proc/self/fd) = %v, %v", n, err)
	}
	if !r.Exists("proc/self/status") || r.Exists("proc/self/no-such-file") {
		t.Error("Exists on the live root")
	}
}

func TestZeroRootReadsNothing(t *testing.T) {
	var r Root
	if _, err := r.ReadFile("etc/hostname"); err == nil {
		t.Error("the zero Root read a file")
	}
	if n, err := r.Names("."); n != nil || err == nil {
		t.Errorf("the zero Root listed %v, %v", n, err)
	}
}

// TestSpecialFilesAreNeverOpened (review D9, row 48): a named pipe where an
// attribute or a captured output should be, or as a directory to list,
// is refused at once with a message naming the path; opening it would
// block forever. Device nodes and sockets are refused the same way.
func TestSpecialFilesAreNeverOpened(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "sys/devices/pci0000:15/0000:18:00.0")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, CommandsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dev + "/vendor", filepath.Join(dir, CommandsDir, "nvml.json"), filepath.Join(dir, "sys/class")} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A link to the pipe is refused too.
	if err := os.Symlink("devices/pci0000:15/0000:18:00.0/vendor", filepath.Join(dir, "sys/vendor-link")); err != nil {
		t.Fatal(err)
	}
	mem := fstest.MapFS{
		"sys/devices/pci0000:15/0000:18:00.0/vendor": &fstest.MapFile{Mode: fs.ModeNamedPipe | 0o644},
		"commands/nvml.json":                         &fstest.MapFile{Mode: fs.ModeSocket | 0o644},
		"sys/vendor-link":                            &fstest.MapFile{Data: []byte("devices/pci0000:15/0000:18:00.0/vendor"), Mode: fs.ModeSymlink},
		"dev/null":                                   &fstest.MapFile{Mode: fs.ModeDevice | fs.ModeCharDevice | 0o666},
	}
	for name, r := range map[string]Root{"dir": NewRoot(dir), "memory": NewRootFS(mem, "snap")} {
		t.Run(name, func(t *testing.T) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				for _, p := range []string{"sys/devices/pci0000:15/0000:18:00.0/vendor", "sys/vendor-link", CommandsDir + "/nvml.json", "dev/null"} {
					_, err := r.ReadFile(p)
					if name == "dir" && p == "dev/null" {
						continue
					}
					if !errors.Is(err, ErrSpecialFile) || !strings.Contains(err.Error(), p) {
						t.Errorf("ReadFile(%s) err = %v, want ErrSpecialFile naming the path", p, err)
					}
				}
				if name == "dir" {
					if _, err := r.ReadDir("sys/class"); !errors.Is(err, ErrSpecialFile) || !strings.Contains(err.Error(), "named pipe") {
						t.Errorf("ReadDir of a pipe err = %v", err)
					}
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("a read of a special file blocked")
			}
		})
	}
}

// blockingFS is a tree whose files block on read until release closes.
type blockingFS struct {
	fstest.MapFS
	release chan struct{}
}

func (b blockingFS) Open(name string) (fs.File, error) {
	<-b.release
	return b.MapFS.Open(name)
}

// TestContextBoundsReads (review D9, rows 48 and 131): a root given a
// context fails every read once it is done, and a read of the live host
// that blocks (here a tree standing for it) returns when the context ends
// instead of hanging.
func TestContextBoundsReads(t *testing.T) {
	tree := blockingFS{MapFS: fstest.MapFS{"sys/x": &fstest.MapFile{Data: []byte("1\n")}, "sys/d/y": &fstest.MapFile{}}, release: make(chan struct{})}
	defer close(tree.release)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r := Root{fsys: tree, dir: "/", cache: newDirCache()}.WithContext(ctx)
	start := time.Now()
	if _, err := r.ReadFile("sys/x"); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "/sys/x") {
		t.Errorf("blocked read: %v", err)
	}
	if _, err := r.ReadDir("sys/d"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("blocked listing: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("blocked reads returned after %s", d)
	}
	// Once the context is done, nothing is read at all.
	done, stop := context.WithCancel(context.Background())
	stop()
	open := NewRootFS(fstest.MapFS{"sys/x": &fstest.MapFile{Data: []byte("1\n")}}, "snap")
	if _, err := open.WithContext(done).ReadFile("sys/x"); !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v", err)
	}
	if s, err := open.WithContext(context.Background()).ReadString("sys/x"); err != nil || s != "1" {
		t.Errorf("read with a live context: %q, %v", s, err)
	}
}
