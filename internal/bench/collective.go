// Package bench runs gdrcheck's native benchmarks: NCCL collectives with
// nccl-tests' meaning of every number (message sizes, in-place and
// out-of-place, warm-up and timed iterations, algbw, busbw, #wrong), and copy
// bandwidths (device, host pinned and pageable, peer), each transfer
// validated. Every GPU operation has a deadline; on expiry the NCCL
// communicators are aborted and the failure says what was running.
package bench

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/native/nccl"
)

// Collective is one NCCL operation with nccl-tests' byte accounting.
type Collective struct {
	Name    string // all_reduce
	Coll    int    // nccl.AllReduce...
	Reduces bool   // takes a reduction op
	Rooted  bool   // takes a root
	InPlace bool   // has an in-place form
	// CheckInPlace is false where nccl-tests does not verify the in-place
	// result (alltoall, sendrecv: send and receive buffers are one, so the
	// result is not defined).
	CheckInPlace bool
	// counts returns, for a requested element count and nranks, the
	// send/recv element counts, the count passed to NCCL, and the in-place
	// offsets (elements per rank), as nccl-tests' GetCollByteCount.
	counts func(count, elt uint64, n int) (send, recv, param, sendOff, recvOff uint64)
	// algMult scales the NCCL count to the bytes algbw divides by time;
	// busFactor turns algbw into busbw (nccl-tests doc/PERFORMANCE.md).
	algMult   func(n int) float64
	busFactor func(n int) float64
}

// align16 rounds a per-rank count down to 16 bytes, as nccl-tests does.
func align16(c, elt uint64) uint64 {
	m := 16 / elt
	if m == 0 {
		m = 1
	}
	return c &^ (m - 1)
}

func one(int) float64 { return 1 }

// Collectives lists the supported collectives in nccl-tests' order.
func Collectives() []Collective {
	full := func(count, elt uint64, n int) (uint64, uint64, uint64, uint64, uint64) {
		return count, count, count, 0, 0
	}
	return []Collective{
		{Name: "all_reduce", Coll: nccl.AllReduce, Reduces: true, InPlace: true, CheckInPlace: true, counts: full,
			algMult: one, busFactor: func(n int) float64 { return 2 * float64(n-1) / float64(n) }},
		{Name: "all_gather", Coll: nccl.AllGather, InPlace: true, CheckInPlace: true,
			counts: func(count, elt uint64, n int) (uint64, uint64, uint64, uint64, uint64) {
				b := align16(count/uint64(n), elt)
				return b, b * uint64(n), b, b, 0
			},
			algMult: func(n int) float64 { return float64(n) }, busFactor: func(n int) float64 { return float64(n-1) / float64(n) }},
		{Name: "reduce_scatter", Coll: nccl.ReduceScatter, Reduces: true, InPlace: true, CheckInPlace: true,
			counts: func(count, elt uint64, n int) (uint64, uint64, uint64, uint64, uint64) {
				b := align16(count/uint64(n), elt)
				return b * uint64(n), b, b, 0, b
			},
			algMult: func(n int) float64 { return float64(n) }, busFactor: func(n int) float64 { return float64(n-1) / float64(n) }},
		{Name: "broadcast", Coll: nccl.Broadcast, Rooted: true, InPlace: true, CheckInPlace: true, counts: full, algMult: one, busFactor: one},
		{Name: "reduce", Coll: nccl.Reduce, Reduces: true, Rooted: true, InPlace: true, CheckInPlace: true, counts: full, algMult: one, busFactor: one},
		{Name: "alltoall", Coll: nccl.AlltoAll, InPlace: true,
			counts: func(count, elt uint64, n int) (uint64, uint64, uint64, uint64, uint64) {
				p := align16(count/uint64(n), elt)
				return p * uint64(n), p * uint64(n), p, 0, 0
			},
			algMult: func(n int) float64 { return float64(n) }, busFactor: func(n int) float64 { return float64(n-1) / float64(n) }},
		{Name: "sendrecv", Coll: nccl.SendRecv, InPlace: true, counts: full, algMult: one, busFactor: one},
	}
}

// CollectiveByName finds a collective ("all_reduce", also "allreduce").
func CollectiveByName(name string) (Collective, error) {
	n := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	for _, c := range Collectives() {
		if c.Name == n || strings.ReplaceAll(c.Name, "_", "") == n {
			return c, nil
		}
	}
	var names []string
	for _, c := range Collectives() {
		names = append(names, c.Name)
	}
	return Collective{}, fmt.Errorf("collective %q: want one of %s", name, strings.Join(names, ", "))
}

// Bandwidths are nccl-tests' algbw and busbw in GB/s for an operation of
// NCCL count param that took sec seconds on n ranks.
func (c Collective) Bandwidths(param, elt uint64, sec float64, n int) (algbw, busbw float64) {
	if sec <= 0 {
		return 0, 0
	}
	algbw = float64(param*elt) * c.algMult(n) / 1e9 / sec
	return algbw, algbw * c.busFactor(n)
}

// Layout is the byte accounting of one size.
type Layout struct {
	Count          uint64 // NCCL count (the "count" column)
	SendCount      uint64
	RecvCount      uint64
	SendInplaceOff uint64 // bytes per rank
	RecvInplaceOff uint64
	Bytes          uint64 // the "size" column: max(send, recv) bytes
}

// LayoutFor is nccl-tests' setupArgs for a size in bytes.
func (c Collective) LayoutFor(size, elt uint64, n int) Layout {
	send, recv, param, so, ro := c.counts(size/elt, elt, n)
	return Layout{Count: param, SendCount: send, RecvCount: recv, SendInplaceOff: so * elt, RecvInplaceOff: ro * elt, Bytes: max(send, recv) * elt}
}

// DType is an NCCL data type.
type DType struct {
	Name string // nccl-tests' name: float, half, bfloat16...
	NCCL int    // ncclDataType_t
	Size uint64
	Kind byte // 'i' signed, 'u' unsigned, 'f' float
}

// DTypes lists the supported data types.
func DTypes() []DType {
	return []DType{
		{"int8", 0, 1, 'i'}, {"uint8", 1, 1, 'u'}, {"int32", 2, 4, 'i'}, {"uint32", 3, 4, 'u'},
		{"int64", 4, 8, 'i'}, {"uint64", 5, 8, 'u'}, {"half", 6, 2, 'f'}, {"float", 7, 4, 'f'},
		{"double", 8, 8, 'f'}, {"bfloat16", 9, 2, 'f'},
	}
}

// DTypeByName finds a data type (nccl-tests names; float32, fp16... too).
func DTypeByName(name string) (DType, error) {
	alias := map[string]string{"float32": "float", "fp32": "float", "float16": "half", "fp16": "half", "bf16": "bfloat16", "float64": "double", "fp64": "double", "int": "int32", "char": "int8"}
	n := strings.ToLower(name)
	if a, ok := alias[n]; ok {
		n = a
	}
	for _, d := range DTypes() {
		if d.Name == n {
			return d, nil
		}
	}
	return DType{}, fmt.Errorf("data type %q: want int8, uint8, int32, uint32, int64, uint64, half, float, double or bfloat16", name)
}

// RedOp is an NCCL reduction.
type RedOp struct {
	Name string
	NCCL int
}

// RedOps lists the supported reductions.
func RedOps() []RedOp {
	return []RedOp{{"sum", 0}, {"prod", 1}, {"max", 2}, {"min", 3}, {"avg", 4}}
}

// RedOpByName finds a reduction.
func RedOpByName(name string) (RedOp, error) {
	for _, o := range RedOps() {
		if o.Name == strings.ToLower(name) {
			return o, nil
		}
	}
	return RedOp{}, fmt.Errorf("reduction %q: want sum, prod, max, min or avg", name)
}

// ParseSize reads a size as nccl-tests does: bytes, or with a K, M, G or T
// suffix (powers of 1024).
func ParseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("size %q: empty", s)
	}
	mult := uint64(1)
	switch t[len(t)-1] {
	case 'k', 'K':
		mult = 1 << 10
	case 'm', 'M':
		mult = 1 << 20
	case 'g', 'G':
		mult = 1 << 30
	case 't', 'T':
		mult = 1 << 40
	}
	if mult > 1 {
		t = t[:len(t)-1]
	}
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "i")
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional K, M, G or T suffix", s)
	}
	if v > (1<<63)/mult {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return v * mult, nil
}

// Sizes is nccl-tests' size sequence: from min to max, multiplying by
// factor (> 1) or adding step.
func Sizes(min, max, factor, step uint64) []uint64 {
	var out []uint64
	for s := min; s <= max && len(out) < 1<<16; {
		out = append(out, s)
		switch {
		case factor > 1:
			s *= factor
		case step > 0:
			s += step
		default:
			return out
		}
		if s == 0 {
			break
		}
	}
	return out
}
