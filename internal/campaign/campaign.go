// Package campaign plans a multi-node test campaign over N nodes and reads
// its results: rounds of disjoint node pairs (or a bisection of the whole
// fleet), each pair tested as a node (NCCL all_reduce across the pair, every
// NIC) and per rail (NCCL restricted to one NIC), adaptively: a pair that
// fails is split and each member re-tested with a partner that passed, until
// every failure is pinned on a node or on one rail of a node (a link), or
// cleared. It is pure: the campaign is a value, the round's scripts are
// text, the results are read through an fs.FS; gdrcheck fleet plan
// (internal/app) writes and reads the files. docs/fleet-plan.md says more.
package campaign

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/launch"
	"github.com/gdrcheck/gdrcheck/internal/report/noise"
)

// Schema is the campaign file's schema.
const Schema = "gdrcheck.campaign/v1"

// Strategy is how the first rounds are laid out.
type Strategy string

const (
	// Pairs tests every node in round 1 in disjoint pairs, then re-tests
	// the members of each failing pair with partners that passed.
	Pairs Strategy = "pairs"
	// Bisect tests all nodes as one group, as nodes and on each rail, then
	// the halves of a group that failed at a level, at that level, both
	// halves in one round, down to pairs, then as Pairs.
	Bisect Strategy = "bisect"
)

// Kind is what a step tests.
type Kind string

const (
	// KindPair is a node-level test of two nodes (three for the odd one
	// out): NCCL all_reduce over every GPU and NIC of the nodes.
	KindPair Kind = "pair"
	// KindRailPair is the same pair restricted to one rail
	// (NCCL_IB_HCA==<nic>).
	KindRailPair Kind = "rail-pair"
	// KindGroup is a node-level test of a bisection group of more than
	// three nodes.
	KindGroup Kind = "group"
	// KindRailGroup is the same group restricted to one rail.
	KindRailGroup Kind = "rail-group"
)

// Role is why a step is in its round.
type Role string

const (
	RoleSurvey Role = "survey" // round 1 of pairs: every node once
	RoleBisect Role = "bisect" // a bisection group, or one half of a failing one
	RoleRetest Role = "retest" // a suspect with a known-good partner
	RoleAgain  Role = "again"  // a survey or bisection step whose results were missing, planned again
)

// Config is what the campaign was asked to do.
type Config struct {
	// Nodes are the hosts, in the order given.
	Nodes []string `json:"nodes"`
	// Rails are the NICs tested one at a time (NCCL_IB_HCA names, e.g.
	// mlx5_0 or mlx5_0:1); none: node-level tests only.
	Rails    []string `json:"rails,omitempty"`
	Strategy Strategy `json:"strategy"`
	// MinBusBW and MinRailBusBW are the least bus bandwidth (GB/s) of a
	// node-level and a per-rail step; 0: judged relatively (Robust).
	MinBusBW     float64 `json:"min_busbw_gbs,omitempty"`
	MinRailBusBW float64 `json:"min_rail_busbw_gbs,omitempty"`
	// Robust is the relative judgement: a step fails when its robust z
	// against every measured step of its kind (node-level, or the same
	// rail) is below −Z, as fleet judges outliers; MinNodes is the fewest
	// such steps to judge by.
	Robust RobustOptions `json:"robust"`
	// Confirm is how many failing steps, with different partners, one of
	// them all known good, accuse a node or link (at least 2).
	Confirm int `json:"confirm"`
	// MaxRounds ends an unfinished campaign: what is unresolved then is
	// reported as such.
	MaxRounds int `json:"max_rounds"`
	// Bench is how each step runs gdrcheck bench nccl.
	Bench BenchConfig `json:"bench"`
}

// RobustOptions are the outlier rule's settings (noise.Robust, the rule
// gdrcheck fleet judges nodes by), as the campaign records them.
type RobustOptions struct {
	Z        float64 `json:"z"`
	MADFloor float64 `json:"mad_floor"`
	MinSteps int     `json:"min_steps"`
}

func (r RobustOptions) rule() noise.Robust {
	return noise.Robust{Z: r.Z, MADFloor: r.MADFloor, MinValues: r.MinSteps}
}

// BenchConfig is each step's gdrcheck bench nccl.
type BenchConfig struct {
	// GPUsPerNode is the ranks per node (one per GPU).
	GPUsPerNode int `json:"gpus_per_node"`
	// Size is the message size every step measures (-b and -e), e.g. 1G.
	Size string `json:"size"`
	// Iters is -n.
	Iters int `json:"iters"`
}

// DefaultConfig is the campaign's defaults for nodes.
func DefaultConfig(nodes []string) Config {
	fo := noise.DefaultRobust()
	return Config{
		Nodes:     nodes,
		Strategy:  Pairs,
		Robust:    RobustOptions{Z: fo.Z, MADFloor: fo.MADFloor, MinSteps: fo.MinValues},
		Confirm:   2,
		MaxRounds: 20,
		Bench:     BenchConfig{GPUsPerNode: 8, Size: "1G", Iters: 20},
	}
}

// Validate says what is wrong with c.
func (c Config) Validate() error {
	if len(c.Nodes) < 2 {
		return fmt.Errorf("%d node(s): a campaign needs at least 2", len(c.Nodes))
	}
	if err := distinct("node", c.Nodes, ValidHost); err != nil {
		return err
	}
	if err := distinct("rail", c.Rails, validRail); err != nil {
		return err
	}
	switch c.Strategy {
	case Pairs, Bisect:
	default:
		return fmt.Errorf("strategy %q: want pairs or bisect", c.Strategy)
	}
	switch {
	case c.MinBusBW < 0 || c.MinRailBusBW < 0:
		return fmt.Errorf("a least bus bandwidth is not negative")
	case c.Robust.Z <= 0 || c.Robust.MADFloor < 0 || c.Robust.MinSteps < 3:
		return fmt.Errorf("robust z %g, MAD floor %g, least steps %d: want z > 0, floor >= 0, steps >= 3", c.Robust.Z, c.Robust.MADFloor, c.Robust.MinSteps)
	case c.Confirm < 2:
		return fmt.Errorf("confirm %d: a node or link is accused by 2 failing steps at least, never by one", c.Confirm)
	case c.MaxRounds < 2:
		return fmt.Errorf("max rounds %d: want 2 or more", c.MaxRounds)
	case c.Bench.GPUsPerNode < 1 || c.Bench.Iters < 1:
		return fmt.Errorf("bench: %d GPUs per node, %d iterations: want 1 or more of each", c.Bench.GPUsPerNode, c.Bench.Iters)
	}
	if _, err := collective.ParseSize(c.Bench.Size); err != nil {
		return fmt.Errorf("bench size: %w", err)
	}
	// Relative judging compares a step with its round's peers: round 1 of
	// a bisection has one step, and a survey of fewer than 2·MinSteps
	// nodes has too few pairs.
	if c.MinBusBW == 0 {
		if c.Strategy == Bisect {
			return fmt.Errorf("--strategy bisect starts with one test of every node, which has no peers to be compared with: give --min-busbw")
		}
		if len(c.Nodes)/2 < c.Robust.MinSteps {
			return fmt.Errorf("%d nodes make %d pairs, too few to judge each against the others' median (%d at least): give --min-busbw", len(c.Nodes), len(c.Nodes)/2, c.Robust.MinSteps)
		}
	}
	if len(c.Rails) > 0 && c.MinRailBusBW == 0 {
		if c.Strategy == Bisect {
			return fmt.Errorf("--strategy bisect starts with one test of every node on each rail, which has no peers to be compared with: give --min-rail-busbw")
		}
		if len(c.Nodes)/2 < c.Robust.MinSteps {
			return fmt.Errorf("%d nodes make %d pairs per rail, too few to judge relatively (%d at least): give --min-rail-busbw", len(c.Nodes), len(c.Nodes)/2, c.Robust.MinSteps)
		}
	}
	return nil
}

// ValidHost refuses what is not a host name (RFC 1123: dot-separated
// labels of letters, digits and hyphens, no label starting or ending with a
// hyphen, at most 63 characters a label and 253 in all). The names end up
// in shell scripts and Slurm node lists; nothing else may pass.
func ValidHost(h string) error {
	if h == "" {
		return fmt.Errorf("empty host name")
	}
	if len(h) > 253 {
		return fmt.Errorf("host name of %d characters: at most 253", len(h))
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("host name %q: a label is empty or longer than 63 characters", h)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("host name %q: a label starts or ends with '-'", h)
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("host name %q: %q is not a letter, digit, '-' or '.'", h, rune(c))
			}
		}
	}
	return nil
}

// validRail refuses what is not an NCCL_IB_HCA device name, with an
// optional :port.
func validRail(r string) error {
	name, port, hasPort := strings.Cut(r, ":")
	if name == "" || len(name) > 64 {
		return fmt.Errorf("rail %q: want a NIC name such as mlx5_0, optionally with :port", r)
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("rail %q: %q is not a letter, digit, '_', '-' or '.'", r, rune(c))
		}
	}
	if hasPort {
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 255 {
			return fmt.Errorf("rail %q: port %q: want 1 to 255", r, port)
		}
	}
	return nil
}

// ParseNodeList reads a Slurm node list (gpu[001-128],login1) into host
// names, each checked (its position named on error).
func ParseNodeList(s string) ([]string, error) {
	hosts, err := launch.ExpandHostList(s)
	if err != nil {
		return nil, fmt.Errorf("node list: %w", err)
	}
	for i, h := range hosts {
		if err := ValidHost(h); err != nil {
			return nil, fmt.Errorf("node list: host %d: %w", i+1, err)
		}
	}
	return hosts, nil
}

// ParseHostfile reads an MPI hostfile: one host a line, words after the
// host (slots=8, max_slots=8) ignored, '#' starting a comment, blank lines
// skipped. Errors name name:line.
func ParseHostfile(name string, b []byte) ([]string, error) {
	var hosts []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		for _, f := range fields[1:] {
			if !strings.Contains(f, "=") {
				return nil, fmt.Errorf("%s:%d: %q after the host name: want key=value (slots=8) or nothing", name, line, f)
			}
		}
		if err := ValidHost(fields[0]); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		hosts = append(hosts, fields[0])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%s: no host", name)
	}
	return hosts, nil
}

// Campaign is the state of a campaign: what it was asked, the rounds so
// far with their steps and what each measured, and, once nothing is left
// to resolve, the findings.
type Campaign struct {
	Schema string `json:"schema"`
	Config
	Rounds   []*Round  `json:"rounds"`
	Findings *Findings `json:"findings,omitempty"`
}

// Round is one round's steps: node-disjoint chains (the steps of a pair or
// a bisection group, node-level and per rail, run one after another), the
// chains side by side.
type Round struct {
	N     int     `json:"round"`
	Steps []*Step `json:"steps"`
	// Read says the results were read and each step has its outcome.
	Read bool `json:"read"`
}

// distinct checks each of list (the what, counted from 1) with valid, and
// that none is named twice.
func distinct(what string, list []string, valid func(string) error) error {
	seen := map[string]int{}
	for i, x := range list {
		if err := valid(x); err != nil {
			return fmt.Errorf("%s %d: %w", what, i+1, err)
		}
		if j, dup := seen[x]; dup {
			return fmt.Errorf("%s %d: %q is %s %d already", what, i+1, x, what, j+1)
		}
		seen[x] = i
	}
	return nil
}

// Step is one bench nccl run.
type Step struct {
	// ID names the step's files (results/ID.json); Chain is the chain's id,
	// shared by its node-level and per-rail steps (on the same nodes).
	ID    string   `json:"id"`
	Chain string   `json:"chain"`
	Kind  Kind     `json:"kind"`
	Nodes []string `json:"nodes"`
	// Rail is the index in Config.Rails of a rail-pair or rail-group step,
	// -1 otherwise.
	Rail int  `json:"rail"`
	Role Role `json:"role"`
	// Suspects are, in a retest, the members under test; the others are
	// known good.
	Suspects []string `json:"suspects,omitempty"`
	Outcome  *Outcome `json:"outcome,omitempty"`
}

// Status is a step's outcome.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	// Missing is a step the campaign did not run (no result and no exit
	// status: the round was not run, or stopped before it).
	Missing Status = "missing"
)

// Outcome is what a step's result says.
type Outcome struct {
	Status Status `json:"status"`
	// BusBW is the bus bandwidth (GB/s) at the largest size, when the
	// step measured one.
	BusBW float64 `json:"busbw_gbs,omitempty"`
	// Measured says BusBW is a measurement (a step that failed to run has
	// none).
	Measured bool `json:"measured"`
	// Median, MAD and Z are the relative judgement's reference; Threshold
	// the absolute one.
	Median    float64 `json:"median_gbs,omitempty"`
	MAD       float64 `json:"mad_gbs,omitempty"`
	Z         float64 `json:"z,omitempty"`
	Threshold float64 `json:"threshold_gbs,omitempty"`
	Why       string  `json:"why"`
}

// New starts a campaign: c checked, round 1 planned.
func New(c Config) (*Campaign, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cp := &Campaign{Schema: Schema, Config: c}
	cp.Nodes = slices.Clone(c.Nodes)
	cp.Rails = slices.Clone(c.Rails)
	r, f := cp.plan()
	if f != nil {
		return nil, fmt.Errorf("nothing to plan") // cannot happen: round 1 tests every node
	}
	cp.Rounds = append(cp.Rounds, r)
	return cp, nil
}

// Latest is the last round planned.
func (c *Campaign) Latest() *Round { return c.Rounds[len(c.Rounds)-1] }

// Check refuses a campaign file that is not one, or not consistent.
func (c *Campaign) Check() error {
	if c.Schema != Schema {
		return fmt.Errorf("schema %q: want %s", c.Schema, Schema)
	}
	if err := c.Validate(); err != nil {
		return err
	}
	if len(c.Rounds) == 0 {
		return fmt.Errorf("no rounds")
	}
	known := map[string]bool{}
	for _, n := range c.Nodes {
		known[n] = true
	}
	for i, r := range c.Rounds {
		if r.N != i+1 {
			return fmt.Errorf("round %d is numbered %d", i+1, r.N)
		}
		if !r.Read && i != len(c.Rounds)-1 {
			return fmt.Errorf("round %d was never read, yet round %d follows", r.N, r.N+1)
		}
		ids := map[string]bool{}
		for j, s := range r.Steps {
			if !validID(s.ID) || ids[s.ID] {
				return fmt.Errorf("round %d step %d: id %q is not a step name or is used twice", r.N, j+1, s.ID)
			}
			ids[s.ID] = true
			if len(s.Nodes) < 2 {
				return fmt.Errorf("round %d step %s: %d node(s)", r.N, s.ID, len(s.Nodes))
			}
			for _, n := range s.Nodes {
				if !known[n] {
					return fmt.Errorf("round %d step %s: node %q is not in the campaign", r.N, s.ID, n)
				}
			}
			if s.Rail < -1 || s.Rail >= len(c.Rails) || (s.Kind == KindRailPair || s.Kind == KindRailGroup) != (s.Rail >= 0) {
				return fmt.Errorf("round %d step %s: rail %d does not fit kind %s", r.N, s.ID, s.Rail, s.Kind)
			}
			if r.Read && s.Outcome == nil {
				return fmt.Errorf("round %d step %s: read, but no outcome", r.N, s.ID)
			}
			// An outcome the planner does not know would be neither a pass
			// nor a failure (a group neither cleared nor split).
			if o := s.Outcome; o != nil && !slices.Contains([]Status{Pass, Fail, Missing}, o.Status) {
				return fmt.Errorf("round %d step %s: outcome %q: want %s, %s or %s", r.N, s.ID, o.Status, Pass, Fail, Missing)
			}
		}
	}
	return nil
}

// validID: letters, digits and '-' only (ids name files).
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
