package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
)

// Copy test names.
const (
	CopyD2D         = "d2d"          // device memory to device memory on one GPU
	CopyH2DPinned   = "h2d_pinned"   // pinned host memory to the GPU
	CopyD2HPinned   = "d2h_pinned"   // the GPU to pinned host memory
	CopyBidirPinned = "bidir_pinned" // both directions at once
	CopyH2DPageable = "h2d_pageable" // pageable (malloc'ed) host memory
	CopyD2HPageable = "d2h_pageable"
	CopyP2P         = "p2p"       // GPU to GPU, one direction
	CopyP2PBidir    = "p2p_bidir" // GPU to GPU, both directions at once
	CopyLatency     = "latency"   // small-copy latency
)

// CopyConfig is what `gdrcheck bench copy` runs.
type CopyConfig struct {
	Devices []int
	Bytes   uint64 // per copy
	Iters   int
	Warmup  int
	Tests   []string
	Timeout time.Duration
	// LocalCPUs gives a device's NUMA-local CPUs: host buffers are
	// allocated from a thread bound to them (nil: no binding).
	LocalCPUs func(dev int) []int
	// LatencyIters is the number of small copies averaged for latency.
	LatencyIters int
	// Corrupt damages a destination before validation (proof that the
	// validation catches bad data).
	Corrupt bool
}

// CopyResult is one measured copy.
type CopyResult struct {
	Test  string  `json:"test"`
	Dev   int     `json:"device"`
	Peer  int     `json:"peer"` // -1 unless p2p
	Bytes uint64  `json:"bytes"`
	Iters int     `json:"iters"`
	US    float64 `json:"time_us"` // per copy
	// GBps is bytes moved per second in the copy's direction(s): one-way
	// for a copy, both directions summed for bidir; ReadWriteGBps counts
	// the bytes read and written (device copies: 2x).
	GBps          float64 `json:"gbps"`
	ReadWriteGBps float64 `json:"read_write_gbps,omitempty"`
	Valid         bool    `json:"valid"`
	Wrong         int64   `json:"wrong_bytes"`
	Peered        bool    `json:"peer_access,omitempty"`
	NUMABound     bool    `json:"numa_bound,omitempty"`
	Note          string  `json:"note,omitempty"`
	Error         string  `json:"error,omitempty"`
}

// copyRun is one RunCopy: the runtime and the configuration.
type copyRun struct {
	rt  *cuda.Runtime
	cfg CopyConfig
}

// RunCopy runs the configured copy tests, device by device and pair by pair.
func RunCopy(ctx context.Context, rt *cuda.Runtime, cfg CopyConfig) ([]CopyResult, error) {
	if cfg.Iters < 1 {
		cfg.Iters = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	if cfg.LatencyIters <= 0 {
		cfg.LatencyIters = 1000
	}
	c := &copyRun{rt: rt, cfg: cfg}
	want := map[string]bool{}
	for _, t := range cfg.Tests {
		want[t] = true
	}
	var out []CopyResult
	for _, d := range cfg.Devices {
		for _, t := range []string{CopyD2D, CopyH2DPinned, CopyD2HPinned, CopyBidirPinned, CopyH2DPageable, CopyD2HPageable} {
			if !want[t] {
				continue
			}
			r, err := c.single(ctx, t, d)
			out = append(out, r)
			if err != nil {
				return out, err
			}
		}
		if want[CopyLatency] {
			r, err := c.latency(ctx, d, -1)
			out = append(out, r)
			if err != nil {
				return out, err
			}
		}
	}
	if want[CopyP2P] || want[CopyP2PBidir] || want[CopyLatency] {
		for _, a := range cfg.Devices {
			for _, b := range cfg.Devices {
				if a == b {
					continue
				}
				for _, t := range []string{CopyP2P, CopyP2PBidir} {
					if !want[t] {
						continue
					}
					r, err := c.peer(ctx, t, a, b)
					out = append(out, r)
					if err != nil {
						return out, err
					}
				}
				if want[CopyLatency] {
					r, err := c.latency(ctx, a, b)
					out = append(out, r)
					if err != nil {
						return out, err
					}
				}
			}
		}
	}
	return out, nil
}

// bind pins the runtime's thread to dev's local CPUs.
func (c *copyRun) bind(ctx context.Context, dev int) bool {
	if c.cfg.LocalCPUs == nil {
		return false
	}
	cpus := c.cfg.LocalCPUs(dev)
	if len(cpus) == 0 {
		return false
	}
	return c.rt.PinThread(ctx, cpus) == nil
}

func (c *copyRun) unbind(ctx context.Context) { _ = c.rt.PinThread(ctx, nil) }

// pattern byte of position i of a copy source (not periodic in powers of two).
func copyByte(i uint64, salt byte) byte { return byte(mix(i)) ^ salt }

// fillHost writes the pattern into host memory.
func fillHost(b []byte, salt byte) {
	parallel(uint64(len(b)), func(lo, hi uint64) {
		for i := lo; i < hi; i++ {
			b[i] = copyByte(i, salt)
		}
	})
}

// checkHost counts bytes that differ from the pattern.
func checkHost(b []byte, salt byte) int64 { return countWrong(b, 0, salt) }

// countWrong counts bytes of b that differ from the pattern at offsets
// first, first+1, ...
func countWrong(b []byte, first uint64, salt byte) int64 {
	var total atomic.Int64
	parallel(uint64(len(b)), func(lo, hi uint64) {
		var w int64
		for i := lo; i < hi; i++ {
			if b[i] != copyByte(first+i, salt) {
				w++
			}
		}
		total.Add(w)
	})
	return total.Load()
}

// devFill puts the pattern into device memory through a pinned staging buffer.
func (c *copyRun) devFill(ctx context.Context, dev int, p cuda.DevPtr, n uint64, salt byte, stage cuda.HostPtr) error {
	for off := uint64(0); off < n; off += stage.Len() {
		k := min(stage.Len(), n-off)
		b := stage.Bytes()[:k]
		parallel(k, func(lo, hi uint64) {
			for i := lo; i < hi; i++ {
				b[i] = copyByte(off+i, salt)
			}
		})
		if err := c.rt.Memcpy(ctx, dev, p.Add(off), stage, k); err != nil {
			return err
		}
	}
	return nil
}

// filledDev allocates n bytes of device memory and puts the pattern of
// salt into them.
func (c *copyRun) filledDev(ctx context.Context, rs *resources, dev int, n uint64, salt byte, stage cuda.HostPtr) (cuda.DevPtr, error) {
	p, err := rs.dev(ctx, dev, n)
	if err != nil {
		return p, err
	}
	return p, c.devFill(ctx, dev, p, n, salt, stage)
}

// checkDst validates a copy's device destination, damaging it first when
// the configuration asks for it (see corrupt).
func (c *copyRun) checkDst(ctx context.Context, dev int, p cuda.DevPtr, n uint64, salt byte, stage cuda.HostPtr) (int64, error) {
	if err := c.corrupt(ctx, dev, p, n); err != nil {
		return 0, err
	}
	return c.devCheck(ctx, dev, p, n, salt, stage)
}

// devCheck counts device bytes that differ from the pattern.
func (c *copyRun) devCheck(ctx context.Context, dev int, p cuda.DevPtr, n uint64, salt byte, stage cuda.HostPtr) (int64, error) {
	var wrong int64
	for off := uint64(0); off < n; off += stage.Len() {
		k := min(stage.Len(), n-off)
		if err := c.rt.Memcpy(ctx, dev, stage, p.Add(off), k); err != nil {
			return wrong, err
		}
		wrong += countWrong(stage.Bytes()[:k], off, salt)
	}
	return wrong, nil
}

type resources struct {
	rt   *cuda.Runtime
	free []func()
}

func (r *resources) dev(ctx context.Context, dev int, n uint64) (cuda.DevPtr, error) {
	p, err := r.rt.Malloc(ctx, dev, n)
	if err == nil {
		r.free = append(r.free, func() { _ = r.rt.Free(context.Background(), dev, p) })
	}
	return p, err
}

func (r *resources) pinned(ctx context.Context, dev int, n uint64) (cuda.HostPtr, error) {
	p, err := r.rt.HostAlloc(ctx, dev, n)
	if err == nil {
		r.free = append(r.free, func() { _ = r.rt.FreeHost(context.Background(), p) })
	}
	return p, err
}

func (r *resources) pageable(ctx context.Context, n uint64) (cuda.HostPtr, error) {
	p, err := r.rt.PageableAlloc(ctx, n)
	if err == nil {
		r.free = append(r.free, func() { r.rt.PageableFree(p) })
	}
	return p, err
}

// host allocates the host side of a copy: pageable or pinned memory.
func (r *resources) host(ctx context.Context, dev int, n uint64, pageable bool) (cuda.HostPtr, error) {
	if pageable {
		return r.pageable(ctx, n)
	}
	return r.pinned(ctx, dev, n)
}

func (r *resources) stream(ctx context.Context, dev int) (cuda.Stream, error) {
	s, err := r.rt.StreamCreate(ctx, dev)
	if err == nil {
		r.free = append(r.free, func() { _ = r.rt.StreamDestroy(context.Background(), dev, s) })
	}
	return s, err
}

func (r *resources) release() {
	for i := len(r.free) - 1; i >= 0; i-- {
		r.free[i]()
	}
}

const copyStage = 64 << 20

// single runs one of the single-GPU copy tests.
func (c *copyRun) single(ctx context.Context, test string, dev int) (CopyResult, error) {
	res := CopyResult{Test: test, Dev: dev, Peer: -1, Bytes: c.cfg.Bytes, Iters: c.cfg.Iters}
	rs := &resources{rt: c.rt}
	defer rs.release()
	defer c.unbind(context.WithoutCancel(ctx))
	res.NUMABound = c.bind(ctx, dev)
	n := c.cfg.Bytes
	stage, err := rs.pinned(ctx, dev, copyStage)
	if err != nil {
		return c.fail(res, err)
	}
	s1, err := rs.stream(ctx, dev)
	if err != nil {
		return c.fail(res, err)
	}
	spec := cuda.CopySpec{Dev: dev, Bytes: n, Stream: s1, Timeout: c.cfg.Timeout}
	var check func() (int64, error)
	const salt = 0x3c
	if test == CopyH2DPageable || test == CopyD2HPageable {
		res.Note = "pageable memory: the driver stages it through its own pinned buffers"
	}
	switch test {
	case CopyD2D:
		src, err := c.filledDev(ctx, rs, dev, n, salt, stage)
		if err != nil {
			return c.fail(res, err)
		}
		dst, err := rs.dev(ctx, dev, n)
		if err != nil {
			return c.fail(res, err)
		}
		spec.Src, spec.Dst, spec.Kind = src, dst, cuda.DeviceToDevice
		check = func() (int64, error) { return c.checkDst(ctx, dev, dst, n, salt, stage) }
	case CopyH2DPinned, CopyH2DPageable, CopyBidirPinned:
		host, err := rs.host(ctx, dev, n, test == CopyH2DPageable)
		if err != nil {
			return c.fail(res, err)
		}
		dst, err := rs.dev(ctx, dev, n)
		if err != nil {
			return c.fail(res, err)
		}
		fillHost(host.Bytes()[:n], salt)
		spec.Src, spec.Dst, spec.Kind = host, dst, cuda.HostToDevice
		var hostBack cuda.HostPtr
		if test == CopyBidirPinned {
			devSrc, err := c.filledDev(ctx, rs, dev, n, salt^0xff, stage)
			if err != nil {
				return c.fail(res, err)
			}
			if hostBack, err = rs.pinned(ctx, dev, n); err != nil {
				return c.fail(res, err)
			}
			s2, err := rs.stream(ctx, dev)
			if err != nil {
				return c.fail(res, err)
			}
			spec.RevDst, spec.RevSrc, spec.Stream2 = hostBack, devSrc, s2
			res.Note = "host-to-device and device-to-host at once; GB/s is both directions summed"
		}
		check = func() (int64, error) {
			w, err := c.checkDst(ctx, dev, dst, n, salt, stage)
			if err == nil && test == CopyBidirPinned {
				w += checkHost(hostBack.Bytes()[:n], salt^0xff)
			}
			return w, err
		}
	case CopyD2HPinned, CopyD2HPageable:
		host, err := rs.host(ctx, dev, n, test == CopyD2HPageable)
		if err != nil {
			return c.fail(res, err)
		}
		src, err := c.filledDev(ctx, rs, dev, n, salt, stage)
		if err != nil {
			return c.fail(res, err)
		}
		spec.Src, spec.Dst, spec.Kind = src, host, cuda.DeviceToHost
		check = func() (int64, error) {
			b := host.Bytes()[:n]
			if c.cfg.Corrupt {
				b[0] ^= 0xff
			}
			return checkHost(b, salt), nil
		}
	default:
		return res, fmt.Errorf("unknown copy test %q", test)
	}
	return c.timeAndCheck(ctx, res, spec, check)
}

// corrupt zeroes the first bytes of a device destination when the
// configuration asks for it (the pattern's byte 0 is never 0, so the
// validation must catch it); a failure to damage it is an error, not a
// silent pass.
func (c *copyRun) corrupt(ctx context.Context, dev int, p cuda.DevPtr, n uint64) error {
	if !c.cfg.Corrupt {
		return nil
	}
	return c.rt.Memset(ctx, dev, p, 0, min(64, n))
}

// timeAndCheck warms up, times the loop, and validates the last copy.
func (c *copyRun) timeAndCheck(ctx context.Context, res CopyResult, spec cuda.CopySpec, check func() (int64, error)) (CopyResult, error) {
	if c.cfg.Warmup > 0 {
		w := spec
		w.Iters = c.cfg.Warmup
		if _, err := c.rt.CopyTimed(ctx, w); err != nil {
			return c.fail(res, err)
		}
	}
	spec.Iters = c.cfg.Iters
	ms, err := c.rt.CopyTimed(ctx, spec)
	if err != nil {
		return c.fail(res, err)
	}
	sec := ms / 1e3 / float64(spec.Iters)
	res.US = sec * 1e6
	if sec > 0 {
		res.GBps = float64(spec.Bytes) / sec / 1e9
		if spec.RevDst != nil {
			res.GBps *= 2
		}
		if spec.Kind == cuda.DeviceToDevice {
			res.ReadWriteGBps = 2 * res.GBps
		}
	}
	w, err := check()
	if err != nil {
		return c.fail(res, err)
	}
	res.Wrong = w
	res.Valid = w == 0
	return res, nil
}

func (c *copyRun) fail(res CopyResult, err error) (CopyResult, error) {
	res.Error = err.Error()
	// A device that is out of memory or busy fails this test; anything
	// that hung or was interrupted stops the run.
	if errors.Is(err, cuda.ErrHung) || errors.Is(err, cuda.ErrTimeout) || errors.Is(err, context.Canceled) {
		return res, err
	}
	if cuda.IsCode(err, cuda.ErrCodeMemoryAllocation) || cuda.IsCode(err, cuda.ErrCodeDevicesBusy) || cuda.IsCode(err, cuda.ErrCodeNoDevice) || cuda.IsCode(err, cuda.ErrCodeInvalidDevice) {
		return res, err
	}
	return res, nil
}

// peer copies between two GPUs.
func (c *copyRun) peer(ctx context.Context, test string, a, b int) (CopyResult, error) {
	res := CopyResult{Test: test, Dev: a, Peer: b, Bytes: c.cfg.Bytes, Iters: c.cfg.Iters}
	rs := &resources{rt: c.rt}
	defer rs.release()
	n := c.cfg.Bytes
	can, err := c.rt.CanAccessPeer(ctx, a, b)
	if err != nil {
		return c.fail(res, err)
	}
	back, err := c.rt.CanAccessPeer(ctx, b, a)
	if err != nil {
		return c.fail(res, err)
	}
	if can && back {
		if err := c.rt.EnablePeer(ctx, a, b); err != nil {
			return c.fail(res, err)
		}
		if err := c.rt.EnablePeer(ctx, b, a); err != nil {
			return c.fail(res, err)
		}
		res.Peered = true
	} else {
		res.Note = "no peer access: the driver stages the copy through host memory"
	}
	stage, err := rs.pinned(ctx, a, copyStage)
	if err != nil {
		return c.fail(res, err)
	}
	const salt = 0x5a
	src, err := c.filledDev(ctx, rs, a, n, salt, stage)
	if err != nil {
		return c.fail(res, err)
	}
	dst, err := rs.dev(ctx, b, n)
	if err != nil {
		return c.fail(res, err)
	}
	s1, err := rs.stream(ctx, a)
	if err != nil {
		return c.fail(res, err)
	}
	spec := cuda.CopySpec{Dev: a, Dst: dst, Src: src, Bytes: n, Kind: cuda.PeerToPeer, DstDev: b, SrcDev: a, Stream: s1, Timeout: c.cfg.Timeout}
	var revDst cuda.DevPtr
	if test == CopyP2PBidir {
		revSrc, err := c.filledDev(ctx, rs, b, n, salt^0xff, stage)
		if err != nil {
			return c.fail(res, err)
		}
		if revDst, err = rs.dev(ctx, a, n); err != nil {
			return c.fail(res, err)
		}
		s2, err := rs.stream(ctx, a)
		if err != nil {
			return c.fail(res, err)
		}
		spec.RevDst, spec.RevSrc, spec.Stream2 = revDst, revSrc, s2
	}
	return c.timeAndCheck(ctx, res, spec, func() (int64, error) {
		w, err := c.checkDst(ctx, b, dst, n, salt, stage)
		if err == nil && test == CopyP2PBidir {
			var w2 int64
			w2, err = c.devCheck(ctx, a, revDst, n, salt^0xff, stage)
			w += w2
		}
		return w, err
	})
}

// latency is the mean time of a small copy (device to device on one GPU,
// or GPU to GPU), launch included: what a small message costs at least.
func (c *copyRun) latency(ctx context.Context, a, b int) (CopyResult, error) {
	const n = 8
	res := CopyResult{Test: CopyLatency, Dev: a, Peer: b, Bytes: n, Iters: c.cfg.LatencyIters,
		Note: "mean of back-to-back 8-byte cudaMemcpyAsync, launch overhead included"}
	rs := &resources{rt: c.rt}
	defer rs.release()
	dstDev := a
	if b >= 0 {
		dstDev = b
		if can, err := c.rt.CanAccessPeer(ctx, a, b); err == nil && can {
			_ = c.rt.EnablePeer(ctx, a, b)
			res.Peered = true
		}
	}
	src, err := rs.dev(ctx, a, n)
	if err != nil {
		return c.fail(res, err)
	}
	dst, err := rs.dev(ctx, dstDev, n)
	if err != nil {
		return c.fail(res, err)
	}
	s, err := rs.stream(ctx, a)
	if err != nil {
		return c.fail(res, err)
	}
	// The copies are validated like the others: a latency of copies that
	// moved nothing is no latency.
	stage, err := rs.pinned(ctx, a, n)
	if err != nil {
		return c.fail(res, err)
	}
	const salt = 0x69
	if err := c.devFill(ctx, a, src, n, salt, stage); err != nil {
		return c.fail(res, err)
	}
	spec := cuda.CopySpec{Dev: a, Dst: dst, Src: src, Bytes: n, Kind: cuda.DeviceToDevice, Stream: s, Timeout: c.cfg.Timeout, Iters: 10}
	if b >= 0 {
		spec.Kind, spec.DstDev, spec.SrcDev = cuda.PeerToPeer, b, a
	}
	if _, err := c.rt.CopyTimed(ctx, spec); err != nil {
		return c.fail(res, err)
	}
	spec.Iters = c.cfg.LatencyIters
	ms, err := c.rt.CopyTimed(ctx, spec)
	if err != nil {
		return c.fail(res, err)
	}
	res.US = ms * 1e3 / float64(spec.Iters)
	w, err := c.checkDst(ctx, dstDev, dst, n, salt, stage)
	if err != nil {
		return c.fail(res, err)
	}
	res.Wrong = w
	res.Valid = w == 0
	return res, nil
}
