//go:build cgo

package cudadrv

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"

static gdr_CUresult gdr_cu_init(gdr_cudrv *l) { return l->Init(0); }
static gdr_CUresult gdr_cu_version(gdr_cudrv *l, int *v) { return l->DriverGetVersion(v); }
static gdr_CUresult gdr_cu_count(gdr_cudrv *l, int *n) { return l->DeviceGetCount(n); }
static gdr_CUresult gdr_cu_device(gdr_cudrv *l, gdr_CUdevice *d, int ord) { return l->DeviceGet(d, ord); }
static gdr_CUresult gdr_cu_attr(gdr_cudrv *l, int *v, int attr, gdr_CUdevice d) { return l->DeviceGetAttribute(v, attr, d); }
static gdr_CUresult gdr_cu_busid(gdr_cudrv *l, char *b, int n, gdr_CUdevice d) { return l->DeviceGetPCIBusId(b, n, d); }
static gdr_CUresult gdr_cu_retain(gdr_cudrv *l, gdr_CUcontext *c, gdr_CUdevice d) { return l->DevicePrimaryCtxRetain(c, d); }
static gdr_CUresult gdr_cu_release(gdr_cudrv *l, gdr_CUdevice d) { return l->DevicePrimaryCtxRelease_v2(d); }
static const char *gdr_cu_name(gdr_cudrv *l, gdr_CUresult e) {
	const char *s = 0;
	if (l->GetErrorName(e, &s)) return 0;
	return s;
}
static const char *gdr_cu_string(gdr_cudrv *l, gdr_CUresult e) {
	const char *s = 0;
	if (l->GetErrorString(e, &s)) return 0;
	return s;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/gdrcheck/gdrcheck/internal/native/dl"
	"github.com/gdrcheck/gdrcheck/internal/watchdog"
)

// Driver is a loaded CUDA driver library.
type Driver struct {
	Path     string // the file that was loaded
	lib      *dl.Library
	c        *C.gdr_cudrv
	timeout  time.Duration
	calls    chan func()
	quit     chan struct{}
	exited   chan struct{}
	quitOnce sync.Once
	life     sync.RWMutex
	guard    *watchdog.Guard
}

// Open loads the CUDA driver library: path if given, else the usual
// search. The caller must Close it.
func Open(path string, opts ...Option) (*Driver, error) {
	lib, err := dl.OpenTable(LibrarySpec(), path, unsafe.Sizeof(C.gdr_cudrv{}), func(t, h unsafe.Pointer) string {
		return C.GoString(C.gdr_cudrv_bind((*C.gdr_cudrv)(t), h))
	}, "not a CUDA driver library?")
	if err != nil {
		return nil, err
	}
	o := options{timeout: DefaultCallTimeout}
	for _, f := range opts {
		f(&o)
	}
	d := &Driver{Path: lib.Resolved(), lib: lib, c: (*C.gdr_cudrv)(lib.Table()), timeout: o.timeout,
		calls: make(chan func()), quit: make(chan struct{}), exited: make(chan struct{}), guard: watchdog.New(ErrHung)}
	go d.worker()
	return d, nil
}

// Close ends the driver's thread and frees its table (libcuda stays
// loaded). A driver wedged in a call is kept: Close then returns an
// error at once.
func (d *Driver) Close() error {
	d.quitOnce.Do(func() { close(d.quit) })
	select {
	case <-d.exited:
		return nil
	case <-d.guard.WedgedC():
		return fmt.Errorf("CUDA driver kept: %s never returned: %w", d.guard.Wedged(), ErrHung)
	}
}

// worker runs every call on one locked OS thread, never unlocked: the
// thread and its current context end with it.
func (d *Driver) worker() {
	runtime.LockOSThread()
	defer close(d.exited)
	for {
		select {
		case f := <-d.calls:
			f()
		case <-d.quit:
			d.life.Lock()
			d.lib.Release()
			d.life.Unlock()
			return
		}
	}
}

func (d *Driver) start(ctx context.Context, task func()) error {
	select {
	case d.calls <- task:
		return nil
	case <-d.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call runs one step on the driver's thread under the deadline: fn makes
// the C call and returns its CUresult; the step gets the result's name.
// The returned error is a *StepError, or the watchdog's (hang, interrupt).
func (d *Driver) call(ctx context.Context, p *Probe, st Step, fn func() C.gdr_CUresult) (Step, error) {
	d.life.RLock()
	defer d.life.RUnlock()
	select {
	case <-d.quit:
		return st, ErrClosed
	default:
	}
	// The task works on its own copy and hands it back only by returning:
	// after a hang the caller must not share memory with it.
	base := st
	var out Step
	err := d.guard.Do(ctx, watchdog.Call{Name: st.Where(), Timeout: d.timeout, Start: d.start}, func() error {
		r := base
		code := int(fn())
		r.Code = code
		if code == noSymbol {
			r.Error = fmt.Sprintf("the driver has no %s (multicast needs a driver for CUDA 12.1 or later)", r.Call)
			out = r
			return nil
		}
		r.Result = fmt.Sprintf("CUresult(%d)", code)
		if s := C.gdr_cu_name(d.c, C.gdr_CUresult(code)); s != nil {
			r.Result = C.GoString(s)
		}
		if code != Success {
			if s := C.gdr_cu_string(d.c, C.gdr_CUresult(code)); s != nil {
				r.Message = C.GoString(s)
			}
		}
		out = r
		return nil
	})
	if err != nil {
		st.Error = err.Error()
	} else {
		st = out
	}
	p.Steps = append(p.Steps, st)
	switch {
	case err != nil:
		return st, err
	case !st.OK():
		return st, &StepError{st}
	}
	return st, nil
}

func step(call string, gpu int) Step { return Step{Call: call, GPU: gpu} }

// ProbeMulticast creates a multicast object for the GPUs, adds every GPU
// to it, and binds memory of each GPU to it (cuMemCreate,
// cuMulticastBindMem), then unbinds and releases all of it. It stops at a
// GPU whose multicast attribute is 0 (nothing more to learn: the driver
// refuses the object) without an error. The Probe is returned in every
// case, with every call made; the error is the first step's that failed
// (a *StepError), a hang or an interrupt.
func (d *Driver) ProbeMulticast(ctx context.Context, o ProbeOptions) (*Probe, error) {
	p := &Probe{Library: d.Path, GPUs: []GPU{}, Bound: []int{}, Steps: []Step{}}
	err := d.probe(ctx, p, o)
	return p, err
}

type gpuState struct {
	ord                     int
	dev                     C.gdr_CUdevice
	ctx                     C.gdr_CUcontext
	mem                     C.gdr_CUhandle
	hasMem, bound, retained bool
}

func (d *Driver) probe(ctx context.Context, p *Probe, o ProbeOptions) (err error) {
	if _, err := d.call(ctx, p, step("cuInit", -1), func() C.gdr_CUresult { return C.gdr_cu_init(d.c) }); err != nil {
		return err
	}
	var v, n C.int
	if _, err := d.call(ctx, p, step("cuDriverGetVersion", -1), func() C.gdr_CUresult { return C.gdr_cu_version(d.c, &v) }); err != nil {
		return err
	}
	p.DriverVersion = VersionString(int(v))
	if _, err := d.call(ctx, p, step("cuDeviceGetCount", -1), func() C.gdr_CUresult { return C.gdr_cu_count(d.c, &n) }); err != nil {
		return err
	}
	p.Steps[len(p.Steps)-1].Value = fmt.Sprint(int(n))
	devs := o.Devices
	if devs == nil {
		for i := range int(n) {
			devs = append(devs, i)
		}
	}
	if len(devs) == 0 {
		return fmt.Errorf("the CUDA driver sees no GPU")
	}
	gs := make([]*gpuState, len(devs))
	for i, ord := range devs {
		if ord < 0 || ord >= int(n) {
			return fmt.Errorf("GPU %d: the CUDA driver sees %d GPU(s) (0..%d)", ord, int(n), int(n)-1)
		}
		g := &gpuState{ord: ord}
		gs[i] = g
		if _, err := d.call(ctx, p, step("cuDeviceGet", ord), func() C.gdr_CUresult { return C.gdr_cu_device(d.c, &g.dev, C.int(ord)) }); err != nil {
			return err
		}
		buf := (*C.char)(C.calloc(64, 1))
		_, err := d.call(ctx, p, step("cuDeviceGetPCIBusId", ord), func() C.gdr_CUresult { return C.gdr_cu_busid(d.c, buf, 64, g.dev) })
		if errors.Is(err, ErrHung) {
			return err // the call may still write buf: it is not freed
		}
		bus := C.GoString(buf)
		C.free(unsafe.Pointer(buf))
		if err != nil {
			return err
		}
		p.Steps[len(p.Steps)-1].Value = bus
		var attr C.int
		if _, err := d.call(ctx, p, step("cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED)", ord), func() C.gdr_CUresult {
			return C.gdr_cu_attr(d.c, &attr, AttrMulticastSupported, g.dev)
		}); err != nil {
			p.GPUs = append(p.GPUs, GPU{Ordinal: ord, BusID: bus, Multicast: -1})
			return err
		}
		p.Steps[len(p.Steps)-1].Value = fmt.Sprint(int(attr))
		p.GPUs = append(p.GPUs, GPU{Ordinal: ord, BusID: bus, Multicast: int(attr)})
	}
	if len(p.Unsupported()) > 0 {
		return nil
	}
	// From here on, what was made is released, whatever fails.
	var mc C.gdr_CUhandle
	hasMC := false
	defer func() {
		if d.guard.Wedged() != "" || errors.Is(err, ErrClosed) {
			return // a call never came back: the driver is not called again
		}
		td := func(call string, gpu int, fn func() C.gdr_CUresult) {
			st := step(call, gpu)
			st.Teardown = true
			_, _ = d.call(context.WithoutCancel(ctx), p, st, fn)
		}
		size := C.size_t(p.Bytes)
		for _, g := range gs {
			if g.bound {
				td("cuMulticastUnbind", g.ord, func() C.gdr_CUresult { return C.gdr_cudrv_mc_unbind(d.c, g.ctx, mc, g.dev, size) })
			}
		}
		for _, g := range gs {
			if g.hasMem {
				td("cuMemRelease", g.ord, func() C.gdr_CUresult { return C.gdr_cudrv_mem_release(d.c, g.ctx, g.mem) })
			}
		}
		if hasMC {
			td("cuMemRelease(multicast)", -1, func() C.gdr_CUresult { return C.gdr_cudrv_mem_release(d.c, gs[0].ctx, mc) })
		}
		for _, g := range gs {
			if g.retained {
				td("cuDevicePrimaryCtxRelease", g.ord, func() C.gdr_CUresult { return C.gdr_cu_release(d.c, g.dev) })
			}
		}
	}()
	for _, g := range gs {
		if _, err := d.call(ctx, p, step("cuDevicePrimaryCtxRetain", g.ord), func() C.gdr_CUresult { return C.gdr_cu_retain(d.c, &g.ctx, g.dev) }); err != nil {
			return err
		}
		g.retained = true
	}
	want := o.Bytes
	if want == 0 {
		want = DefaultBytes
	}
	var grans []uint64
	for _, g := range gs {
		var gran C.size_t
		if _, err := d.call(ctx, p, step("cuMemGetAllocationGranularity", g.ord), func() C.gdr_CUresult { return C.gdr_cudrv_mem_granularity(d.c, g.ctx, g.dev, &gran) }); err != nil {
			return err
		}
		p.Steps[len(p.Steps)-1].Value = fmt.Sprint(uint64(gran))
		grans = append(grans, uint64(gran))
	}
	nd := C.uint(len(gs))
	var mcGran C.size_t
	if _, err := d.call(ctx, p, step("cuMulticastGetGranularity", -1), func() C.gdr_CUresult {
		return C.gdr_cudrv_mc_granularity(d.c, gs[0].ctx, nd, C.size_t(want), &mcGran)
	}); err != nil {
		return err
	}
	p.Steps[len(p.Steps)-1].Value = fmt.Sprint(uint64(mcGran))
	p.Bytes = roundUp(want, append(grans, uint64(mcGran))...)
	size := C.size_t(p.Bytes)
	if _, err := d.call(ctx, p, step("cuMulticastCreate", -1), func() C.gdr_CUresult { return C.gdr_cudrv_mc_create(d.c, gs[0].ctx, nd, size, &mc) }); err != nil {
		return err
	}
	hasMC = true
	p.Steps[len(p.Steps)-1].Value = fmt.Sprintf("%d GPUs, %d bytes", len(gs), p.Bytes)
	// Every GPU joins before any memory is bound: a bind waits until the
	// whole team has been added.
	for _, g := range gs {
		if _, err := d.call(ctx, p, step("cuMulticastAddDevice", g.ord), func() C.gdr_CUresult { return C.gdr_cudrv_mc_add(d.c, g.ctx, mc, g.dev) }); err != nil {
			return err
		}
	}
	for _, g := range gs {
		if _, err := d.call(ctx, p, step("cuMemCreate", g.ord), func() C.gdr_CUresult { return C.gdr_cudrv_mem_create(d.c, g.ctx, g.dev, size, &g.mem) }); err != nil {
			return err
		}
		g.hasMem = true
		if _, err := d.call(ctx, p, step("cuMulticastBindMem", g.ord), func() C.gdr_CUresult { return C.gdr_cudrv_mc_bind(d.c, g.ctx, mc, g.mem, size) }); err != nil {
			return err
		}
		g.bound = true
		p.Bound = append(p.Bound, g.ord)
	}
	return nil
}
