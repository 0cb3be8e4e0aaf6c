package dossier

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/collect/sysinfo"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// hgxJob is a job of two HGX nodes: ranks 0 and 1 on this one
// (hgx-h200-01, GPUs 0 and 1), ranks 2 and 3 on hgx-h200-02. Rank 0's
// connections to rank 2 are GPU Direct RDMA; rank 1's to rank 3 are
// stagedGPU1 (host-staged) or GDRDMA as well.
func hgxJob(stagedGPU1 bool) JobInput {
	tr1 := "NET/IB/1/GDRDMA"
	if stagedGPU1 {
		tr1 = "NET/IB/1"
	}
	rec := func(from, to int, tr, host string, dev int) ncclog.ChannelRecord {
		return ncclog.ChannelRecord{From: from, To: to, Transport: tr, Class: "net", GDRDMA: strings.HasSuffix(tr, "/GDRDMA"), NetDev: dev, Host: host}
	}
	logs := &ncclog.Report{Hosts: []ncclog.Host{
		{Name: "hgx-h200-01", IBDevices: []ncclog.IBDevice{{Index: 0, Name: "mlx5_3", Port: 1}, {Index: 1, Name: "mlx5_4", Port: 1}}},
		{Name: "hgx-h200-02", IBDevices: []ncclog.IBDevice{{Index: 0, Name: "mlx5_3", Port: 1}}},
	}}
	logs.Channels.Records = []ncclog.ChannelRecord{
		rec(0, 2, "NET/IB/0/GDRDMA", "hgx-h200-01", 0),
		rec(2, 0, "NET/IB/0/GDRDMA", "hgx-h200-02", 0),
		rec(1, 3, tr1, "hgx-h200-01", 1),
		{From: 0, To: 1, Transport: "P2P/CUMEM", Class: "p2p", NetDev: -1, Host: "hgx-h200-01"},
	}
	return JobInput{Name: "job1", Path: "job/results.json", Command: "bench-nccl", Host: "hgx-h200-01", Complete: true, WorldSize: 4, Split: "all",
		Ranks: []JobInputRank{{Rank: 0, Host: "hgx-h200-01", BusID: "00000000:18:00.0"}, {Rank: 1, Host: "hgx-h200-01", BusID: "0000:3a:00.0"},
			{Rank: 2, Host: "hgx-h200-02", BusID: "0000:18:00.0"}, {Rank: 3, Host: "hgx-h200-02", BusID: "0000:3a:00.0"}},
		Logs: logs, Rows: 10, Checked: true,
		Results: []result.Result{{ID: "bench.nccl", Status: result.Pass, Subject: "all_reduce", Message: "at 92% of the model for 2 nodes"}}}
}

// hgxTopology judges the HGX fixture host with every check and places the
// job on it.
func hgxTopology(t *testing.T, in JobInput, gdr bool) (*topology.Host, Job, []result.Result, Topology) {
	t.Helper()
	root := hostRoot(t, "hgx-h200-8gpu-10nic.host")
	h, err := discover.Discover(context.Background(), discover.WithRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	facts := sysinfo.Collect(context.Background(), root, h, sysinfo.Options{})
	rep := checks.Run(context.Background(), &checks.Env{Host: h, Facts: facts, Now: at}, checks.All(), checks.Options{})
	j, rs, err := NewJob(in, JobContext{Self: h.Hostname, Host: h, GDR: gdr, PeerMem: -1})
	if err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(rep.Results), rs...)
	return h, j, rs, NewTopology(h, h.Summarize(), all, Measurements{}, nil, []Job{j})
}

func hop(dp DataPath, kind string) Hop {
	for _, h := range dp.Hops {
		if h.Kind == kind {
			return h
		}
	}
	return Hop{}
}

func find(rs []result.Result, id, subject string) result.Result {
	for _, r := range rs {
		if r.ID == id && strings.HasPrefix(r.Subject, subject) {
			return r
		}
	}
	return result.Result{}
}

// A job's ranks are placed on this node's GPUs by bus id; their fabric
// hop is measured and names the peer node, transport and NIC; GDRDMA in
// NCCL's log measures the registration hop, host-staged traffic fails it
// (or skips when the profile does not require GPU Direct RDMA).
func TestJobOnHGX(t *testing.T) {
	for _, c := range []struct {
		name         string
		staged, gdr  bool
		gpu1Used     string
		gpu1Reg      result.Proof
		gpu1GDRState result.Status
	}{
		{"every rank GDRDMA", false, true, GDRUsedDirect, result.ProofMeasured, result.Pass},
		{"GPU1 host-staged, GDR required", true, true, GDRUsedHostStaged, result.ProofFailed, result.Fail},
		{"GPU1 host-staged, GDR not required", true, false, GDRUsedHostStaged, result.ProofChecked, result.Skip},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, j, rs, top := hgxTopology(t, hgxJob(c.staged), c.gdr)
			if len(j.Ranks) != 2 || j.Ranks[0].GPU != 0 || j.Ranks[1].GPU != 1 {
				t.Fatalf("ranks: %+v", j.Ranks)
			}
			if !slices.Equal(j.Nodes, []string{"hgx-h200-01", "hgx-h200-02"}) {
				t.Errorf("nodes %q", j.Nodes)
			}
			dp0, dp1 := top.DataPaths[0], top.DataPaths[1]
			f := hop(dp0, HopFabric)
			if f.Proof != result.ProofMeasured || f.Status != result.Pass || f.Name != "NET/IB to hgx-h200-02" ||
				!strings.Contains(f.Detail, "job1 rank 0 to hgx-h200-02 over NET/IB from mlx5_3:1") {
				t.Errorf("GPU0 fabric: %+v", f)
			}
			if r := hop(dp0, HopRegistration); r.Proof != result.ProofMeasured || dp0.GDRUsed != GDRUsedDirect {
				t.Errorf("GPU0 registration: %+v (%s)", r, dp0.GDRUsed)
			}
			if r := hop(dp1, HopRegistration); r.Proof != c.gpu1Reg || dp1.GDRUsed != c.gpu1Used {
				t.Errorf("GPU1 registration: %+v (%s), want %s", r, dp1.GDRUsed, c.gpu1Reg)
			}
			if r := find(rs, JobGDRID, "job1 rank 1 (GPU1)"); r.Status != c.gpu1GDRState {
				t.Errorf("gdr.used of rank 1: %+v", r)
			}
			// GPUs that took no part in the job reach no fabric.
			if f := hop(top.DataPaths[2], HopFabric); f.Proof != result.ProofNotExercised {
				t.Errorf("GPU2 fabric: %+v", f)
			}
			if r := find(rs, "bench.nccl", "job1 all_reduce"); r.Source != "job" || r.Status != result.Pass {
				t.Errorf("the job's own verdict: %+v", r)
			}
		})
	}
}

// What the job proves of the traffic: checked data that arrived correct
// measures the fabric; unchecked and unjudged traffic proves nothing; wrong
// data fails it.
func TestJobTrafficProof(t *testing.T) {
	for _, c := range []struct {
		name    string
		edit    func(*JobInput)
		proof   result.Proof
		dataSts result.Status
	}{
		{"checked and judged", func(*JobInput) {}, result.ProofMeasured, result.Pass},
		{"checked, no model", func(in *JobInput) { in.Results[0].Status = result.Unknown }, result.ProofMeasured, result.Pass},
		{"unchecked, no model", func(in *JobInput) { in.Checked = false; in.Results[0].Status = result.Unknown }, result.ProofNotExercised, result.Unknown},
		{"unchecked, judged", func(in *JobInput) { in.Checked = false }, result.ProofMeasured, result.Unknown},
		{"wrong data", func(in *JobInput) { in.Wrong = 3 }, result.ProofFailed, result.Fail},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := hgxJob(false)
			c.edit(&in)
			_, _, rs, top := hgxTopology(t, in, true)
			if f := hop(top.DataPaths[0], HopFabric); f.Proof != c.proof {
				t.Errorf("fabric: %+v, want %s", f, c.proof)
			}
			if r := find(rs, JobDataID, "job1"); r.Status != c.dataSts {
				t.Errorf("job.data: %+v", r)
			}
		})
	}
}

// In a split job the log's rank numbers are the groups': the peers are
// every other node and how GDR was used is unknown, never guessed.
func TestJobSplitNotGuessed(t *testing.T) {
	in := hgxJob(false)
	in.Split = "rail"
	_, j, rs, _ := hgxTopology(t, in, true)
	if j.Ranks[0].GDR != GDRUsedUnknown || !slices.Equal(j.Ranks[0].Peers, []string{"hgx-h200-02"}) {
		t.Errorf("rank 0: %+v", j.Ranks[0])
	}
	if r := find(rs, JobGDRID, "job1 rank 0"); r.Status != result.Unknown || r.Reason != "NotLogged" {
		t.Errorf("gdr.used: %+v", r)
	}
}

// A job none of whose ranks ran here is not this node's.
func TestJobElsewhere(t *testing.T) {
	in := hgxJob(false)
	for i := range in.Ranks {
		in.Ranks[i].Host = "other-" + in.Ranks[i].Host
	}
	_, _, err := NewJob(in, JobContext{Self: "hgx-h200-01", GDR: true})
	if err == nil || !strings.Contains(err.Error(), "none of its 4 ranks ran on this node (hgx-h200-01): they ran on other-hgx-h200-01, other-hgx-h200-02") {
		t.Errorf("err %v", err)
	}
}

func TestSameHost(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"a", "a", true}, {"A", "a", true}, {"a.example.com", "a", true}, {"a", "a.example.com", true},
		{"a.x.com", "a.y.com", false}, {"a", "ab", false}, {"", "", false}, {"a", "", false},
	} {
		if got := SameHost(c.a, c.b); got != c.want {
			t.Errorf("SameHost(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

func hostRoot(t *testing.T, name string) machine.Root {
	t.Helper()
	return fakehost.Root(t, "../../../testdata/hosts/"+name)
}

// A loopback bench rdma measures the registration and the NIC of the
// pairs it ran, not the port or the fabric; a cross-node one measures
// those too. Only GPU-memory runs measure the registration.
func TestRDMAPairsOnHGX(t *testing.T) {
	for _, c := range []struct {
		name              string
		peer              string
		mem               []string
		reg, port, fabric result.Proof
	}{
		{"loopback, GPU memory and host control", "", []string{MemHost, MemPeerMem}, result.ProofMeasured, result.ProofChecked, result.ProofNotExercised},
		{"loopback, host control only", "", []string{MemHost}, result.ProofChecked, result.ProofChecked, result.ProofNotExercised},
		{"cross-node", "hgx-h200-02 GPU0-mlx5_3", []string{MemHost, MemDMABuf}, result.ProofMeasured, result.ProofMeasured, result.ProofMeasured},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := JobInput{Name: "job1", Command: "bench-rdma", Host: "hgx-h200-01", Complete: true,
				Pairs: []JobInputPair{{BusID: "0000:18:00.0", NIC: "mlx5_3", Port: 1, Peer: c.peer, Subject: "GPU0-mlx5_3", Memory: c.mem}}}
			for _, m := range c.mem {
				in.Results = append(in.Results, result.Result{ID: "bench.rdma", Status: result.Pass, Subject: "GPU0-mlx5_3/" + m})
			}
			_, j, _, top := hgxTopology(t, in, true)
			if len(j.Pairs) != 1 || j.Pairs[0].GPU != 0 || len(j.Pairs[0].Results) != len(c.mem) {
				t.Fatalf("pairs %+v", j.Pairs)
			}
			dp := top.DataPaths[0]
			if h := hop(dp, HopRegistration); h.Proof != c.reg {
				t.Errorf("registration %+v, want %s", h, c.reg)
			}
			if h := hop(dp, HopNIC); h.Proof != result.ProofMeasured {
				t.Errorf("NIC %+v", h)
			}
			if h := hop(dp, HopPort); h.Proof != c.port {
				t.Errorf("port %+v, want %s", h, c.port)
			}
			if h := hop(dp, HopFabric); h.Proof != c.fabric || (c.peer != "" && !strings.Contains(h.Detail, c.peer)) {
				t.Errorf("fabric %+v, want %s", h, c.fabric)
			}
		})
	}
}

// Which registration NCCL's GDRDMA traffic used, from its log and the
// node's modules, judged against the site profile's gdr.mode.
func TestJobRegistrationMode(t *testing.T) {
	zero := 0
	for _, c := range []struct {
		name    string
		dmabuf  bool // NCCL printed "DMA-BUF is available on GPU device 0"
		peermem int
		mode    string
		reg     string
		st      result.Status // of gdr.mode-used; "" none
	}{
		{"dma-buf, peermem not loaded, wanted", true, 0, "dmabuf", RegDMABuf, result.Pass},
		{"dma-buf where peermem is wanted", true, 0, "peermem", RegDMABuf, result.Fail},
		{"no DMA-BUF line: peermem, dma-buf wanted", false, 1, "dmabuf", RegPeerMem, result.Fail},
		{"no DMA-BUF line, modules unknown: peermem", false, -1, "peermem", RegPeerMem, result.Pass},
		{"either could be", true, 1, "dmabuf", RegEither, result.Unknown},
		{"no mode in the profile", true, 0, "any", RegDMABuf, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := hgxJob(false)
			in.Logs.Ranks = []ncclog.Rank{{Rank: 0, NRanks: 4, Host: "hgx-h200-01", CUDADev: &zero}, {Rank: 0, NRanks: 2, Host: "hgx-h200-02", CUDADev: &zero}}
			if c.dmabuf {
				in.Logs.Hosts[0].DMABufGPUs = []int{0}
			}
			h := hgxHost(t)
			j, rs, err := NewJob(in, JobContext{Self: h.Hostname, Host: h, GDR: true, Mode: c.mode, PeerMem: c.peermem})
			if err != nil {
				t.Fatal(err)
			}
			if got := j.Ranks[0].Registration; got != c.reg {
				t.Errorf("registration %q, want %q", got, c.reg)
			}
			r := find(rs, JobModeID, "job1 rank 0")
			if r.Status != c.st {
				t.Errorf("gdr.mode-used %+v, want %q", r, c.st)
			}
		})
	}
	// perftest's runs say which path they used.
	h := hgxHost(t)
	in := JobInput{Name: "job2", Command: "bench-rdma", Host: h.Hostname,
		Pairs: []JobInputPair{{BusID: "0000:18:00.0", NIC: "mlx5_3", Port: 1, Subject: "GPU0-mlx5_3", Memory: []string{MemHost, MemPeerMem}}}}
	_, rs, err := NewJob(in, JobContext{Self: h.Hostname, Host: h, GDR: true, Mode: "dmabuf"})
	if r := find(rs, JobModeID, "job2 GPU0-mlx5_3"); err != nil || r.Status != result.Fail || !strings.Contains(r.Message, "only register GPU memory through nvidia-peermem, not dma-buf") {
		t.Errorf("perftest pair: %v %+v", err, r)
	}
}

func hgxHost(t *testing.T) *topology.Host {
	t.Helper()
	h, err := discover.Discover(context.Background(), discover.WithRoot(hostRoot(t, "hgx-h200-8gpu-10nic.host")))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A degraded NVLink bundle is drawn on the GPU links it belongs to, not
// on the GPU's memory hop; the inventory says how many NVLinks the GPU
// should have, since the driver's total counts only those it reports.
func TestNVLinkEvidenceOnTheLink(t *testing.T) {
	r := fixtureReport(t, "../../../testdata/hosts/a100sxm-4gpu-nvlink-degraded.host")
	for _, dp := range r.Topology.DataPaths {
		for _, ev := range dp.Hops[0].Evidence {
			if strings.HasPrefix(ev, RefResult+"nvlink.") {
				t.Errorf("GPU%d memory hop cites %s", dp.GPU, ev)
			}
		}
	}
	var link GPULink
	for _, l := range r.Topology.GPULinks {
		if l.A == 2 && l.B == 3 {
			link = l
		}
	}
	if link.Status != result.Fail || !slices.Contains(link.Evidence, RefResult+"nvlink.state GPU2") {
		t.Errorf("GPU2-GPU3: %+v", link)
	}
	if g := r.Inventory.GPUs[2]; g.NVLinksActive != 10 || g.NVLinksExpected != 12 {
		t.Errorf("GPU2 NVLinks %d active, %d expected", g.NVLinksActive, g.NVLinksExpected)
	}
}
