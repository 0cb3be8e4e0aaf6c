package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/native/cuda"
	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
)

// NCCLConfig is what `gdrcheck bench nccl` runs; the flags mirror
// nccl-tests' where they overlap.
type NCCLConfig struct {
	Collectives []collective.Collective
	MinBytes    uint64 // -b
	MaxBytes    uint64 // -e
	StepFactor  uint64 // -f
	StepBytes   uint64 // -i
	Warmup      int    // -w
	Iters       int    // -n
	Check       int    // -c: checked runs per size (0: none)
	DType       DType  // -d
	Op          RedOp  // -o
	Root        int    // -r
	Devices     []int  // CUDA device ordinals (-g: the first N)
	// Job makes this process's devices ranks of a multi-process
	// communicator (ncclCommInitRank: one device, or several in one group
	// as nccl-tests' -g under MPI); nil: every rank is a device of this
	// process (ncclCommInitAll).
	Job *JobRank
	// Buffers is how the send and receive buffers are allocated; empty:
	// ncclMemAlloc where NCCL has it, as nccl-tests does.
	Buffers Buffers
	// OpTimeout bounds every wait for GPU work (a timed loop, a checked
	// run); on expiry the communicators are aborted.
	OpTimeout   time.Duration
	InitTimeout time.Duration
	// OnRow is called after each finished row (streaming output and
	// partial results survive an interrupt).
	OnRow func(coll collective.Collective, r collective.Row)
	// OnNote receives remarks nccl-tests would print ("Reducing maxBytes").
	OnNote func(string)
	// CorruptAfterCheck overwrites part of one output after the checked
	// run and before its verification: proof that #wrong catches bad data.
	CorruptAfterCheck bool
}

// Settings is results.json's config member: the run's nccl-tests
// settings (a job's rank adds its place in the job).
func (c NCCLConfig) Settings() map[string]any {
	return map[string]any{"minbytes": c.MinBytes, "maxbytes": c.MaxBytes, "stepfactor": c.StepFactor, "stepbytes": c.StepBytes,
		"warmup_iters": c.Warmup, "iters": c.Iters, "check": c.Check, "datatype": c.DType.Name, "redop": c.Op.Name, "root": c.Root,
		"buffers": c.Buffers}
}

// JobRank is this process's place in a multi-process communicator.
type JobRank struct {
	UniqueID []byte // rank 0's ncclGetUniqueId
	// Rank is the NCCL rank of the process's first device; its devices
	// are ranks Rank..Rank+len(Devices)-1 of World.
	Rank  int
	World int
	// Split, when set, runs the collectives on the sub-communicator of
	// this rank's color (ncclCommSplit, ordered by rank) instead of the
	// job's.
	Split *SplitColor
	// Hier, when set, also runs the hierarchical all-reduce on the node's
	// and the rail's sub-communicators, after the collectives.
	Hier *HierColors
}

// SplitColor is this rank's group of a split job.
type SplitColor struct {
	Color int
}

// NCCLResult is one collective's run.
type NCCLResult struct {
	Collective collective.Collective `json:"collective"`
	Ranks      int                   `json:"ranks"`
	Rows       []collective.Row      `json:"rows"`
	// AvgBusBW is nccl-tests' "Avg bus bandwidth": the mean busbw of every
	// measurement (out-of-place and in-place) of every row.
	AvgBusBW float64 `json:"avg_busbw_gbs"`
	// Wrong is the sum of #wrong: nccl-tests' "Out of bounds values".
	Wrong int64  `json:"wrong"`
	Error string `json:"error,omitempty"`
	// Variant names a way of running the collective other than NCCL's own
	// (VariantHierarchical); empty for NCCL's.
	Variant string `json:"variant,omitempty"`
}

// Buffers names the allocator of the benchmark's device buffers.
type Buffers string

const (
	// BuffersNCCL is ncclMemAlloc (NCCL 2.19+): cuMem memory NCCL can
	// register for zero-copy paths; nccl-tests allocates with it.
	BuffersNCCL Buffers = "ncclMemAlloc"
	// BuffersCUDA is cudaMalloc, as most applications allocate.
	BuffersCUDA Buffers = "cudaMalloc"
)

// ResolveBuffers turns the --buffers choice ("auto", "nccl", "cuda") into
// the allocator to use with lib: auto is ncclMemAlloc where lib has it.
func ResolveBuffers(choice string, lib *nccl.Library) (Buffers, error) {
	switch choice {
	case "", "auto":
		return autoBuffers(lib), nil
	case "nccl", string(BuffersNCCL):
		if !lib.HasMemAlloc() {
			v, _, _ := lib.Version()
			return "", fmt.Errorf("buffers %q: NCCL %s at %s has no ncclMemAlloc (2.19 or later has it)", choice, v, lib.Path)
		}
		return BuffersNCCL, nil
	case "cuda", string(BuffersCUDA):
		return BuffersCUDA, nil
	}
	return "", fmt.Errorf("buffers %q: want auto, nccl or cuda", choice)
}

// autoBuffers is ncclMemAlloc where lib has it, else cudaMalloc.
func autoBuffers(lib *nccl.Library) Buffers {
	if lib.HasMemAlloc() {
		return BuffersNCCL
	}
	return BuffersCUDA
}

// ErrWatchdog marks a GPU operation that overran its deadline; the
// communicators were aborted.
var ErrWatchdog = errors.New("watchdog: GPU operation overran its deadline, communicators aborted")

// stagingBytes is the pinned host buffer used to fill and verify.
const stagingBytes = 64 << 20

// ncclRun holds one run's resources.
type ncclRun struct {
	cfg     NCCLConfig
	rt      *cuda.Runtime
	lib     *nccl.Library
	comms   *nccl.Comms
	parent  *nccl.Comms // the job's communicator when comms is a split of it
	hier    *hierRun    // the hierarchical all-reduce's communicators
	send    []cuda.DevPtr
	recv    []cuda.DevPtr
	staging cuda.HostPtr
	bufSize uint64
	seed    uint32
	doing   string // what is running, for watchdog messages
}

// RunNCCL runs the configured collectives on the given devices in this
// process (one communicator per device, ncclCommInitAll). It returns the
// results finished so far with the error that stopped it.
func RunNCCL(ctx context.Context, rt *cuda.Runtime, lib *nccl.Library, cfg NCCLConfig) ([]NCCLResult, error) {
	if len(cfg.Devices) == 0 {
		return nil, fmt.Errorf("no GPU to run on")
	}
	if cfg.Iters < 1 {
		cfg.Iters = 1
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = 5 * time.Minute
	}
	if cfg.InitTimeout <= 0 {
		cfg.InitTimeout = 2 * time.Minute
	}
	if cfg.Buffers == "" {
		cfg.Buffers = autoBuffers(lib)
	}
	r := &ncclRun{cfg: cfg, rt: rt, lib: lib, seed: 99}
	var comms *nccl.Comms
	var err error
	if j := cfg.Job; j != nil {
		if len(cfg.Devices) > 1 && (j.Split != nil || j.Hier != nil) {
			return nil, fmt.Errorf("ranks %d..%d of %d: a split or the hierarchical all-reduce needs one GPU per process, not %d", j.Rank, j.Rank+len(cfg.Devices)-1, j.World, len(cfg.Devices))
		}
		comms, err = lib.InitRanks(ctx, rt, cfg.Devices, j.UniqueID, j.Rank, j.World, cfg.InitTimeout)
		if err == nil && j.Split != nil {
			r.parent = comms
			comms, err = comms.Split(ctx, j.Split.Color, j.Rank, cfg.InitTimeout)
			if err != nil {
				r.parent.Abort()
				return nil, err
			}
		}
	} else {
		comms, err = lib.InitAll(ctx, rt, cfg.Devices, cfg.InitTimeout)
	}
	if err != nil {
		return nil, err
	}
	r.comms = comms
	defer r.release(context.WithoutCancel(ctx))
	if j := cfg.Job; j != nil && j.Hier != nil {
		if err := r.splitHier(ctx, *j.Hier); err != nil {
			r.abort()
			return nil, err
		}
	}
	if err := r.allocate(ctx); err != nil {
		return nil, err
	}
	var out []NCCLResult
	for _, c := range cfg.Collectives {
		res, err := r.collective(ctx, c)
		out = append(out, res)
		if err != nil {
			return out, err
		}
	}
	if r.hier != nil {
		res, err := r.hierarchical(ctx)
		out = append(out, res)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// allocate gives every rank send and receive buffers of the largest size
// (capped by free memory as nccl-tests does) and the staging buffer.
func (r *ncclRun) allocate(ctx context.Context) error {
	size := r.cfg.MaxBytes
	for _, d := range r.cfg.Devices {
		free, total, err := r.rt.MemInfo(ctx, d)
		if err != nil {
			return err
		}
		// Keep 1/16 of the memory (at most 4 GiB) plus up to 1 GiB for NCCL
		// and the runtime, as nccl-tests does on large GPUs.
		const gib = uint64(1) << 30
		reserve := min(total/16, 4*gib) + min(gib, total/8)
		if free <= reserve+(64<<10) {
			return fmt.Errorf("GPU %d has only %d MiB free of %d MiB (%d MiB are kept for NCCL and the runtime): another process holds the rest", d, free>>20, total>>20, reserve>>20)
		}
		if lim := (free - reserve) / 2; size > lim {
			size = lim
		}
	}
	if size < r.cfg.MaxBytes {
		if r.cfg.OnNote != nil {
			r.cfg.OnNote(fmt.Sprintf("Reducing maxBytes to %d due to memory limitation", size))
		}
		r.cfg.MaxBytes = size
		if r.cfg.MinBytes > size {
			r.cfg.MinBytes = size
		}
	}
	r.bufSize = r.cfg.MaxBytes + 64 // room for any alignment of any type
	for i, d := range r.cfg.Devices {
		s, err := r.malloc(ctx, d, r.bufSize)
		if err != nil {
			return err
		}
		r.send = append(r.send, s)
		v, err := r.malloc(ctx, d, r.bufSize)
		if err != nil {
			return err
		}
		r.recv = append(r.recv, v)
		if err := r.comms.SetBuffers(i, s, v); err != nil {
			return err
		}
	}
	if r.cfg.Check > 0 {
		st, err := r.rt.HostAlloc(ctx, r.cfg.Devices[0], stagingBytes)
		if err != nil {
			return err
		}
		r.staging = st
	}
	return nil
}

// malloc allocates a device buffer with the configured allocator.
func (r *ncclRun) malloc(ctx context.Context, dev int, n uint64) (cuda.DevPtr, error) {
	if r.cfg.Buffers == BuffersNCCL {
		return r.lib.MemAlloc(ctx, r.rt, dev, n)
	}
	return r.rt.Malloc(ctx, dev, n)
}

// free releases a buffer from malloc.
func (r *ncclRun) free(ctx context.Context, dev int, p cuda.DevPtr) error {
	if r.cfg.Buffers == BuffersNCCL {
		return r.lib.MemFree(ctx, r.rt, dev, p)
	}
	return r.rt.Free(ctx, dev, p)
}

func (r *ncclRun) release(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if h := r.hier; h != nil {
		if h.intra != nil {
			_ = h.intra.Destroy(ctx)
		}
		if h.rail != nil {
			_ = h.rail.Destroy(ctx)
		}
	}
	if r.comms != nil {
		_ = r.comms.Destroy(ctx)
	}
	if r.parent != nil {
		_ = r.parent.Destroy(ctx)
	}
	for i, d := range r.cfg.Devices {
		if i < len(r.send) {
			_ = r.free(ctx, d, r.send[i])
		}
		if i < len(r.recv) {
			_ = r.free(ctx, d, r.recv[i])
		}
	}
	_ = r.rt.FreeHost(ctx, r.staging)
}

// op is the shim's description of collective c at a size.
func (r *ncclRun) op(c collective.Collective, l collective.Layout, inPlace bool) nccl.Op {
	return nccl.Op{Coll: c, Count: l.Count, DType: r.cfg.DType.NCCL, RedOp: r.cfg.Op.NCCL, Root: r.cfg.Root,
		InPlace: inPlace, SendInplaceOff: l.SendInplaceOff, RecvInplaceOff: l.RecvInplaceOff, Elt: r.cfg.DType.Size,
		TotalBytes: l.Bytes, MaxBytes: r.cfg.MaxBytes}
}

// guard turns a wait's error into the watchdog's, aborting the
// communicators when GPU work overran or was interrupted.
func (r *ncclRun) guard(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, cuda.ErrTimeout) || errors.Is(err, cuda.ErrHung) {
		msg := "while running " + r.doing
		if abortErr := r.abort(); abortErr != nil {
			msg += fmt.Sprintf(" (abort: %v)", abortErr)
		}
		return fmt.Errorf("%w %s: %w", ErrWatchdog, msg, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		r.abort()
		return fmt.Errorf("interrupted while running %s: %w", r.doing, err)
	}
	return fmt.Errorf("%s: %w", r.doing, err)
}

// abort aborts the communicators (the split one and the job's).
func (r *ncclRun) abort() error {
	err := r.comms.Abort()
	if h := r.hier; h != nil {
		if h.intra != nil {
			err = errors.Join(err, h.intra.Abort())
		}
		if h.rail != nil {
			err = errors.Join(err, h.rail.Abort())
		}
	}
	if r.parent != nil {
		err = errors.Join(err, r.parent.Abort())
	}
	return err
}

func (r *ncclRun) collective(ctx context.Context, c collective.Collective) (NCCLResult, error) {
	n := r.comms.World()
	res := NCCLResult{Collective: c, Ranks: n}
	elt := r.cfg.DType.Size
	// Warm-up at every power-of-two size, as nccl-tests does.
	for size := r.cfg.MinBytes; size <= r.cfg.MaxBytes && size > 0; size *= 2 {
		l := c.LayoutFor(size, elt, n)
		op := r.op(c, l, false)
		r.doing = fmt.Sprintf("%s warm-up at %d bytes", c, l.Bytes)
		if err := r.comms.Enqueue(ctx, op, 0, r.cfg.Warmup); err != nil {
			return res, r.guard(err)
		}
		if err := r.comms.Wait(ctx, r.cfg.OpTimeout); err != nil {
			return res, r.guard(err)
		}
	}
	var sums busSums
	root := -1
	if c.Rooted() {
		root = r.cfg.Root
	}
	redop := "none"
	if c.Reduces() {
		redop = r.cfg.Op.Name
	}
	for _, size := range Sizes(r.cfg.MinBytes, r.cfg.MaxBytes, r.cfg.StepFactor, r.cfg.StepBytes) {
		l := c.LayoutFor(size, elt, n)
		row := collective.Row{Bytes: l.Bytes, Count: l.Count, Type: r.cfg.DType.Name, RedOp: redop, Root: new(root)}
		for _, inPlace := range []bool{false, true} {
			m := &collective.Measure{}
			if inPlace {
				row.InPlace = m
			} else {
				row.OutOfPlace = m
			}
			if err := r.bench(ctx, c, l, inPlace, m); err != nil {
				res.Rows = append(res.Rows, row)
				res.Error = err.Error()
				return res, err
			}
			sums.add(&res, m)
		}
		r.emit(&res, row)
	}
	sums.average(&res)
	return res, nil
}

// busSums is a result's measurements that completed: #wrong goes into the
// result as each is added, the average bus bandwidth at the end.
type busSums struct {
	bw float64
	n  int
}

func (s *busSums) add(res *NCCLResult, m *collective.Measure) {
	s.bw += m.BusBW
	s.n++
	if m.Wrong != nil {
		res.Wrong += *m.Wrong
	}
}

func (s *busSums) average(res *NCCLResult) {
	if s.n > 0 {
		res.AvgBusBW = s.bw / float64(s.n)
	}
}

// emit adds a finished row to the result and reports it.
func (r *ncclRun) emit(res *NCCLResult, row collective.Row) {
	res.Rows = append(res.Rows, row)
	if r.cfg.OnRow != nil {
		r.cfg.OnRow(res.Collective, row)
	}
}

// bench is nccl-tests' BenchTime: one synchronising run, the timed
// iterations, then the checked runs.
func (r *ncclRun) bench(ctx context.Context, c collective.Collective, l collective.Layout, inPlace bool, m *collective.Measure) error {
	op := r.op(c, l, inPlace)
	place := "out-of-place"
	if inPlace {
		place = "in-place"
	}
	n := r.comms.World()
	checks := r.cfg.Check
	if inPlace && !c.CheckInPlace() {
		checks = 0
	}
	if checks > 0 {
		r.doing = fmt.Sprintf("%s %s at %d bytes (data init)", c, place, l.Bytes)
		if err := r.prepare(ctx, c, l, inPlace); err != nil {
			return r.guard(err)
		}
	}
	r.doing = fmt.Sprintf("%s %s at %d bytes (sync run)", c, place, l.Bytes)
	if err := r.comms.Enqueue(ctx, op, 0, 1); err != nil {
		return r.guard(err)
	}
	if err := r.comms.Wait(ctx, r.cfg.OpTimeout); err != nil {
		return r.guard(err)
	}
	r.doing = fmt.Sprintf("%s %s at %d bytes (%d timed iterations)", c, place, l.Bytes, r.cfg.Iters)
	sec, err := r.comms.Timed(ctx, op, r.cfg.Iters, r.cfg.OpTimeout)
	if err != nil {
		return r.guard(err)
	}
	delta := sec / float64(r.cfg.Iters)
	m.TimeUS = delta * 1e6
	m.AlgBW, m.BusBW = c.Bandwidths(l.Count, r.cfg.DType.Size, delta, n)
	doing := fmt.Sprintf("%s %s at %d bytes (checked run)", c, place, l.Bytes)
	err = r.check(ctx, c, l, inPlace, checks, doing, m, func() error {
		if err := r.comms.Enqueue(ctx, op, 0, 1); err != nil {
			return err
		}
		return r.comms.Wait(ctx, r.cfg.OpTimeout)
	})
	if err != nil {
		return r.guard(err)
	}
	return nil
}

// check is the checked runs (at most checks of them, stopping at the first
// with wrong elements): fresh data, one run, the output counted into
// m.Wrong. doing is said at each run's start (run may say more).
func (r *ncclRun) check(ctx context.Context, c collective.Collective, l collective.Layout, inPlace bool, checks int, doing string, m *collective.Measure, run func() error) error {
	for k := 0; k < checks; k++ {
		r.doing = doing
		if err := r.prepare(ctx, c, l, inPlace); err != nil {
			return err
		}
		if err := run(); err != nil {
			return err
		}
		if r.cfg.CorruptAfterCheck {
			if err := r.corrupt(ctx, c, l, inPlace); err != nil {
				return err
			}
		}
		w, err := r.verify(ctx, c, l, inPlace)
		if err != nil {
			return err
		}
		m.Wrong = new(w + deref(m.Wrong))
		if w > 0 {
			break
		}
	}
	return nil
}

// regions of local rank i: where its input lives and its output goes.
func (r *ncclRun) regions(i int, l collective.Layout, inPlace bool) (in, out cuda.DevPtr) {
	rank := uint64(r.comms.Rank(i))
	out = r.recv[i]
	in = r.send[i]
	if inPlace {
		in = r.recv[i].Add(l.SendInplaceOff * rank)
		out = r.recv[i].Add(l.RecvInplaceOff * rank)
	}
	return in, out
}

// prepare poisons every output and writes fresh inputs.
func (r *ncclRun) prepare(ctx context.Context, c collective.Collective, l collective.Layout, inPlace bool) error {
	r.seed++
	p := newPattern(r.cfg.DType, r.cfg.Op, r.comms.World(), r.seed)
	elt := r.cfg.DType.Size
	for i := 0; i < r.comms.Size(); i++ {
		dev := r.comms.Device(i)
		in, out := r.regions(i, l, inPlace)
		if err := r.rt.Memset(ctx, dev, out, poisonByte, l.RecvCount*elt); err != nil {
			return err
		}
		rank := r.comms.Rank(i)
		total := l.SendCount * elt
		for off := uint64(0); off < total; off += stagingBytes {
			nb := min(stagingBytes, total-off)
			buf := r.staging.Bytes()[:nb]
			p.fill(buf, off/elt, rank)
			if err := r.rt.Memcpy(ctx, dev, in.Add(off), r.staging, nb); err != nil {
				return err
			}
		}
	}
	return nil
}

// verify counts the wrong output elements of every local rank that has an
// output to check (reduce: the root only).
func (r *ncclRun) verify(ctx context.Context, c collective.Collective, l collective.Layout, inPlace bool) (int64, error) {
	p := newPattern(r.cfg.DType, r.cfg.Op, r.comms.World(), r.seed)
	elt := r.cfg.DType.Size
	var wrong int64
	for i := 0; i < r.comms.Size(); i++ {
		rank := r.comms.Rank(i)
		if c == collective.Reduce && rank != r.cfg.Root {
			continue
		}
		dev := r.comms.Device(i)
		_, out := r.regions(i, l, inPlace)
		src := outputSource(c, rank, r.comms.World(), r.cfg.Root, l.Count)
		total := l.RecvCount * elt
		for off := uint64(0); off < total; off += stagingBytes {
			nb := min(stagingBytes, total-off)
			if err := r.rt.Memcpy(ctx, dev, r.staging, out.Add(off), nb); err != nil {
				return wrong, err
			}
			wrong += p.compare(r.staging.Bytes()[:nb], off/elt, src)
		}
	}
	return wrong, nil
}

// corrupt overwrites the first 256 bytes (or the whole output, if
// smaller) of the first checked rank's output.
func (r *ncclRun) corrupt(ctx context.Context, c collective.Collective, l collective.Layout, inPlace bool) error {
	for i := 0; i < r.comms.Size(); i++ {
		if c == collective.Reduce && r.comms.Rank(i) != r.cfg.Root {
			continue
		}
		_, out := r.regions(i, l, inPlace)
		n := min(256, l.RecvCount*r.cfg.DType.Size)
		return r.rt.Memset(ctx, r.comms.Device(i), out, 0x5A, n)
	}
	return nil
}

// deref is *p, 0 for nil.
func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
