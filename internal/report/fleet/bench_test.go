package fleet

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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
// their encoded JSON (docs/fleet.md records the numbers), reporting the
// time per node, the most heap the roll-up held and the process's peak
// resident set:
//
//	go test ./internal/report/fleet -run '^$' -bench 'Fleet10k$' -benchmem -benchtime 3x
func BenchmarkFleet1k(b *testing.B)   { benchFleet(b, 1000) }
func BenchmarkFleet10k(b *testing.B)  { benchFleet(b, 10000) }
func BenchmarkFleet100k(b *testing.B) { benchFleet(b, 100000) }

func benchFleet(b *testing.B, n int) {
	c := newCorpus(b, 64)
	b.SetBytes(int64(n * c.size))
	b.ReportAllocs()
	runtime.GC()
	peak := watchHeap()
	cpu0 := cpuTime()
	for b.Loop() {
		f := Read(n, runtime.GOMAXPROCS(0), c.load, DefaultOptions())
		if len(f.Nodes) != n || len(f.Skipped) != 0 {
			b.Fatalf("%d nodes, %d skipped", len(f.Nodes), len(f.Skipped))
		}
	}
	b.StopTimer()
	// CPU time (user and system, all threads) tells the cost on a shared
	// machine, where the wall time depends on the others' load.
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
	b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MB")
	if kb := maxRSSKB(); kb > 0 {
		b.ReportMetric(float64(kb)/1024, "maxrss-MB")
	}
}

// watchHeap samples the bytes of heap objects (live and not yet swept,
// runtime/metrics' /memory/classes/heap/objects:bytes) every 2 ms until the
// returned function is called, which says the most it saw.
func watchHeap() func() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var most atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > most.Load() {
				most.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return most.Load()
	}
}

// cpuTime is the process's user and system CPU time so far (0 where
// getrusage fails).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// maxRSSKB is the process's peak resident set (VmHWM, Linux), 0 where
// it cannot be read: over the whole benchmark process, so run one size
// per process to read it per size.
func maxRSSKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}
