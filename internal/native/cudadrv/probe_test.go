//go:build cgo

package cudadrv_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/native/cudadrv"
	"github.com/gdrcheck/gdrcheck/internal/native/dl"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
)

// steer sets the fake driver's environment: every variable of the fake
// is reset first, so one case's setting does not leak into the next.
func steer(t *testing.T, env map[string]string) string {
	t.Helper()
	log := filepath.Join(t.TempDir(), "calls.log")
	for _, k := range []string{"FAKECU_DEVICES", "FAKECU_VERSION", "FAKECU_MULTICAST", "FAKECU_MC_GRAN", "FAKECU_FAIL", "FAKECU_HANG", "FAKECU_HANG_FILE"} {
		t.Setenv(k, env[k])
	}
	t.Setenv("FAKECU_LOG", log)
	return log
}

// balanced checks, from the fake's own log of calls, that everything the
// probe made was released: every successful create has its release.
func balanced(t *testing.T, log string) {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[2] == "0" {
			n[f[0]]++
		}
	}
	for _, p := range [][2]string{{"cuMemCreate", "cuMemRelease"}, {"cuMulticastCreate", "cuMemRelease(multicast)"},
		{"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease"}, {"cuMulticastBindMem", "cuMulticastUnbind"}} {
		if n[p[0]] != n[p[1]] {
			t.Errorf("%d %s but %d %s: the probe leaked (log %v)", n[p[0]], p[0], n[p[1]], p[1], n)
		}
	}
}

func calls(p *cudadrv.Probe) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.Where())
	}
	return out
}

func TestProbeMulticast(t *testing.T) {
	lib := fakelib.CUDADriver(t)
	cases := []struct {
		name     string
		env      map[string]string
		opts     cudadrv.ProbeOptions
		bound    []int
		bytes    uint64
		gpus     int
		failAt   string // the failed step's Where, "" for none
		result   string // its CUresult name
		message  string // in its Outcome
		noCreate bool   // the probe must stop before cuMulticastCreate
	}{
		{name: "two GPUs bind", env: map[string]string{"FAKECU_DEVICES": "2"}, bound: []int{0, 1}, bytes: 2 << 20, gpus: 2},
		{name: "eight GPUs bind", env: map[string]string{"FAKECU_DEVICES": "8"}, bound: []int{0, 1, 2, 3, 4, 5, 6, 7}, bytes: 2 << 20, gpus: 8},
		{name: "size rounded to both granularities", env: map[string]string{"FAKECU_DEVICES": "2", "FAKECU_MC_GRAN": "6291456"},
			opts: cudadrv.ProbeOptions{Bytes: 1}, bound: []int{0, 1}, bytes: 6 << 20, gpus: 2},
		{name: "chosen devices", env: map[string]string{"FAKECU_DEVICES": "4"}, opts: cudadrv.ProbeOptions{Devices: []int{1, 3}}, bound: []int{1, 3}, bytes: 2 << 20, gpus: 2},
		{name: "attribute 0 stops the probe", env: map[string]string{"FAKECU_DEVICES": "2", "FAKECU_MULTICAST": "1,0"}, bound: []int{}, gpus: 2, noCreate: true},
		{name: "bind not permitted on GPU 1", env: map[string]string{"FAKECU_DEVICES": "2", "FAKECU_FAIL": "cuMulticastBindMem@1=800"},
			bound: []int{0}, bytes: 2 << 20, gpus: 2, failAt: "cuMulticastBindMem on GPU 1", result: "CUDA_ERROR_NOT_PERMITTED", message: "operation not permitted"},
		{name: "bind in the present state (fabric manager down)", env: map[string]string{"FAKECU_DEVICES": "2", "FAKECU_FAIL": "cuMulticastBindMem=401"},
			bound: []int{}, bytes: 2 << 20, gpus: 2, failAt: "cuMulticastBindMem on GPU 0", result: "CUDA_ERROR_ILLEGAL_STATE", message: "the operation cannot be performed in the present state"},
		{name: "create out of memory", env: map[string]string{"FAKECU_DEVICES": "2", "FAKECU_FAIL": "cuMulticastCreate=2"},
			bound: []int{}, bytes: 2 << 20, gpus: 2, failAt: "cuMulticastCreate", result: "CUDA_ERROR_OUT_OF_MEMORY"},
		{name: "add device fails", env: map[string]string{"FAKECU_DEVICES": "2", "FAKECU_FAIL": "cuMulticastAddDevice@1=101"},
			bound: []int{}, bytes: 2 << 20, gpus: 2, failAt: "cuMulticastAddDevice on GPU 1", result: "CUDA_ERROR_INVALID_DEVICE"},
		{name: "no device", env: map[string]string{"FAKECU_DEVICES": "0"}, bound: []int{}, failAt: "cuInit", result: "CUDA_ERROR_NO_DEVICE", noCreate: true},
		{name: "unknown CUresult keeps its number", env: map[string]string{"FAKECU_DEVICES": "1", "FAKECU_FAIL": "cuMemCreate=12345"},
			bound: []int{}, bytes: 2 << 20, gpus: 1, failAt: "cuMemCreate on GPU 0", result: "CUresult(12345)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := steer(t, c.env)
			d, err := cudadrv.Open(lib)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			p, err := d.ProbeMulticast(context.Background(), c.opts)
			if p == nil {
				t.Fatalf("no probe record: %v", err)
			}
			if !slices.Equal(p.Bound, c.bound) || p.Bytes != c.bytes || len(p.GPUs) != c.gpus {
				t.Errorf("bound %v, %d bytes, %d GPUs; want %v, %d, %d\nsteps %q", p.Bound, p.Bytes, len(p.GPUs), c.bound, c.bytes, c.gpus, calls(p))
			}
			f := p.Failed()
			switch {
			case c.failAt == "" && (err != nil || f != nil):
				t.Errorf("err %v, failed step %+v; want none", err, f)
			case c.failAt != "":
				var se *cudadrv.StepError
				if !errors.As(err, &se) || f == nil || f.Where() != c.failAt || f.Result != c.result || !strings.Contains(f.Outcome(), c.message) || se.Step.Where() != c.failAt {
					t.Errorf("err %v, failed step %+v; want %s with %s %q", err, f, c.failAt, c.result, c.message)
				}
			}
			created := slices.ContainsFunc(p.Steps, func(s cudadrv.Step) bool { return s.Call == "cuMulticastCreate" })
			if c.noCreate == created {
				t.Errorf("cuMulticastCreate called: %v; steps %q", created, calls(p))
			}
			if bad := p.TeardownFailed(); len(bad) > 0 {
				t.Errorf("teardown failed: %+v", bad)
			}
			balanced(t, log)
			for _, g := range p.GPUs {
				if g.BusID == "" {
					t.Errorf("GPU %d without a bus id", g.Ordinal)
				}
			}
		})
	}
}

// Every GPU is added before any memory is bound (a bind waits for the
// whole team), and each GPU's memory is bound right after it is made.
func TestProbeOrder(t *testing.T) {
	steer(t, map[string]string{"FAKECU_DEVICES": "3"})
	d, err := cudadrv.Open(fakelib.CUDADriver(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p, err := d.ProbeMulticast(context.Background(), cudadrv.ProbeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := calls(p)
	lastAdd := slices.Index(got, "cuMulticastAddDevice on GPU 2")
	firstBind := slices.Index(got, "cuMulticastBindMem on GPU 0")
	if lastAdd < 0 || firstBind < lastAdd {
		t.Errorf("a bind before every GPU was added: %q", got)
	}
	if p.DriverVersion != "13.0" || p.GPUs[2].BusID != "0000:1A:00.0" || p.GPUs[2].Multicast != 1 {
		t.Errorf("record %+v", p)
	}
}

// A driver before CUDA 12.1 has no multicast calls: the step says so.
func TestProbeOldDriver(t *testing.T) {
	log := steer(t, map[string]string{"FAKECU_DEVICES": "2"})
	d, err := cudadrv.Open(fakelib.CUDADriverOld(t))
	if err != nil {
		t.Fatalf("an old driver must load (the multicast calls are optional): %v", err)
	}
	defer d.Close()
	p, err := d.ProbeMulticast(context.Background(), cudadrv.ProbeOptions{})
	f := p.Failed()
	if err == nil || f == nil || f.Call != "cuMulticastGetGranularity" || !strings.Contains(f.Outcome(), "CUDA 12.1") {
		t.Errorf("err %v, failed %+v", err, f)
	}
	balanced(t, log)
}

func TestOpenErrors(t *testing.T) {
	if _, err := cudadrv.Open(filepath.Join(t.TempDir(), "libcuda.so.1")); !errors.Is(err, dl.ErrNotFound) {
		t.Errorf("missing library: %v", err)
	}
	if _, err := cudadrv.Open(fakelib.NCCL(t)); err == nil || !strings.Contains(err.Error(), "missing entry point cuInit") {
		t.Errorf("not a driver: %v", err)
	}
	steer(t, map[string]string{"FAKECU_DEVICES": "2"})
	d, err := cudadrv.Open(fakelib.CUDADriver(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.ProbeMulticast(context.Background(), cudadrv.ProbeOptions{Devices: []int{0, 5}}); err == nil || !strings.Contains(err.Error(), "GPU 5") {
		t.Errorf("device out of range: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Error(err)
	}
	if _, err := d.ProbeMulticast(context.Background(), cudadrv.ProbeOptions{}); !errors.Is(err, cudadrv.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// A call that does not return becomes an error naming the step and the
// GPU; the driver is not called again (no teardown), and Close says it
// was kept.
func TestProbeHang(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hang")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	steer(t, map[string]string{"FAKECU_DEVICES": "2", "FAKECU_HANG": "cuMulticastBindMem@1", "FAKECU_HANG_FILE": file})
	d, err := cudadrv.Open(fakelib.CUDADriver(t), cudadrv.WithCallTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(file) }) // lets the stuck thread go
	p, err := d.ProbeMulticast(context.Background(), cudadrv.ProbeOptions{})
	f := p.Failed()
	if !errors.Is(err, cudadrv.ErrHung) || f == nil || f.Where() != "cuMulticastBindMem on GPU 1" || f.Result != "" || !strings.Contains(f.Outcome(), "no answer within 300ms") {
		t.Fatalf("err %v, failed %+v", err, f)
	}
	if slices.ContainsFunc(p.Steps, func(s cudadrv.Step) bool { return s.Teardown }) {
		t.Errorf("a wedged driver was called again: %q", calls(p))
	}
	if err := d.Close(); !errors.Is(err, cudadrv.ErrHung) {
		t.Errorf("Close = %v", err)
	}
}

// A probe interrupted mid-call (Ctrl-C while a bind hangs) returns the
// context's error at once; the driver is kept (not called again).
func TestProbeInterrupted(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hang")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	steer(t, map[string]string{"FAKECU_DEVICES": "2", "FAKECU_HANG": "cuMulticastBindMem@0", "FAKECU_HANG_FILE": file})
	d, err := cudadrv.Open(fakelib.CUDADriver(t), cudadrv.WithCallTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(file) })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	p, err := d.ProbeMulticast(ctx, cudadrv.ProbeOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
	if slices.ContainsFunc(p.Steps, func(s cudadrv.Step) bool { return s.Teardown }) {
		t.Errorf("a driver with a call still running was called again: %q", calls(p))
	}
}
