package analyze_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/analyze"
	"github.com/gdrcheck/gdrcheck/internal/cli"
)

// twoKinds is an NCCL_DEBUG=INFO run of nccl-tests: it is read as two kinds.
const twoKinds = "nccltests/testdata/aws-p5-2node-efa-ofi-gdrdma-full.txt"

func kindsOf(outs []*analyze.Output) []string {
	var k []string
	for _, o := range outs {
		k = append(k, o.Kind)
	}
	return k
}

// fifo makes a named pipe and writes data into it from a goroutine.
func fifo(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = f.Write(data)
	}()
	return p
}

// TestPipesReadOnce is review D12: the input is read once, so a pipe (a
// FIFO, <(cmd), /dev/stdin from a pipe, "-") gives the same outputs as
// the file, both kinds of a two-kind file included.
func TestPipesReadOnce(t *testing.T) {
	p := body(t, twoKinds)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := analyze.FileAll(t.Context(), fifo(t, data))
	if got := kindsOf(outs); err != nil || !slices.Equal(got, []string{"nccl-tests", "nccl-log"}) {
		t.Fatalf("FIFO: kinds %v, %v; want nccl-tests and nccl-log", got, err)
	}
	o, err := analyze.File(t.Context(), fifo(t, data), "nccl-tests")
	if err != nil || o.Kind != "nccl-tests" {
		t.Fatalf("FIFO, --kind nccl-tests: %v", err)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = stdin; r.Close() })
	go func() { _, _ = w.Write(data); w.Close() }()
	outs, err = analyze.FileAll(t.Context(), "-")
	if got := kindsOf(outs); err != nil || !slices.Equal(got, []string{"nccl-tests", "nccl-log"}) || outs[0].File != "-" {
		t.Fatalf("stdin: kinds %v, %v", got, err)
	}
}

// TestSpecialFiles: a directory or a device is refused with a clear
// error, before anything is read: an unreadable input (ReadError), as is
// a file that does not exist.
func TestSpecialFiles(t *testing.T) {
	var ke *analyze.ReadError
	if _, err := analyze.FileAll(t.Context(), t.TempDir()); !errors.As(err, &ke) || !analyze.Unreadable(err) || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
	for _, dev := range []string{"/dev/zero", "/dev/null"} {
		if _, err := os.Stat(dev); err != nil {
			continue
		}
		if _, err := analyze.File(t.Context(), dev, "nccl-log"); !errors.As(err, &ke) || !strings.Contains(err.Error(), "is a device") {
			t.Errorf("%s: %v", dev, err)
		}
	}
	if _, err := analyze.FileAll(t.Context(), "/nonexistent/x"); !analyze.Unreadable(err) || !strings.Contains(err.Error(), "/nonexistent/x") {
		t.Errorf("missing file: %v", err)
	}
	// Read, but not recognised: not an unreadable input.
	empty := filepath.Join(t.TempDir(), "empty.txt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := analyze.FileAll(t.Context(), empty); err == nil || analyze.Unreadable(err) {
		t.Errorf("empty file: %v", err)
	}
}

// zeros is an endless stream of NUL bytes: /dev/zero behind a pipe.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestEndlessBinary is review D13: every reader stops at the first NUL of
// an endless stream without newlines (nccl-log and nccl-tests spun for
// ever).
func TestEndlessBinary(t *testing.T) {
	for _, rd := range analyze.Readers() {
		done := make(chan error, 1)
		go func() { _, err := analyze.Read("zero", zeros{}, rd); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: NUL bytes read without an error", rd.Kind())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still reading an endless stream of NUL bytes after 10 s", rd.Kind())
		}
	}
}

// ncclLines is an endless NCCL log.
type ncclLines struct{ off int }

const ncclLine = "node1:1234:1234 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"

func (l *ncclLines) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], ncclLine[l.off:])
		n += c
		l.off = (l.off + c) % len(ncclLine)
	}
	return n, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestCancel is review D6 for the dispatcher: an endless input (both
// kinds read at once), and a FIFO with no writer, end within a second of
// the context.
func TestCancel(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() { _, _ = io.Copy(w, &ncclLines{}); w.Close() }()
	stdin := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = stdin }()

	noWriter := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(noWriter, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for _, path := range []string{"-", noWriter} {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		_, err := analyze.FileAll(ctx, path)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", path, err)
		}
		if d := time.Since(start); d > 1200*time.Millisecond {
			t.Errorf("%s: stopped %v after the start, 1 s after the cancel at most", path, d)
		}
	}
}

// TestInterruptExit130 is review D6 end to end: SIGINT during `analyze` of
// an endless log ends it within a second with exit status 130.
func TestInterruptExit130(t *testing.T) {
	if os.Getenv("GDRCHECK_ANALYZE_CHILD") == "1" {
		os.Exit(cli.Main([]string{"analyze", "--kind", "nccl-log", "-"}, io.Discard, io.Discard, cli.BuildInfo{Version: "test"}))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInterruptExit130$")
	cmd.Env = append(os.Environ(), "GDRCHECK_ANALYZE_CHILD=1")
	// The child is sent SIGINT once it is reading (more than the pipe's
	// buffer has been taken from the input), not after a fixed sleep: a
	// loaded machine can take longer than that to start it, and a signal
	// before its handler is installed kills it with no exit status.
	fed := &countingReader{r: io.LimitReader(&ncclLines{}, 1<<40)}
	cmd.Stdin = fed
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for start := time.Now(); fed.n.Load() < 4<<20; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatal("the child read nothing for a minute")
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	err := cmd.Wait()
	if d := time.Since(sent); d > time.Second {
		t.Errorf("exited %v after SIGINT, want within a second", d)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want status 130", err)
	}
}

// TestInterruptIdlePipe: SIGINT ends `analyze -` within a second while it
// waits on a pipe that gives no data (a read on the inherited, blocking
// standard input cannot be interrupted).
func TestInterruptIdlePipe(t *testing.T) {
	if os.Getenv("GDRCHECK_ANALYZE_CHILD") == "idle" {
		os.Exit(cli.Main([]string{"analyze", "--kind", "nccl-log", "-"}, io.Discard, io.Discard, cli.BuildInfo{Version: "test"}))
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // the writer stays open and silent
	cmd := exec.Command(os.Args[0], "-test.run=^TestInterruptIdlePipe$")
	cmd.Env = append(os.Environ(), "GDRCHECK_ANALYZE_CHILD=idle")
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer cmd.Process.Kill()
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("analyze - still waiting on its pipe 5 s after SIGINT")
	}
	if d := time.Since(sent); d > time.Second {
		t.Errorf("exited %v after SIGINT, want within a second", d)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want status 130", err)
	}
}
