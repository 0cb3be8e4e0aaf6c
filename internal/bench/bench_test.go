package bench_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench"
	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakelib"
	"github.com/gdrcheck/gdrcheck/internal/testutil/long"
)

// fakes loads the fake CUDA runtime and NCCL (built with gcc), which run
// the real shims and benchmark code with host memory standing for GPUs.
func fakes(t *testing.T, devices string) (*cuda.Runtime, *nccl.Library) {
	t.Helper()
	return fakesWith(t, devices, fakelib.NCCL(t))
}

// fakesWith is fakes with a given fake NCCL (fakelib.NCCL or NCCLOld).
func fakesWith(t *testing.T, devices, ncclPath string) (*cuda.Runtime, *nccl.Library) {
	t.Helper()
	t.Setenv("FAKECUDA_DEVICES", devices)
	rt, err := cuda.Open(fakelib.CUDART(t), cuda.WithCallTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	lib, err := nccl.Open(ncclPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lib.Close(); err != nil {
			t.Error(err)
		}
	})
	return rt, lib
}

func config(t *testing.T, colls []string, dtype, op string, devs []int) bench.NCCLConfig {
	t.Helper()
	var cs []collective.Collective
	for _, n := range colls {
		c, err := collective.Parse(n)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	d, err := bench.DTypeByName(dtype)
	if err != nil {
		t.Fatal(err)
	}
	o, err := bench.RedOpByName(op)
	if err != nil {
		t.Fatal(err)
	}
	return bench.NCCLConfig{Collectives: cs, MinBytes: 1 << 10, MaxBytes: 256 << 10, StepFactor: 4, Warmup: 2, Iters: 3, Check: 1,
		DType: d, Op: o, Devices: devs, OpTimeout: 10 * time.Second}
}

var allColls = []string{"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"}

// TestCollectivesVerify: every collective, on 1 to 4 ranks, over types and
// reductions, computes what the check expects (the fake NCCL really
// reduces, gathers and scatters), with nothing wrong, whichever allocator
// the buffers come from and with an NCCL older than ncclMemAlloc and
// ncclAlltoAll (the shim's send/recv alltoall).
func TestCollectivesVerify(t *testing.T) {
	type verifyCase struct {
		ranks   int
		dtype   string
		op      string
		devs    []int
		old     bool          // NCCL 2.18
		buffers bench.Buffers // "": auto
	}
	cases := []verifyCase{
		{1, "float", "sum", []int{0}, false, ""},
		{2, "float", "sum", []int{0, 1}, false, ""},
		{4, "half", "sum", []int{0, 1, 2, 3}, false, ""},
		{4, "bfloat16", "max", []int{0, 1, 2, 3}, false, ""},
		{3, "int8", "prod", []int{0, 1, 2}, false, bench.BuffersCUDA},
		{4, "double", "avg", []int{0, 1, 2, 3}, false, ""},
		{2, "uint8", "min", []int{0, 1}, false, ""},
		{4, "int64", "sum", []int{0, 1, 2, 3}, false, bench.BuffersNCCL},
		{1, "float", "sum", []int{0}, true, ""},
		{4, "float", "sum", []int{0, 1, 2, 3}, true, ""},
		{3, "int32", "max", []int{0, 1, 2}, true, bench.BuffersCUDA},
	}
	if !long.Enabled() {
		// One case per buffer mode and NCCL generation by default; every
		// type and operation in the long form.
		cases = []verifyCase{cases[1], cases[4], cases[7], cases[9]}
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%s-%s-%d", tc.dtype, tc.op, tc.ranks)
		if tc.old {
			name += "-nccl2.18"
		}
		if tc.buffers != "" {
			name += "-" + string(tc.buffers)
		}
		t.Run(name, func(t *testing.T) {
			path := fakelib.NCCL(t)
			if tc.old {
				path = fakelib.NCCLOld(t)
			}
			rt, lib := fakesWith(t, "4", path)
			cfg := config(t, allColls, tc.dtype, tc.op, tc.devs)
			cfg.Root = tc.ranks - 1
			cfg.Buffers = tc.buffers
			res, err := bench.RunNCCL(context.Background(), rt, lib, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != len(allColls) {
				t.Fatalf("%d results", len(res))
			}
			for _, r := range res {
				if r.Ranks != tc.ranks || len(r.Rows) != 5 {
					t.Errorf("%s: %d ranks, %d rows", r.Collective, r.Ranks, len(r.Rows))
				}
				if r.Wrong != 0 {
					t.Errorf("%s: %d wrong elements\n%s", r.Collective, r.Wrong, table(r))
				}
				for _, row := range r.Rows {
					if row.OutOfPlace == nil || row.OutOfPlace.Wrong == nil || row.OutOfPlace.TimeUS <= 0 || row.OutOfPlace.AlgBW <= 0 {
						t.Errorf("%s %d: out-of-place %+v", r.Collective, row.Bytes, row.OutOfPlace)
					}
					if (r.Collective == "alltoall" || r.Collective == "sendrecv") && row.InPlace.Wrong != nil {
						t.Errorf("%s in-place was checked", r.Collective)
					}
				}
			}
		})
	}
}

// wrong is a half's #wrong, 0 when it was not measured or not checked.
func wrong(m *collective.Measure) int64 {
	if m == nil || m.Wrong == nil {
		return 0
	}
	return *m.Wrong
}

func table(r bench.NCCLResult) string {
	var b strings.Builder
	r.WriteTable(&b)
	return b.String()
}

// TestWrongResultsDetected: a collective that computes a wrong value, and
// an output damaged after the run, both show as #wrong > 0.
func TestWrongResultsDetected(t *testing.T) {
	t.Run("NCCL computes a wrong element", func(t *testing.T) {
		rt, lib := fakes(t, "2")
		t.Setenv("FAKENCCL_CORRUPT", "1")
		res, err := bench.RunNCCL(context.Background(), rt, lib, config(t, []string{"all_reduce", "all_gather", "broadcast"}, "float", "sum", []int{0, 1}))
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 3 {
			t.Fatalf("%d results", len(res))
		}
		for _, r := range res {
			if r.Wrong == 0 {
				t.Errorf("%s: corruption not detected\n%s", r.Collective, table(r))
			}
			if !strings.Contains(r.Footer(), "Out of bounds values : ") || !strings.Contains(r.Footer(), "FAILED") {
				t.Errorf("footer: %s", r.Footer())
			}
		}
	})
	t.Run("output poisoned after the run", func(t *testing.T) {
		rt, lib := fakes(t, "1")
		cfg := config(t, []string{"reduce_scatter", "all_reduce"}, "half", "sum", []int{0})
		cfg.CorruptAfterCheck = true
		res, err := bench.RunNCCL(context.Background(), rt, lib, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 2 {
			t.Fatalf("%d results", len(res))
		}
		for _, r := range res {
			if len(r.Rows) == 0 {
				t.Errorf("%s: no rows", r.Collective)
			}
			for _, row := range r.Rows {
				if wrong(row.OutOfPlace) == 0 || wrong(row.InPlace) == 0 {
					t.Errorf("%s %d: wrong %d/%d", r.Collective, row.Bytes, wrong(row.OutOfPlace), wrong(row.InPlace))
				}
			}
		}
	})
}

// TestWatchdog: GPU work that never finishes becomes an error within the
// deadline, the communicators are aborted, nothing hangs.
func TestWatchdog(t *testing.T) {
	rt, lib := fakes(t, "2")
	t.Setenv("FAKECUDA_HANG", "1")
	cfg := config(t, []string{"all_reduce"}, "float", "sum", []int{0, 1})
	cfg.OpTimeout = 200 * time.Millisecond
	cfg.Check = 0
	start := time.Now()
	_, err := bench.RunNCCL(context.Background(), rt, lib, cfg)
	// The CUDA thread that polled the communicators aborted them (the fake
	// NCCL fails an abort from any other thread).
	if !errors.Is(err, bench.ErrWatchdog) || !strings.Contains(err.Error(), "all_reduce warm-up") || strings.Contains(err.Error(), "abort:") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}

// TestAsyncError: an error a communicator reports while its stream is busy
// ends the wait with NCCL's own message, naming the GPU.
func TestAsyncError(t *testing.T) {
	rt, lib := fakes(t, "2")
	t.Setenv("FAKECUDA_HANG", "1")
	t.Setenv("FAKENCCL_ASYNCERR", "6")
	cfg := config(t, []string{"all_reduce"}, "float", "sum", []int{0, 1})
	cfg.Check = 0
	_, err := bench.RunNCCL(context.Background(), rt, lib, cfg)
	if err == nil || errors.Is(err, bench.ErrWatchdog) || !strings.Contains(err.Error(), "NCCL wait (GPU 0): remote process exited") {
		t.Fatalf("err = %v", err)
	}
}

// TestNCCLErrorExplained: an NCCL error names its ncclResult_t and says
// what it means (collective.ExplainResult), and its result carries the
// code's name as the reason and a remedy; an error that is not NCCL's
// gets no such result.
func TestNCCLErrorExplained(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		devs    []int
		code    string
		meaning string
		remedy  string
	}{
		{"remote error while waiting", map[string]string{"FAKECUDA_HANG": "1", "FAKENCCL_ASYNCERR": "6"}, []int{0, 1},
			"ncclResult 6, ncclRemoteError", "a remote process that exited early", "nic.port"},
		{"CUDA error in ncclMemAlloc", map[string]string{"FAKECUDA_OOM": "1"}, []int{0},
			"ncclResult 1, ncclUnhandledCudaError", "a call to a CUDA function failed", "gpu.health"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, lib := fakes(t, "2")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cfg := config(t, []string{"all_reduce"}, "float", "sum", tc.devs)
			cfg.Check = 0
			_, err := bench.RunNCCL(context.Background(), rt, lib, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.code) || !strings.Contains(err.Error(), tc.meaning) {
				t.Fatalf("err = %v", err)
			}
			rs := bench.NCCLFailed("all_reduce", err)
			name := tc.code[strings.Index(tc.code, ", ")+2:]
			if len(rs) != 1 || rs[0].Status != result.Error || rs[0].Reason != name || rs[0].Subject != "all_reduce" ||
				rs[0].Message != err.Error() || !strings.Contains(rs[0].Remedy, tc.remedy) {
				t.Errorf("result %+v", rs)
			}
		})
	}
	if rs := bench.NCCLFailed("node", fmt.Errorf("wrapped: %w", bench.ErrWatchdog)); rs != nil {
		t.Errorf("a watchdog abort explained as an NCCL error: %+v", rs)
	}
}

func TestInterrupt(t *testing.T) {
	rt, lib := fakes(t, "1")
	t.Setenv("FAKECUDA_HANG", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	cfg := config(t, []string{"all_reduce"}, "float", "sum", []int{0})
	cfg.Check = 0
	_, err := bench.RunNCCL(ctx, rt, lib, cfg)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err = %v", err)
	}
}

func TestDeviceProblems(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		code      int
		msg       string
	}{
		{"busy", "FAKECUDA_BUSY", cuda.ErrCodeDevicesBusy, "busy or unavailable"},
		{"out of memory", "FAKECUDA_OOM", cuda.ErrCodeMemoryAllocation, "out of memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, lib := fakes(t, "1")
			t.Setenv(tc.env, "1")
			cfg := config(t, []string{"all_reduce"}, "float", "sum", []int{0})
			cfg.Buffers = bench.BuffersCUDA
			_, err := bench.RunNCCL(context.Background(), rt, lib, cfg)
			if !cuda.IsCode(err, tc.code) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v", err)
			}
		})
	}
	t.Run("out of memory in ncclMemAlloc", func(t *testing.T) {
		rt, lib := fakes(t, "1")
		t.Setenv("FAKECUDA_OOM", "1")
		_, err := bench.RunNCCL(context.Background(), rt, lib, config(t, []string{"all_reduce"}, "float", "sum", []int{0}))
		var ne *nccl.Error
		if !errors.As(err, &ne) || ne.Code != 1 || !strings.Contains(err.Error(), "ncclMemAlloc") || !strings.Contains(err.Error(), "out of memory") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("little memory shrinks the largest size", func(t *testing.T) {
		rt, lib := fakes(t, "1")
		t.Setenv("FAKECUDA_MEM", "524288")
		var notes []string
		cfg := config(t, []string{"all_reduce"}, "float", "sum", []int{0})
		cfg.OnNote = func(s string) { notes = append(notes, s) }
		res, err := bench.RunNCCL(context.Background(), rt, lib, cfg)
		if err != nil {
			t.Fatal(err)
		}
		last := res[0].Rows[len(res[0].Rows)-1].Bytes
		if len(notes) != 1 || !strings.Contains(notes[0], "Reducing maxBytes") || last >= 256<<10 {
			t.Errorf("notes %v, largest size %d", notes, last)
		}
	})
}

// TestResolveBuffers: auto takes ncclMemAlloc where NCCL has it; asking
// for it from an NCCL without it is an error that says so.
func TestResolveBuffers(t *testing.T) {
	for _, tc := range []struct {
		choice string
		old    bool
		want   bench.Buffers
		err    string
	}{
		{"auto", false, bench.BuffersNCCL, ""},
		{"", false, bench.BuffersNCCL, ""},
		{"auto", true, bench.BuffersCUDA, ""},
		{"nccl", false, bench.BuffersNCCL, ""},
		{"nccl", true, "", "NCCL 2.18.5 at "},
		{"cuda", false, bench.BuffersCUDA, ""},
		{"cuda", true, bench.BuffersCUDA, ""},
		{"cudaMalloc", false, bench.BuffersCUDA, ""},
		{"managed", false, "", `buffers "managed": want auto, nccl or cuda`},
	} {
		t.Run(fmt.Sprintf("%s-old=%v", tc.choice, tc.old), func(t *testing.T) {
			path := fakelib.NCCL(t)
			if tc.old {
				path = fakelib.NCCLOld(t)
			}
			_, lib := fakesWith(t, "1", path)
			got, err := bench.ResolveBuffers(tc.choice, lib)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestCopy(t *testing.T) {
	rt, _ := fakes(t, "2")
	cfg := bench.CopyConfig{Devices: []int{0, 1}, Bytes: 3 << 20, Iters: 2, Warmup: 1, LatencyIters: 10,
		Tests:     []string{bench.CopyD2D, bench.CopyH2DPinned, bench.CopyD2HPinned, bench.CopyBidirPinned, bench.CopyH2DPageable, bench.CopyD2HPageable, bench.CopyP2P, bench.CopyP2PBidir, bench.CopyLatency},
		LocalCPUs: func(int) []int { return []int{0} }}
	res, err := bench.RunCopy(context.Background(), rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 6 single tests + latency per device, 2 p2p tests + latency per ordered pair
	if len(res) != 2*7+2*3 {
		t.Errorf("%d results", len(res))
	}
	for _, r := range res {
		if !r.Valid || r.Error != "" || r.US <= 0 {
			t.Errorf("%+v", r)
		}
		if r.Test == bench.CopyD2D && r.ReadWriteGBps != 2*r.GBps {
			t.Errorf("d2d read+write %v vs %v", r.ReadWriteGBps, r.GBps)
		}
		if (r.Test == bench.CopyP2P || r.Test == bench.CopyP2PBidir) && !r.Peered {
			t.Errorf("%s %d->%d not peered", r.Test, r.Dev, r.Peer)
		}
	}
	cfg.Corrupt = true
	cfg.Tests = []string{bench.CopyD2D, bench.CopyD2HPinned, bench.CopyP2P, bench.CopyLatency}
	res, err = bench.RunCopy(context.Background(), rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// d2d, d2h and latency per device, p2p and latency per ordered pair
	if len(res) != 2*3+2*2 {
		t.Errorf("%d corrupted results", len(res))
	}
	for _, r := range res {
		if r.Valid || r.Wrong == 0 {
			t.Errorf("corrupted %s not caught: %+v", r.Test, r)
		}
	}
}
