// Package collective is gdrcheck's vocabulary of NCCL collectives, in
// nccl-tests' terms: the names and their spellings, each collective's byte
// accounting (counts, in-place offsets) and bus-bandwidth factor, the one
// message-size grammar (ParseSize), the result row nccl-tests prints
// (Row), and NCCL's ncclResult_t codes explained (ExplainResult). It is pure Go: the native benchmark, the model and the nccl-tests
// reader all use it.
package collective

import (
	"fmt"
	"strings"
)

// Collective is an NCCL operation, named as nccl-tests names its binaries
// (all_reduce_perf measures all_reduce).
type Collective string

// Collectives.
const (
	AllReduce     Collective = "all_reduce"
	AllGather     Collective = "all_gather"
	ReduceScatter Collective = "reduce_scatter"
	Broadcast     Collective = "broadcast"
	Reduce        Collective = "reduce"
	AllToAll      Collective = "alltoall"
	SendRecv      Collective = "sendrecv"
)

// All lists the collectives in nccl-tests' order.
func All() []Collective {
	return []Collective{AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, SendRecv}
}

// Parse reads a collective however people and tools spell it: its name
// ("all_reduce"), without or with other separators ("allreduce",
// "all-reduce", "All_Reduce"), or as the nccl-tests binary
// ("all_reduce_perf"). Surrounding space is ignored.
func Parse(s string) (Collective, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(t, "_perf")
	t = strings.NewReplacer("-", "", "_", "").Replace(t)
	for _, c := range All() {
		if strings.ReplaceAll(string(c), "_", "") == t {
			return c, nil
		}
	}
	names := make([]string, 0, len(All()))
	for _, c := range All() {
		names = append(names, string(c))
	}
	return "", fmt.Errorf("collective %q: want one of %s", s, strings.Join(names, ", "))
}

// Known reports whether c is one of All.
func (c Collective) Known() bool {
	_, ok := rules[c]
	return ok
}

// Reduces reports whether c takes a reduction operation.
func (c Collective) Reduces() bool { return rules[c].reduces }

// Rooted reports whether c takes a root rank.
func (c Collective) Rooted() bool { return rules[c].rooted }

// CheckInPlace is false where nccl-tests does not verify the in-place
// result (alltoall, sendrecv: the send and receive buffers are one, so the
// result is not defined).
func (c Collective) CheckInPlace() bool { return rules[c].checkInPlace }

// BusFactor is nccl-tests' busbw = algbw × factor for n ranks
// (NVIDIA/nccl-tests doc/PERFORMANCE.md and src/*.cu GetBw): all_reduce
// 2(n-1)/n; all_gather, reduce_scatter and alltoall (n-1)/n; broadcast,
// reduce and sendrecv 1. It is 0 for fewer than one rank or an unknown
// collective.
func (c Collective) BusFactor(n int) float64 {
	r, ok := rules[c]
	if !ok || n < 1 {
		return 0
	}
	nf := float64(n)
	switch r.bus {
	case busAllReduce:
		return 2 * (nf - 1) / nf
	case busGather:
		return (nf - 1) / nf
	}
	return 1
}

// BusFactorText is BusFactor as a formula: "2(n-1)/n", "(n-1)/n" or "1".
func (c Collective) BusFactorText() string {
	switch rules[c].bus {
	case busAllReduce:
		return "2(n-1)/n"
	case busGather:
		return "(n-1)/n"
	}
	return "1"
}

// Bandwidths are nccl-tests' algbw and busbw in GB/s for an operation of
// NCCL count param (elements of elt bytes) that took sec seconds on n
// ranks. algbw counts the bytes one rank's buffer holds: all_gather,
// reduce_scatter and alltoall move n × param elements.
func (c Collective) Bandwidths(param, elt uint64, sec float64, n int) (algbw, busbw float64) {
	if sec <= 0 {
		return 0, 0
	}
	mult := 1.0
	if rules[c].perRank {
		mult = float64(n)
	}
	algbw = float64(param*elt) * mult / 1e9 / sec
	return algbw, algbw * c.BusFactor(n)
}

// Layout is the byte accounting of one message size.
type Layout struct {
	Count          uint64 // the count passed to NCCL (nccl-tests' "count" column)
	SendCount      uint64 // elements in each rank's send buffer
	RecvCount      uint64 // elements in each rank's receive buffer
	SendInplaceOff uint64 // bytes per rank
	RecvInplaceOff uint64 // bytes per rank
	Bytes          uint64 // nccl-tests' "size" column: max(send, recv) bytes
}

// LayoutFor is nccl-tests' setupArgs/GetCollByteCount for a requested
// size in bytes, elements of elt bytes and n ranks. all_gather,
// reduce_scatter and alltoall split the size over the ranks and round each
// rank's share down to 16 bytes, as nccl-tests does.
func (c Collective) LayoutFor(size, elt uint64, n int) Layout {
	count := size / elt
	var send, recv, param, so, ro uint64
	switch c {
	case AllGather:
		b := align16(count/uint64(n), elt)
		send, recv, param, so = b, b*uint64(n), b, b
	case ReduceScatter:
		b := align16(count/uint64(n), elt)
		send, recv, param, ro = b*uint64(n), b, b, b
	case AllToAll:
		p := align16(count/uint64(n), elt)
		send, recv, param = p*uint64(n), p*uint64(n), p
	default:
		send, recv, param = count, count, count
	}
	return Layout{Count: param, SendCount: send, RecvCount: recv, SendInplaceOff: so * elt, RecvInplaceOff: ro * elt, Bytes: max(send, recv) * elt}
}

// align16 rounds a per-rank count of elt-byte elements down to a multiple
// of 16 bytes.
func align16(c, elt uint64) uint64 {
	m := max(16/elt, 1)
	return c &^ (m - 1)
}

type busKind int

const (
	busOne       busKind = iota // broadcast, reduce, sendrecv
	busAllReduce                // 2(n-1)/n
	busGather                   // (n-1)/n
)

type rule struct {
	reduces, rooted, checkInPlace bool
	// perRank: the NCCL count is one rank's share, and algbw counts all
	// ranks' shares.
	perRank bool
	bus     busKind
}

var rules = map[Collective]rule{
	AllReduce:     {reduces: true, checkInPlace: true, bus: busAllReduce},
	AllGather:     {checkInPlace: true, perRank: true, bus: busGather},
	ReduceScatter: {reduces: true, checkInPlace: true, perRank: true, bus: busGather},
	Broadcast:     {rooted: true, checkInPlace: true},
	Reduce:        {reduces: true, rooted: true, checkInPlace: true},
	AllToAll:      {perRank: true, bus: busGather},
	SendRecv:      {},
}
