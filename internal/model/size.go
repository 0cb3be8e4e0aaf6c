package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize reads a message size the way nccl-tests reads -b/-e: a number
// with an optional binary suffix K, M or G (1K = 1024 bytes), "8G", "64M",
// "1K", "4096". A trailing "B" or "iB" is accepted ("8GiB", "64MB" and
// "4096B"; all binary, as in nccl-tests). The size must be a whole, positive
// number of bytes.
func ParseSize(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("size %q: empty", s)
	}
	u := strings.ToUpper(t)
	if v, ok := strings.CutSuffix(u, "IB"); ok {
		u = v
	} else {
		u = strings.TrimSuffix(u, "B")
	}
	mult := 1.0
	switch {
	case strings.HasSuffix(u, "K"):
		mult, u = 1<<10, u[:len(u)-1]
	case strings.HasSuffix(u, "M"):
		mult, u = 1<<20, u[:len(u)-1]
	case strings.HasSuffix(u, "G"):
		mult, u = 1<<30, u[:len(u)-1]
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(u), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional K, M or G suffix (nccl-tests style: 8G, 64M, 1K, 4096)", s)
	}
	b := v * mult
	if b < 1 || b != math.Trunc(b) {
		return 0, fmt.Errorf("size %q: must be a whole number of bytes, at least 1", s)
	}
	return b, nil
}

// ParseSizes reads a comma-separated list of sizes ("8,1M,8G").
func ParseSizes(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		b, err := ParseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sizes %q: none given", s)
	}
	return out, nil
}

// FormatSize prints a byte count the way ParseSize reads it: the largest
// binary suffix that divides it exactly: 8 GiB prints "8G", 1.5 GiB
// "1536M", 4096 "4K", 1000 "1000".
func FormatSize(b float64) string {
	for _, u := range []struct {
		div float64
		suf string
	}{{1 << 30, "G"}, {1 << 20, "M"}, {1 << 10, "K"}} {
		if b >= u.div && math.Mod(b, u.div) == 0 {
			return strconv.FormatFloat(b/u.div, 'f', -1, 64) + u.suf
		}
	}
	return strconv.FormatFloat(b, 'f', -1, 64)
}
