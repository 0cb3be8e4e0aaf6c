package ncclog

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

// logGen writes a realistic multi-rank NCCL_DEBUG=INFO log of a given size
// on the fly, from the line kinds of the corpus samples: per-rank init
// lines (version, network, HCAs, GDR, commInit START), channel transport
// lines (P2P/CUMEM/read to the next local GPU, NET/IB/n/GDRDMA[/Shared] to
// GPUs on other hosts), proxy and allocation chatter, collective trace
// lines, long "Trees" lines, a system tree per rank, nccl-tests rows glued
// to INFO lines, lines spliced by concurrent writers, mpirun
// "[1,R]<stdout>:" tags and a few WARN lines. Ranks re-initialise a new
// communicator every epoch, so distinct connections keep growing past the
// caps (the streaming bound is exercised, not just the line loop).
type logGen struct {
	rnd      *rand.Rand
	hosts    int
	perHost  int
	size     int64
	produced int64
	epochLen int64
	epoch    int
	started  []bool
	buf      []byte
	off      int
	op       uint64
	warns    int
}

func newLogGen(size int64, hosts, perHost int) *logGen {
	return &logGen{
		rnd:      rand.New(rand.NewPCG(1, 2)),
		hosts:    hosts,
		perHost:  perHost,
		size:     size,
		epochLen: max(size/16, 1<<20),
		started:  make([]bool, hosts*perHost),
		buf:      make([]byte, 0, 300<<10),
	}
}

func (g *logGen) Read(p []byte) (int, error) {
	if g.off >= len(g.buf) {
		if g.produced >= g.size {
			return 0, io.EOF
		}
		g.fill()
	}
	n := copy(p, g.buf[g.off:])
	g.off += n
	return n, nil
}

func (g *logGen) fill() {
	g.buf, g.off = g.buf[:0], 0
	if e := int(g.produced / g.epochLen); e != g.epoch {
		g.epoch = e
		clear(g.started)
	}
	for len(g.buf) < 256<<10 && g.produced+int64(len(g.buf)) < g.size {
		g.line()
	}
	g.produced += int64(len(g.buf))
}

func (g *logGen) hostName(h int) {
	g.buf = append(g.buf, "gpu-node-"...)
	if h < 1000 {
		g.buf = append(g.buf, '0')
	}
	if h < 100 {
		g.buf = append(g.buf, '0')
	}
	if h < 10 {
		g.buf = append(g.buf, '0')
	}
	g.buf = strconv.AppendInt(g.buf, int64(h), 10)
}

// hdr writes "[1,R]<stdout>:host:pid:tid [dev] NCCL INFO ".
func (g *logGen) hdr(r int, tidOff int, level string) {
	h, l := r/g.perHost, r%g.perHost
	if g.rnd.IntN(2) == 0 {
		g.num("[1,", r)
		g.buf = append(g.buf, "]<stdout>:"...)
	}
	g.hostName(h)
	pid := 20000 + l*7
	g.num(":", pid)
	g.num(":", pid+tidOff)
	g.num(" [", l)
	g.buf = append(g.buf, "] "...)
	g.buf = append(g.buf, level...)
}

const info = "NCCL INFO "

// num writes text, then v in decimal.
func (g *logGen) num(text string, v int) {
	g.buf = strconv.AppendInt(append(g.buf, text...), int64(v), 10)
}

// hex writes text, then v in hexadecimal.
func (g *logGen) hex(text string, v int) {
	g.buf = strconv.AppendInt(append(g.buf, text...), int64(v), 16)
}

func (g *logGen) commID() {
	g.hex("0x5ae77eb5ea4e", 1000+g.epoch)
}

func (g *logGen) busID(l int) {
	g.buf = strconv.AppendInt(g.buf, int64(0x18+l*0x11), 16)
	g.buf = append(g.buf, "000"...)
}

func (g *logGen) initLines(r int) {
	l := r % g.perHost
	n := g.hosts * g.perHost
	tid := 30 + g.epoch
	g.hdr(r, 0, info)
	g.buf = append(g.buf, "NCCL version 2.21.5+cuda12.4\n"...)
	g.hdr(r, 0, info)
	g.buf = append(g.buf, "cudaDriverVersion 12040\n"...)
	g.hdr(r, tid, info)
	g.num("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB eth0:10.0.", r/g.perHost%250)
	g.buf = append(g.buf, ".1<0>\n"...)
	g.hdr(r, tid, info)
	g.buf = append(g.buf, "Using network IB\n"...)
	g.hdr(r, tid, info)
	g.num("DMA-BUF is available on GPU device ", l)
	g.buf = append(g.buf, '\n')
	g.hdr(r, tid, info)
	g.buf = append(g.buf, "NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n"...)
	g.hdr(r, tid, info)
	g.hex("ncclCommInitRank comm 0x55f6", r*4096+g.epoch)
	g.num(" rank ", r)
	g.num(" nranks ", n)
	g.num(" cudaDev ", l)
	g.num(" nvmlDev ", l)
	g.buf = append(g.buf, " busId "...)
	g.busID(l)
	g.buf = append(g.buf, " commId "...)
	g.commID()
	g.buf = append(g.buf, " - Init START\n"...)
	g.hdr(r, tid, info)
	g.hex("comm 0x55f6", r*4096+g.epoch)
	g.num(" rank ", r)
	g.num(" nRanks ", n)
	g.num(" nNodes ", g.hosts)
	g.num(" localRanks 8 localRank ", l)
	g.buf = append(g.buf, " MNNVL 0\n"...)
	g.hdr(r, tid, info)
	g.buf = append(g.buf, "32 coll channels, 32 collnet channels, 16 nvls channels, 32 p2p channels, 2 p2p channels per peer\n"...)
	// the system tree, as every rank prints it
	g.hdr(r, tid, info)
	g.buf = append(g.buf, "=== System : maxBw 48.0 totalBw 370.8 ===\n"...)
	g.hdr(r, tid, info)
	g.buf = append(g.buf, "CPU/0-0 (1/2/-1)\n"...)
	for i := 0; i < 2; i++ {
		g.hdr(r, tid, info)
		g.num("+ PCI[48.0] - PCI/0-1", i)
		g.buf = append(g.buf, "000 (1000c01010000000)\n"...)
		g.hdr(r, tid, info)
		g.buf = append(g.buf, "              + PCI[48.0] - GPU/0-"...)
		g.busID(i)
		g.num(" (", i)
		g.buf = append(g.buf, ")\n"...)
		g.hdr(r, tid, info)
		g.buf = append(g.buf, "                            + NVL[370.8] - NVS/0-0\n"...)
		g.hdr(r, tid, info)
		g.hex("              + PCI[48.0] - NIC/0-", 0x1a+i)
		g.buf = append(g.buf, "000\n"...)
		g.hdr(r, tid, info)
		g.num("                            + NET[50.0] - NET/0-", i)
		g.buf = append(g.buf, " (0/d4f9fc0003ae6d94/1/50.000000)\n"...)
	}
	g.hdr(r, tid, info)
	g.buf = append(g.buf, "==========================================\n"...)
}

func (g *logGen) channel(r int) {
	h, l := r/g.perHost, r%g.perHost
	ch := g.rnd.IntN(32)
	tid := 30 + g.epoch
	g.hdr(r, tid, info)
	g.buf = append(g.buf, "Channel "...)
	if ch < 10 {
		g.buf = append(g.buf, '0')
	}
	g.buf = strconv.AppendInt(g.buf, int64(ch), 10)
	g.buf = append(g.buf, "/0 : "...)
	peerRank := func(p int) {
		g.buf = strconv.AppendInt(g.buf, int64(p), 10)
		g.num("[", p%g.perHost)
		g.buf = append(g.buf, ']')
	}
	if g.rnd.IntN(10) < 4 {
		peer := h*g.perHost + (l+1)%g.perHost
		peerRank(r)
		g.buf = append(g.buf, " -> "...)
		peerRank(peer)
		g.buf = append(g.buf, " via P2P/CUMEM/read\n"...)
		return
	}
	peer := ((h+1+g.rnd.IntN(8))%g.hosts)*g.perHost + l
	if g.rnd.IntN(2) == 0 {
		peerRank(r)
		g.buf = append(g.buf, " -> "...)
		peerRank(peer)
		g.buf = append(g.buf, " [send] via NET/IB/"...)
	} else {
		peerRank(peer)
		g.buf = append(g.buf, " -> "...)
		peerRank(r)
		g.buf = append(g.buf, " [receive] via NET/IB/"...)
	}
	g.buf = strconv.AppendInt(g.buf, int64(l/2), 10)
	if g.rnd.IntN(10) == 0 {
		g.buf = append(g.buf, "/GDRDMA/Shared\n"...)
	} else {
		g.buf = append(g.buf, "/GDRDMA\n"...)
	}
}

func (g *logGen) line() {
	n := g.hosts * g.perHost
	r := g.rnd.IntN(n)
	if !g.started[r] {
		g.started[r] = true
		g.initLines(r)
		return
	}
	l := r % g.perHost
	k := g.rnd.IntN(1000)
	switch {
	case k < 300:
		g.channel(r)
	case k < 450:
		g.hdr(r, 6, info)
		g.num("New proxy send connection ", g.rnd.IntN(64))
		g.num(" from local rank ", l)
		g.buf = append(g.buf, ", transport 2\n"...)
	case k < 600:
		g.hdr(r, 30, info)
		g.buf = append(g.buf, "channel.cc:42 Cuda Alloc Size 608 pointer 0x7f1af"...)
		g.buf = strconv.AppendUint(g.buf, g.rnd.Uint64()&0xffffff, 16)
		g.buf = append(g.buf, "00\n"...)
	case k < 700:
		g.op++
		g.hdr(r, 0, info)
		g.buf = append(g.buf, "AllReduce: opCount "...)
		g.buf = strconv.AppendUint(g.buf, g.op, 16)
		g.num(" sendbuff 0x7f1b0e800000 recvbuff 0x7f1b0e800000 count 1048576 datatype 7 op 0 root 0 comm 0x13174540 [nranks=", n)
		g.buf = append(g.buf, "] stream 0x55d5f4d50b60\n"...)
	case k < 760:
		g.hdr(r, 6, info)
		g.buf = append(g.buf, "NET/IB: Dev 1 Port 1 qpn 3038 mtu 5 LID 37\n"...)
	case k < 800:
		g.hdr(r, 30, info)
		g.buf = append(g.buf, "Trees"...)
		for i := 0; i < 32; i++ {
			g.num(" [", i)
			g.buf = append(g.buf, "] 1/-1/-1->0->-1"...)
		}
		g.buf = append(g.buf, '\n')
	case k < 830:
		g.hdr(r, 30, info)
		g.buf = append(g.buf, "GPU Direct RDMA Enabled for GPU "...)
		g.busID(l)
		g.num(" / HCA ", l/2)
		g.buf = append(g.buf, " (distance 4 <= 4), read 1\n"...)
	case k < 850:
		// an nccl-tests row with an INFO line glued to it
		g.buf = append(g.buf, "     8388608       2097152     float     sum      -1"...)
		g.hdr(r, 0, info)
		g.buf = append(g.buf, "AllReduce: opCount 0 sendbuff 0x720000000 recvbuff 0x920000000 count 2097152 datatype 7 op 0 root 0\n"...)
	case k < 855:
		// two writers spliced: a channel line cut short, then a whole one
		start := len(g.buf)
		g.channel(r)
		cut := start + (len(g.buf)-start)*(60+g.rnd.IntN(36))/100
		g.buf = g.buf[:cut]
		g.channel((r + 1) % n)
	case k < 856 && g.warns < 50:
		g.warns++
		g.hdr(r, 90, "transport/net_ib.cc:1615 NCCL WARN ")
		g.buf = append(g.buf, "NET/IB : Got completion from peer 10.0.0.2<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)\n"...)
	default:
		g.hdr(r, 30, info)
		g.num("Connected to proxy localRank ", l)
		g.buf = append(g.buf, " -> connection 0x7f3fdc000d20\n"...)
	}
}

// heapPeak samples HeapInuse until stop is closed.
func heapPeak(stop <-chan struct{}, every time.Duration) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

func analyzeGenerated(tb testing.TB, size int64, hosts, perHost int) (*Report, []result.Result, uint64) {
	tb.Helper()
	runtime.GC()
	stop := make(chan struct{})
	peak := heapPeak(stop, 20*time.Millisecond)
	r, vs, err := Analyze("generated.log", newLogGen(size, hosts, perHost))
	close(stop)
	if err != nil {
		tb.Fatal(err)
	}
	return r, vs, <-peak
}

// TestGeneratedLog analyses a 48 MB generated log: the verdicts must be what
// the generator put in, and the heap must stay far under the 200 MB bound.
// GDRCHECK_BIGLOG=1 makes it the full 1 GB run.
func TestGeneratedLog(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 48 MB")
	}
	size := int64(48 << 20)
	if os.Getenv("GDRCHECK_BIGLOG") == "1" {
		size = 1 << 30
	}
	start := time.Now()
	r, vs, peak := analyzeGenerated(t, size, 256, 8)
	el := time.Since(start)
	t.Logf("%d MB in %v (%.0f MB/s incl. generation), peak HeapInuse %.1f MB, %d lines, %d connections tracked, %d untracked",
		size>>20, el, float64(size)/1e6/el.Seconds(), float64(peak)/1e6, r.Lines, r.Channels.Connections, r.Channels.ConnectionsUntracked)
	if peak > 200<<20 {
		t.Errorf("peak HeapInuse %d MB, want < 200 MB", peak>>20)
	}
	want := map[string][2]string{
		"nccl.gdr": {"pass", "GDRDMA"}, "nccl.p2p": {"pass", "P2P"}, "nccl.net": {"pass", "RDMANetwork"},
		"nccl.version": {"pass", "SameVersion"}, "nccl.errors": {"fail", "NCCLErrors"}, "nccl.channels": {"pass", "ChannelCount"},
		"nccl.topology": {"pass", "TopologyConsistent"}, "nccl.nvls": {"pass", "NVLSInUse"}, "nccl.diag": {"skip", "NoDiagnostics"},
	}
	for _, x := range vs {
		w, ok := want[x.ID]
		if !ok {
			t.Errorf("unexpected verdict %s", x.ID)
			continue
		}
		if string(x.Status) != w[0] || x.Reason != w[1] {
			t.Errorf("%s %s = %s %s, want %s %s: %s", x.ID, x.Subject, x.Status, x.Reason, w[0], w[1], x.Message)
		}
	}
	if len(r.Hosts) != 256 || r.Channels.GarbledLines == 0 || r.SplicedLines == 0 {
		t.Errorf("%d hosts, %d garbled channel lines, %d spliced lines", len(r.Hosts), r.Channels.GarbledLines, r.SplicedLines)
	}
	if r.Channels.InterNode == 0 || r.Channels.IntraNode == 0 || r.Channels.UnknownLocality != 0 {
		t.Errorf("locality: intra %d inter %d unknown %d", r.Channels.IntraNode, r.Channels.InterNode, r.Channels.UnknownLocality)
	}
	checkInvariants(t, "generated.log", r, vs)
}

// BenchmarkAnalyze1GB streams a generated 1 GB log of 2048 ranks on 256
// hosts through Analyze (generation included; see BenchmarkGenerate1GB),
// reporting MB/s and the peak HeapInuse. Run with -benchtime=1x.
func BenchmarkAnalyze1GB(b *testing.B) { benchGenerated(b, 256, 8) }

// BenchmarkAnalyzeCaps is review D4's input: a generated 1 GB log of 50,000
// hosts with 4 ranks each (200,000 processes), beyond every cap on hosts,
// processes and connections. Run with -benchtime=1x under /usr/bin/time
// for the peak RSS.
func BenchmarkAnalyzeCaps(b *testing.B) { benchGenerated(b, 50000, 4) }

func benchGenerated(b *testing.B, hosts, perHost int) {
	const size = 1 << 30
	b.SetBytes(size)
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		_, _, p := analyzeGenerated(b, size, hosts, perHost)
		peak = max(peak, p)
	}
	b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
}

// BenchmarkGenerate1GB is the cost of the generator alone.
func BenchmarkGenerate1GB(b *testing.B) {
	const size = 1 << 30
	b.SetBytes(size)
	for i := 0; i < b.N; i++ {
		if _, err := io.Copy(io.Discard, newLogGen(size, 256, 8)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyzeSample is the largest corpus sample (a full 16-rank
// AWS p5 log, 320 kB), analysed from memory.
func BenchmarkAnalyzeSample(b *testing.B) {
	body := readertest.Body(b, "aws-p5-2node-efa-ofi-gdrdma-full.txt")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := Analyze("aws.log", bytes.NewReader(body)); err != nil {
			b.Fatal(err)
		}
	}
}
