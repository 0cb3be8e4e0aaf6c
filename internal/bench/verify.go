package bench

import (
	"encoding/binary"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gdrcheck/gdrcheck/internal/collective"
)

// The data a correctness check writes: small non-zero integers, so that
// every reduction of them is exact in every type (the result does not
// depend on NCCL's reduction order) and the expected value of any output
// element is a table lookup. Element i of rank r holds f((h(i)+o(r)) mod P):
// h scatters indices, so a block written to the wrong place is caught; o
// differs by rank and by seed, so stale data from an earlier run is caught.
// Outputs are poisoned with 0x7F bytes before each checked run; no value
// the pattern can produce has that encoding, so an element NCCL did not
// write counts as wrong.

const poisonByte = 0x7F

// pattern is the data of one checked run.
type pattern struct {
	dt     DType
	op     RedOp
	n      int
	seed   uint32
	period uint32
	// enc[x] is the encoding of f(x); red[y] the encoding of the reduction
	// over ranks at residue y; redv the reduction as a number (for avg).
	enc   [][]byte
	red   [][]byte
	redv  []float64
	exact bool // reductions exact in this type
	tol   float64
}

// exactLimit is the largest magnitude a type holds exactly and that cannot
// be confused with the poison pattern.
func exactLimit(d DType) float64 {
	switch d.Name {
	case "int8", "uint8":
		return 126
	case "half":
		return 2048
	case "bfloat16":
		return 256
	case "float":
		return 1 << 24
	case "double":
		return 1 << 53
	case "int32", "uint32":
		return 1 << 30
	}
	return 1 << 60
}

func newPattern(d DType, op RedOp, n int, seed uint32) *pattern {
	p := &pattern{dt: d, op: op, n: n, seed: seed, exact: true}
	unsigned := d.Kind == 'u'
	k := 8
	switch op.Name {
	case "sum", "avg":
		lim := exactLimit(d) / float64(n)
		if lim < 1 {
			p.exact = false
			lim = 1
		}
		k = int(math.Min(8, lim))
	case "prod":
		k = 1
	}
	if unsigned {
		p.period = uint32(k)
	} else {
		p.period = uint32(2 * k)
	}
	f := func(x uint32) float64 {
		if unsigned {
			return float64(x + 1)
		}
		if int(x) < k {
			return float64(int(x) - k)
		}
		return float64(int(x) - k + 1)
	}
	p.enc = make([][]byte, p.period)
	for x := uint32(0); x < p.period; x++ {
		p.enc[x] = encode(d, f(x))
	}
	p.red = make([][]byte, p.period)
	p.redv = make([]float64, p.period)
	for y := uint32(0); y < p.period; y++ {
		var acc float64
		for r := 0; r < n; r++ {
			v := f((y + p.off(r)) % p.period)
			switch {
			case r == 0:
				acc = v
			case op.Name == "sum" || op.Name == "avg":
				acc += v
			case op.Name == "prod":
				acc *= v
			case op.Name == "max":
				acc = math.Max(acc, v)
			case op.Name == "min":
				acc = math.Min(acc, v)
			}
		}
		if op.Name == "avg" {
			if d.Kind == 'f' {
				acc /= float64(n)
			} else {
				acc = math.Trunc(acc / float64(n))
			}
			p.exact = false
		}
		p.redv[y] = acc
		p.red[y] = encode(d, acc)
	}
	switch {
	case d.Kind != 'f':
		p.tol = 1
	case d.Name == "half":
		p.tol = 2e-3
	case d.Name == "bfloat16":
		p.tol = 1.6e-2
	case d.Name == "float":
		p.tol = 1e-6
	default:
		p.tol = 1e-12
	}
	return p
}

func (p *pattern) off(rank int) uint32 {
	return (p.seed*2654435761 + uint32(rank)*40503) % p.period
}

// mix scatters element indices (a 64-bit finaliser).
func mix(i uint64) uint32 {
	i ^= i >> 33
	i *= 0xff51afd7ed558ccd
	i ^= i >> 33
	return uint32(i)
}

// value is the encoding of element i of rank r.
func (p *pattern) value(i uint64, r int) []byte {
	return p.enc[(mix(i)%p.period+p.off(r))%p.period]
}

// reduced is the encoding (and number) of the reduction over ranks at i.
func (p *pattern) reduced(i uint64) ([]byte, float64) {
	y := mix(i) % p.period
	return p.red[y], p.redv[y]
}

// encode writes v in a data type's little-endian encoding.
func encode(d DType, v float64) []byte {
	b := make([]byte, d.Size)
	switch d.Name {
	case "int8":
		b[0] = byte(int8(v))
	case "uint8":
		b[0] = byte(uint8(v))
	case "int32":
		binary.LittleEndian.PutUint32(b, uint32(int32(v)))
	case "uint32":
		binary.LittleEndian.PutUint32(b, uint32(v))
	case "int64":
		binary.LittleEndian.PutUint64(b, uint64(int64(v)))
	case "uint64":
		binary.LittleEndian.PutUint64(b, uint64(v))
	case "float":
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case "double":
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	case "half":
		binary.LittleEndian.PutUint16(b, float32ToHalf(float32(v)))
	case "bfloat16":
		x := math.Float32bits(float32(v))
		binary.LittleEndian.PutUint16(b, uint16((x+0x7fff+(x>>16)&1)>>16))
	}
	return b
}

// decode reads one element as a number.
func decode(d DType, b []byte) float64 {
	switch d.Name {
	case "int8":
		return float64(int8(b[0]))
	case "uint8":
		return float64(b[0])
	case "int32":
		return float64(int32(binary.LittleEndian.Uint32(b)))
	case "uint32":
		return float64(binary.LittleEndian.Uint32(b))
	case "int64":
		return float64(int64(binary.LittleEndian.Uint64(b)))
	case "uint64":
		return float64(binary.LittleEndian.Uint64(b))
	case "float":
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case "double":
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case "half":
		return float64(halfToFloat32(binary.LittleEndian.Uint16(b)))
	case "bfloat16":
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
	}
	return math.NaN()
}

func float32ToHalf(f float32) uint16 {
	x := math.Float32bits(f)
	sign := uint16(x>>16) & 0x8000
	exp := int((x>>23)&0xff) - 127 + 15
	mant := x & 0x7fffff
	switch {
	case (x>>23)&0xff == 0xff:
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		h := uint16(mant >> shift)
		if (mant>>(shift-1))&1 != 0 && ((mant&(1<<(shift-1)-1)) != 0 || h&1 != 0) {
			h++
		}
		return sign | h
	}
	h := sign | uint16(exp)<<10 | uint16(mant>>13)
	if mant&0x1000 != 0 && (mant&0x2fff) != 0 {
		h++
	}
	return h
}

func halfToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		f := float32(mant) / 1024 / 16384
		if sign != 0 {
			return -f
		}
		return f
	case exp == 31:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// source says where output element o of a rank comes from: one element of
// one rank, or the reduction over ranks at an index.
type source func(o uint64) (rank int, idx uint64, reduce bool)

// outputSource is the expected content of local rank k's output, per
// collective.
func outputSource(c collective.Collective, k, n, root int, count uint64) source {
	switch c {
	case collective.AllGather:
		return func(o uint64) (int, uint64, bool) { return int(o / count), o % count, false }
	case collective.ReduceScatter:
		return func(o uint64) (int, uint64, bool) { return 0, uint64(k)*count + o, true }
	case collective.Broadcast:
		return func(o uint64) (int, uint64, bool) { return root, o, false }
	case collective.AllToAll:
		return func(o uint64) (int, uint64, bool) { return int(o / count), uint64(k)*count + o%count, false }
	case collective.SendRecv:
		from := (k - 1 + n) % n
		return func(o uint64) (int, uint64, bool) { return from, o, false }
	}
	// all_reduce, reduce
	return func(o uint64) (int, uint64, bool) { return 0, o, true }
}

// fill writes rank r's input elements [first, first+len(buf)/elt) into buf.
func (p *pattern) fill(buf []byte, first uint64, r int) {
	elt := p.dt.Size
	parallel(uint64(len(buf))/elt, func(lo, hi uint64) {
		for i := lo; i < hi; i++ {
			copy(buf[i*elt:(i+1)*elt], p.value(first+i, r))
		}
	})
}

// compare counts the wrong elements in buf, which holds output elements
// [first, first+len(buf)/elt).
func (p *pattern) compare(buf []byte, first uint64, src source) int64 {
	elt := p.dt.Size
	var wrong atomic.Int64
	parallel(uint64(len(buf))/elt, func(lo, hi uint64) {
		var w int64
		for i := lo; i < hi; i++ {
			got := buf[i*elt : (i+1)*elt]
			r, idx, red := src(first + i)
			if !red {
				if !bytesEqual(got, p.value(idx, r)) {
					w++
				}
				continue
			}
			want, wv := p.reduced(idx)
			if p.exact {
				if !bytesEqual(got, want) {
					w++
				}
				continue
			}
			g := decode(p.dt, got)
			if math.IsNaN(g) || math.Abs(g-wv) > p.tol*math.Max(1, math.Abs(wv)) {
				w++
			}
		}
		wrong.Add(w)
	})
	return wrong.Load()
}

func bytesEqual(a, b []byte) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// parallel splits [0, n) over the CPUs.
func parallel(n uint64, f func(lo, hi uint64)) {
	w := uint64(runtime.GOMAXPROCS(0))
	if n < 1<<16 || w < 2 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + w - 1) / w
	for lo := uint64(0); lo < n; lo += step {
		hi := min(lo+step, n)
		wg.Add(1)
		go func(lo, hi uint64) {
			defer wg.Done()
			f(lo, hi)
		}(lo, hi)
	}
	wg.Wait()
}
