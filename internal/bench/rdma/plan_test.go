package rdma

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

func host(t *testing.T, fixture string, edit func(string) string) *topology.Host {
	t.Helper()
	b, err := os.ReadFile("../../../testdata/hosts/" + fixture + ".host")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if edit != nil {
		text = edit(text)
	}
	spec, err := fakehost.Parse(fixture, strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	h, err := discover.Discover(context.Background(), discover.WithRoot(fakehost.MaterializeRoot(t, spec)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestParsePairs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []PairSpec
		err  string
	}{
		{"0:mlx5_3", []PairSpec{{0, "mlx5_3"}}, ""},
		{"0:mlx5_3, 7:mlx5_11", []PairSpec{{0, "mlx5_3"}, {7, "mlx5_11"}}, ""},
		{"mlx5_3", nil, "item 1"},
		{"0:mlx5_3,x:mlx5_4", nil, "item 2"},
		{"-1:mlx5_3", nil, "item 1"},
		{"0:", nil, "item 1"},
	} {
		got, err := ParsePairs(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	h := host(t, "hgx-h200-8gpu-10nic", nil)
	for _, tc := range []struct {
		o   Options
		err string
	}{
		{Options{Rails: []int{0}}, "--rails and --concurrent are for --mode cross-node"},
		{Options{Concurrent: true}, "--mode cross-node"},
		{Options{Mode: ModeCrossNode, Rails: []int{8}}, "--rails 8: this host has rails 0..7"},
		{Options{Mode: "ring"}, "--mode"},
		{Options{Test: "ib_atomic_bw"}, "--test"},
		{Options{Size: -1}, "-s"},
		{Options{TCPPort: 70000}, "--tcp-port"},
		{Options{TCPPort: 65535}, "past 65535"},
		{Options{MTU: 1500}, "-m 1500"},
		{Options{QPs: -2}, "counts"},
		{Options{Pairs: []PairSpec{{8, "mlx5_3"}}}, "no GPU 8"},
		{Options{Pairs: []PairSpec{{0, "mlx5_99"}}}, "no RDMA device"},
	} {
		if _, err := Build(h, tc.o, nil); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: err %v, want %q", tc.o, err, tc.err)
		}
	}
}

// Both registration paths: a peermem run and a dma-buf run per pair, NCCL's
// (dma-buf) marked; a sibling port up makes a two-NIC loopback; a port
// down and a node with no registration path are not run.
func TestBuildPaths(t *testing.T) {
	up := func(s string) string { return strings.Replace(s, " state=DOWN phys=Disabled", "", 1) }
	h := host(t, "hgx-h200-8gpu-10nic", up)
	p, err := Build(h, Options{GIDIndex: 3, Pairs: []PairSpec{{3, "mlx5_0"}, {0, "mlx5_3"}}, Registration: Registration{PeerMem: "nvidia_peermem", DMABuf: true, Known: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.NCCLPath != MemDMABuf {
		t.Errorf("NCCL path %q", p.NCCLPath)
	}
	e := p.Entries[0]
	if e.Mode != LoopTwoNICs || e.ServerNIC != "mlx5_1" || e.GPUBusID != "0000:5c:00.0" || e.Skip != "" {
		t.Errorf("sibling loopback: %+v", e)
	}
	var mems []string
	for _, r := range e.Runs {
		mems = append(mems, r.Memory)
		if r.NCCL != (r.Memory == MemDMABuf) {
			t.Errorf("%s marked NCCL %v", r.Memory, r.NCCL)
		}
	}
	if !slices.Equal(mems, []string{MemPeerMem, MemDMABuf, MemHost}) {
		t.Errorf("runs %v", mems)
	}
	srv, cli := e.Runs[1].Server.Line(), e.Runs[1].Client.Line()
	for _, want := range []string{"CUDA_DEVICE_ORDER=PCI_BUS_ID ib_write_bw -d mlx5_1 -i 1", "--use_cuda=3 --use_cuda_dmabuf", "-x 3"} {
		if !strings.Contains(srv, want) {
			t.Errorf("server %q lacks %q", srv, want)
		}
	}
	if !strings.HasSuffix(cli, "127.0.0.1") || !strings.Contains(cli, "-d mlx5_0") {
		t.Errorf("client %q", cli)
	}
	// InfiniBand gets no GID index; ports are distinct.
	if strings.Contains(p.Entries[1].Runs[0].Server.Line(), "-x") || p.Entries[1].Mode != LoopOneNIC {
		t.Errorf("IB pair: %s, %s", p.Entries[1].Runs[0].Server.Line(), p.Entries[1].Mode)
	}
	seen := map[int]bool{}
	for _, e := range p.Entries {
		for _, r := range e.Runs {
			if seen[r.TCPPort] {
				t.Errorf("port %d twice", r.TCPPort)
			}
			seen[r.TCPPort] = true
		}
	}

	// The sibling's port down: one NIC; the pair's own port down: not run.
	h = host(t, "hgx-h200-8gpu-10nic", nil)
	p, err = Build(h, Options{Pairs: []PairSpec{{3, "mlx5_0"}, {3, "mlx5_1"}}, Registration: Registration{PeerMem: "nvidia_peermem", Known: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Entries[0].Mode != LoopOneNIC || p.Entries[1].Skip == "" || !strings.Contains(p.Entries[1].Skip, "down") {
		t.Errorf("down: %+v / %+v", p.Entries[0], p.Entries[1])
	}
	if rs := Judge([]PairResult{{Entry: p.Entries[1]}}, DefaultJudging); len(rs) != 1 || rs[0].Status != result.Skip {
		t.Errorf("a pair not run: %+v", rs)
	}
	// No path at all: every pair not run, and it says why.
	p, err = Build(h, Options{Registration: Registration{Known: true, Why: "driver 470"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 8 || !strings.Contains(p.Entries[0].Skip, "gdr.kernel-module") {
		t.Errorf("no registration: %d entries, %q", len(p.Entries), p.Entries[0].Skip)
	}
	// The default pairing: one pair per GPU, GPU i in bus order.
	for i, e := range p.Entries {
		if e.GPU != i || i > 0 && e.GPUBusID <= p.Entries[i-1].GPUBusID {
			t.Errorf("entry %d: GPU %d %s", i, e.GPU, e.GPUBusID)
		}
	}
}

func TestJudge(t *testing.T) {
	e := Entry{GPU: 0, GPUBusID: "0000:18:00.0", NIC: "mlx5_0", Port: 1, Level: "PIX", Expect: Expectation{LineGbps: 400, Source: "t"},
		Runs: []Run{{Server: Cmd{Tool: WriteBW}}}}
	sys := e
	sys.Level = "SYS"
	sys.Expect = Expectation{LineGbps: 400, HostGbps: 390, GPUGbps: 180, Source: "model"}
	for _, tc := range []struct {
		name      string
		e         Entry
		gpu, host float64
		want      string
	}{
		{"at rate", e, 390, 392, "AtRate"},
		{"below rate, as host", e, 300, 310, "BelowRate"},
		{"staged", e, 140, 381, "GDRStaged"},
		{"through the CPU as the model says", sys, 170, 385, "AtRate"},
		{"through the CPU, worse than the model", sys, 90, 385, "GDRStaged"},
		{"rate unknown", Entry{GPU: 0, NIC: "mlx5_0", Runs: e.Runs}, 100, 0, "RateUnknown"},
	} {
		outs := []Outcome{{Memory: MemPeerMem, Gbps: tc.gpu}}
		if tc.host > 0 {
			outs = append(outs, Outcome{Memory: MemHost, Gbps: tc.host})
		}
		rs := Judge([]PairResult{{Entry: tc.e, Outcomes: outs}}, DefaultJudging)
		if rs[0].Reason != tc.want {
			t.Errorf("%s: %s %s: %s", tc.name, rs[0].Status, rs[0].Reason, rs[0].Message)
		}
		if tc.want == "GDRStaged" && (rs[0].Status != result.Fail || !strings.Contains(rs[0].Remedy, "pcie.acs")) {
			t.Errorf("%s: %+v", tc.name, rs[0])
		}
		if tc.want == "RateUnknown" && rs[0].Status != result.Unknown {
			t.Errorf("%s: %s", tc.name, rs[0].Status)
		}
	}
}

// No NIC, no GPU: an empty plan that says why.
func TestBuildNothing(t *testing.T) {
	p, err := Build(&topology.Host{}, Options{}, nil)
	if err != nil || len(p.Entries) != 0 || len(p.Notes) == 0 || !strings.Contains(p.Notes[0], "no RDMA NIC") {
		t.Errorf("%+v %v", p, err)
	}
}
