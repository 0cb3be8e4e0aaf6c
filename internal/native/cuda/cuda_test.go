//go:build cgo

package cuda_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/dl"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

func TestFakeRuntime(t *testing.T) {
	path := fakelib.CUDART(t)
	t.Setenv("FAKECUDA_VERSION", "12080")
	t.Setenv("FAKECUDA_DEVICES", "2")
	rt, err := cuda.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	rv, dv, err := rt.Versions(ctx)
	if err != nil || rv != "12.8" || dv != "13.0" {
		t.Errorf("versions = %q %q %v", rv, dv, err)
	}
	n, err := rt.DeviceCount(ctx)
	if err != nil || n != 2 {
		t.Errorf("count = %d, %v", n, err)
	}
	bus, err := rt.PCIBusID(ctx, 1)
	if err != nil || bus != "0000:19:00.0" {
		t.Errorf("bus = %q, %v", bus, err)
	}
	_, err = rt.PCIBusID(ctx, 7)
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Name != "cudaErrorInvalidDevice" || !strings.Contains(err.Error(), "invalid device ordinal") {
		t.Errorf("bad device err = %v", err)
	}
	t.Setenv("FAKECUDA_DEVICES", "0")
	if _, err := rt.DeviceCount(ctx); err == nil || !strings.Contains(err.Error(), "no CUDA-capable device") {
		t.Errorf("no device err = %v", err)
	}
}

func TestMissingRuntimeSaysWhereItLooked(t *testing.T) {
	t.Setenv("CUDA_HOME", t.TempDir())
	t.Setenv("LD_LIBRARY_PATH", "")
	t.Setenv("GDRCHECK_CUDART", "")
	_, err := cuda.Open("")
	if !errors.Is(err, dl.ErrNotFound) {
		t.Skipf("a CUDA runtime is installed here (%v)", err)
	}
	for _, want := range []string{"libcudart.so.13", "libcudart.so.12", "/usr/local/cuda/lib64"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not list %s: %v", want, err)
		}
	}
	// A path the user names is the only one tried.
	named := t.TempDir() + "/libcudart.so.13"
	_, err = cuda.Open(named)
	var nf *dl.NotFoundError
	if !errors.As(err, &nf) || len(nf.Searched) != 1 || !strings.HasPrefix(nf.Searched[0], named) {
		t.Errorf("named path: %v", err)
	}
}

func TestNotACudaRuntime(t *testing.T) {
	_, err := cuda.Open(fakelib.NCCL(t))
	if err == nil || !strings.Contains(err.Error(), "missing entry point") {
		t.Errorf("err = %v", err)
	}
}

func open(t *testing.T, opts ...cuda.Option) *cuda.Runtime {
	t.Helper()
	rt, err := cuda.Open(fakelib.CUDART(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// threads is the number of OS threads of this process.
func threads(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Skip("no thread count")
	return 0
}

// TestCloseReleases: Close ends the worker goroutine and its thread; 20
// runtimes opened and closed leave none behind. Calls after Close fail.
func TestCloseReleases(t *testing.T) {
	path := fakelib.CUDART(t)
	ctx := context.Background()
	g0, t0 := runtime.NumGoroutine(), threads(t)
	for range 20 {
		rt, err := cuda.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.DeviceCount(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
		if err := rt.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := rt.DeviceCount(ctx); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("call after Close: %v", err)
		}
	}
	var g, th int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if g, th = runtime.NumGoroutine(), threads(t); g <= g0 && th <= t0+2 {
			return
		}
	}
	t.Errorf("after 20 Open/Close: %d goroutines (was %d), %d threads (was %d)", g, g0, th, t0)
}

// copySpec is a small device-to-device copy on device 0.
func copySpec(t *testing.T, rt *cuda.Runtime, timeout time.Duration) cuda.CopySpec {
	t.Helper()
	ctx := context.Background()
	src, err := rt.Malloc(ctx, 0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := rt.Malloc(ctx, 0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.StreamCreate(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	return cuda.CopySpec{Dev: 0, Dst: dst, Src: src, Bytes: 4096, Kind: cuda.DeviceToDevice, Stream: s, Iters: 2, Timeout: timeout}
}

// TestWedged: a call that never comes back (the fake's cudaStreamQuery
// blocks while a file exists) is ErrHung after its deadline and the grace;
// the runtime then refuses every call at once, and Close does not wait
// for the stuck thread.
func TestWedged(t *testing.T) {
	wedge := filepath.Join(t.TempDir(), "wedge")
	if err := os.WriteFile(wedge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(wedge) }) // lets the stuck thread go
	rt := open(t, cuda.WithGrace(100*time.Millisecond))
	spec := copySpec(t, rt, 100*time.Millisecond)
	t.Setenv("FAKECUDA_WEDGE", wedge)
	ctx := context.Background()
	start := time.Now()
	_, err := rt.CopyTimed(ctx, spec)
	if !errors.Is(err, cuda.ErrHung) || !strings.Contains(err.Error(), "timed copy: no answer within 200ms") {
		t.Fatalf("wedged copy: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	if _, err := rt.DeviceCount(ctx); !errors.Is(err, cuda.ErrHung) || !strings.Contains(err.Error(), "not attempted: timed copy did not return earlier") {
		t.Errorf("call after the hang: %v", err)
	}
	if err := rt.Close(); !errors.Is(err, cuda.ErrHung) {
		t.Errorf("Close of a wedged runtime: %v", err)
	}
}

// TestCancel: a context that ends while a wait spins raises the cancel
// flag; the wait returns, the runtime is not wedged.
func TestCancel(t *testing.T) {
	rt := open(t)
	spec := copySpec(t, rt, time.Minute)
	t.Setenv("FAKECUDA_HANG", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := rt.CopyTimed(ctx, spec); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled copy: %v", err)
	}
	t.Setenv("FAKECUDA_HANG", "0")
	if _, err := rt.CopyTimed(context.Background(), spec); err != nil {
		t.Errorf("copy after the cancel: %v", err)
	}
}

// TestMemoryKinds: host memory is a Go slice of its allocation's length,
// offsets past an allocation panic, and copies that do not fit or whose
// kind contradicts their memory are refused before any C call.
func TestMemoryKinds(t *testing.T) {
	rt := open(t)
	ctx := context.Background()
	h, err := rt.HostAlloc(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.FreeHost(ctx, h)
	d, err := rt.Malloc(ctx, 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Free(ctx, 0, d)
	if b := h.Bytes(); len(b) != 100 || len(h.Add(40).Bytes()) != 60 || d.Len() != 64 || d.Add(64).Len() != 0 {
		t.Errorf("lengths: host %d, +40 %d, device %d", len(b), len(h.Add(40).Bytes()), d.Len())
	}
	copy(h.Bytes(), "0123456789")
	if err := rt.Memcpy(ctx, 0, d, h, 10); err != nil {
		t.Fatal(err)
	}
	if err := rt.Memcpy(ctx, 0, h.Add(50), d, 10); err != nil || string(h.Bytes()[50:60]) != "0123456789" {
		t.Errorf("round trip: %q, %v", h.Bytes()[50:60], err)
	}
	if err := rt.Memcpy(ctx, 0, d, h, 65); err == nil || !strings.Contains(err.Error(), "do not fit a 64-byte buffer") {
		t.Errorf("oversized copy: %v", err)
	}
	if err := rt.Memset(ctx, 0, d.Add(32), 0, 33); err == nil {
		t.Error("oversized memset accepted")
	}
	spec := cuda.CopySpec{Dst: d, Src: h, Bytes: 8, Kind: cuda.DeviceToHost, Iters: 1, Timeout: time.Second}
	if _, err := rt.CopyTimed(ctx, spec); err == nil || !strings.Contains(err.Error(), "kinds of memory do not match") {
		t.Errorf("wrong kind: %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("offset past the end did not panic")
			}
		}()
		d.Add(65)
	}()
}
