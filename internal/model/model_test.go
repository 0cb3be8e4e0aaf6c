package model

import (
	"math"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collective"
)

// near reports whether got is within rel (relative) of want.
func near(got, want, rel float64) bool {
	if want == 0 {
		return math.Abs(got) < 1e-9
	}
	return math.Abs(got-want) <= rel*math.Abs(want)
}

func mustSystem(t *testing.T, p Params) System {
	t.Helper()
	s, err := NewSystem(p)
	if err != nil {
		t.Fatalf("NewSystem(%+v): %v", p, err)
	}
	return s
}

func algo(t *testing.T, ps []Prediction, a Algorithm) Prediction {
	t.Helper()
	for _, p := range ps {
		if p.Algorithm == a {
			return p
		}
	}
	t.Fatalf("no %s among %v", a, ps)
	return Prediction{}
}

func on() *bool { t := true; return &t }

// Predict reads the collective as collective.Parse does and predicts for
// the canonical one (a spelling such as "allreduce" used to be predicted
// with a busbw factor of 1).
func TestPredictCanonicalCollective(t *testing.T) {
	s := mustSystem(t, Params{GPU: "h100", GPUsPerNode: 8})
	want, err := Expect(s, collective.AllReduce, 8*gib)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []collective.Collective{"allreduce", "all-reduce", "all_reduce_perf"} {
		got, err := Expect(s, name, 8*gib)
		if err != nil || got != want {
			t.Errorf("Expect(%q) = %+v, %v; want %+v", name, got, err, want)
		}
	}
	if _, err := Expect(s, "allreduce2", 8*gib); err == nil {
		t.Error("Expect(allreduce2) succeeded")
	}
}

// The ring all-reduce on one HGX H100 node, by hand: busbw = 0.98 (the
// all_reduce calibration) × 18 links × 20.6 GB/s (NCCL's SM90 figure) =
// 363.4 GB/s; algbw = busbw × 8/14; α(Simple) = 8.4 + 14 × 3.4 = 56 µs.
func TestRingAllReduceOneNodeByHand(t *testing.T) {
	s := mustSystem(t, Params{GPU: "h100", GPUsPerNode: 8, NVLS: offp()})
	ps, err := Predict(s, collective.AllReduce, 8*gib)
	if err != nil {
		t.Fatal(err)
	}
	r := algo(t, ps, AlgoRing)
	if r.Protocol != "Simple" || r.LatencyUS != 56 {
		t.Errorf("ring at 8G: protocol %s, α %g µs; want Simple, 56", r.Protocol, r.LatencyUS)
	}
	wantT := 56 + 8*gib/(0.98*370.8*8/14*1e3)
	if !near(r.TimeUS, wantT, 1e-4) || !near(r.PeakBusBW, 0.98*370.8, 1e-4) || r.Limit != ByNVLink || r.Regime != RegimeBandwidth {
		t.Errorf("ring: t %g (want %g), peak %g, limit %s, regime %s", r.TimeUS, wantT, r.PeakBusBW, r.Limit, r.Regime)
	}
	if !near(r.BusBW, r.AlgBW*1.75, 1e-4) {
		t.Errorf("busbw %g is not algbw %g × 1.75", r.BusBW, r.AlgBW)
	}
	if !ps[0].Best || ps[0].Algorithm != AlgoRing {
		t.Errorf("best with NVLS off = %s, want ring", ps[0].Algorithm)
	}
	// The tree's chain carries S up and S down: 0.92 × 363.4/2.
	tr := algo(t, ps, AlgoTree)
	if !near(tr.PeakBusBW, 0.92*0.98*370.8/2*1.75, 1e-4) {
		t.Errorf("tree peak busbw %g, want %g", tr.PeakBusBW, 0.92*0.98*370.8/2*1.75)
	}
}

// NVLS on g GPUs: algbw = 0.85 × 370.8 × g/(g+1); on 8 GPUs 280.2 GB/s,
// busbw 490.3; on 4 GPUs busbw 1.5 × 252.1 = 378.3, still above the ring;
// on 2 GPUs 2/3 × 315.2 × 1 = 210.1, below the ring's 370.8.
func TestNVLSByHand(t *testing.T) {
	for _, tc := range []struct {
		g        int
		peak     float64
		bestAlgo Algorithm
	}{
		{8, 2 * 7.0 / 8 * 0.85 * 370.8 * 8 / 9, AlgoNVLS},
		{4, 2 * 3.0 / 4 * 0.85 * 370.8 * 4 / 5, AlgoNVLS},
		{2, 1 * 0.85 * 370.8 * 2 / 3, AlgoRing},
	} {
		s := mustSystem(t, Params{GPU: "h100", GPUsPerNode: tc.g, NVLinkTopology: NVLinkSwitch})
		ps, err := Predict(s, collective.AllReduce, 16*gib)
		if err != nil {
			t.Fatal(err)
		}
		nv := algo(t, ps, AlgoNVLS)
		if !near(nv.PeakBusBW, tc.peak, 1e-4) || nv.LatencyUS != 25 {
			t.Errorf("g=%d: NVLS peak busbw %g (want %g), α %g (want 25)", tc.g, nv.PeakBusBW, tc.peak, nv.LatencyUS)
		}
		if ps[0].Algorithm != tc.bestAlgo {
			t.Errorf("g=%d: best %s, want %s", tc.g, ps[0].Algorithm, tc.bestAlgo)
		}
	}
}

// Four HGX A100 nodes on 8×200G: the ring is NIC-bound at 8 × 25 × 0.96 =
// 192 GB/s (NVLink gives 0.98 × 240; 200G NICs take NCCL's own figure, no
// network calibration); the tree across >2 nodes sends 2S per node.
func TestMultiNodeRingAndTreeByHand(t *testing.T) {
	s := mustSystem(t, Params{GPU: "a100", Nodes: 4, NICsPerNode: 8, NICRateGbps: 200})
	ps, err := Predict(s, collective.AllReduce, 8*gib)
	if err != nil {
		t.Fatal(err)
	}
	r := algo(t, ps, AlgoRing)
	if !near(r.PeakBusBW, 192, 1e-4) || r.Limit != ByNIC {
		t.Errorf("ring peak %g limit %s, want 192 NIC", r.PeakBusBW, r.Limit)
	}
	// α = 8.4 + (62-6)×max(3.4, 3×1) + 6×14 µs.
	if want := 8.4 + 56*3.4 + 6*14.0; !near(r.LatencyUS, want, 1e-4) {
		t.Errorf("ring α %g, want %g", r.LatencyUS, want)
	}
	tr := algo(t, ps, AlgoTree)
	if want := 0.92 * math.Min(0.98*240.0/2, 192.0/2) * 2 * 31 / 32; !near(tr.PeakBusBW, want, 1e-4) {
		t.Errorf("tree peak %g, want %g", tr.PeakBusBW, want)
	}
	// α = 8.4 + 2×(7×4 + log2(4)×14).
	if want := 8.4 + 2*(7*4.0+2*14.0); !near(tr.LatencyUS, want, 1e-4) {
		t.Errorf("tree α %g, want %g", tr.LatencyUS, want)
	}
	// Two nodes: the tree exchanges S once per node, so the NVLink chain
	// (0.98 × 240/2) binds: 0.92 × 117.6 × 2 × 15/16.
	s2 := mustSystem(t, Params{GPU: "a100", Nodes: 2, NICsPerNode: 8, NICRateGbps: 200})
	ps2, _ := Predict(s2, collective.AllReduce, 8*gib)
	tr2 := algo(t, ps2, AlgoTree)
	if want := 0.92 * 0.98 * 120 * 2 * 15 / 16; !near(tr2.PeakBusBW, want, 1e-4) || tr2.Limit != ByNVLink {
		t.Errorf("2-node tree peak %g %s, want %g NVLink", tr2.PeakBusBW, tr2.Limit, want)
	}
}

// Hierarchical: 2(g-1)/g·S over NVLink plus 2(N-1)/N·S over the node's
// rails, one phase after another; the NVLink phases take the
// reduce_scatter/all_gather calibration (0.95), the network phase the
// all_reduce one (0.845 of 384 GB/s on 400G rails).
func TestHierarchicalByHand(t *testing.T) {
	s := mustSystem(t, Params{GPU: "h100", Nodes: 4, NICsPerNode: 8, NICRateGbps: 400})
	ps, err := Predict(s, collective.AllReduce, 8*gib)
	if err != nil {
		t.Fatal(err)
	}
	h := algo(t, ps, AlgoHierarchical)
	perByte := 2*7.0/8/(0.95*370.8) + 2*3.0/4/(0.845*384)
	wantT := 3*8.4 + 2*7*3.4 + 2*3*14 + 8*gib*perByte/1e3
	if !near(h.TimeUS, wantT, 1e-4) || h.Limit != ByNVLink {
		t.Errorf("hierarchical t %g limit %s, want %g NVLink", h.TimeUS, h.Limit, wantT)
	}
	// Sequential phases are slower than a pipelined ring on this machine.
	if h.TimeUS <= algo(t, ps, AlgoRing).TimeUS {
		t.Errorf("hierarchical %g µs not slower than the ring", h.TimeUS)
	}
	if !strings.Contains(h.Formula, "pipelined they would reach algbw 201.3 GB/s") {
		t.Errorf("formula lacks the pipelined bound: %s", h.Formula)
	}
}

// NVLS with the network: NVLS-tree on two nodes (the network exchanges S
// once) and NVLS with SHARP on four.
func TestNVLSMultiNodeByHand(t *testing.T) {
	nvlsAlg := 0.85 * 0.92 * 370.8 * 8 / 9
	s2 := mustSystem(t, Params{GPU: "h100", Nodes: 2, NICsPerNode: 8, NICRateGbps: 400})
	e, err := Expect(s2, collective.AllReduce, 16*gib)
	if err != nil {
		t.Fatal(err)
	}
	if e.Algorithm != AlgoNVLSTree || !near(e.PeakBusBW, nvlsAlg*2*15/16, 1e-4) {
		t.Errorf("2 nodes: %s peak %g, want nvls_tree %g", e.Algorithm, e.PeakBusBW, nvlsAlg*2*15/16)
	}
	s4 := mustSystem(t, Params{GPU: "h100", Nodes: 4, NICsPerNode: 8, NICRateGbps: 400, SHARP: true})
	e4, _ := Expect(s4, collective.AllReduce, 16*gib)
	if e4.Algorithm != AlgoNVLSSharp || !near(e4.PeakBusBW, nvlsAlg*2*31/32, 1e-4) || e4.Limit != ByNVLink {
		t.Errorf("4 nodes SHARP: %s peak %g limit %s, want nvls_sharp %g NVLink", e4.Algorithm, e4.PeakBusBW, e4.Limit, nvlsAlg*2*31/32)
	}
	// Without SHARP, 4 nodes: the NVLS tree's network half (0.845 × 384/2)
	// binds.
	s4.SHARP = false
	ps, _ := Predict(s4, collective.AllReduce, 16*gib)
	nt := algo(t, ps, AlgoNVLSTree)
	if want := 0.845 * 192 * 2 * 31 / 32; !near(nt.PeakBusBW, want, 1e-4) || nt.Limit != ByNIC {
		t.Errorf("NVLS tree on 4 nodes peak %g limit %s, want %g NIC", nt.PeakBusBW, nt.Limit, want)
	}
	for _, p := range ps {
		if p.Algorithm == AlgoNVLSSharp || p.Algorithm == AlgoCollNet {
			t.Errorf("SHARP off, yet %s predicted", p.Algorithm)
		}
	}
}

// Small messages are latency-bound: the time is the α of the best
// protocol (ring LL on one H100 node: 6.6 + 14 × 0.6 = 15 µs).
func TestLatencyDominatedSmall(t *testing.T) {
	s := mustSystem(t, Params{GPU: "h100", GPUsPerNode: 8})
	e, err := Expect(s, collective.AllReduce, 8)
	if err != nil {
		t.Fatal(err)
	}
	if e.Algorithm != AlgoRing || e.Protocol != "LL" || !near(e.TimeUS, 15, 1e-3) || e.Bottleneck != ByLatency || e.Regime != RegimeLatency {
		t.Errorf("8 B: %s %s %g µs %s %s; want ring LL 15 µs latency", e.Algorithm, e.Protocol, e.TimeUS, e.Bottleneck, e.Regime)
	}
	if e.Limit != ByNVLink {
		t.Errorf("limit %s, want NVLink even when latency-bound", e.Limit)
	}
	// LL halves the bandwidth and is capped at llMax (141 GB/s on Hopper):
	// at 1 MiB ring LL: busbw min(185.4, 141).
	ps, _ := Predict(s, collective.AllReduce, mib)
	r := algo(t, ps, AlgoRing)
	if r.Protocol != "LL" || !near(r.TimeUS, 15+mib/(141*8.0/14*1e3), 1e-4) {
		t.Errorf("1M ring: %s %g µs, want LL %g", r.Protocol, r.TimeUS, 15+mib/(141*8.0/14*1e3))
	}
	// Mid sizes are a transition: neither strict nor latency.
	e64, _ := Expect(s, collective.AllReduce, 64*mib)
	if e64.Regime != RegimeTransition {
		t.Errorf("64M regime %s, want transition", e64.Regime)
	}
}

func TestAllToAllAndSendRecvByHand(t *testing.T) {
	s := mustSystem(t, Params{GPU: "h100", Nodes: 10, NICsPerNode: 8, NICRateGbps: 400})
	e, err := Expect(s, collective.AllToAll, 16*gib)
	if err != nil {
		t.Fatal(err)
	}
	// Network: g(n-g)/n of S leaves each node over 0.955 (the alltoall
	// calibration) × 384 GB/s.
	alg := 0.955 * 384 / (8 * 72.0 / 80)
	if !near(e.PeakBusBW, alg*79/80, 1e-4) || e.Limit != ByNIC {
		t.Errorf("alltoall peak %g %s, want %g NIC", e.PeakBusBW, e.Limit, alg*79/80)
	}
	sr, _ := Expect(s, collective.SendRecv, 16*gib)
	if !near(sr.PeakBusBW, 0.317*48, 1e-4) || sr.Limit != ByNIC || !sr.Loose {
		t.Errorf("sendrecv peak %g %s loose %v, want 0.317 × one rail 48 NIC, loose", sr.PeakBusBW, sr.Limit, sr.Loose)
	}
	// Below 400 Gb/s the family factors do not apply: one 200G rail.
	s200 := mustSystem(t, Params{GPU: "h100", Nodes: 10, NICsPerNode: 8, NICRateGbps: 200})
	if sr, _ := Expect(s200, collective.SendRecv, 16*gib); !near(sr.PeakBusBW, 24, 1e-4) {
		t.Errorf("sendrecv on 200G rails peak %g, want one rail 24", sr.PeakBusBW)
	}
	one := mustSystem(t, Params{GPU: "a100-40gb", GPUsPerNode: 8})
	a, _ := Expect(one, collective.AllToAll, 8*gib)
	if !near(a.PeakBusBW, 0.935*240, 1e-4) {
		t.Errorf("one-node alltoall peak %g, want 0.935 × 240", a.PeakBusBW)
	}
}

func TestAllGatherBroadcastOneNode(t *testing.T) {
	s := mustSystem(t, Params{GPU: "a100-40gb", GPUsPerNode: 8})
	// Each family its own share of NCCL's 240 GB/s.
	for _, tc := range []struct {
		c collective.Collective
		f float64
	}{{collective.AllGather, 0.95}, {collective.ReduceScatter, 0.95}, {collective.Broadcast, 0.97}, {collective.Reduce, 0.97}} {
		e, err := Expect(s, tc.c, 8*gib)
		if err != nil {
			t.Fatal(err)
		}
		if e.Algorithm != AlgoRing || !near(e.PeakBusBW, tc.f*240, 1e-4) {
			t.Errorf("%s: %s peak %g, want ring %g", tc.c, e.Algorithm, e.PeakBusBW, tc.f*240)
		}
	}
	// α of broadcast: one ring step, 8.4 + 3.4.
	e, _ := Expect(s, collective.Broadcast, 8*gib)
	if !near(e.LatencyUS, 11.8, 1e-4) {
		t.Errorf("broadcast α %g, want 11.8", e.LatencyUS)
	}
}

func TestPCIeSystems(t *testing.T) {
	// Four L40S on one socket, across host bridges: the ring turns around
	// in the CPU: 31.5 × 0.86 × 0.84.
	s := mustSystem(t, Params{GPU: "l40s", GPUsPerNode: 4, GPUPath: "NODE"})
	e, _ := Expect(s, collective.AllReduce, 8*gib)
	want := 16 * 16 * 128.0 / 130 / 8 * 0.86 * 0.84
	if !near(e.PeakBusBW, want, 1e-4) || e.Limit != ByPCIe {
		t.Errorf("L40S ring peak %g %s, want %g PCIe", e.PeakBusBW, e.Limit, want)
	}
	if got := algo(t, []Prediction{e}, AlgoRing).Protocol; got != "Simple" {
		t.Errorf("protocol %s", got)
	}
	// Across sockets the CPU interconnect binds (SKL: 10 GB/s).
	s.GPUPath, s.InterSocketGBps = "SYS", interSocketSKL
	e, _ = Expect(s, collective.AllReduce, 8*gib)
	if !near(e.PeakBusBW, 10, 1e-4) || e.Limit != ByCPULink {
		t.Errorf("SYS ring peak %g %s, want 10 CPU interconnect", e.PeakBusBW, e.Limit)
	}
	// Bridged pairs: rings both ways, each PCIe link used once: 2 × min.
	p := mustSystem(t, Params{GPU: "a100-pcie", GPUsPerNode: 4, GPUPath: "SYS", InterSocket: 16})
	if p.NVLinkTopology != NVLinkPartial {
		t.Fatalf("topology %s, want partial", p.NVLinkTopology)
	}
	e, _ = Expect(p, collective.AllReduce, 8*gib)
	if !near(e.PeakBusBW, 32, 1e-4) {
		t.Errorf("bridged pairs peak %g, want 2 × 16", e.PeakBusBW)
	}
}

func TestOneRank(t *testing.T) {
	s := mustSystem(t, Params{GPU: "h200", GPUsPerNode: 1})
	// busbw factors at n = 1: 2(n-1)/n and (n-1)/n are 0, the others 1.
	factor := map[collective.Collective]float64{collective.AllReduce: 0, collective.AllGather: 0, collective.ReduceScatter: 0, collective.AllToAll: 0, collective.Broadcast: 1, collective.Reduce: 1, collective.SendRecv: 1}
	for _, c := range collective.All() {
		ps, err := Predict(s, c, 8*gib)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != 1 || ps[0].Algorithm != AlgoLocal || ps[0].Bottleneck != ByHBM {
			t.Fatalf("%s: %+v", c, ps)
		}
		wantAlg := 4800 * 0.87 / 2
		wantT := 5 + 8*gib/(wantAlg*1e3)
		if !near(ps[0].TimeUS, wantT, 1e-4) {
			t.Errorf("%s: t %g, want %g", c, ps[0].TimeUS, wantT)
		}
		f, ok := factor[c]
		if !ok {
			t.Fatalf("%s: no busbw factor at n = 1 in the test", c)
		}
		if want := ps[0].AlgBW * f; !near(ps[0].BusBW, want, 1e-4) {
			t.Errorf("%s: busbw %g, want %g", c, ps[0].BusBW, want)
		}
	}
}

func TestWhatIfs(t *testing.T) {
	base := mustSystem(t, Params{GPU: "h100", Nodes: 4, NICsPerNode: 8, NICRateGbps: 400})
	pcieGPU := 32 * 16 * 128.0 / 130 / 8 * 0.86
	for _, tc := range []struct {
		name  string
		w     WhatIf
		coll  collective.Collective
		algo  Algorithm
		peak  float64
		limit Bottleneck
		said  string
	}{
		{"none", WhatIf{}, collective.AllReduce, AlgoRing, 0.845 * 384, ByNIC, ""},
		{"gdr off", WhatIf{GDROff: true}, collective.AllReduce, AlgoRing, 8 * pcieGPU / 2, ByHostStaging, "GDR off"},
		{"half rails", WhatIf{HalfRails: true}, collective.AllReduce, AlgoRing, 0.845 * 4 * 48, ByNIC, "half the rails"},
		{"downtrained gen4", WhatIf{Downtrain: &PCIeLink{Gen: 4, Width: 16}}, collective.AllReduce, AlgoRing, 8 * pcieGPU / 2, ByPCIe, "Gen4 x16"},
		{"downtrained x8", WhatIf{Downtrain: &PCIeLink{Width: 8}}, collective.AllReduce, AlgoRing, 8 * pcieGPU / 2, ByPCIe, "Gen5 x8"},
		{"remote nic", WhatIf{RemoteNIC: true}, collective.AllReduce, AlgoRing, 22, ByCPULink, "remote socket"},
		{"sharp on", WhatIf{SHARP: on()}, collective.AllReduce, AlgoNVLSSharp, 0.85 * 0.92 * 370.8 * 8 / 9 * 2 * 31 / 32, ByNVLink, "SHARP on"},
		{"nvlinks down", WhatIf{NVLinkDown: 2}, collective.AllReduce, AlgoRing, 0.98 * 16 * 20.6, ByNVLink, "2 NVLink"},
		{"gdr off sendrecv", WhatIf{GDROff: true}, collective.SendRecv, AlgoP2P, pcieGPU / 2, ByHostStaging, ""},
	} {
		s, said, err := base.Apply(tc.w)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.said != "" && !strings.Contains(strings.Join(said, "\n"), tc.said) {
			t.Errorf("%s: said %q, want %q in it", tc.name, said, tc.said)
		}
		ps, err := Predict(s, tc.coll, 16*gib)
		if err != nil {
			t.Fatal(err)
		}
		p := algo(t, ps, tc.algo)
		if !near(p.PeakBusBW, tc.peak, 1e-4) || p.Limit != tc.limit {
			t.Errorf("%s: %s peak %g %s, want %g %s", tc.name, tc.algo, p.PeakBusBW, p.Limit, tc.peak, tc.limit)
		}
	}
	// SHARP off on a system with SHARP takes it away.
	sh := base
	sh.SHARP = true
	s, said, err := sh.Apply(WhatIf{SHARP: offp()})
	if err != nil || s.SHARP || len(said) != 1 {
		t.Errorf("SHARP off: %v %v %v", s.SHARP, said, err)
	}
	// Impossible what-ifs are refused.
	one := mustSystem(t, Params{GPU: "h100", GPUsPerNode: 8, NICsPerNode: 1, NICRateGbps: 400})
	for _, w := range []WhatIf{{HalfRails: true}, {Downtrain: &PCIeLink{Gen: 6, Width: 16}}, {NVLinkDown: 18}} {
		if _, _, err := one.Apply(w); err == nil {
			t.Errorf("Apply(%+v) succeeded", w)
		}
	}
	if _, _, err := mustSystem(t, Params{GPU: "l40s", GPUsPerNode: 2}).Apply(WhatIf{NVLinkDown: 1}); err == nil {
		t.Error("NVLink down on an L40S succeeded")
	}
}

func TestParsePCIeLink(t *testing.T) {
	for in, want := range map[string]PCIeLink{"gen4x8": {4, 8}, "4x16": {4, 16}, "Gen3 x16": {3, 16}, "x8": {0, 8}, "GEN5X4": {5, 4}} {
		got, err := ParsePCIeLink(in)
		if err != nil || got != want {
			t.Errorf("ParsePCIeLink(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"gen4", "gen9x16", "x3", "4x", "gen4x16x", "04x16"} {
		if _, err := ParsePCIeLink(bad); err == nil {
			t.Errorf("ParsePCIeLink(%q) succeeded", bad)
		}
	}
}

func TestNewSystemRefuses(t *testing.T) {
	for _, p := range []Params{
		{GPU: "h900"},
		{GPU: "h100", Nodes: 2},                                    // no NICs
		{GPU: "h100", Nodes: 2, NICsPerNode: 8},                    // no rate
		{GPU: "a100", GPUsPerNode: 8, NVLS: on()},                  // Ampere has no NVLS
		{GPU: "h100-pcie", GPUsPerNode: 2, NVLS: on()},             // no NVSwitch
		{GPU: "l40s", NVLinks: 4},                                  // no NVLink
		{GPU: "a100", GPUsPerNode: 16, NVLinkTopology: NVLinkMesh}, // 12 links cannot reach 15 peers
		{GPU: "h100", GPUPath: "NV4"},
		{GPU: "h100", PCIeGen: 9},
		{GPU: "h100", NICsPerNode: 8, NICRateGbps: 400, NICLayer: "token-ring"},
		{GPU: "h100", NVLinkTopology: "torus"},
	} {
		if s, err := NewSystem(p); err == nil {
			t.Errorf("NewSystem(%+v) = %+v, want an error", p, s)
		}
	}
}

func TestTablesCarryProvenance(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range constants() {
		if c.Source == "" || c.Value <= 0 || seen[c.Name] {
			t.Errorf("constant %+v: needs a source, a positive value and a unique name", c)
		}
		seen[c.Name] = true
	}
}

// Every prediction is self-consistent: busbw = algbw × factor, time grows
// with size, bandwidth never exceeds the algorithm's peak, best first.
func TestPredictionsAreConsistent(t *testing.T) {
	systems := []Params{
		{GPU: "h100", GPUsPerNode: 8},
		{GPU: "h100", Nodes: 8, NICsPerNode: 8, NICRateGbps: 400, SHARP: true},
		{GPU: "a100", Nodes: 2, NICsPerNode: 4, NICRateGbps: 100},
		{GPU: "l40s", GPUsPerNode: 4},
		{GPU: "l40s", Nodes: 3, GPUsPerNode: 4, NICsPerNode: 2, NICRateGbps: 400},
		{GPU: "b200", Nodes: 2, NICsPerNode: 8, NICRateGbps: 400, NICLayer: "ethernet"},
		{GPU: "v100", GPUsPerNode: 4},
		{GPU: "h200", Nodes: 16, GPUsPerNode: 1, NICsPerNode: 1, NICRateGbps: 400},
	}
	sizes := []float64{1, 8, 4096, mib, 64 * mib, gib, 16 * gib}
	for _, sp := range systems {
		s := mustSystem(t, sp)
		for _, c := range collective.All() {
			prev := map[Algorithm]Prediction{}
			for _, b := range sizes {
				ps, err := Predict(s, c, b)
				if err != nil {
					t.Fatalf("%s %s %g: %v", s.GPU, c, b, err)
				}
				if !ps[0].Best {
					t.Errorf("first is not Best")
				}
				for i, p := range ps {
					if i > 0 && (p.Best || p.TimeUS < ps[0].TimeUS) {
						t.Errorf("%s %s %g: %s not ordered", s.GPU, c, b, p.Algorithm)
					}
					f := c.BusFactor(p.Ranks)
					if p.TimeUS <= 0 || p.AlgBW < 0 || (f > 0 && p.AlgBW > p.PeakBusBW/f*(1+1e-6)+1e-3) {
						t.Errorf("%s %s %g %s: t %g algbw %g peak busbw %g", s.GPU, c, b, p.Algorithm, p.TimeUS, p.AlgBW, p.PeakBusBW)
					}
					if math.Abs(p.BusBW-p.AlgBW*c.BusFactor(p.Ranks)) > 2e-3 {
						t.Errorf("%s %s: busbw %g != algbw %g × %g", s.GPU, c, p.BusBW, p.AlgBW, c.BusFactor(p.Ranks))
					}
					if q, ok := prev[p.Algorithm]; ok && (p.TimeUS < q.TimeUS || p.AlgBW+1e-3 < q.AlgBW) {
						t.Errorf("%s %s %s: size %g→%g time %g→%g algbw %g→%g", s.GPU, c, p.Algorithm, q.Bytes, b, q.TimeUS, p.TimeUS, q.AlgBW, p.AlgBW)
					}
					prev[p.Algorithm] = p
					if p.Formula == "" || !strings.Contains(p.Formula, "α =") {
						t.Errorf("formula missing: %q", p.Formula)
					}
				}
			}
		}
	}
}

func TestCopiesByHand(t *testing.T) {
	s := mustSystem(t, Params{GPU: "h200", GPUsPerNode: 8, NICsPerNode: 8, NICRateGbps: 400})
	cs, err := Copies(s)
	if err != nil {
		t.Fatal(err)
	}
	gen5 := 32 * 16 * 128.0 / 130 / 8
	want := map[CopyTest]float64{
		CopyDeviceLocal: 4800 * 0.87, CopyH2DPinned: gen5 * 0.86, CopyD2HPinned: gen5 * 0.86,
		CopyBidirPinned: gen5 * 0.86 * 19 / 26, CopyH2DPageable: 20, CopyP2PNVLink: 376, CopyP2PNVLinkBidir: 783,
		PerftestWriteCUDA: 50 * 0.9838, PerftestWriteHost: 50 * 0.9838,
	}
	got := map[CopyTest]CopyExpectation{}
	for _, c := range cs {
		got[c.Test] = c
	}
	for k, v := range want {
		if !near(got[k].GBps, v, 1e-4) {
			t.Errorf("%s: %g, want %g", k, got[k].GBps, v)
		}
	}
	if !got[CopyH2DPageable].Loose || got[CopyH2DPinned].Loose {
		t.Error("pageable must be loose, pinned strict")
	}
	if _, ok := got[CopyP2PPCIe]; ok {
		t.Error("p2p over PCIe listed for an NVSwitch system")
	}
	// RoCE, GDR beyond PXB (through the CPU), Gen4 GPU: the GPU's link binds.
	r := mustSystem(t, Params{GPU: "l40s", GPUsPerNode: 4, NICsPerNode: 2, NICRateGbps: 400, NICLayer: "roce", GDR: offp()})
	c, err := ExpectCopy(r, PerftestWriteCUDA)
	if err != nil {
		t.Fatal(err)
	}
	if w := 16 * 16 * 128.0 / 130 / 8 * 0.86 * 0.84; !near(c.GBps, w, 1e-4) || c.Bottleneck != ByPCIe || !near(c.Gbps, 8*w, 1e-4) {
		t.Errorf("L40S ib_write_bw_cuda %g %s, want %g PCIe", c.GBps, c.Bottleneck, w)
	}
	if _, err := ExpectCopy(mustSystem(t, Params{GPU: "h200", GPUsPerNode: 1}), PerftestWriteCUDA); err == nil {
		t.Error("perftest expected without a NIC")
	}
}
