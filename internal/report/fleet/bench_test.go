package fleet

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// hostMark is a placeholder host name as long as every generated one.
const hostMark = "HOSTMARK-0000000000000000"

// corpus holds a few jittered encodings of the real H200 report, the host
// name a placeholder whose offsets are known: node i is template i%len
// with its own name written in, so a fleet of any size costs one copy of
// ~80 KB per node to produce, not its memory.
type corpus struct {
	templates [][]byte
	marks     [][]int
	size      int
}

func newCorpus(b *testing.B, n int) *corpus {
	src := load(b, quickReport)
	rng := rand.New(rand.NewPCG(5, 6))
	c := &corpus{}
	for range n {
		t := clone(b, src, hostMark, rng, 0.02, nil)
		var marks []int
		for off := 0; ; {
			i := bytes.Index(t[off:], []byte(hostMark))
			if i < 0 {
				break
			}
			marks = append(marks, off+i)
			off += i + len(hostMark)
		}
		c.templates = append(c.templates, t)
		c.marks = append(c.marks, marks)
		c.size += len(t)
	}
	c.size /= n
	return c
}

func (c *corpus) load(i int, buf []byte) ([]byte, string, error) {
	t := c.templates[i%len(c.templates)]
	buf = append(buf[:0], t...)
	name := fmt.Sprintf("node-%020d", i)
	for _, m := range c.marks[i%len(c.templates)] {
		copy(buf[m:], name)
	}
	return buf, name, nil
}

// BenchmarkFleet1k, 10k and 100k aggregate that many node reports from
// their encoded JSON (docs/fleet.md records the numbers):
//
//	go test ./internal/report/fleet -run '^$' -bench Fleet -benchmem -benchtime 3x
func BenchmarkFleet1k(b *testing.B)   { benchFleet(b, 1000) }
func BenchmarkFleet10k(b *testing.B)  { benchFleet(b, 10000) }
func BenchmarkFleet100k(b *testing.B) { benchFleet(b, 100000) }

func benchFleet(b *testing.B, n int) {
	c := newCorpus(b, 64)
	b.SetBytes(int64(n * c.size))
	b.ReportAllocs()
	for b.Loop() {
		f := Read(n, runtime.GOMAXPROCS(0), c.load, DefaultOptions())
		if len(f.Nodes) != n || len(f.Skipped) != 0 {
			b.Fatalf("%d nodes, %d skipped", len(f.Nodes), len(f.Skipped))
		}
	}
}
