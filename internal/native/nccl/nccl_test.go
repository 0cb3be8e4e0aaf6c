//go:build cgo

package nccl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

func TestVersionString(t *testing.T) {
	for code, want := range map[int]string{22803: "2.28.3", 21805: "2.18.5", 2804: "2.8.4", 2708: "2.7.8"} {
		if got := nccl.VersionString(code); got != want {
			t.Errorf("VersionString(%d) = %s, want %s", code, got, want)
		}
	}
}

func TestFakeNCCL(t *testing.T) {
	t.Setenv("FAKENCCL_VERSION", "22105")
	l, err := nccl.Open(fakelib.NCCL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	v, code, err := l.Version()
	if err != nil || v != "2.21.5" || code != 22105 {
		t.Errorf("version = %s %d %v", v, code, err)
	}
	if _, err := nccl.Open(fakelib.CUDART(t)); err == nil || !strings.Contains(err.Error(), "missing entry point ncclGetVersion") {
		t.Errorf("opening a non-NCCL library: %v", err)
	}
}

// TestCollNumbersMatchShim: every collective has a shim number; each
// GDR_<NAME> of shim.h's enum is the number CollNumber returns for the
// collective of that name; and shim.c runs every one of them.
func TestCollNumbersMatchShim(t *testing.T) {
	h, err := os.ReadFile("shim.h")
	if err != nil {
		t.Fatal(err)
	}
	c, err := os.ReadFile("shim.c")
	if err != nil {
		t.Fatal(err)
	}
	enum := regexp.MustCompile(`(?m)^\s*GDR_([A-Z][A-Z_]*)\s*=\s*(\d+),`).FindAllStringSubmatch(string(h), -1)
	if len(enum) != len(collective.All()) {
		t.Fatalf("shim.h numbers %d collectives, want %d: %v", len(enum), len(collective.All()), enum)
	}
	seen := map[collective.Collective]bool{}
	for _, e := range enum {
		coll, err := collective.Parse(strings.ToLower(e[1]))
		if err != nil {
			t.Errorf("shim.h GDR_%s: %v", e[1], err)
			continue
		}
		seen[coll] = true
		n, ok := nccl.CollNumber(coll)
		if want, _ := strconv.Atoi(e[2]); !ok || n != want {
			t.Errorf("CollNumber(%s) = %d, %v; shim.h says GDR_%s = %d", coll, n, ok, e[1], want)
		}
		if !strings.Contains(string(c), "case GDR_"+e[1]+":") {
			t.Errorf("shim.c does not run GDR_%s", e[1])
		}
	}
	for _, coll := range collective.All() {
		if _, ok := nccl.CollNumber(coll); !ok || !seen[coll] {
			t.Errorf("%s: no shim number", coll)
		}
	}
	if n, ok := nccl.CollNumber("gossip"); ok {
		t.Errorf("CollNumber(gossip) = %d", n)
	}
}

// comms opens the fake CUDA runtime and NCCL and makes communicators on
// two devices with an all-reduce enqueued: a wait then polls them until
// its stream goes idle.
func comms(t *testing.T, opts ...cuda.Option) (*cuda.Runtime, *nccl.Library, *nccl.Comms) {
	t.Helper()
	t.Setenv("FAKECUDA_DEVICES", "2")
	rt, lib := openLibs(t, opts...)
	ctx := context.Background()
	c, err := lib.InitAll(ctx, rt, []int{0, 1}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Size() {
		send, err := rt.Malloc(ctx, i, 1024)
		if err != nil {
			t.Fatal(err)
		}
		recv, err := rt.Malloc(ctx, i, 1024)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SetBuffers(i, send, recv); err != nil {
			t.Fatal(err)
		}
	}
	op := nccl.Op{Coll: collective.AllReduce, Count: 256, DType: 7, Elt: 4, TotalBytes: 1024, MaxBytes: 1024}
	if err := c.Enqueue(ctx, op, 0, 1); err != nil {
		t.Fatal(err)
	}
	return rt, lib, c
}

// TestAbortWhilePolled: a collective that never finishes is aborted from
// another goroutine while the CUDA thread polls its communicators. The
// thread that polls aborts them (the fake NCCL fails an abort from any
// other thread, and any use after the abort), the wait ends with
// ErrAborted, and the communicators are unusable afterwards.
func TestAbortWhilePolled(t *testing.T) {
	rt, lib, c := comms(t)
	t.Setenv("FAKECUDA_HANG", "1")
	waited := make(chan error, 1)
	go func() { waited <- c.Wait(context.Background(), time.Minute) }()
	time.Sleep(100 * time.Millisecond) // the wait is polling now
	start := time.Now()
	if err := c.Abort(); err != nil {
		t.Errorf("Abort: %v", err)
	}
	select {
	case err := <-waited:
		if !errors.Is(err, nccl.ErrAborted) {
			t.Errorf("wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("abort took %s", d)
	}
	if err := c.Abort(); err != nil {
		t.Errorf("second Abort: %v", err)
	}
	if err := c.Wait(context.Background(), time.Second); !errors.Is(err, nccl.ErrAborted) {
		t.Errorf("wait after abort: %v", err)
	}
	if err := c.Destroy(context.Background()); err != nil {
		t.Errorf("Destroy after Abort: %v", err)
	}
	if err := rt.Close(); err != nil {
		t.Errorf("runtime Close: %v", err)
	}
	if err := lib.Close(); err != nil {
		t.Errorf("library Close: %v", err)
	}
}

// TestAbortWedged: when the CUDA thread is stuck inside a driver call (the
// fake's cudaStreamQuery blocks while a file exists), Abort aborts from a
// goroutine of its own as the last resort, the communicators stay
// unusable, and neither their memory nor the library is released.
func TestAbortWedged(t *testing.T) {
	wedge := filepath.Join(t.TempDir(), "wedge")
	if err := os.WriteFile(wedge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(wedge) })
	_, lib, c := comms(t, cuda.WithGrace(50*time.Millisecond))
	t.Setenv("FAKECUDA_WEDGE", wedge)
	err := c.Wait(context.Background(), 50*time.Millisecond)
	if !errors.Is(err, cuda.ErrHung) {
		t.Fatalf("wait: %v", err)
	}
	err = c.Abort()
	if !errors.Is(err, cuda.ErrHung) || strings.Contains(err.Error(), "ncclCommAbort:") {
		t.Errorf("Abort: %v", err)
	}
	if err := c.Enqueue(context.Background(), nccl.Op{}, 0, 1); !errors.Is(err, nccl.ErrAborted) {
		t.Errorf("enqueue after abort: %v", err)
	}
	if err := lib.Close(); !errors.Is(err, cuda.ErrHung) {
		t.Errorf("library Close with a wedged thread inside: %v", err)
	}
}

// TestRankBounds: ranks are indexed in Go, never past the C array.
func TestRankBounds(t *testing.T) {
	rt, _, c := comms(t)
	if c.Size() != 2 || c.Rank(1) != 1 || c.Device(1) != 1 {
		t.Errorf("size %d, rank %d, device %d", c.Size(), c.Rank(1), c.Device(1))
	}
	d, err := rt.Malloc(context.Background(), 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{-1, 2} {
		if err := c.SetBuffers(i, d, d); err == nil {
			t.Errorf("SetBuffers(%d) accepted", i)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Rank(2) did not panic")
			}
		}()
		c.Rank(2)
	}()
	if err := c.Destroy(context.Background()); err != nil {
		t.Errorf("Destroy: %v", err)
	}
	if err := c.SetBuffers(0, d, d); !errors.Is(err, nccl.ErrAborted) {
		t.Errorf("SetBuffers after Destroy: %v", err)
	}
}

// openLibs opens the fake CUDA runtime and the fake NCCL, both closed at
// the test's end.
func openLibs(t *testing.T, opts ...cuda.Option) (*cuda.Runtime, *nccl.Library) {
	t.Helper()
	rt, err := cuda.Open(fakelib.CUDART(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	lib, err := nccl.Open(fakelib.NCCL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lib.Close() })
	return rt, lib
}
