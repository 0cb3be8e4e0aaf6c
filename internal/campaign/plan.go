package campaign

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The rule for accusing, per level (the node-level tests, and each rail's):
//
//   - A step that passes clears its members at its level; a node-level pass
//     clears its members' rails too (the node-level all_reduce runs over
//     every NIC and at the pace of its slowest channel, so a slow NIC
//     usually fails it), except a rail that failed in the same chain (the
//     same partners, right after): the rail test sees what the node-level
//     one may not; nor one whose step in that chain did not run. A
//     cleared member is never accused at that level: faults measure low,
//     flaky measurements only ever measure low, so a pass is trusted.
//   - A failing step of 2 or 3 nodes is evidence against each member. It
//     does not count against X when another member Y has a "strong" fail
//     (failed in a step whose other members are all known good): Y explains
//     it. So a node paired with a bad one in round 1 is not accused by one
//     later flaky measurement.
//   - X is accused at a level when Confirm (2) failing steps with different
//     partners count against it and at least one of them is strong.
//   - With rails: a node whose every rail is accused is accused as a node;
//     a node whose node-level tests are confirmed to fail while every rail
//     passes is accused as a node (the fault is not a NIC); otherwise each
//     accused rail is a link, and the node-level failures are explained by
//     it.
//
// Groups of more than 3 nodes (bisection) accuse nobody: a failing group is
// split at its level (a rail's group into that rail's halves), a passing one
// clears its members at its level (a node-level group's members' rails too,
// by the rule above).

// level 0 is the node-level tests, 1+r rail r's.
func (c *Campaign) level(s *Step) int { return s.Rail + 1 }

type ref struct {
	round int
	s     *Step
}

// ledger is what the rounds read so far say about each node and level.
type ledger struct {
	c       *Campaign
	idx     map[string]int
	levels  int
	cleared [][]*ref   // [node][level]: the pass that cleared it, nil if none
	fails   [][][]*ref // [node][level]: failing steps of <= 3 nodes
	tested  []bool     // a node-level (pair or group) outcome other than missing
	// partners are every node a node was ever in a small step with.
	partners []map[int]bool
	// tried are the node lists with an outcome at each level (triedKey),
	// for bisection: a half already tested there is not planned again.
	tried map[string]bool
	// groupFails are the failing bisection groups, every level's.
	groupFails []*ref
	// dead are the levels none of whose steps passed while 3 or more
	// small ones failed: no node is known good there, so nothing can be
	// pinned on one (the threshold, or something every node shares). A
	// dead node level ends the campaign (systemic); a dead rail is one
	// finding.
	dead       []bool
	smallFails []int // failing steps of 2 or 3 nodes per level
	// unpassed are the levels that did not pass in each chain of each
	// round: failed, or did not run (missing).
	unpassed map[chainLevel]bool
}

type chainLevel struct {
	round int
	chain string
	level int
}

func triedKey(lv int, nodes []string) string {
	return fmt.Sprintf("%d:%s", lv, strings.Join(nodes, ","))
}

func (c *Campaign) ledger() *ledger {
	n := len(c.Nodes)
	l := &ledger{c: c, idx: make(map[string]int, n), levels: 1 + len(c.Rails), tried: map[string]bool{}, unpassed: map[chainLevel]bool{}}
	for i, h := range c.Nodes {
		l.idx[h] = i
	}
	l.cleared = make([][]*ref, n)
	l.fails = make([][][]*ref, n)
	l.tested = make([]bool, n)
	l.partners = make([]map[int]bool, n)
	nodePass := make([][]*ref, n) // each node's node-level passes
	passed := make([]bool, l.levels)
	l.smallFails = make([]int, l.levels)
	for i := range n {
		l.cleared[i] = make([]*ref, l.levels)
		l.fails[i] = make([][]*ref, l.levels)
	}
	for _, r := range c.Rounds {
		if !r.Read {
			continue
		}
		for _, s := range r.Steps {
			if s.Outcome == nil {
				continue
			}
			lv := c.level(s)
			if s.Outcome.Status != Pass {
				l.unpassed[chainLevel{r.N, s.Chain, lv}] = true
			}
			if s.Outcome.Status == Missing {
				continue
			}
			rf := &ref{r.N, s}
			l.tried[triedKey(lv, s.Nodes)] = true
			for _, h := range s.Nodes {
				x := l.idx[h]
				if lv == 0 {
					l.tested[x] = true
				}
				if len(s.Nodes) <= 3 {
					if l.partners[x] == nil {
						l.partners[x] = map[int]bool{}
					}
					for _, o := range s.Nodes {
						if o != h {
							l.partners[x][l.idx[o]] = true
						}
					}
				}
				switch {
				case s.Outcome.Status == Pass:
					if l.cleared[x][lv] == nil {
						l.cleared[x][lv] = rf
					}
					if lv == 0 {
						nodePass[x] = append(nodePass[x], rf)
					}
				case len(s.Nodes) <= 3:
					l.fails[x][lv] = append(l.fails[x][lv], rf)
				}
			}
			if s.Outcome.Status == Fail && len(s.Nodes) > 3 {
				l.groupFails = append(l.groupFails, rf)
			}
			passed[lv] = passed[lv] || s.Outcome.Status == Pass
			if s.Outcome.Status == Fail && len(s.Nodes) <= 3 {
				l.smallFails[lv]++
			}
		}
	}
	l.dead = make([]bool, l.levels)
	for lv := range l.levels {
		l.dead[lv] = l.smallFails[lv] >= 3 && !passed[lv]
	}
	// A node-level pass clears the node's rails, except a rail that failed
	// in the same chain (the same partners, right after): the rail test
	// sees what the node-level test, spread over every NIC, may not; nor
	// one whose step in the chain did not run (it is planned again).
	for x, passes := range nodePass {
		for k := 1; k < l.levels; k++ {
			for _, p := range passes {
				if l.cleared[x][k] == nil && !l.failedInChain(k, p) {
					l.cleared[x][k] = p
				}
			}
		}
	}
	return l
}

// failedInChain: rail level k failed, or its step did not run, in the
// chain of node-level step p (a pair's or a bisection group's: every step
// of a chain is on p's nodes).
func (l *ledger) failedInChain(k int, p *ref) bool {
	return l.unpassed[chainLevel{p.round, p.s.Chain, k}]
}

// strong: every member of f other than x is known good at lv.
func (l *ledger) strong(x int, lv int, f *ref) bool {
	for _, h := range f.s.Nodes {
		if y := l.idx[h]; y != x && l.cleared[y][lv] == nil {
			return false
		}
	}
	return true
}

func (l *ledger) hasStrong(x, lv int) bool {
	for _, f := range l.fails[x][lv] {
		if l.strong(x, lv, f) {
			return true
		}
	}
	return false
}

// counting are x's failing steps at lv that no other member explains.
func (l *ledger) counting(x, lv int) []*ref {
	var out []*ref
	for _, f := range l.fails[x][lv] {
		explained := false
		for _, h := range f.s.Nodes {
			if y := l.idx[h]; y != x && l.hasStrong(y, lv) && l.cleared[y][lv] == nil {
				explained = true
				break
			}
		}
		if !explained {
			out = append(out, f)
		}
	}
	return out
}

type state int

const (
	untested state = iota
	cleared
	suspect
	confirmed
)

// state of node x at lv.
func (l *ledger) state(x, lv int) state {
	if l.cleared[x][lv] != nil {
		return cleared
	}
	if len(l.fails[x][lv]) == 0 {
		return untested
	}
	cf := l.counting(x, lv)
	sets := map[string]bool{}
	strong := false
	for _, f := range cf {
		sets[partnerKey(f.s.Nodes, l.c.Nodes[x])] = true
		strong = strong || l.strong(x, lv, f)
	}
	if len(sets) >= l.c.Confirm && strong {
		return confirmed
	}
	return suspect
}

func partnerKey(nodes []string, x string) string {
	var b strings.Builder
	for _, n := range nodes {
		if n != x {
			b.WriteString(n)
			b.WriteByte(',')
		}
	}
	return b.String()
}

// nodeVerdict is node x's standing: accused as a node, its accused links,
// and the levels still open (to be tested again).
type nodeVerdict struct {
	node  bool
	links []int
	open  []int
	// explained: the node-level fails are explained by the links.
	explained bool
}

func (l *ledger) verdict(x int) nodeVerdict {
	var v nodeVerdict
	ns := l.state(x, 0)
	if len(l.c.Rails) == 0 {
		switch ns {
		case confirmed:
			v.node = true
		case suspect:
			v.open = []int{0}
		}
		return v
	}
	// Each rail: confirmed is a link, a suspect is open (not on a dead
	// rail: nothing can be pinned there), untested is unseen.
	var unseen []int
	for lv := 1; lv < l.levels; lv++ {
		switch l.state(x, lv) {
		case confirmed:
			v.links = append(v.links, lv-1)
		case suspect:
			if !l.dead[lv] {
				v.open = append(v.open, lv)
			}
		case untested:
			unseen = append(unseen, lv)
		}
	}
	if len(v.links) == len(l.c.Rails) {
		return nodeVerdict{node: true}
	}
	switch {
	case ns == suspect:
		// Test the rails not yet seen too, to tell a node from a link.
		v.open = slices.Concat([]int{0}, v.open, unseen)
	case ns != confirmed:
	case len(v.links) > 0:
		v.explained = true
	case len(v.open) > 0:
	case len(unseen) > 0:
		v.open = unseen
	default:
		v.node = true // fails as a node; every rail passes, or is dead
	}
	slices.Sort(v.open)
	return v
}

// plan makes the next round from the rounds read so far, or, when nothing
// is left to resolve (or the rounds are spent), the findings.
func (c *Campaign) plan() (*Round, *Findings) {
	l := c.ledger()
	p := &planner{c: c, l: l, used: make([]bool, len(c.Nodes)), r: &Round{N: len(c.Rounds) + 1}}
	if len(c.Rounds) == 0 {
		p.first()
		return p.r, nil
	}
	if f := c.systemic(l); f != nil {
		return nil, f
	}
	verdicts := make([]nodeVerdict, len(c.Nodes))
	for x := range c.Nodes {
		verdicts[x] = l.verdict(x)
	}
	if len(c.Rounds) < c.MaxRounds {
		p.again()
		p.bisect()
		p.retest(verdicts)
		p.untested()
	}
	if len(p.r.Steps) > 0 {
		return p.r, nil
	}
	return nil, c.findings(l, verdicts)
}

type planner struct {
	c      *Campaign
	l      *ledger
	used   []bool
	r      *Round
	chains int
}

// chain adds the steps of one set of nodes at the given levels (0 first),
// run one after another.
func (p *planner) chain(nodes []int, levels []int, role Role, suspects []int) {
	p.chains++
	id := fmt.Sprintf("s%04d", p.chains)
	names := make([]string, len(nodes))
	for i, x := range nodes {
		names[i] = p.c.Nodes[x]
		p.used[x] = true
	}
	var sus []string
	for _, x := range suspects {
		sus = append(sus, p.c.Nodes[x])
	}
	for _, lv := range levels {
		s := &Step{Chain: id, Nodes: names, Rail: lv - 1, Role: role, Suspects: sus}
		group := len(nodes) > 3
		switch {
		case lv > 0 && group:
			s.ID, s.Kind = fmt.Sprintf("%s-r%d", id, lv-1), KindRailGroup
		case lv > 0:
			s.ID, s.Kind = fmt.Sprintf("%s-r%d", id, lv-1), KindRailPair
		case group:
			s.ID, s.Kind = id, KindGroup
		default:
			s.ID, s.Kind = id, KindPair
		}
		p.r.Steps = append(p.r.Steps, s)
	}
}

// all is every level: the node-level test, then each rail.
func (p *planner) all() []int {
	lv := make([]int, 1+len(p.c.Rails))
	for i := range lv {
		lv[i] = i
	}
	return lv
}

// first lays out round 1: every node in a pair (node i with node i+N/2, so
// that in a list ordered by rack the pair crosses the fabric's upper tier;
// odd N: the last node joins the last pair as a third), or, bisecting, one
// group of every node, tested as nodes and then on each rail (one chain).
func (p *planner) first() {
	n := len(p.c.Nodes)
	if p.c.Strategy == Bisect && n > 3 {
		p.chain(seq(n), p.all(), RoleBisect, nil)
		return
	}
	role := RoleSurvey
	if p.c.Strategy == Bisect {
		role = RoleBisect
	}
	p.survey(seq(n), role)
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// survey pairs nodes (indices into Nodes, at least 2) i with i+len/2; an
// odd one out joins the last pair.
func (p *planner) survey(nodes []int, role Role) {
	h := len(nodes) / 2
	for i := range h {
		pair := []int{nodes[i], nodes[i+h]}
		if i == h-1 && len(nodes)%2 == 1 {
			pair = append(pair, nodes[2*h])
		}
		p.chain(pair, p.all(), role, nil)
	}
}

// again plans once more the survey and bisection steps of the latest round
// whose results were missing (--allow-missing), as they were.
func (p *planner) again() {
	last := p.c.Latest()
	done := map[string]bool{}
	for _, s := range last.Steps {
		if s.Outcome == nil || s.Outcome.Status != Missing || s.Role == RoleRetest || done[s.Chain] {
			continue
		}
		done[s.Chain] = true
		var nodes, levels []int
		for _, h := range s.Nodes {
			nodes = append(nodes, p.l.idx[h])
		}
		if slices.ContainsFunc(nodes, func(x int) bool { return p.used[x] }) {
			continue
		}
		for _, t := range last.Steps {
			if t.Chain == s.Chain && t.Outcome != nil && t.Outcome.Status == Missing {
				levels = append(levels, p.c.level(t))
			}
		}
		p.chain(nodes, levels, RoleAgain, nil)
	}
}

// bisect plans the halves of each failing group not split yet, at the
// group's level: a node-level group's halves are node-level steps, rail r's
// are rail r's (a half of 2 or 3 nodes is a pair step at that level, and
// from there the pair rules apply). A half not yet tested there whose nodes
// are not all cleared there is planned; the halves of every level that hold
// the same nodes are one chain, their steps one after another (node-level
// first), so that the chains of a round share no node and a node-level pass
// keeps a rail that failed right after it a question (failedInChain).
func (p *planner) bisect() {
	type half struct {
		nodes  []int
		levels []int
	}
	var order []string
	halves := map[string]*half{}
	for _, g := range p.l.groupFails {
		lv := p.c.level(g.s)
		nodes := g.s.Nodes
		mid := (len(nodes) + 1) / 2
		for _, names := range [][]string{nodes[:mid], nodes[mid:]} {
			if p.l.tried[triedKey(lv, names)] {
				continue
			}
			idx := make([]int, len(names))
			allClear := true
			for i, h := range names {
				idx[i] = p.l.idx[h]
				allClear = allClear && p.l.cleared[idx[i]][lv] != nil
			}
			if allClear {
				continue
			}
			key := strings.Join(names, ",")
			h := halves[key]
			if h == nil {
				h = &half{nodes: idx}
				halves[key] = h
				order = append(order, key)
			}
			if !slices.Contains(h.levels, lv) {
				h.levels = append(h.levels, lv)
			}
		}
	}
	for _, key := range order {
		h := halves[key]
		if slices.ContainsFunc(h.nodes, func(x int) bool { return p.used[x] }) {
			continue
		}
		slices.Sort(h.levels)
		p.chain(h.nodes, h.levels, RoleBisect, nil)
	}
}

// retest pairs every node with open levels with a known-good partner (one
// that passed at node level) it was never tested with; suspects left
// without one are paired with each other where they never were.
func (p *planner) retest(v []nodeVerdict) {
	n := len(p.c.Nodes)
	var good []int
	for x := range n {
		if p.l.cleared[x][0] != nil {
			good = append(good, x)
		}
	}
	var left []int
	for x := range n {
		if len(v[x].open) == 0 || p.used[x] {
			continue
		}
		g := p.partner(x, good)
		if g < 0 {
			left = append(left, x)
			continue
		}
		p.chain([]int{x, g}, v[x].open, RoleRetest, []int{x})
	}
	for i, x := range left {
		if p.used[x] {
			continue
		}
		for _, y := range left[i+1:] {
			if !p.used[y] && !p.l.partners[x][y] {
				p.chain([]int{x, y}, union(v[x].open, v[y].open), RoleRetest, []int{x, y})
				break
			}
		}
	}
}

// partner is a known-good node for x, unused this round and never x's
// partner, searched from x+N/2 on; -1 if none.
func (p *planner) partner(x int, good []int) int {
	if len(good) == 0 {
		return -1
	}
	n := len(p.c.Nodes)
	start, _ := slices.BinarySearch(good, (x+n/2)%n)
	for k := range good {
		g := good[(start+k)%len(good)]
		if g != x && !p.used[g] && !p.l.partners[x][g] {
			return g
		}
	}
	return -1
}

func union(a, b []int) []int {
	u := slices.Concat(a, b)
	slices.Sort(u)
	return slices.Compact(u)
}

// untested surveys the nodes never measured (their steps missing and not
// planned again): in pairs among themselves, an odd one out with a
// known-good node.
func (p *planner) untested() {
	var nodes []int
	for x := range p.c.Nodes {
		if !p.l.tested[x] && !p.used[x] {
			nodes = append(nodes, x)
		}
	}
	if len(nodes) == 1 {
		for x := range p.c.Nodes {
			if p.l.cleared[x][0] != nil && !p.used[x] {
				nodes = append(nodes, x)
				break
			}
		}
	}
	if len(nodes) >= 2 {
		p.survey(nodes, RoleAgain)
	}
}

// Plan records nothing: it makes the next round, or the findings, from the
// rounds read so far (every round must have been read).
func (c *Campaign) Plan() (*Round, *Findings, error) {
	if !c.Latest().Read {
		return nil, nil, fmt.Errorf("round %d has not been read", c.Latest().N)
	}
	r, f := c.plan()
	if r != nil {
		c.Rounds = append(c.Rounds, r)
		return r, nil, nil
	}
	c.Findings = f
	return nil, f, nil
}

// Verdict is what a campaign found.
type Verdict string

const (
	VerdictFault      Verdict = "fault"
	VerdictNoFault    Verdict = "no fault found"
	VerdictUnresolved Verdict = "unresolved"
)

// Findings are a finished campaign's conclusions.
type Findings struct {
	Verdict    Verdict      `json:"verdict"`
	Rounds     int          `json:"rounds"`
	Steps      int          `json:"steps"`
	Accused    []Accusation `json:"accused"`
	Unresolved []Finding    `json:"unresolved"`
	Cleared    []Finding    `json:"cleared"`
	Notes      []string     `json:"notes,omitempty"`
}

// Faulty says whether a node or link was accused, or a failure could not
// be pinned: the campaign's exit status 1.
func (f *Findings) Faulty() bool { return len(f.Accused) > 0 || len(f.Unresolved) > 0 }

// Accusation is a node or a link (one rail of a node) accused, with the
// steps that prove it.
type Accusation struct {
	// What is "node" or "link".
	What string `json:"what"`
	Node string `json:"node"`
	// Rail is the link's NIC (Config.Rails).
	Rail string `json:"rail,omitempty"`
	Why  string `json:"why"`
	// Evidence are the failing steps that count against it, then (for a
	// link) a pass of the node on another rail.
	Evidence []Evidence `json:"evidence"`
}

// Finding is a suspect cleared, or left unresolved, with its steps.
type Finding struct {
	Node     string     `json:"node"`
	Rail     string     `json:"rail,omitempty"`
	Why      string     `json:"why"`
	Evidence []Evidence `json:"evidence"`
}

// Evidence is one step's outcome, as a finding cites it.
type Evidence struct {
	Round  int      `json:"round"`
	Step   string   `json:"step"`
	Nodes  []string `json:"nodes"`
	Rail   string   `json:"rail,omitempty"`
	Status Status   `json:"status"`
	BusBW  float64  `json:"busbw_gbs,omitempty"`
	Why    string   `json:"why"`
}

func (c *Campaign) evidence(f *ref) Evidence {
	e := Evidence{Round: f.round, Step: f.s.ID, Nodes: f.s.Nodes, Status: f.s.Outcome.Status, BusBW: f.s.Outcome.BusBW, Why: f.s.Outcome.Why}
	if f.s.Rail >= 0 {
		e.Rail = c.Rails[f.s.Rail]
	}
	return e
}

func (c *Campaign) evidenceOf(fs []*ref) []Evidence {
	out := make([]Evidence, len(fs))
	for i, f := range fs {
		out[i] = c.evidence(f)
	}
	return out
}

// newFindings are empty findings of the campaign's rounds and steps.
func (c *Campaign) newFindings() *Findings {
	f := &Findings{Rounds: len(c.Rounds), Accused: []Accusation{}, Unresolved: []Finding{}, Cleared: []Finding{}}
	for _, r := range c.Rounds {
		f.Steps += len(r.Steps)
	}
	return f
}

func (c *Campaign) findings(l *ledger, v []nodeVerdict) *Findings {
	f := c.newFindings()
	lvName := func(lv int) string {
		if lv == 0 {
			return ""
		}
		return c.Rails[lv-1]
	}
	for x, h := range c.Nodes {
		vx := v[x]
		switch {
		case vx.node && len(c.Rails) > 0 && l.state(x, 0) != confirmed:
			ev := l.railCounting(x)
			f.Accused = append(f.Accused, Accusation{What: "node", Node: h, Why: fmt.Sprintf("every rail (%d) fails with %d or more different partners, one of them known good", len(c.Rails), c.Confirm), Evidence: c.evidenceOf(ev)})
		case vx.node:
			ev := slices.Clone(l.counting(x, 0))
			why := fmt.Sprintf("fails with %d or more different partners, one of them known good", c.Confirm)
			switch {
			case len(c.Rails) == 0:
			case l.everyRail(x, confirmed):
				why += "; so does every rail"
				ev = append(ev, l.railCounting(x)...)
			case !l.everyRail(x, cleared):
				// The verdict leaves a rail neither confirmed nor cleared
				// only when no step on it passed (dead).
				why += "; the rails on which no step passed could not be judged (see Unresolved)"
			default:
				why += ", while every rail passes: the fault is in the node, not a NIC"
				for lv := 1; lv < l.levels; lv++ {
					if p := l.cleared[x][lv]; p.s.Rail >= 0 {
						ev = append(ev, p)
					}
				}
			}
			f.Accused = append(f.Accused, Accusation{What: "node", Node: h, Why: why, Evidence: c.evidenceOf(ev)})
		}
		if !vx.node {
			for _, r := range vx.links {
				ev := slices.Clone(l.counting(x, 1+r))
				for lv := 1; lv < l.levels; lv++ {
					if p := l.cleared[x][lv]; p != nil && p.s.Rail >= 0 {
						ev = append(ev, p)
						break
					}
				}
				why := fmt.Sprintf("rail %s fails with %d or more different partners, one of them known good, while the node's other rails pass", c.Rails[r], c.Confirm)
				if vx.explained {
					why += "; the node-level failures are this link's"
				}
				f.Accused = append(f.Accused, Accusation{What: "link", Node: h, Rail: c.Rails[r], Why: why, Evidence: c.evidenceOf(ev)})
			}
		}
		for _, lv := range vx.open {
			if len(l.fails[x][lv]) == 0 {
				continue // a rail not seen yet, to tell a node from a link
			}
			why := "failed, and no known-good partner was left to test it with"
			if len(c.Rounds) >= c.MaxRounds {
				why = fmt.Sprintf("still a suspect after the last round (%d)", c.MaxRounds)
			}
			if len(c.Nodes) == 2 {
				why = "the two nodes failed together; which of them is at fault takes a third node known to be good"
			}
			f.Unresolved = append(f.Unresolved, Finding{Node: h, Rail: lvName(lv), Why: why, Evidence: c.evidenceOf(l.fails[x][lv])})
		}
		// A suspect cleared: it failed before the pass that cleared it (a
		// known-good partner failing with a suspect is not one). Rails
		// that failed and passed with the node-level steps are named on
		// the node's line.
		var rails []string
		node := -1
		for lv := range l.levels {
			p := l.cleared[x][lv]
			if p == nil || len(l.fails[x][lv]) == 0 || l.fails[x][lv][0].round > p.round || lv > 0 && p.s.Rail < 0 {
				continue
			}
			if lv > 0 && node >= 0 && l.fails[x][lv][0].round == l.fails[x][0][0].round && p.round == l.cleared[x][0].round {
				rails = append(rails, lvName(lv))
				continue
			}
			if lv == 0 {
				node = len(f.Cleared)
			}
			f.Cleared = append(f.Cleared, Finding{Node: h, Rail: lvName(lv), Why: "failed, then passed", Evidence: append(c.evidenceOf(l.fails[x][lv]), c.evidence(p))})
		}
		if len(rails) > 0 {
			f.Cleared[node].Why += fmt.Sprintf(", and so did rail(s) %s with it", strings.Join(rails, ", "))
		}
	}
	for lv := 1; lv < l.levels; lv++ {
		if l.dead[lv] {
			f.Unresolved = append(f.Unresolved, Finding{Rail: lvName(lv), Why: fmt.Sprintf("every step on this rail failed (%d of 2 or 3 nodes) and none passed: no node is known good on it to test the others against. The threshold (--min-rail-busbw) may be wrong, or the fault is one every node's rail shares (its switch, the subnet manager)", l.smallFails[lv])})
		}
	}
	f.Notes = c.unexplained(l, f)
	for _, x := range l.untestedNodes() {
		f.Unresolved = append(f.Unresolved, Finding{Node: c.Nodes[x], Why: "never measured: every step of it was missing"})
	}
	// A rail of a measured node that no step measured (every one missing)
	// and no node-level pass cleared is not a pass either.
	for x, h := range c.Nodes {
		if !l.tested[x] || v[x].node {
			continue
		}
		for lv := 1; lv < l.levels; lv++ {
			if !l.dead[lv] && l.state(x, lv) == untested && !slices.Contains(v[x].open, lv) {
				f.Unresolved = append(f.Unresolved, Finding{Node: h, Rail: lvName(lv), Why: "never measured on this rail: every step of it there was missing"})
			}
		}
	}
	slices.SortStableFunc(f.Accused, func(a, b Accusation) int {
		return cmp.Or(cmp.Compare(l.idx[a.Node], l.idx[b.Node]), cmp.Compare(a.Rail, b.Rail))
	})
	switch {
	case len(f.Accused) > 0:
		f.Verdict = VerdictFault
	case len(f.Unresolved) > 0:
		f.Verdict = VerdictUnresolved
	default:
		f.Verdict = VerdictNoFault
	}
	return f
}

// everyRail: node x is in state st on every rail.
func (l *ledger) everyRail(x int, st state) bool {
	for lv := 1; lv < l.levels; lv++ {
		if l.state(x, lv) != st {
			return false
		}
	}
	return true
}

// railCounting are x's counting failing steps on every rail, rail by rail.
func (l *ledger) railCounting(x int) []*ref {
	var out []*ref
	for lv := 1; lv < l.levels; lv++ {
		out = append(out, l.counting(x, lv)...)
	}
	return out
}

func (l *ledger) untestedNodes() []int {
	var out []int
	for x, t := range l.tested {
		if !t {
			out = append(out, x)
		}
	}
	return out
}

// unexplained notes the failing steps none of whose nodes is accused or
// unresolved at the step's level: a flaky measurement, or a fault of what
// lies between the nodes (a cable or switch port both share only there),
// which this campaign does not accuse.
func (c *Campaign) unexplained(l *ledger, f *Findings) []string {
	at := map[string]bool{} // node, or node/rail
	for _, a := range f.Accused {
		at[a.Node+"/"+a.Rail] = true
		if a.What == "node" {
			at[a.Node+"/*"] = true
		}
	}
	for _, u := range f.Unresolved {
		at[u.Node+"/"+u.Rail] = true
	}
	var notes []string
	for _, r := range c.Rounds {
		for _, s := range r.Steps {
			if s.Outcome == nil || s.Outcome.Status != Fail || s.Rail >= 0 && l.dead[1+s.Rail] {
				continue // a rail none of whose steps passed is one finding
			}
			rail := ""
			if s.Rail >= 0 {
				rail = c.Rails[s.Rail]
			}
			hit := false
			for _, n := range s.Nodes {
				// A node-level step is explained by any fault of its nodes (a
				// link pulls it down too); a rail's by its node or that link.
				if at[n+"/*"] || at[n+"/"+rail] || (s.Rail < 0 && c.anyAt(at, n)) {
					hit = true
					break
				}
			}
			if hit {
				continue
			}
			what := "a flaky measurement, or a fault between these nodes only"
			if len(s.Nodes) > 3 {
				what = "every node of it passed in smaller groups: a flaky measurement, or a fault only at this scale"
			}
			on := nodesLine(s.Nodes)
			if rail != "" {
				on += ", rail " + rail
			}
			notes = append(notes, fmt.Sprintf("round %d step %s (%s) failed, yet none of its nodes is at fault: %s", r.N, s.ID, on, what))
		}
	}
	return notes
}

func (c *Campaign) anyAt(at map[string]bool, n string) bool {
	if at[n+"/"] {
		return true
	}
	for _, r := range c.Rails {
		if at[n+"/"+r] {
			return true
		}
	}
	return false
}

// systemic ends a campaign whose node level is dead (three or more pairs
// failed, no step passed): with no node known good nothing can be pinned
// on one, and the cause is shared: the threshold, or something every node
// depends on.
func (c *Campaign) systemic(l *ledger) *Findings {
	if !l.dead[0] {
		return nil
	}
	steps := l.smallFails[0]
	f := c.newFindings()
	f.Verdict = VerdictUnresolved
	for x, h := range c.Nodes {
		if l.tested[x] {
			f.Unresolved = append(f.Unresolved, Finding{Node: h, Why: "every node-level step failed, this node's too"})
		}
	}
	f.Notes = []string{fmt.Sprintf("every node-level step failed (%d pairs) and none passed: no node is known good to test the others against. The threshold (--min-busbw) may be wrong, or the fault is one every node shares (a switch, the subnet manager, the software stack).", steps)}
	return f
}
