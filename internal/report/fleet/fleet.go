package fleet

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/profile"
	"github.com/gdrcheck/gdrcheck/internal/report/noise"
)

// Options are the roll-up's reference and noise model.
type Options struct {
	// Expect is the site profile (--expect); its versions, counts, rate
	// and MTU are the reference where it sets them, the majority otherwise.
	Expect *profile.Profile
	// Z is the robust z beyond which a lower measurement is an outlier.
	Z float64
	// MADFloor is the least MAD as a fraction of the median, so that a
	// class whose nodes measured identically does not accuse a node 0.1%
	// below them.
	MADFloor float64
	// MinNodes is the fewest nodes of a class measuring a key for its
	// outliers to be judged.
	MinNodes int
	// Noise is how far a healthy node's measurement moves between runs
	// (internal/report/noise, as gdrcheck diff uses it): a node is an
	// outlier only when it is below the median by more than that too, so
	// that a class of nodes measuring alike does not turn run-to-run noise
	// of short, latency-bound rows into accusations.
	Noise noise.Options
}

// DefaultOptions: noise.DefaultRobust's outlier rule (|z| > 3.5, a MAD
// of at least 1% of the median, 5 nodes) and noise model.
func DefaultOptions() Options {
	r := noise.DefaultRobust()
	return Options{Z: r.Z, MADFloor: r.MADFloor, MinNodes: r.MinValues, Noise: noise.DefaultOptions()}
}

// Robust is o's outlier rule (internal/report/noise).
func (o Options) Robust() noise.Robust {
	return noise.Robust{Z: o.Z, MADFloor: o.MADFloor, MinValues: o.MinNodes}
}

// Validate says what is wrong with o.
func (o Options) Validate() error {
	switch {
	case o.Z <= 0:
		return fmt.Errorf("--z %g: want > 0", o.Z)
	case o.MADFloor < 0:
		return fmt.Errorf("--mad-floor %g: want >= 0", o.MADFloor)
	case o.MinNodes < 3:
		return fmt.Errorf("--min-nodes %d: want >= 3", o.MinNodes)
	}
	return o.Noise.Validate()
}

// Fleet is the cluster report.
type Fleet struct {
	Nodes       []NodeLine    `json:"nodes"`
	Skipped     []Skipped     `json:"skipped"`
	Classes     []Class       `json:"classes"`
	Consistency []Consistency `json:"consistency"`
	Missing     []Missing     `json:"missing"`
	Ports       []PortIssue   `json:"ports"`
	Outliers    []Outlier     `json:"outliers"`
	// Unmeasured are nodes that lack measurements most of their class's
	// nodes have: never judged fine by silence.
	Unmeasured []Unmeasured `json:"unmeasured"`
	// Spreads are the distributions of the measurements that have
	// outliers, per class: what fleet.html plots.
	Spreads []Spread `json:"spreads"`
	Drain   []Drain  `json:"drain"`
}

// Spread is one measurement of one class in which outliers were found:
// its median, the band of robust z within ±Z, and every node's value (or,
// in a large class, their histogram).
type Spread struct {
	Class  string  `json:"class"`
	Key    string  `json:"key"`
	Unit   string  `json:"unit"`
	Nodes  int     `json:"nodes"`
	Median float64 `json:"median"`
	MAD    float64 `json:"mad"`
	// Band is Z·scale/0.6745, scale the MAD floored at MADFloor·median: a
	// value below Median−Band is an outlier (median ± Band is |z| <= Z).
	Band float64 `json:"band"`
	// Z is the cut-off (Options.Z).
	Z        float64 `json:"z"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	Outliers int     `json:"outliers"`
	// Points are every node's value where the class has at most
	// MaxPoints nodes measuring the key; else Bins counts the nodes that
	// are not outliers in equal-width bins over [BinsMin, Max] (the
	// outliers are in Fleet.Outliers).
	Points  []Point `json:"points,omitempty"`
	Bins    []int   `json:"bins,omitempty"`
	BinsMin float64 `json:"bins_min,omitempty"`
	worst   float64
}

// Point is one node's value.
type Point struct {
	Host  string  `json:"host"`
	Value float64 `json:"value"`
}

// MaxPoints is the most nodes a Spread lists one by one; HistBins the
// bins of the histogram of a larger class.
const (
	MaxPoints = 300
	HistBins  = 40
)

// NodeLine is one node's line.
type NodeLine struct {
	Host    string   `json:"host"`
	Source  string   `json:"source"`
	Verdict string   `json:"verdict"`
	Failing []string `json:"failing,omitempty"`
	// Degrading says why a DEGRADED node is (the checks that warned or
	// could not look).
	Degrading []string `json:"degrading,omitempty"`
	Class     string   `json:"class"`
	// Drain is the node's rank in Fleet.Drain, 0 when it is not to be
	// drained.
	Drain int `json:"drain,omitempty"`
}

// Skipped is an input that was not rolled up, and why.
type Skipped struct {
	Source string `json:"source"`
	Error  string `json:"error"`
	// Duplicate is true for a second report of a host already rolled up
	// (the input was read); false for an input that could not be read or
	// decoded.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Unreadable are the skipped inputs that could not be read or decoded.
func (f *Fleet) Unreadable() []Skipped {
	var u []Skipped
	for _, s := range f.Skipped {
		if !s.Duplicate {
			u = append(u, s)
		}
	}
	return u
}

// Class is one hardware class and how many nodes are in it.
type Class struct {
	Class string `json:"class"`
	Nodes int    `json:"nodes"`
}

// Consistency is one version across the nodes of one hardware class: the reference (the
// profile's, or the majority's), and the nodes that differ.
type Consistency struct {
	// Group is the hardware class whose nodes are compared: nodes of
	// another class may run another software image.
	Group     string `json:"group"`
	Field     string `json:"field"`
	Reference string `json:"reference"`
	// Basis is "profile", "majority" or "split" (no majority: nobody is
	// accused).
	Basis string `json:"basis"`
	// Nodes is how many nodes reported the field.
	Nodes    int       `json:"nodes"`
	Deviants []Deviant `json:"deviants,omitempty"`
}

// Deviant is one node whose value differs from the reference.
type Deviant struct {
	Host  string `json:"host"`
	Value string `json:"value"`
}

// Missing is a node with fewer GPUs or NICs than the nodes it should
// equal (Aggregator.hardware says which), or the profile.
type Missing struct {
	Host  string `json:"host"`
	What  string `json:"what"` // gpus, nics
	Have  int    `json:"have"`
	Want  int    `json:"want"`
	Basis string `json:"basis"`
}

// Unmeasured is a node without measurements that at least MinNodes
// nodes of its class, and most of them, have: a node whose benchmarks
// did not run (or ran less) is not compared, so it cannot be an outlier;
// it is named instead. Not a reason to drain by itself.
type Unmeasured struct {
	Host  string `json:"host"`
	Class string `json:"class"`
	// Keys is how many such measurements it lacks, Example one of them,
	// Peers how many nodes of its class have that one.
	Keys    int    `json:"keys"`
	Example string `json:"example"`
	Peers   int    `json:"peers"`
}

// PortIssue is a port at a lower rate, or another MTU, than its class's
// ports of the same link layer (or the profile).
type PortIssue struct {
	Host  string  `json:"host"`
	Port  string  `json:"port"`
	Issue string  `json:"issue"` // rate, mtu
	Have  float64 `json:"have"`
	Want  float64 `json:"want"`
	Basis string  `json:"basis"`
}

// Outlier is a measurement well below its class's median.
type Outlier struct {
	Host   string  `json:"host"`
	Class  string  `json:"class"`
	Key    string  `json:"key"`
	Unit   string  `json:"unit"`
	Value  float64 `json:"value"`
	Median float64 `json:"median"`
	MAD    float64 `json:"mad"`
	Z      float64 `json:"z"`
	// OffPct is (value − median)/median in percent.
	OffPct float64 `json:"off_pct"`
	// Peers is how many nodes of the class measured the key.
	Peers int `json:"peers"`
	// Noise is the measurement's run-to-run noise f (internal/report/noise):
	// the value is below median/(1+f) as well as beyond the robust z.
	Noise float64 `json:"noise"`
}

// Drain is a node to drain, with its reasons, worst first.
type Drain struct {
	Rank    int      `json:"rank"`
	Host    string   `json:"host"`
	Reasons []string `json:"reasons"`
	tier    int
	sev     float64
}

// Tiers of a drain reason, most urgent first.
const (
	tierFailing = iota
	tierMissing
	tierPort
	tierOutlier
	tierVersion
	tierSetting
)

type sampleKey struct{ class, key int32 }

// keyNoise is what decides a key's run-to-run noise: a copy's test; a
// collective row's time·value (its bytes times the bus factor, the same on
// every node: the first node that timed the row gives it) and whether the
// model called it latency-bound.
type keyNoise struct {
	unit    string // the measurement's (Measure.Unit), which its key decides
	test    string
	latency bool
	work    float64
}

type sample struct {
	node  int32
	value float64
}

// Aggregator rolls nodes up one at a time, keeping only their summaries.
type Aggregator struct {
	opts     Options
	nodes    []Node
	class    []int32
	classes  []string
	classIdx map[string]int32
	hosts    map[string]int
	skipped  []Skipped
	keys     map[string]int32
	keyNames []string
	// keyInfo is, per key, what decides its noise (Aggregator.noise).
	keyInfo []keyNoise
	samples map[sampleKey][]sample
	// strs holds one copy of each version and setting string: most nodes
	// of a fleet share them, and a node keeps only references.
	strs map[string]string
}

// NewAggregator starts an empty roll-up.
func NewAggregator(o Options) *Aggregator {
	return &Aggregator{opts: o, classIdx: map[string]int32{}, hosts: map[string]int{}, keys: map[string]int32{}, samples: map[sampleKey][]sample{}, strs: map[string]string{}}
}

// Skip records an input that could not be read.
func (a *Aggregator) Skip(source string, err error) {
	a.skipped = append(a.skipped, Skipped{Source: source, Error: err.Error()})
}

// placeholderHost says whether name names no node in particular: every
// machine (or container) left with the default answers to it.
func placeholderHost(name string) bool {
	switch strings.ToLower(name) {
	case "localhost", "localhost.localdomain", "localhost6", "(none)", "ubuntu", "debian":
		return true
	}
	return false
}

// Add rolls n up. Of two reports of one host the one read later
// (verdict.time) is kept and the other skipped as a duplicate; when
// their times do not tell, the first is kept, and two that disagree on
// the verdict are an error.
func (a *Aggregator) Add(n Node) {
	if n.Host == "" {
		a.skipped = append(a.skipped, Skipped{Source: n.Source, Error: "no host name"})
		return
	}
	if placeholderHost(n.Host) {
		a.skipped = append(a.skipped, Skipped{Source: n.Source, Error: fmt.Sprintf("host name %q names no node in particular (a default many machines share): the fleet cannot tell its reports apart; give each node its own host name, or snapshot it and run on the snapshot renamed", n.Host)})
		return
	}
	if i, ok := a.hosts[n.Host]; ok {
		old := &a.nodes[i]
		switch {
		case n.ReadAt.IsZero() || old.ReadAt.IsZero() || n.ReadAt.Equal(old.ReadAt):
		case n.ReadAt.After(old.ReadAt):
			a.skipped = append(a.skipped, Skipped{Source: old.Source, Error: fmt.Sprintf("older report of host %s (read %s) than %s (read %s): the newer is kept",
				n.Host, old.ReadAt.Format(time.RFC3339), n.Source, n.ReadAt.Format(time.RFC3339)), Duplicate: true})
			a.replace(i, n)
			return
		default:
			a.skipped = append(a.skipped, Skipped{Source: n.Source, Error: fmt.Sprintf("older report of host %s (read %s) than %s (read %s): the newer is kept",
				n.Host, n.ReadAt.Format(time.RFC3339), old.Source, old.ReadAt.Format(time.RFC3339)), Duplicate: true})
			return
		}
		if kept := a.nodes[i].Verdict; kept != n.Verdict {
			// Two reports of one node that disagree: which is current is
			// not known, and dropping one in silence could hide a node
			// NOT READY. Counted with the inputs not read (exit 2).
			a.skipped = append(a.skipped, Skipped{Source: n.Source, Error: fmt.Sprintf("conflicting duplicate: host %s is already in %s as %s, this report says %s: remove the stale report",
				n.Host, a.nodes[i].Source, cmp.Or(kept, "no verdict"), cmp.Or(n.Verdict, "no verdict"))})
			return
		}
		a.skipped = append(a.skipped, Skipped{Source: n.Source, Error: fmt.Sprintf("duplicate: host %s is already in %s", n.Host, a.nodes[i].Source), Duplicate: true})
		return
	}
	a.hosts[n.Host] = len(a.nodes)
	a.nodes = append(a.nodes, Node{})
	a.class = append(a.class, 0)
	a.put(len(a.nodes)-1, n)
}

// replace puts n in node i's place: i's samples are taken out first.
func (a *Aggregator) replace(i int, n Node) {
	for k, ss := range a.samples {
		a.samples[k] = slices.DeleteFunc(ss, func(s sample) bool { return s.node == int32(i) })
	}
	a.put(i, n)
}

// put rolls n up as node i (its place in a.nodes and a.class is made).
func (a *Aggregator) put(i int, n Node) {
	idx := int32(i)
	cn := n.Class()
	c, ok := a.classIdx[cn]
	if !ok {
		c = int32(len(a.classes))
		a.classIdx[cn] = c
		a.classes = append(a.classes, cn)
	}
	for _, m := range n.Measurements {
		k, ok := a.keys[m.Key]
		if !ok {
			k = int32(len(a.keyNames))
			a.keys[m.Key] = k
			a.keyNames = append(a.keyNames, m.Key)
		}
		if !ok {
			a.keyInfo = append(a.keyInfo, keyNoise{unit: a.intern(m.Unit), test: a.intern(m.Test), latency: m.Latency})
		}
		if ki := &a.keyInfo[k]; ki.work <= 0 && m.TimeUS > 0 {
			ki.work, ki.latency = m.TimeUS*m.Value, m.Latency
		}
		sk := sampleKey{c, k}
		a.samples[sk] = append(a.samples[sk], sample{idx, m.Value})
	}
	n.Measurements = nil
	for _, p := range []*string{&n.Verdict, &n.Driver, &n.CUDA, &n.NCCL, &n.Kernel, &n.NICFirmware, &n.RDMACore, &n.GPUModel} {
		*p = a.intern(*p)
	}
	for i := range n.Settings {
		n.Settings[i] = Setting{a.intern(n.Settings[i].Name), a.intern(n.Settings[i].Value)}
	}
	a.nodes[i] = n
	a.class[i] = c
}

// intern is the one copy of s the aggregator keeps.
func (a *Aggregator) intern(s string) string {
	if v, ok := a.strs[s]; ok {
		return v
	}
	a.strs[s] = s
	return s
}

// keepBuf bounds the read buffer a worker keeps between reports (a
// dossier's report.json is ~100 KB).
const keepBuf = 4 << 20

// Read summarizes n inputs on workers goroutines and rolls them up in
// input order (so which of two duplicates is kept does not depend on
// timing). load returns input i's bytes (it may reuse buf) and its name.
func Read(n, workers int, load func(i int, buf []byte) ([]byte, string, error), o Options) *Fleet {
	a := NewAggregator(o)
	type out struct {
		i    int
		node Node
		src  string
		err  error
	}
	workers = max(1, min(workers, n))
	next := make(chan int)
	res := make(chan out, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := range next {
				b, src, err := load(i, buf[:0])
				var nd Node
				if err == nil {
					nd, err = Summarize(b, src)
				}
				// A report's buffer is kept for the next, unless it grew
				// past keepBuf: one large report must not pin its size
				// in every worker.
				if b != nil && cap(b) <= keepBuf {
					buf = b
				} else {
					buf = nil
				}
				res <- out{i, nd, src, err}
			}
		}()
	}
	go func() {
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
		close(res)
	}()
	pending := map[int]out{}
	want := 0
	for r := range res {
		pending[r.i] = r
		for {
			p, ok := pending[want]
			if !ok {
				break
			}
			delete(pending, want)
			want++
			if p.err != nil {
				a.Skip(p.src, fmt.Errorf("%s: %w", p.src, p.err))
			} else {
				a.Add(p.node)
			}
		}
	}
	return a.Report()
}

// Report judges the nodes added so far.
func (a *Aggregator) Report() *Fleet {
	f := &Fleet{Skipped: a.skipped, Nodes: []NodeLine{}, Classes: []Class{}, Consistency: []Consistency{}, Missing: []Missing{}, Ports: []PortIssue{}, Outliers: []Outlier{}, Unmeasured: []Unmeasured{}, Spreads: []Spread{}, Drain: []Drain{}}
	if f.Skipped == nil {
		f.Skipped = []Skipped{}
	}
	reasons := make(map[int32][]Drain) // per node: one entry per reason
	why := func(n int32, tier int, sev float64, r string) {
		reasons[n] = append(reasons[n], Drain{Reasons: []string{r}, tier: tier, sev: sev})
	}
	counts := make([]int, len(a.classes))
	for i, n := range a.nodes {
		counts[a.class[i]]++
		switch {
		case len(n.Failing) > 0:
			why(int32(i), tierFailing, float64(len(n.Failing)), "failing checks: "+strings.Join(n.Failing, ", "))
		case n.Verdict != checks.Ready && n.Verdict != checks.Degraded:
			// No verdict, or NOT READY without a failing check: the
			// report does not say the node may serve.
			why(int32(i), tierFailing, 0, fmt.Sprintf("verdict %q and no failing check named", n.Verdict))
		}
	}
	for c, name := range a.classes {
		if counts[c] > 0 { // a class whose only node was replaced by a newer report of another class
			f.Classes = append(f.Classes, Class{name, counts[c]})
		}
	}
	slices.SortFunc(f.Classes, func(x, y Class) int { return cmp.Or(cmp.Compare(y.Nodes, x.Nodes), cmp.Compare(x.Class, y.Class)) })

	a.versions(f, why)
	a.hardware(f, why)
	a.ports(f, why)
	a.outliers(f, why)
	a.unmeasured(f, counts)

	// The drain list: a node's reasons worst first, nodes by their worst.
	for n, rs := range reasons {
		slices.SortStableFunc(rs, func(x, y Drain) int { return cmp.Or(cmp.Compare(x.tier, y.tier), cmp.Compare(y.sev, x.sev)) })
		d := Drain{Host: a.nodes[n].Host, tier: rs[0].tier, sev: rs[0].sev}
		for _, r := range rs {
			d.Reasons = append(d.Reasons, r.Reasons[0])
		}
		f.Drain = append(f.Drain, d)
	}
	slices.SortFunc(f.Drain, func(x, y Drain) int {
		return cmp.Or(cmp.Compare(x.tier, y.tier), cmp.Compare(y.sev, x.sev), cmp.Compare(len(y.Reasons), len(x.Reasons)), Natural(x.Host, y.Host))
	})
	rank := map[string]int{}
	for i := range f.Drain {
		f.Drain[i].Rank = i + 1
		rank[f.Drain[i].Host] = i + 1
	}
	for i, n := range a.nodes {
		f.Nodes = append(f.Nodes, NodeLine{Host: n.Host, Source: n.Source, Verdict: n.Verdict, Failing: n.Failing, Degrading: n.Degrading, Class: a.classes[a.class[i]], Drain: rank[n.Host]})
	}
	slices.SortFunc(f.Nodes, func(x, y NodeLine) int { return Natural(x.Host, y.Host) })
	return f
}

type whyFunc func(n int32, tier int, sev float64, r string)

// field is one value compared across the nodes of a class: a version or
// a setting, with the profile's reference where it pins one.
type field struct {
	name string
	get  func(*Node) string
	tier int
	// pin is the profile's reference ("" none) and match says whether a
	// node's value meets it.
	pin   string
	match func(v string) bool
}

// versionPin matches a version, or each of a comma-separated list of them
// (a node's NIC firmware lists each version once), against the profile's
// pin as check reads it.
func versionPin(pin string) func(string) bool {
	return func(v string) bool {
		for part := range strings.SplitSeq(v, ",") {
			if !profile.VersionMatches(part, pin) {
				return false
			}
		}
		return true
	}
}

// fields are the versions, then the settings the class's nodes report.
func (a *Aggregator) fields(members []int) []field {
	var pin profile.Versions
	e := a.opts.Expect
	if e != nil && e.Versions != nil {
		pin = *e.Versions
	}
	fs := []field{
		{name: "driver", get: func(n *Node) string { return n.Driver }, pin: pin.Driver},
		{name: "cuda", get: func(n *Node) string { return n.CUDA }, pin: pin.CUDA},
		{name: "nccl", get: func(n *Node) string { return n.NCCL }, pin: pin.NCCL},
		{name: "kernel", get: func(n *Node) string { return n.Kernel }, pin: pin.Kernel},
		{name: "nic_firmware", get: func(n *Node) string { return n.NICFirmware }, pin: pin.NICFirmware},
		{name: "rdma_core", get: func(n *Node) string { return n.RDMACore }, pin: pin.RDMACore},
	}
	for i := range fs {
		fs[i].tier = tierVersion
		if fs[i].pin != "" {
			fs[i].match = versionPin(fs[i].pin)
		}
	}
	var names []string
	for _, i := range members {
		for _, s := range a.nodes[i].Settings {
			if !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
		}
	}
	slices.Sort(names)
	for _, name := range names {
		f := field{name: "setting " + name, get: func(n *Node) string { return n.Setting(name) }, tier: tierSetting}
		f.pin, f.match = settingPin(e, name)
		fs = append(fs, f)
	}
	return fs
}

// settingPin is the profile's reference for a setting, where it sets
// one: memlock_kb (a least), gdr.mode (peermem or dmabuf).
func settingPin(e *profile.Profile, name string) (string, func(string) bool) {
	if e == nil {
		return "", nil
	}
	switch {
	case name == SettingMemlock && e.MemlockKB == "unlimited":
		return "unlimited", func(v string) bool { return v == "unlimited" }
	case name == SettingMemlock && e.MemlockKB != "":
		least, err := strconv.ParseInt(strings.TrimSpace(e.MemlockKB), 10, 64)
		if err != nil {
			return "", nil
		}
		return fmt.Sprintf("at least %d KiB", least), func(v string) bool {
			if v == "unlimited" {
				return true
			}
			kb, err := strconv.ParseInt(strings.TrimSuffix(v, " KiB"), 10, 64)
			return err == nil && kb >= least
		}
	case name == SettingPeermem && e.GDR != nil && e.GDR.Mode == "peermem":
		return "loaded", func(v string) bool { return v == "loaded" }
	case name == SettingDMABuf && e.GDR != nil && e.GDR.Mode == "dmabuf":
		return "yes", func(v string) bool { return v == "yes" }
	}
	return "", nil
}

// versions compares the versions and settings within each hardware class
// with the profile's pins, else the class majority.
func (a *Aggregator) versions(f *Fleet, why whyFunc) {
	groups := map[string][]int{} // versions are compared among nodes of one hardware class
	for i := range a.nodes {
		c := a.classes[a.class[i]]
		groups[c] = append(groups[c], i)
	}
	for _, model := range slices.Sorted(maps.Keys(groups)) {
		members := groups[model]
		for _, fd := range a.fields(members) {
			c := Consistency{Group: model, Field: fd.name}
			tally := map[string]int{}
			for _, i := range members {
				if v := fd.get(&a.nodes[i]); v != "" {
					tally[v]++
					c.Nodes++
				}
			}
			if c.Nodes == 0 {
				continue
			}
			match := func(v string) bool { return v == c.Reference }
			if fd.pin != "" {
				c.Reference, c.Basis, match = fd.pin, "profile", fd.match
			} else {
				var ok bool
				c.Reference, ok = majority(tally)
				c.Basis = "majority"
				if !ok {
					c.Basis = "split"
				}
			}
			if c.Basis != "split" {
				for _, i := range members {
					n := &a.nodes[i]
					if v := fd.get(n); v != "" && !match(v) {
						c.Deviants = append(c.Deviants, Deviant{n.Host, v})
						why(int32(i), fd.tier, 0, fmt.Sprintf("%s %s, class %s is %s", fd.name, v, c.Basis, c.Reference))
					}
				}
				slices.SortFunc(c.Deviants, func(x, y Deviant) int { return cmp.Compare(x.Host, y.Host) })
			}
			f.Consistency = append(f.Consistency, c)
		}
	}
}

// majority is the most frequent value; ok is false when none was counted
// or two lead equally (a split: nobody is accused).
func majority[T cmp.Ordered](tally map[T]int) (best T, ok bool) {
	n, tie := 0, false
	for _, v := range slices.Sorted(maps.Keys(tally)) {
		switch c := tally[v]; {
		case c > n:
			best, n, tie = v, c, false
		case c == n:
			tie = true
		}
	}
	return best, n > 0 && !tie
}

// hardware compares each node's GPU count with the majority of the nodes
// of its GPU model and NIC rate, and its NIC count with the majority of
// those of its GPU model and GPU count (the profile's counts where it sets
// them): a node short of a GPU keeps its NICs, and one short of a NIC its
// GPUs, so each is compared with the nodes it should equal.
func (a *Aggregator) hardware(f *Fleet, why whyFunc) {
	gkey := func(n *Node) string { return fmt.Sprintf("%s, %g Gb/s", n.GPUModel, n.RateGbps) }
	nkey := func(n *Node) string { return fmt.Sprintf("%s x%d", n.GPUModel, n.GPUs) }
	gpus, nics := map[string]map[int]int{}, map[string]map[int]int{}
	for i := range a.nodes {
		n := &a.nodes[i]
		if gpus[gkey(n)] == nil {
			gpus[gkey(n)] = map[int]int{}
		}
		if nics[nkey(n)] == nil {
			nics[nkey(n)] = map[int]int{}
		}
		gpus[gkey(n)][n.GPUs]++
		nics[nkey(n)][n.NICs]++
	}
	e := a.opts.Expect
	for i := range a.nodes {
		n := &a.nodes[i]
		check := func(what string, have int, group string, tally map[int]int, pin int) {
			want, basis := pin, "profile"
			if pin == 0 {
				var ok bool
				if want, ok = majority(tally); !ok {
					return
				}
				basis = "majority of " + group
			}
			if have < want {
				f.Missing = append(f.Missing, Missing{n.Host, what, have, want, basis})
				why(int32(i), tierMissing, float64(want-have), fmt.Sprintf("%d of %d %s (%s)", have, want, strings.ToUpper(what), basis))
			}
		}
		gpin, npin := 0, 0
		if e != nil && e.GPUs != nil && (e.GPUs.Model == "" || strings.Contains(n.GPUModel, e.GPUs.Model)) {
			gpin = e.GPUs.Count
		}
		if e != nil && e.NICs != nil {
			npin = e.NICs.Count
		}
		check("gpus", n.GPUs, gkey(n), gpus[gkey(n)], gpin)
		check("nics", n.NICs, nkey(n), nics[nkey(n)], npin)
	}
}

// ports compares each port's rate and MTU with its class's ports of the
// same link layer (the profile's where it sets them).
func (a *Aggregator) ports(f *Fleet, why whyFunc) {
	type ck struct {
		class int32
		layer string
	}
	rates, mtus := map[ck]map[float64]int{}, map[ck]map[int]int{}
	for i, n := range a.nodes {
		for _, p := range n.Ports {
			k := ck{a.class[i], p.LinkLayer}
			if rates[k] == nil {
				rates[k], mtus[k] = map[float64]int{}, map[int]int{}
			}
			if p.RateGbps > 0 {
				rates[k][p.RateGbps]++
			}
			if p.MTU > 0 {
				mtus[k][p.MTU]++
			}
		}
	}
	var pinRate float64
	var pinMTU int
	if e := a.opts.Expect; e != nil && e.NICs != nil {
		pinRate, pinMTU = e.NICs.RateGbps, e.NICs.MTU
	}
	for i, n := range a.nodes {
		for _, p := range n.Ports {
			k := ck{a.class[i], p.LinkLayer}
			if p.RateGbps > 0 {
				want, ok, basis := pinRate, pinRate > 0 && p.Rail, "profile"
				if !ok {
					want, ok = majority(rates[k])
					basis = "class majority"
				}
				if ok && p.RateGbps < want {
					f.Ports = append(f.Ports, PortIssue{n.Host, p.Name, "rate", p.RateGbps, want, basis})
					why(int32(i), tierPort, 1-p.RateGbps/want, fmt.Sprintf("port %s at %g Gb/s, %s %g", p.Name, p.RateGbps, basis, want))
				}
			}
			if p.MTU > 0 {
				// The profile's MTU is a RoCE netdev's least, as nic.port reads it.
				want, ok, basis := pinMTU, pinMTU > 0 && p.Rail && p.LinkLayer == "Ethernet", "profile"
				if !ok {
					want, ok = majority(mtus[k])
					basis = "class majority"
				}
				if ok && (basis == "profile" && p.MTU < want || basis != "profile" && p.MTU != want) {
					f.Ports = append(f.Ports, PortIssue{n.Host, p.Name, "mtu", float64(p.MTU), float64(want), basis})
					why(int32(i), tierPort, 0, fmt.Sprintf("port %s MTU %d, %s %d", p.Name, p.MTU, basis, want))
				}
			}
		}
	}
	slices.SortFunc(f.Ports, func(x, y PortIssue) int {
		return cmp.Or(cmp.Compare(x.Host, y.Host), cmp.Compare(x.Port, y.Port), cmp.Compare(x.Issue, y.Issue))
	})
	slices.SortFunc(f.Missing, func(x, y Missing) int { return cmp.Or(cmp.Compare(x.Host, y.Host), cmp.Compare(x.What, y.What)) })
}

// outliers flags, per class and measurement, the nodes whose robust z,
// 0.6745·(x−median)/MAD, is below −Z: only worse, never better.
func (a *Aggregator) outliers(f *Fleet, why whyFunc) {
	worst := map[int32]Outlier{}
	nflag := map[int32]int{}
	var vals []float64
	for sk, ss := range a.samples {
		if len(ss) < a.opts.MinNodes {
			continue
		}
		vals = vals[:0]
		for _, s := range ss {
			vals = append(vals, s.value)
		}
		rule := a.opts.Robust()
		med, mad := noise.MedianMAD(vals)
		scale := rule.Scale(med, mad)
		if scale <= 0 {
			continue
		}
		nf := a.noise(sk.key, med)
		flagged, worstOff := 0, 0.0
		for _, s := range ss {
			z, low, _ := rule.Score(s.value, med, mad) // the scale is > 0: checked above
			if !low || s.value*(1+nf) >= med {
				continue
			}
			o := Outlier{Host: a.nodes[s.node].Host, Class: a.classes[sk.class], Key: a.keyNames[sk.key], Unit: a.keyInfo[sk.key].unit, Value: s.value, Median: med, MAD: mad, Z: z, OffPct: 100 * (s.value - med) / med, Peers: len(ss), Noise: nf}
			f.Outliers = append(f.Outliers, o)
			flagged++
			worstOff = min(worstOff, o.OffPct)
			nflag[s.node]++
			if w, ok := worst[s.node]; !ok || o.OffPct < w.OffPct || o.OffPct == w.OffPct && o.Key < w.Key {
				worst[s.node] = o
			}
		}
		if flagged > 0 {
			band := max(a.opts.Z*scale/0.6745, med*nf/(1+nf))
			f.Spreads = append(f.Spreads, a.spread(sk, ss, med, mad, band, flagged, worstOff))
		}
	}
	slices.SortFunc(f.Spreads, func(x, y Spread) int {
		return cmp.Or(cmp.Compare(x.worst, y.worst), cmp.Compare(x.Class, y.Class), cmp.Compare(x.Key, y.Key))
	})
	for n, o := range worst {
		why(n, tierOutlier, -o.OffPct, fmt.Sprintf("%d measurement(s) below the class median; worst %s %.4g %s (%+.1f%% of median %.4g, z %.1f)", nflag[n], o.Key, o.Value, o.Unit, o.OffPct, o.Median, o.Z))
	}
	slices.SortFunc(f.Outliers, func(x, y Outlier) int {
		return cmp.Or(cmp.Compare(x.OffPct, y.OffPct), cmp.Compare(x.Host, y.Host), cmp.Compare(x.Key, y.Key))
	})
}

// noise is key k's run-to-run noise at the class median med: a copy's by
// its test; a collective row's by its time at the median's speed (a row
// of t µs on a node measuring v takes t·v/med µs at the median).
func (a *Aggregator) noise(k int32, med float64) float64 {
	ki := a.keyInfo[k]
	if ki.test != "" {
		f, _ := a.opts.Noise.Copy(ki.test)
		return f
	}
	t := 0.0
	if ki.work > 0 && med > 0 {
		t = ki.work / med
	}
	f, _ := a.opts.Noise.Collective(t, ki.latency)
	return f
}

// spread is the distribution of one class's measurement of one key.
func (a *Aggregator) spread(sk sampleKey, ss []sample, med, mad, band float64, flagged int, worst float64) Spread {
	sp := Spread{Class: a.classes[sk.class], Key: a.keyNames[sk.key], Unit: a.keyInfo[sk.key].unit, Nodes: len(ss), Median: med, MAD: mad, Band: band, Z: a.opts.Z,
		Min: ss[0].value, Max: ss[0].value, Outliers: flagged, worst: worst}
	for _, s := range ss {
		sp.Min, sp.Max = min(sp.Min, s.value), max(sp.Max, s.value)
	}
	if len(ss) <= MaxPoints {
		sp.Points = make([]Point, len(ss))
		for i, s := range ss {
			sp.Points[i] = Point{a.nodes[s.node].Host, s.value}
		}
		slices.SortFunc(sp.Points, func(x, y Point) int { return cmp.Or(cmp.Compare(x.Value, y.Value), cmp.Compare(x.Host, y.Host)) })
		return sp
	}
	cut := med - band
	sp.BinsMin = sp.Max
	for _, s := range ss {
		if s.value >= cut {
			sp.BinsMin = min(sp.BinsMin, s.value)
		}
	}
	sp.Bins = make([]int, HistBins)
	for _, s := range ss {
		if s.value >= cut {
			sp.Bins[Bin(s.value, sp.BinsMin, sp.Max, HistBins)]++
		}
	}
	return sp
}

// Bin is the bin of v among n equal-width bins over [lo, hi]; hi is in
// the last.
func Bin(v, lo, hi float64, n int) int {
	if hi <= lo {
		return 0
	}
	return max(0, min(n-1, int(float64(n)*(v-lo)/(hi-lo))))
}

// DrainAny says whether any node is to be drained.
func (f *Fleet) DrainAny() bool { return len(f.Drain) > 0 }

// Natural orders host names as people count them: the digits of a name
// by their number, so node2 comes before node10 (and gpu-a02 before
// gpu-a10, zero padding or not); equal numbers by their text.
func Natural(a, b string) int {
	return cmp.Or(natural(a, b), strings.Compare(a, b))
}

func natural(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), cmp.Compare(na, nb)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digits is the length of s's leading run of ASCII digits.
func digits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// unmeasured names the nodes that lack a measurement at least MinNodes
// nodes of their class, and more than half of them, have.
func (a *Aggregator) unmeasured(f *Fleet, counts []int) {
	type miss struct {
		keys, peers int
		example     string
	}
	lacks := map[int32]*miss{}
	has := map[int32]bool{}
	for sk, ss := range a.samples {
		n := counts[sk.class]
		if len(ss) < a.opts.MinNodes || 2*len(ss) <= n || len(ss) == n {
			continue
		}
		clear(has)
		for _, s := range ss {
			has[s.node] = true
		}
		for i := range a.nodes {
			if a.class[i] != sk.class || has[int32(i)] {
				continue
			}
			m := lacks[int32(i)]
			if m == nil {
				m = &miss{}
				lacks[int32(i)] = m
			}
			m.keys++
			if k := a.keyNames[sk.key]; m.example == "" || Natural(k, m.example) < 0 {
				m.example, m.peers = k, len(ss)
			}
		}
	}
	for i, m := range lacks {
		f.Unmeasured = append(f.Unmeasured, Unmeasured{Host: a.nodes[i].Host, Class: a.classes[a.class[i]], Keys: m.keys, Example: m.example, Peers: m.peers})
	}
	slices.SortFunc(f.Unmeasured, func(x, y Unmeasured) int { return Natural(x.Host, y.Host) })
}
