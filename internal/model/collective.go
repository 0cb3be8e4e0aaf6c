package model

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/collective"
)

// Algorithm is how the collective is carried out.
type Algorithm string

// Algorithms: NCCL's, plus the three-phase hierarchical all-reduce and the
// one-rank local copy.
const (
	AlgoRing         Algorithm = "ring"
	AlgoTree         Algorithm = "tree"
	AlgoNVLS         Algorithm = "nvls"         // NVLink SHARP, one node
	AlgoNVLSTree     Algorithm = "nvls_tree"    // NVLS in the node, tree across nodes
	AlgoCollNet      Algorithm = "collnet"      // SHARP in the network, NVLink in the node
	AlgoNVLSSharp    Algorithm = "nvls_sharp"   // SHARP in the network, NVLS in the node
	AlgoHierarchical Algorithm = "hierarchical" // NVLink reduce-scatter, network all-reduce, NVLink all-gather
	AlgoP2P          Algorithm = "p2p"          // point-to-point sends (alltoall, sendrecv)
	AlgoLocal        Algorithm = "local"        // one rank: a device copy
)

// Regime says what dominates a prediction's time.
type Regime string

// Regimes.
const (
	RegimeBandwidth  Regime = "bandwidth"  // moving bytes is ≥95% of the time: judged strictly
	RegimeTransition Regime = "transition" // 50-95%: judged loosely
	RegimeLatency    Regime = "latency"    // fixed costs dominate: judged loosely
)

// Prediction is the expected result of one collective at one size, in
// nccl-tests' terms (size, time, algbw, busbw of the out-of-place run).
type Prediction struct {
	Collective collective.Collective `json:"collective"`
	Algorithm  Algorithm             `json:"algorithm"`
	Protocol   string                `json:"protocol"`
	Bytes      float64               `json:"bytes"`
	Ranks      int                   `json:"ranks"`
	TimeUS     float64               `json:"time_us"`
	LatencyUS  float64               `json:"latency_us"` // the alpha term
	AlgBW      float64               `json:"algbw_gbps"`
	BusBW      float64               `json:"busbw_gbps"`
	// PeakBusBW is the large-message asymptote of this algorithm.
	PeakBusBW float64 `json:"peak_busbw_gbps"`
	// Bottleneck is what limits this size: "latency" when fixed costs are
	// more than half the time, else Limit.
	Bottleneck Bottleneck `json:"bottleneck"`
	// Limit is the bandwidth bound of the algorithm at large sizes.
	Limit   Bottleneck `json:"limit"`
	Regime  Regime     `json:"regime"`
	Formula string     `json:"formula"`
	// Best marks the fastest algorithm, the one a measurement is judged by.
	Best bool `json:"best"`
	// Loose: a bound the model knows NCCL does not approach; judged with
	// the loose margin whatever the regime.
	Loose bool `json:"loose,omitempty"`
	// Interval is where a healthy measurement may lie, from the public
	// runs of the prediction's class (interval.go); judging passes a
	// measurement within it. Bandwidth-regime, strictly judged
	// predictions only (the public runs are peak figures).
	Interval Interval `json:"interval,omitzero"`
}

// candidate is one algorithm before its size is known.
type candidate struct {
	algo Algorithm
	// bw is the algorithm bandwidth of the Simple protocol and what bounds
	// it; bwText derives it.
	bw     term
	bwText string
	protos []proto
	// busbwNCCL converts algbw to the "busBw" NCCL's protocol caps apply to.
	busbwNCCL float64
	lat       func(proto) (float64, string)
	treeProto bool
	loose     bool
}

// Predict gives every algorithm that applies to the collective on the
// system at a size in bytes (nccl-tests' size: the whole buffer for
// all_gather/reduce_scatter/alltoall), fastest first; the first is Best.
// c may be spelt any way collective.Parse reads.
func Predict(s System, c collective.Collective, bytes float64) ([]Prediction, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return predict(newPaths(s), c, bytes)
}

// predict is Predict on a validated system's paths; the predictions name
// the collective canonically.
func predict(p paths, c collective.Collective, bytes float64) ([]Prediction, error) {
	return predictWith(p, c, bytes, true)
}

// predictWith is predict, each prediction with its interval when
// interval (the public runs are predicted without, to make them).
func predictWith(p paths, c collective.Collective, bytes float64, interval bool) ([]Prediction, error) {
	if bytes < 1 || math.IsInf(bytes, 0) || math.IsNaN(bytes) {
		return nil, fmt.Errorf("size %g: at least one byte", bytes)
	}
	c, err := collective.Parse(string(c))
	if err != nil {
		return nil, err
	}
	var out []Prediction
	for _, cd := range candidates(p, c) {
		var best *Prediction
		for _, pr := range cd.protos {
			pred := evaluate(p, c, cd, pr, bytes)
			if best == nil || pred.TimeUS < best.TimeUS {
				b := pred
				best = &b
			}
		}
		if best != nil {
			out = append(out, *best)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no algorithm applies", c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TimeUS < out[j].TimeUS })
	out[0].Best = true
	if interval {
		for i := range out {
			// The public runs are peak (bandwidth-regime) figures: they
			// speak for strictly judged predictions only; latency-bound,
			// transition and loose ones keep the loose margin.
			if out[i].strict() {
				out[i].Interval = intervalOf(p.s, out[i])
			}
		}
	}
	return out, nil
}

// Expect is the best prediction: what a healthy system should measure.
func Expect(s System, c collective.Collective, bytes float64) (Prediction, error) {
	ps, err := Predict(s, c, bytes)
	if err != nil {
		return Prediction{}, err
	}
	return ps[0], nil
}

func evaluate(p paths, c collective.Collective, cd candidate, pr proto, bytes float64) Prediction {
	n := p.n
	factor := c.BusFactor(n)
	alg := cd.bw.gbps
	protoNote := ""
	switch {
	case cd.algo == AlgoLocal:
	case cd.treeProto:
		busN := alg * cd.busbwNCCL
		switch pr {
		case protoLL:
			alg = math.Min(busN*treeLLFactor, p.llMax) / cd.busbwNCCL
			protoNote = fmt.Sprintf("; LL: algbw = min(%g×algbw/3.8, llMax %.1f)/%g", cd.busbwNCCL, p.llMax, cd.busbwNCCL)
		case protoLL128:
			f := treeLL128FactorNodes
			if p.s.Nodes == 1 {
				f = treeLL128FactorOneNode
			}
			alg *= f
			protoNote = fmt.Sprintf("; LL128: algbw × %.3f", f)
		}
	default:
		busN := alg * cd.busbwNCCL
		switch pr {
		case protoLL:
			alg = math.Min(busN*ringLLFactor, p.llMax) / cd.busbwNCCL
			protoNote = fmt.Sprintf("; LL: busbw = min(busbw × 0.5, llMax %.1f)", p.llMax)
		case protoLL128:
			alg *= ringLL128Factor
			protoNote = "; LL128: busbw × 0.92"
		}
	}
	lat, latText := cd.lat(pr)
	bwUS := bytes / (alg * 1e3)
	t := lat + bwUS
	pred := Prediction{Collective: c, Algorithm: cd.algo, Protocol: pr.String(), Bytes: bytes, Ranks: n,
		TimeUS: sig(t), LatencyUS: sig(lat), Limit: cd.bw.by, Loose: cd.loose}
	if cd.algo == AlgoLocal {
		pred.Protocol = "copy"
	}
	algbw := bytes / (t * 1e3)
	pred.AlgBW = sig(algbw)
	pred.BusBW = sig(algbw * factor)
	pred.PeakBusBW = sig(cd.bw.gbps * factor)
	share := bwUS / t
	pred.Regime, pred.Bottleneck = RegimeLatency, ByLatency
	switch {
	case share >= bandwidthRegimeShare:
		pred.Regime, pred.Bottleneck = RegimeBandwidth, cd.bw.by
	case share >= latencyRegimeShare:
		pred.Regime, pred.Bottleneck = RegimeTransition, cd.bw.by
	}
	pred.Formula = fmt.Sprintf("%s %s (%s): t = α + S/algbw; %s%s; α = %s µs; busbw = algbw × %s",
		cd.algo, c, pred.Protocol, cd.bwText, protoNote, latText, c.BusFactorText())
	return pred
}

// log2i is NCCL's integer log2.
func log2i(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n)) - 1
}

func hwName(h hop) string { return [...]string{"NVLink", "PCI", "network"}[h] }

func candidates(p paths, c collective.Collective) []candidate {
	s := p.s
	n, g, N := p.n, s.GPUsPerNode, s.Nodes
	protos := []proto{protoLL, protoSimple}
	if p.ll128 {
		protos = []proto{protoLL, protoLL128, protoSimple}
	}

	if n == 1 {
		hb := p.hbm
		return []candidate{{algo: AlgoLocal,
			bw:     term{ByHBM, hb.gbps / 2, hb.text},
			bwText: fmt.Sprintf("one rank copies S bytes (read + write): algbw = (%s) / 2", hb),
			protos: []proto{protoSimple},
			lat: func(proto) (float64, string) {
				return oneRankLatencyUS, fmt.Sprintf("%.1f (one device copy launch, estimate)", oneRankLatencyUS)
			}}}
	}

	// The family's calibration scales the NVLink and network bounds its
	// transfers run on (calibration.go).
	cal := calibrationOf(c)
	intra, inter := cal.nvlinkTerm(p.intra), cal.netTerm(p.inter, s.NICRateGbps)
	pair, a2aPair, rail := cal.nvlinkTerm(p.pair), cal.nvlinkTerm(p.a2aPair), cal.netTerm(p.rail, s.NICRateGbps)

	// Ring: every rank sends the same bytes on its outgoing link; the ring
	// crosses the network once per node (one rail per ring, all rails in
	// parallel) and NVLink or PCIe inside.
	ringBus := minTerm(intra, inter)
	ringBusText := "busbw = " + boundText(intra, inter)
	nsteps, nInter := n, 0
	switch c {
	case collective.AllReduce:
		nsteps = 2 * (n - 1)
		if N > 1 {
			nInter = 2 * (N - 1)
		}
	case collective.AllGather, collective.ReduceScatter:
		nsteps = n - 1
		if N > 1 {
			nInter = N - 1
		}
	}
	ringLat := func(pr proto) (float64, string) {
		base := baseLatUS[algoRing][pr]
		if c == collective.Broadcast || c == collective.Reduce {
			h := p.intraHW
			if N > 1 {
				h = hwNet
			}
			l := hwLatUS[h][algoRing][pr]
			return base + l, fmt.Sprintf("%.1f + %.1f (NCCL ring %s, %s)", base, l, pr, hwName(h))
		}
		intra := hwLatUS[p.intraHW][algoRing][pr]
		txt := fmt.Sprintf("%.1f + %d×%.2f", base, nsteps-nInter, intra)
		if N > 1 {
			ov := netOverheadIntelUS
			if pr == protoSimple {
				ov *= netOverheadSimpleFactor
			}
			intra = math.Max(intra, ov)
			inter := hwLatUS[hwNet][algoRing][pr]
			if g == 1 {
				inter = hwLatUS[hwNet][algoTree][pr]
			}
			txt = fmt.Sprintf("%.1f + %d×%.2f + %d×%.2f", base, nsteps-nInter, intra, nInter, inter)
			return base + float64(nsteps-nInter)*intra + float64(nInter)*inter, txt + fmt.Sprintf(" (NCCL ring %s, %s in the node, network between)", pr, hwName(p.intraHW))
		}
		return base + float64(nsteps)*intra, txt + fmt.Sprintf(" (NCCL ring %s, %s)", pr, hwName(p.intraHW))
	}
	ring := func() candidate {
		f := c.BusFactor(n)
		return candidate{algo: AlgoRing, bw: term{ringBus.by, ringBus.gbps / f, ringBus.text},
			bwText: fmt.Sprintf("algbw = busbw / %s, %s", c.BusFactorText(), ringBusText),
			protos: protos, busbwNCCL: f, lat: ringLat}
	}

	// Point-to-point (alltoall, sendrecv): one step's latency.
	p2pLat := func(pr proto) (float64, string) {
		h := p.intraHW
		if N > 1 {
			h = hwNet
		}
		base, l := baseLatUS[algoRing][pr], hwLatUS[h][algoRing][pr]
		return base + l, fmt.Sprintf("%.1f + %.1f (NCCL ring %s constants for one %s step; per-peer costs not modelled)", base, l, pr, hwName(h))
	}

	switch c {
	case collective.Broadcast, collective.Reduce:
		return []candidate{ring()}

	case collective.AllGather, collective.ReduceScatter:
		out := []candidate{ring()}
		if s.NVLS && N == 1 {
			e := p.nvlsEfficiency()
			d, dText := p.nvlsDomain()
			b := term{ByNVLink, e * d * p.nvl.gbps, p.nvl.text}
			out = append(out, candidate{algo: AlgoNVLS, bw: b,
				bwText: fmt.Sprintf("algbw = %.2f (NCCL NVLS efficiency)%s × %s (each GPU's link carries S once through the NVSwitch)", e, dText, p.nvl),
				protos: []proto{protoSimple}, busbwNCCL: 1, lat: nvlsLat(N)})
		}
		return out

	case collective.AllToAll:
		// Each rank sends S/n to every other rank: g-1 peers over NVLink or
		// PCIe, n-g over the node's rails (shared by its g GPUs).
		intraT := math.Inf(1)
		intraBy := ByNVLink
		var parts []string
		if g > 1 {
			link, peers, peersText := intra, g-1, "g-1"
			if s.NVLinkTopology == NVLinkPartial {
				// The bridge partner aside, every peer is across PCIe.
				link, peers, peersText = pair, g-2, "g-2"
			}
			byLink := float64(peers) / float64(n) / link.gbps
			byPair := 1 / float64(n) / a2aPair.gbps
			intraT, intraBy = byLink, link.by
			parts = append(parts, fmt.Sprintf("(%s)/n·S / (%s)", peersText, link))
			if byPair > byLink {
				intraT, intraBy = byPair, a2aPair.by
				parts[0] = fmt.Sprintf("S/n / (%s)", a2aPair)
			}
		}
		interT := 0.0
		if N > 1 {
			interT = float64(g) * float64(n-g) / float64(n) / inter.gbps
			parts = append(parts, fmt.Sprintf("g(n-g)/n·S / (%s)", inter))
		}
		t := math.Max(intraT, interT)
		if math.IsInf(t, 1) {
			t = interT
		}
		by := intraBy
		if interT > intraT || g == 1 {
			by = inter.by
		}
		return []candidate{{algo: AlgoP2P, bw: term{by, 1 / t, ""},
			bwText: fmt.Sprintf("time per byte = max(%s)", strings.Join(parts, ", ")),
			protos: []proto{protoLL, protoSimple}, busbwNCCL: c.BusFactor(n), lat: p2pLat}}

	case collective.SendRecv:
		// nccl-tests: rank r sends S to r+1; the slowest pair bounds it.
		b := pair
		txt := fmt.Sprintf("algbw = %s", pair)
		if N > 1 {
			// Across nodes NCCL drives one peer pair on few channels: on
			// 400G-class rails the sendrecv calibration holds it to the
			// one public run's share of the rail; elsewhere the rail is an
			// upper bound. Judged loosely either way (one run).
			b = minTerm(pair, rail)
			txt = "algbw = " + boundText(pair, term{rail.by, rail.gbps, "one rail: " + rail.text}) +
				" (NCCL's point-to-point across nodes runs on few channels; judged loosely)"
		}
		return []candidate{{algo: AlgoP2P, bw: b, bwText: txt, protos: []proto{protoLL, protoSimple}, busbwNCCL: 1, lat: p2pLat, loose: N > 1}}
	}

	// all_reduce.
	out := []candidate{ring()}
	// Tree: a chain inside the node (each GPU sends S up and S down) and
	// double binary trees across nodes (each node sends 2S, or S on two
	// nodes).
	k := 2.0
	if N == 2 {
		k = 1
	}
	treeTerms := []term{}
	var treeTxt []string
	if g > 1 {
		treeTerms = append(treeTerms, term{intra.by, intra.gbps / 2, intra.text})
		treeTxt = append(treeTxt, fmt.Sprintf("(%s)/2", intra))
	}
	if N > 1 {
		treeTerms = append(treeTerms, term{inter.by, inter.gbps / k, inter.text})
		treeTxt = append(treeTxt, fmt.Sprintf("(%s)/%g", inter, k))
	}
	tb := minTerm(treeTerms...)
	tb.gbps *= treeAllReduceEfficiency
	treeLat := func(pr proto) (float64, string) {
		base := baseLatUS[algoTree][pr]
		intra := hwLatUS[p.intraHW][algoTree][pr]
		inter := hwLatUS[hwNet][algoTree][pr]
		l := base + 2*(float64(g-1)*intra+float64(log2i(N))*inter)
		return l, fmt.Sprintf("%.1f + 2×(%d×%.2f + %d×%.1f) (NCCL tree %s)", base, g-1, intra, log2i(N), inter, pr)
	}
	out = append(out, candidate{algo: AlgoTree, bw: tb,
		bwText: fmt.Sprintf("algbw = %.2f × min(%s)", treeAllReduceEfficiency, strings.Join(treeTxt, ", ")),
		protos: protos, busbwNCCL: 2, lat: treeLat, treeProto: true})

	if s.NVLS {
		e := p.nvlsEfficiency()
		d, dText := p.nvlsDomain()
		gf := float64(g)
		if N == 1 {
			// NVLS: per GPU, S+S/g leaves (reduce-scatter by multimem
			// loads, then the multicast store) and S+S/g arrives.
			b := term{ByNVLink, e * d * p.nvl.gbps * gf / (gf + 1), p.nvl.text}
			out = append(out, candidate{algo: AlgoNVLS, bw: b,
				bwText: fmt.Sprintf("algbw = %.2f (NCCL NVLS efficiency)%s × (%s) × g/(g+1) (each link carries S(1+1/g))", e, dText, p.nvl),
				protos: []proto{protoSimple}, lat: nvlsLat(N)})
		} else {
			intraNV := term{ByNVLink, e * d * nvlsMultiNodeEfficiency * p.nvl.gbps * gf / (gf + 1), p.nvl.text}
			intraTxt := fmt.Sprintf("%.2f%s × %.2f × (%s) × g/(g+1)", e, dText, nvlsMultiNodeEfficiency, p.nvl)
			// The network stage of NVLS-tree. On two nodes each GPU's
			// rail exchanges its S/g with the same rail of the other node,
			// once each way (NCCL: "Handle 2 node case of NVLSTree",
			// bwInter × 2): point-to-point between rail peers, which
			// NCCL's own NET_BW figure describes (alltoall, also rail to
			// rail, reaches 0.955 of it), not the rings' all_reduce
			// network factor. On more nodes the double binary tree sends
			// 2S per node and the ring family's factor stands.
			netT := term{inter.by, inter.gbps / k, inter.text}
			netTxt := fmt.Sprintf("network tree (%s)/%g", inter, k)
			if N == 2 {
				netT = term{p.inter.by, p.inter.gbps, p.inter.text}
				netTxt = fmt.Sprintf("network, rail to rail peer on two nodes, NCCL's figure (%s)", p.inter)
			}
			out = append(out, candidate{algo: AlgoNVLSTree, bw: minTerm(intraNV, netT),
				bwText: fmt.Sprintf("algbw = min(NVLS %s, %s)", intraTxt, netTxt),
				protos: []proto{protoSimple},
				lat: func(proto) (float64, string) {
					intra, inter := hwLatUS[hwNVLink][algoNVLSTree][protoSimple], hwLatUS[hwNet][algoNVLSTree][protoSimple]
					return intra + 2*float64(log2i(N))*inter, fmt.Sprintf("%.1f + 2×%d×%.1f (NCCL NVLS tree)", intra, log2i(N), inter)
				}})
			if s.SHARP {
				out = append(out, candidate{algo: AlgoNVLSSharp, bw: minTerm(intraNV, inter),
					bwText: fmt.Sprintf("algbw = min(NVLS %s, network %s: each rail sends its S/g once, the switches reduce)", intraTxt, inter),
					protos: []proto{protoSimple}, lat: nvlsLat(N)})
			}
		}
	}
	if s.SHARP && N > 1 && !s.NVLS {
		// CollNet: reduce inside the node over NVLink/PCIe (twice the data
		// of the result crosses the node's links), one send per node. As
		// NCCL's tuning model has it: bwIntra per channel, halved to
		// algbw (tree's 0.92 is Tree's own refinement, not CollNet's).
		terms := []term{inter}
		txt := []string{inter.String()}
		if g > 1 {
			terms = append(terms, term{intra.by, intra.gbps / 2, intra.text})
			txt = append(txt, fmt.Sprintf("(%s)/2", intra))
		}
		direct := s.NVLinkTopology == NVLinkSwitch
		out = append(out, candidate{algo: AlgoCollNet, bw: minTerm(terms...),
			bwText: fmt.Sprintf("algbw = min(%s)", strings.Join(txt, ", ")),
			protos: []proto{protoSimple},
			lat: func(proto) (float64, string) {
				if direct {
					intra := hwLatUS[p.intraHW][algoCollNetDirect][protoSimple]
					inter := hwLatUS[hwNet][algoCollNetDirect][protoSimple]
					l := 2*(float64(min(1, g-1))*intra+float64(g-1)*collNetArityLatencyUS) + inter
					return l, fmt.Sprintf("2×(%d×%.1f + %d×%.1f) + %.0f (NCCL CollNet direct)", min(1, g-1), intra, g-1, collNetArityLatencyUS, inter)
				}
				intra := hwLatUS[p.intraHW][algoCollNetChain][protoSimple]
				inter := hwLatUS[hwNet][algoCollNetChain][protoSimple]
				return 2*float64(g-1)*intra + inter, fmt.Sprintf("2×%d×%.1f + %.0f (NCCL CollNet chain)", g-1, intra, inter)
			}})
	}
	if N > 1 && g > 1 {
		// Three collective calls one after the other: NVLink reduce-scatter
		// ((g-1)/g·S per GPU), all-reduce of S/g per rail across nodes
		// (2(N-1)/N·S per node over its rails), NVLink all-gather. Each
		// phase takes its own family's calibration: reduce_scatter's and
		// all_gather's on NVLink, all_reduce's on the network.
		nv := calibrationOf(collective.ReduceScatter).nvlinkTerm(p.intra)
		a := 2 * float64(g-1) / float64(g) / nv.gbps
		b := 2 * float64(N-1) / float64(N) / inter.gbps
		by := nv.by
		if b > a {
			by = inter.by
		}
		pipelined := 1 / math.Max(a, b)
		out = append(out, candidate{algo: AlgoHierarchical, bw: term{by, 1 / (a + b), ""},
			bwText: fmt.Sprintf("time per byte = 2(g-1)/g / (%s) + 2(N-1)/N / (%s) (phases in sequence; pipelined they would reach algbw %s)", nv, inter, gb(pipelined)),
			protos: []proto{protoSimple},
			lat: func(proto) (float64, string) {
				base := baseLatUS[algoRing][protoSimple]
				intra := hwLatUS[p.intraHW][algoRing][protoSimple]
				inter := hwLatUS[hwNet][algoTree][protoSimple]
				l := 3*base + 2*float64(g-1)*intra + 2*float64(N-1)*inter
				return l, fmt.Sprintf("3×%.1f + 2×%d×%.1f + 2×%d×%.0f (three NCCL ring Simple calls)", base, g-1, intra, N-1, inter)
			}})
	}
	return out
}

func nvlsLat(N int) func(proto) (float64, string) {
	return func(proto) (float64, string) {
		intra := hwLatUS[hwNVLink][algoNVLS][protoSimple]
		if N > 1 {
			inter := hwLatUS[hwNet][algoNVLS][protoSimple]
			return intra + inter, fmt.Sprintf("%.0f + %.0f (NCCL NVLS, NVLink and network)", intra, inter)
		}
		return intra, fmt.Sprintf("%.0f (NCCL NVLS)", intra)
	}
}

// boundText prints min(a, b) of the bounds that exist.
func boundText(ts ...term) string {
	var parts []string
	for _, t := range ts {
		if !math.IsInf(t.gbps, 1) {
			parts = append(parts, t.String())
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "min(" + strings.Join(parts, ", ") + ")"
}
