package campaign

import (
	"bytes"
	"cmp"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/collective"
)

// Fabric is a simulated cluster: N nodes of R rails with planted faults. It
// runs a round's steps as the cluster would and writes the files the
// round's scripts would (results/ID.json in bench nccl's JSON, ID.rc), so
// that the campaign reads them with the code that reads real results.
type Fabric struct {
	// NodeBW and RailBW are a healthy step's bus bandwidth (GB/s),
	// node-level and per rail.
	NodeBW, RailBW float64
	// BadNodes measure Slow in every step they are in; BadLinks (node →
	// rails) measure Slow on their rail's steps and pull their node-level
	// steps down to LinkPull (the all_reduce runs at its slowest
	// channel's pace); DownNodes cannot run (exit 1, no result).
	BadNodes  map[string]bool
	BadLinks  map[string][]int
	DownNodes map[string]bool
	Slow      float64
	LinkPull  float64
	// Jitter is every measurement's noise, uniform in ±Jitter.
	Jitter float64
	// Flaky is the probability that a healthy step measures low once
	// (between 30% and 80% of its value).
	Flaky float64
	// FlakeIn plants flaky measurements: in round k, every healthy step
	// of the nodes FlakeIn[k] measures low.
	FlakeIn map[int][]string
	// Flakes counts the flaky measurements made.
	Flakes int
	Rand   *rand.Rand
	// GPUsPerNode is the ranks each node runs (0: 8); Simulate sets the
	// campaign's.
	GPUsPerNode int
}

// NewFabric is a healthy fabric of H200-class nodes with ±3% noise: 8×400G
// NICs, a pair's all_reduce at 360 GB/s busbw, one rail's at 46 GB/s
// (figures of the order of a 2-node HGX H200 all_reduce; the campaign
// only compares them).
func NewFabric(seed uint64) *Fabric {
	return &Fabric{
		NodeBW: 360, RailBW: 46,
		BadNodes: map[string]bool{}, BadLinks: map[string][]int{}, DownNodes: map[string]bool{},
		Slow: 0.5, LinkPull: 0.6, Jitter: 0.03,
		Rand: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
}

// factor is how much of its healthy bandwidth a step measures.
func (f *Fabric) factor(s *Step) float64 {
	x := 1.0
	for _, n := range s.Nodes {
		if f.BadNodes[n] {
			x = min(x, f.Slow)
		}
		for _, r := range f.BadLinks[n] {
			switch {
			case s.Rail < 0:
				x = min(x, f.LinkPull)
			case s.Rail == r:
				x = min(x, f.Slow)
			}
		}
	}
	return x
}

// measurement is what one step of a round measures on the fabric: it
// could not run (down), or its bus bandwidth.
type measurement struct {
	down  bool
	nodes []string
	busbw float64
}

// measure runs round r's steps on the fabric. It draws the noise and the
// flaky measurements, so a round is measured once: Run and Observations
// are two views of it.
func (f *Fabric) measure(r *Round) []measurement {
	ms := make([]measurement, len(r.Steps))
	for i, s := range r.Steps {
		ms[i].nodes = s.Nodes
		for _, n := range s.Nodes {
			ms[i].down = ms[i].down || f.DownNodes[n]
		}
		if ms[i].down {
			continue
		}
		bw := f.NodeBW
		if s.Rail >= 0 {
			bw = f.RailBW
		}
		x := f.factor(s)
		if x == 1 && (f.Flaky > 0 && f.Rand.Float64() < f.Flaky || slices.ContainsFunc(s.Nodes, func(n string) bool { return slices.Contains(f.FlakeIn[r.N], n) })) {
			x = 0.3 + 0.5*f.Rand.Float64()
			f.Flakes++
		}
		ms[i].busbw = bw * x * (1 + f.Jitter*(2*f.Rand.Float64()-1))
	}
	return ms
}

// downErr is the standard error of a step on a node that is down.
const downErr = "rank 8 of 16: cuInit: no CUDA-capable device is detected"

// Run runs round r's steps and returns the round's folder as written.
func (f *Fabric) Run(r *Round) MemFS {
	m := MemFS{}
	for i, x := range f.measure(r) {
		name := ResultsDir + "/" + r.Steps[i].ID
		if x.down {
			m[name+".rc"] = []byte("1\n")
			m[name+".err"] = []byte(downErr + "\n")
			continue
		}
		m[name+".json"] = benchJSON(x.nodes, cmp.Or(f.GPUsPerNode, 8), x.busbw)
		m[name+".rc"] = []byte("0\n")
	}
	return m
}

// Observations runs round r's steps and returns what Observe reads from
// the folder Run would write, without writing and reading it: the fast
// path of Simulate (a campaign of 1,024 nodes writes and parses thousands
// of bench JSON documents). TestSimulatedObservations holds the two equal.
func (f *Fabric) Observations(r *Round) []Observation {
	ms := f.measure(r)
	obs := make([]Observation, len(ms))
	for i, x := range ms {
		name := ResultsDir + "/" + r.Steps[i].ID
		if x.down {
			obs[i] = Observation{Status: Fail, Why: fmt.Sprintf("exit status 1; %s.json: no result; stderr: %s", name, downErr)}
			continue
		}
		// As benchJSON writes it, and BestBusBW picks it (out of place).
		bw, _ := strconv.ParseFloat(fmt.Sprintf("%.3f", x.busbw), 64)
		obs[i] = Observation{Status: Pass, BusBW: bw, Measured: true, Why: fmt.Sprintf("all_reduce %s: busbw %.4g GB/s", collective.FormatSize(simBytes), bw)}
	}
	return obs
}

// simBytes is the size of a simulated step's all_reduce.
const simBytes = 1 << 30

// benchJSON is bench nccl's envelope as rank 0 prints it, with the members
// a campaign reads: one all_reduce row of 1 GiB.
func benchJSON(nodes []string, gpus int, busbw float64) []byte {
	const size = simBytes
	ranks := gpus * len(nodes)
	t := float64(size) / (busbw * 1e3 * float64(ranks) / float64(2*(ranks-1))) // µs
	algbw := float64(size) / t / 1e3
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"schema":"gdrcheck.bench-nccl/v1","run":{"version":"sim","host":"sim","started_at":%q},"results":[],`, time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC).Format(time.RFC3339))
	fmt.Fprintf(&b, `"complete":true,"nccl_version":"2.28.3","measurements":[{"collective":"all_reduce","ranks":%d,"rows":[`, ranks)
	fmt.Fprintf(&b, `{"size_bytes":%d,"count":%d,"type":"float","redop":"sum","root":-1,"out_of_place":{"time_us":%.2f,"algbw_gbs":%.3f,"busbw_gbs":%.3f,"wrong":0},"in_place":{"time_us":%.2f,"algbw_gbs":%.3f,"busbw_gbs":%.3f,"wrong":0}}`,
		size, size/4, t, algbw, busbw, t*1.001, algbw/1.001, busbw/1.001)
	fmt.Fprintf(&b, `],"avg_busbw_gbs":%.3f,"wrong":0}],"job":{"launcher":"slurm","world_size":%d,"ranks":[`, busbw, ranks)
	for r := range ranks {
		if r > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"rank":%d,"host":%q}`, r, nodes[r/gpus])
	}
	b.WriteString("]}}\n")
	return b.Bytes()
}

// Simulate runs a campaign of cfg on the fabric to its findings. Each
// round's results are the observations Record would read from the files
// Run writes (Fabric.Observations), judged as Record judges them;
// SimulateFiles writes and reads the files.
func Simulate(cfg Config, f *Fabric) (*Campaign, *Findings, error) {
	return simulate(cfg, f, func(c *Campaign) error { return c.record(f.Observations(c.Latest()), false) })
}

// SimulateFiles is Simulate through the files: every round's folder is
// written as the round's scripts would (Fabric.Run) and read back with
// Record, the code that reads real results.
func SimulateFiles(cfg Config, f *Fabric) (*Campaign, *Findings, error) {
	return simulate(cfg, f, func(c *Campaign) error { return c.Record(f.Run(c.Latest()), false) })
}

func simulate(cfg Config, f *Fabric, record func(*Campaign) error) (*Campaign, *Findings, error) {
	c, err := New(cfg)
	if err != nil {
		return nil, nil, err
	}
	f.GPUsPerNode = c.Bench.GPUsPerNode
	for {
		if err := record(c); err != nil {
			return c, nil, err
		}
		_, fd, err := c.Plan()
		if err != nil {
			return c, nil, err
		}
		if fd != nil {
			return c, fd, nil
		}
	}
}

// MemFS is a folder in memory: file names (slash-separated) to contents.
type MemFS map[string][]byte

func (m MemFS) Open(name string) (fs.File, error) {
	b, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{Reader: bytes.NewReader(b), name: name, size: int64(len(b))}, nil
}

type memFile struct {
	*bytes.Reader
	name string
	size int64
}

func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{f.name, f.size}, nil }
func (f *memFile) Close() error               { return nil }

type memInfo struct {
	name string
	size int64
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
