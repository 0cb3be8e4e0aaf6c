// Package pairing assigns the GPUs of a node their RDMA NICs from the path
// levels between them. It knows nothing of how the levels were found: the
// discovered host and a pasted `nvidia-smi topo -m` matrix both build the
// level matrix and call Assign.
package pairing

import (
	"cmp"
	"slices"

	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// Choice is one GPU's outcome.
type Choice struct {
	// NIC is the NIC (column) assigned to the GPU; -1 when there is no NIC.
	NIC int
	// Nearest are the NICs at the GPU's best level, in preference order
	// (every NIC when no path is known).
	Nearest []int
}

// Assign pairs each GPU (a row of levels) with a NIC (a column):
// levels[g][n] is the path from GPU g to NIC n; the first row's length is
// the number of NICs, and a cell missing from a shorter row is unknown.
// Only PIX to SYS are paths; any other level (unknown, or X and NV# read
// off a garbled matrix) ranks as unknown.
//
// The nearest NIC wins, and each GPU gets a NIC of its own where the
// levels allow: a maximum matching level by level, PIX edges first, then
// PXB, PHB, NODE and SYS. Within a level a GPU takes a free NIC when it has
// one, and only otherwise displaces another GPU along an augmenting path:
// first among the GPUs matched in this level's round; failing that, a GPU
// matched at a nearer level may move too, but only to another NIC as near
// as the one it leaves, so no GPU ever ends farther than it was. Among NICs
// of one level the higher prefer(g, n) comes first, then the lower column
// (a nil prefer leaves column order). A GPU whose nearest NIC is within
// NCCL's default GPU Direct RDMA level (PXB) is never given a NIC of its
// own beyond it: it shares its nearest instead, as NCCL does (a DGX-2 has
// two GPUs per PIX NIC; a spare NIC across the socket would cost the GPU
// GDR). GPUs left over (more GPUs than NICs, those, or no known path)
// share: each takes the least used of its nearest NICs.
func Assign(levels [][]level.Level, prefer func(gpu, nic int) float64) []Choice {
	out := make([]Choice, len(levels))
	if len(levels) == 0 {
		return out
	}
	nics := len(levels[0])
	m := matcher{levels: levels, order: make([][]int, len(levels)), owner: make([]int, nics), settled: make([]bool, len(levels))}
	for g := range levels {
		m.order[g] = m.preference(g, prefer)
		out[g].NIC = -1
		for _, n := range m.order[g] {
			if m.at(g, n) != m.at(g, m.order[g][0]) {
				break
			}
			out[g].Nearest = append(out[g].Nearest, n)
		}
	}
	m.assigned = make([]int, len(levels))
	for g := range m.assigned {
		m.assigned[g] = -1
	}
	for n := range m.owner {
		m.owner[n] = -1
	}
	for lim := level.PIX; lim <= level.SYS; lim++ {
		for g, n := range m.assigned {
			m.settled[g] = n >= 0
		}
		for g, n := range m.assigned {
			if lim > level.DefaultGDR && len(m.order[g]) > 0 && m.at(g, m.order[g][0]) <= level.DefaultGDR {
				continue // shares its nearest NIC rather than lose GDR
			}
			if n < 0 && !m.try(g, lim, make([]bool, nics), false) {
				m.try(g, lim, make([]bool, nics), true)
			}
		}
	}
	users := make([]int, nics)
	for g, n := range m.assigned {
		out[g].NIC = n
		if n >= 0 {
			users[n]++
		}
	}
	// More GPUs than NICs: the rest share, the least used of their nearest.
	for g := range out {
		if out[g].NIC >= 0 || len(out[g].Nearest) == 0 {
			continue
		}
		best := out[g].Nearest[0]
		for _, n := range out[g].Nearest[1:] {
			if users[n] < users[best] {
				best = n
			}
		}
		out[g].NIC = best
		users[best]++
	}
	return out
}

// matcher holds the matching in progress.
type matcher struct {
	levels   [][]level.Level
	order    [][]int // each GPU's NICs, in preference order
	owner    []int   // NIC -> GPU, -1 when free
	assigned []int   // GPU -> NIC, -1 when none yet
	settled  []bool  // GPU matched in an earlier round, at a nearer level
}

// at is the level of a GPU→NIC path, unknown unless PIX to SYS.
func (m *matcher) at(g, n int) level.Level {
	if n >= len(m.levels[g]) {
		return level.Unknown
	}
	if l := m.levels[g][n]; l >= level.PIX && l <= level.SYS {
		return l
	}
	return level.Unknown
}

// preference orders a GPU's NICs: nearest first, then the higher prefer,
// then column order.
func (m *matcher) preference(g int, prefer func(gpu, nic int) float64) []int {
	order := make([]int, len(m.owner))
	for n := range order {
		order[n] = n
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(m.at(g, a), m.at(g, b)); c != 0 || prefer == nil {
			return c
		}
		return cmp.Compare(prefer(g, b), prefer(g, a))
	})
	return order
}

// usable reports whether GPU g may take NIC n at level lim or nearer: a
// settled GPU's NIC only when settled GPUs may move.
func (m *matcher) usable(g, n int, lim level.Level, seen []bool, moveSettled bool) bool {
	if m.at(g, n) > lim || seen[n] {
		return false
	}
	o := m.owner[n]
	return o < 0 || moveSettled || !m.settled[o]
}

// try finds GPU g a NIC at level lim or nearer: a free one in preference
// order first, so a GPU keeps its first choice when it can; only then one
// whose GPU can move elsewhere (an augmenting path). A settled GPU moves
// only to a NIC as near as the one it has.
func (m *matcher) try(g int, lim level.Level, seen []bool, moveSettled bool) bool {
	for _, n := range m.order[g] {
		if m.owner[n] < 0 && m.usable(g, n, lim, seen, moveSettled) {
			seen[n] = true
			m.take(g, n)
			return true
		}
	}
	for _, n := range m.order[g] {
		if !m.usable(g, n, lim, seen, moveSettled) {
			continue
		}
		seen[n] = true
		o := m.owner[n]
		if o < 0 {
			m.take(g, n)
			return true
		}
		olim := lim
		if m.settled[o] {
			olim = m.at(o, n)
		}
		if m.try(o, olim, seen, moveSettled) {
			m.take(g, n)
			return true
		}
	}
	return false
}

func (m *matcher) take(g, n int) {
	m.owner[n] = g
	m.assigned[g] = n
}
