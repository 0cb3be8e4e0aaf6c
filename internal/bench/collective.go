// Package bench runs gdrcheck's native benchmarks: NCCL collectives with
// nccl-tests' meaning of every number (message sizes, in-place and
// out-of-place, warm-up and timed iterations, algbw, busbw, #wrong), and copy
// bandwidths (device, host pinned and pageable, peer), each transfer
// validated. Every GPU operation has a deadline; on expiry the NCCL
// communicators are aborted and the failure says what was running.
package bench

import (
	"fmt"
	"strings"
)

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
