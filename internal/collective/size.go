package collective

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// MaxSize is the largest size ParseSize accepts: 2^63-1 bytes, so that a
// size fits the signed integers of every consumer.
const MaxSize = math.MaxInt64

// sizeUnits are the suffixes ParseSize reads, all binary as in nccl-tests
// (1K = 1024 bytes).
var sizeUnits = map[byte]uint64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}

// ParseSize reads a message size. The grammar, case-insensitive, with
// surrounding space ignored:
//
//	size   = number [unit]
//	number = digits ["." digits]
//	unit   = ("K" | "M" | "G" | "T") ["B" | "iB"] | "B"
//
// Every unit is binary, as nccl-tests' -b/-e read them: K is 2^10, M 2^20,
// G 2^30, T 2^40; "8G", "8GB" and "8GiB" are all 8 × 2^30 bytes, "4096B"
// is 4096. A fraction is allowed where the result is a whole number of
// bytes ("1.5G"; not "1.5"). The size must be at least 1 and at most
// MaxSize bytes. Signs, exponents, separators and other units are errors.
func ParseSize(s string) (uint64, error) {
	const want = "want a number of bytes with an optional binary unit K, M, G or T (8, 64K, 128M, 8G, 8GiB, 1T)"
	t := strings.ToUpper(strings.TrimSpace(s))
	if t == "" {
		return 0, fmt.Errorf("size %q: empty; %s", s, want)
	}
	if v, ok := strings.CutSuffix(t, "IB"); ok {
		t = v
		if t == "" || sizeUnits[t[len(t)-1]] == 0 {
			return 0, fmt.Errorf("size %q: \"iB\" needs a unit before it (KiB, MiB, GiB, TiB)", s)
		}
	} else {
		t = strings.TrimSuffix(t, "B")
	}
	mult := uint64(1)
	if t != "" {
		if m := sizeUnits[t[len(t)-1]]; m != 0 {
			mult, t = m, t[:len(t)-1]
		}
	}
	whole, frac, hasDot := strings.Cut(t, ".")
	if !digitsOnly(whole) || hasDot && !digitsOnly(frac) {
		return 0, fmt.Errorf("size %q: %s", s, want)
	}
	// value = (whole.frac) × mult, exactly.
	n, _ := new(big.Int).SetString(whole+frac, 10)
	n.Mul(n, new(big.Int).SetUint64(mult))
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
	q, r := new(big.Int).QuoRem(n, den, new(big.Int))
	switch {
	case r.Sign() != 0:
		return 0, fmt.Errorf("size %q: not a whole number of bytes", s)
	case q.Sign() == 0:
		return 0, fmt.Errorf("size %q: must be at least 1 byte", s)
	case !q.IsInt64():
		return 0, fmt.Errorf("size %q: too large (at most %d bytes, 8 EiB - 1)", s, uint64(MaxSize))
	}
	return q.Uint64(), nil
}

func digitsOnly(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// ParseSizes reads a comma-separated list of sizes ("8,1M,8G"); empty
// items are skipped, and at least one size is required.
func ParseSizes(s string) ([]uint64, error) {
	var out []uint64
	for f := range strings.SplitSeq(s, ",") {
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

// FormatSize prints a byte count the way ParseSize reads it, with the
// largest binary unit that divides it exactly: 8 GiB prints "8G", 1.5 GiB
// "1536M", 4096 "4K", 1000 "1000".
func FormatSize(b uint64) string {
	for _, u := range []struct {
		div uint64
		suf string
	}{{1 << 40, "T"}, {1 << 30, "G"}, {1 << 20, "M"}, {1 << 10, "K"}} {
		if b >= u.div && b%u.div == 0 {
			return strconv.FormatUint(b/u.div, 10) + u.suf
		}
	}
	return strconv.FormatUint(b, 10)
}
