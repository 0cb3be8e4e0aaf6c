package smitopo

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze/verdict"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology/level"
)

// IDNVLink is the verdict on the NV# cells between GPUs: what the
// operator pastes `topo -m` for besides the NIC affinity.
const IDNVLink = "topo.nvlink"

// nvPair is one GPU pair joined by NVLink: its bonded link count in each
// direction (a matrix is symmetric; a pasted one may not be).
type nvPair struct {
	a, b       int // row indexes, a < b
	ab, ba     int // links in row a's and row b's cell (0: not NV#)
	lineA, lnB int
}

// nvlink judges the NV# cells: every GPU that has NVLink should have the
// same total of links to its peers (HGX boards and NVLink-bridged pairs
// are built so; a DGX-1's hybrid cube-mesh mixes NV1 and NV2 pairs, but
// each GPU still totals 6). A GPU whose total is below the others' sits
// on a bundle that lost links (an NV10 pair among NV12 pairs: two of a
// bridge's twelve links down). No verdict when the matrix shows no NVLink.
func (r *Report) nvlink(name string) []result.Result {
	m := r.Matrix
	var gpus []int
	for i := range m.Labels {
		if m.IsGPU[i] && i < len(m.Cells) {
			gpus = append(gpus, i)
		}
	}
	links := func(i, j int) int {
		if j >= len(m.Cells[i]) {
			return 0
		}
		l, n, err := level.Parse(m.Cells[i][j])
		if err != nil || l != level.NVLink {
			return 0
		}
		return n
	}
	var pairs []nvPair
	total := map[int]int{}
	for x, a := range gpus {
		for _, b := range gpus[x+1:] {
			p := nvPair{a: a, b: b, ab: links(a, b), ba: links(b, a), lineA: m.RowLine[m.Labels[a]], lnB: m.RowLine[m.Labels[b]]}
			if p.ab == 0 && p.ba == 0 {
				continue
			}
			pairs = append(pairs, p)
			total[a] += max(p.ab, p.ba)
			total[b] += max(p.ab, p.ba)
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	cell := func(p nvPair) string {
		return fmt.Sprintf("%s-%s NV%d", m.Labels[p.a], m.Labels[p.b], max(p.ab, p.ba))
	}
	var asym []nvPair
	for _, p := range pairs {
		if p.ab != p.ba {
			asym = append(asym, p)
		}
	}
	if len(asym) > 0 {
		var what []string
		var ev []result.Evidence
		for _, p := range asym {
			what = append(what, fmt.Sprintf("%s→%s NV%d but %s→%s NV%d", m.Labels[p.a], m.Labels[p.b], p.ab, m.Labels[p.b], m.Labels[p.a], p.ba))
			ev = append(ev, verdict.Ev(name, p.lineA, fmt.Sprintf("%s row: %s = %s", m.Labels[p.a], m.Labels[p.b], m.Cells[p.a][p.b]), ""),
				verdict.Ev(name, p.lnB, fmt.Sprintf("%s row: %s = %s", m.Labels[p.b], m.Labels[p.a], m.Cells[p.b][p.a]), ""))
		}
		v := verdict.New(IDNVLink, result.Fail, "node", "NVLinkAsymmetric",
			"the matrix gives a GPU pair different NVLink counts in its two cells: "+strings.Join(what, "; ")+" (nvidia-smi prints one bundle twice; a pasted matrix edited by hand, or links that changed state while it was read)", ev...)
		v.Remedy = "rerun nvidia-smi topo -m and nvidia-smi nvlink -s on this host; a link that comes and goes points at the bridge or the baseboard"
		return []result.Result{v}
	}
	most := 0
	for _, t := range total {
		most = max(most, t)
	}
	var low []int
	for _, g := range gpus {
		if t, ok := total[g]; ok && t < most {
			low = append(low, g)
		}
	}
	var kinds []string
	for _, p := range pairs {
		k := fmt.Sprintf("NV%d", p.ab)
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if len(low) == 0 {
		return []result.Result{verdict.New(IDNVLink, result.Pass, "node", "NVLinkEven",
			fmt.Sprintf("%d GPU pairs joined by NVLink (%s); the NV# cells of every GPU with NVLink add up to the same %d", len(pairs), strings.Join(kinds, ", "), most))}
	}
	var what []string
	var ev []result.Evidence
	for _, g := range low {
		var ps []string
		for _, p := range pairs {
			if p.a == g || p.b == g {
				ps = append(ps, cell(p))
			}
		}
		what = append(what, fmt.Sprintf("%s has %d (%s)", m.Labels[g], total[g], strings.Join(ps, ", ")))
		ev = append(ev, verdict.Ev(name, m.RowLine[m.Labels[g]], fmt.Sprintf("%s row: NV# cells add up to %d, the others' to %d", m.Labels[g], total[g], most), ""))
	}
	v := verdict.New(IDNVLink, result.Warn, "node", "NVLinkDegraded",
		fmt.Sprintf("GPUs whose NV# cells add up to less than the others' %d: %s; a bundle that lost links carries less bandwidth (NV10 instead of NV12 is two links down), unless this is a slice of a board whose GPUs differ by design", most, strings.Join(what, "; ")), ev...)
	v.Remedy = "check each link: nvidia-smi nvlink -s (inactive links) and nvidia-smi nvlink -e (errors) on these GPUs; reseat or replace the NVLink bridge, or have the provider check the baseboard"
	return []result.Result{v}
}
