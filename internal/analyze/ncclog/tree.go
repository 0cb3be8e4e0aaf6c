package ncclog

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Caps of the tree tracker.
const (
	maxTrees     = 64
	maxTreeLinks = 1024
	maxTreeFinds = 16
	maxNetPaths  = 512 // GPU to NET paths of one host
)

// treeTracker owns the system trees (the first one of every host) and the
// GPU to NET paths.
type treeTracker struct {
	all       []*treeState
	pathCount int
}

// NetPath is one GPU to NET path from the lines NCCL prints after the
// system tree ("GPU/0-17000 :GPU/0-17000 (0/5000.0/LOC) ... NET/1 (3/24.0/PHB)").
type NetPath struct {
	GPU  string  `json:"gpu"`
	Net  string  `json:"net"`
	Type string  `json:"type"`
	BW   float64 `json:"bw"`
}

type treeNode struct {
	col  int
	name string
}

type treeState struct {
	host     int32
	line     int64
	maxBW    float64
	totalBW  float64
	root     string
	stack    []treeNode
	links    []TreeLink
	texts    []string
	omitted  int
	complete bool
	findings []Finding
	findOmit int
	nodes    map[string]bool
}

const maxPathsTotal = 8192

// treeStart reads "=== System : maxBw 240.0 totalBw 240.0 ===". Only the
// first tree of every host is kept (every rank prints the same one).
func (a *analyzer) treeStart(host int32, p *procState, tid int64, m []byte, no int64) {
	if host < 0 {
		return
	}
	hs := a.hosts.all[host]
	if hs.treeDone || hs.tree != nil || len(a.trees.all) >= maxTrees {
		return
	}
	t := &treeState{host: host, line: no, nodes: map[string]bool{}}
	f := bytes.Fields(m)
	for i := 0; i+1 < len(f); i++ {
		switch string(f[i]) {
		case "maxBw":
			t.maxBW, _ = textio.ParseFloat(string(f[i+1]))
		case "totalBw":
			t.totalBW, _ = textio.ParseFloat(string(f[i+1]))
		}
	}
	hs.tree = t
	p.tree, p.treeTid = t, tid
	a.trees.all = append(a.trees.all, t)
}

// treeLine consumes one line of a tree being printed; it reports false
// when the line is not part of the tree (which then ends).
func (a *analyzer) treeLine(p *procState, m, raw []byte, no int64) bool {
	t := p.tree
	col := 0
	for col < len(m) && m[col] == ' ' {
		col++
	}
	body := m[col:]
	switch {
	case len(body) == 0:
		return true
	case body[0] == '=':
		a.treeEnd(p)
		return true
	case body[0] == '+':
		typ, bw, node, ok := parseTreeLink(body[1:])
		if !ok {
			a.treeEnd(p)
			return false
		}
		for len(t.stack) > 0 && t.stack[len(t.stack)-1].col >= col {
			t.stack = t.stack[:len(t.stack)-1]
		}
		parent := t.root
		if len(t.stack) > 0 {
			parent = t.stack[len(t.stack)-1].name
		}
		if len(t.stack) < 64 {
			t.stack = append(t.stack, treeNode{col: col, name: node})
		}
		if len(t.links) < maxTreeLinks {
			t.links = append(t.links, TreeLink{From: parent, To: node, Type: typ, BW: bw, Line: no})
			t.texts = append(t.texts, clip(raw))
			if len(t.nodes) < 4*maxTreeLinks {
				t.nodes[node] = true
			}
		} else {
			t.omitted++
		}
		return true
	case col == 0 && bytes.IndexByte(firstToken(body), '/') > 0:
		t.root = string(firstToken(body))
		t.stack = t.stack[:0]
		t.nodes[t.root] = true
		return true
	}
	a.treeEnd(p)
	return false
}

// parseTreeLink reads " PCI[24.0] - GPU/0-17000 (0)".
func parseTreeLink(b []byte) (typ string, bw float64, node string, ok bool) {
	b = bytes.TrimLeft(b, " ")
	o := bytes.IndexByte(b, '[')
	c := bytes.IndexByte(b, ']')
	if o <= 0 || c < o {
		return "", 0, "", false
	}
	typ = string(b[:o])
	bw, ok = textio.ParseFloat(string(b[o+1 : c]))
	if !ok {
		return "", 0, "", false
	}
	r := bytes.TrimLeft(b[c+1:], " ")
	if !bytes.HasPrefix(r, []byte("- ")) {
		return "", 0, "", false
	}
	node = string(firstToken(r[2:]))
	return typ, bw, node, node != ""
}

func (a *analyzer) treeEnd(p *procState) {
	t := p.tree
	p.tree = nil
	if t == nil {
		return
	}
	t.complete = true
	hs := a.hosts.all[t.host]
	hs.tree = nil
	hs.treeDone = true
}

func isGPUNode(s string) bool { return strings.HasPrefix(s, "GPU/") }

func (t *treeState) addFinding(f Finding) {
	if len(t.findings) >= maxTreeFinds {
		t.findOmit++
		return
	}
	t.findings = append(t.findings, f)
}

// analyze looks for what is wrong in a tree: NVLink bandwidth that differs
// between the two directions of a GPU pair or between GPUs on one NVSwitch
// (a link down, or a topology file that says so), PCI links slower than
// 1 GB/s (emulated bridges that advertise 2.5 GT/s x1: PCI[0.2]), and GPUs
// whose PCI link is narrower than their neighbours'.
func (t *treeState) analyze() {
	type pair struct{ a, b string }
	nvl := map[pair]int{}
	hasOut := map[string]bool{}
	var nvs, gpuPCI []int
	seenGPU := map[string]bool{}
	for i, l := range t.links {
		switch {
		case l.Type == "NVL" && isGPUNode(l.From) && isGPUNode(l.To):
			if _, ok := nvl[pair{l.From, l.To}]; !ok {
				nvl[pair{l.From, l.To}] = i
			}
			hasOut[l.From] = true
		case l.Type == "NVL" && isGPUNode(l.From) && strings.HasPrefix(l.To, "NVS/"):
			nvs = append(nvs, i)
		case l.Type == "PCI" && isGPUNode(l.To) && !seenGPU[l.To]:
			seenGPU[l.To] = true
			gpuPCI = append(gpuPCI, i)
		}
	}
	for i, l := range t.links {
		if !(l.Type == "NVL" && isGPUNode(l.From) && isGPUNode(l.To)) || nvl[pair{l.From, l.To}] != i {
			continue
		}
		j, ok := nvl[pair{l.To, l.From}]
		if !ok {
			if hasOut[l.To] {
				t.addFinding(Finding{Kind: "nvlink-one-way", Line: l.Line, Text: t.texts[i],
					Detail: fmt.Sprintf("%s -> %s NVL[%.1f] has no link back", l.From, l.To, l.BW)})
			}
			continue
		}
		r := t.links[j]
		lo, hi := l.BW, r.BW
		if lo > hi {
			lo, hi = hi, lo
		}
		if hi > lo*1.1 && l.From < l.To {
			k := i
			if r.BW < l.BW {
				k = j
			}
			t.addFinding(Finding{Kind: "nvlink-asymmetric", Line: t.links[k].Line, Text: t.texts[k],
				Detail: fmt.Sprintf("%s -> %s NVL[%.1f] but %s -> %s NVL[%.1f]", l.From, l.To, l.BW, r.From, r.To, r.BW)})
		}
	}
	t.belowBest(nvs, 0.9, "nvlink-degraded", func(l TreeLink, best float64) string {
		return fmt.Sprintf("%s NVL[%.1f] to %s, other GPUs NVL[%.1f]", l.From, l.BW, l.To, best)
	})
	t.belowBest(gpuPCI, 0.75, "gpu-pci-narrow", func(l TreeLink, best float64) string {
		return fmt.Sprintf("%s PCI[%.1f], other GPUs PCI[%.1f]", l.To, l.BW, best)
	})
	for i, l := range t.links {
		if l.Type == "PCI" && l.BW > 0 && l.BW < 1.0 {
			t.addFinding(Finding{Kind: "pci-slow-link", Line: l.Line, Text: t.texts[i],
				Detail: fmt.Sprintf("%s -> %s PCI[%.1f]: slower than PCIe Gen1 x4; an emulated bridge (2.5 GT/s x1)", l.From, l.To, l.BW)})
		}
	}
}

// belowBest adds a finding of kind for each of the links idx (two or more)
// slower than frac of the fastest of them.
func (t *treeState) belowBest(idx []int, frac float64, kind string, detail func(l TreeLink, best float64) string) {
	if len(idx) < 2 {
		return
	}
	best := 0.0
	for _, i := range idx {
		best = max(best, t.links[i].BW)
	}
	for _, i := range idx {
		if l := t.links[i]; l.BW < frac*best {
			t.addFinding(Finding{Kind: kind, Line: l.Line, Text: t.texts[i], Detail: detail(l, best)})
		}
	}
}

// pathLine reads "GPU/0-60 :GPU/0-60 (0/5000.0/LOC) CPU/0-ff (1/48.0/PHB)
// NET/0-0 (3/1.2/PHB)" and keeps the GPU to NET paths of the first
// process of a host that prints them.
func (a *analyzer) pathLine(host int32, p *procState, m []byte) {
	if host < 0 || p == nil || a.trees.pathCount >= maxPathsTotal {
		return
	}
	ft := firstToken(m)
	if len(m) < len(ft)+2 || string(m[len(ft):len(ft)+2]) != " :" {
		return
	}
	hs := a.hosts.all[host]
	if hs.pathPID == 0 {
		hs.pathPID = p.pid + 1
	} else if hs.pathPID != p.pid+1 {
		return
	}
	f := bytes.Fields(m[len(ft)+2:])
	for i := 0; i+1 < len(f); i += 2 {
		node, attr := f[i], f[i+1]
		if !bytes.HasPrefix(node, []byte("NET/")) || len(attr) < 3 || attr[0] != '(' {
			continue
		}
		parts := bytes.Split(bytes.Trim(attr, "()"), []byte("/"))
		if len(parts) != 3 {
			continue
		}
		bw, _ := textio.ParseFloat(string(parts[1]))
		np := NetPath{GPU: string(ft), Net: string(node), Type: string(parts[2]), BW: bw}
		dup := false
		for _, x := range hs.paths {
			if x.GPU == np.GPU && x.Net == np.Net {
				dup = true
				break
			}
		}
		if !dup && len(hs.paths) < maxNetPaths && a.trees.pathCount < maxPathsTotal {
			hs.paths = append(hs.paths, np)
			a.trees.pathCount++
		}
	}
}

// report is every system tree with its findings.
func (tt *treeTracker) report(hosts []*hostState, name func(int32) string) []SystemTree {
	var out []SystemTree
	for _, t := range tt.all {
		t.analyze()
		st := SystemTree{Host: name(t.host), MaxBW: t.maxBW, TotalBW: t.totalBW, Line: t.line,
			Links: t.links, LinksOmitted: t.omitted, Findings: t.findings, FindingsOmitted: t.findOmit,
			GPUNetPaths: hosts[t.host].paths, Complete: t.complete}
		if st.Links == nil {
			st.Links = []TreeLink{}
		}
		for n := range t.nodes {
			switch {
			case strings.HasPrefix(n, "GPU/"):
				st.GPUs++
			case strings.HasPrefix(n, "NIC/"):
				st.NICs++
			}
		}
		for _, l := range t.links {
			if l.Type == "NVL" {
				st.NVLinks++
			}
		}
		out = append(out, st)
	}
	return out
}

// nvlink says whether a tree has an NVLink link.
func (tt *treeTracker) nvlink() bool {
	for _, t := range tt.all {
		for _, l := range t.links {
			if l.Type == "NVL" {
				return true
			}
		}
	}
	return false
}
