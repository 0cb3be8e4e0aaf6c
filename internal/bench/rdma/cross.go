package rdma

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report/sched"
)

// Cross-node causes, beside the runner's (judge.go).
const (
	// CausePeerMissing: the peer rank of a node pair never came, died or
	// was lost mid-run (its host named), or the rendezvous that relays the
	// pair's signals was lost.
	CausePeerMissing = "PeerMissing"
	// CauseRailMismatch: rail r exists on one node only, or its NICs
	// differ in link layer: that rail is not run, the others are.
	CauseRailMismatch = "RailMismatch"
)

// Roles in a cross-node run.
const (
	RoleServer = "server"
	RoleClient = "client"
)

// Side is one node's half of a node pair, exchanged at the rendezvous:
// who it is, where its servers listen, and its rails (its plan's entries,
// rail order: the pairing order).
type Side struct {
	Rank int    `json:"rank"`
	Host string `json:"host"`
	// Addr is where the peer's perftest client connects (perftest's
	// out-of-band TCP): this host's address, or --server-addr.
	Addr  string  `json:"addr"`
	Test  string  `json:"test"`
	Size  int64   `json:"size,omitempty"`
	Rails []Entry `json:"rails"`
}

// CheckAddr refuses a server address a partner sent that is not an IP
// address or a host name: the client's perftest takes it as its last
// argument, where anything else (an option such as --out_json_file=FILE)
// would change what perftest does.
func CheckAddr(addr string) error {
	if _, err := netip.ParseAddr(addr); err == nil && !strings.HasPrefix(addr, "-") {
		return nil
	}
	if err := sched.ValidHost(addr); err != nil {
		if len(addr) > 80 {
			addr = addr[:80] + "..."
		}
		return fmt.Errorf("server address \"%s\" is not an IP address or a host name", printable.Line(addr))
	}
	return nil
}

// CheckPort refuses a server's TCP port outside 1..65535.
func CheckPort(port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("the server's port %d is not a TCP port", port)
	}
	return nil
}

// PartnerOf is rank's partner in its node pair: 2k with 2k+1.
func PartnerOf(rank int) int { return rank ^ 1 }

// IsServer reports the even rank of a pair: it runs the servers.
func IsServer(rank int) bool { return rank%2 == 0 }

// RailPair is one rail of a node pair: the server's and the client's
// entries and the memory kinds both run, or why the rail is not run.
type RailPair struct {
	Rail   int    `json:"rail"`
	Server *Entry `json:"server,omitempty"`
	Client *Entry `json:"client,omitempty"`
	// Memories both sides run, in the server's order (the control last).
	Memories []string `json:"memories,omitempty"`
	// Cause and Detail: the rail is not run (RailMismatch), or Skip: a
	// side's port is down or cannot register GPU memory.
	Cause  string   `json:"cause,omitempty"`
	Detail string   `json:"detail,omitempty"`
	Skip   string   `json:"skip,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

// Runs is true when the rail runs.
func (rp *RailPair) Runs() bool { return rp.Cause == "" && rp.Skip == "" }

// PairRails pairs rail r of the server's side with rail r of the client's,
// for every rail either side has. A rail on one side only, or NICs of
// different link layers, is a RailMismatch of that rail only; a tool or a
// message size that differs is one of every rail (perftest's two ends
// must run the same test).
func PairRails(server, client Side) []RailPair {
	idx := map[int]bool{}
	for _, e := range server.Rails {
		idx[e.Rail] = true
	}
	for _, e := range client.Rails {
		idx[e.Rail] = true
	}
	var rails []int
	for r := range idx {
		rails = append(rails, r)
	}
	slices.Sort(rails)
	find := func(s Side, r int) *Entry {
		for i := range s.Rails {
			if s.Rails[i].Rail == r {
				e := s.Rails[i]
				return &e
			}
		}
		return nil
	}
	who := func(s Side) string { return fmt.Sprintf("rank %d (%s)", s.Rank, s.Host) }
	var out []RailPair
	for _, r := range rails {
		rp := RailPair{Rail: r, Server: find(server, r), Client: find(client, r)}
		switch {
		case server.Test != client.Test || server.Size != client.Size:
			rp.Cause, rp.Detail = CauseRailMismatch, fmt.Sprintf("the two ranks run different tests: %s %s (-s %d) and %s %s (-s %d); give both the same options", who(server), server.Test, server.Size, who(client), client.Test, client.Size)
		case rp.Server == nil || rp.Client == nil:
			have, miss := server, client
			if rp.Server == nil {
				have, miss = client, server
			}
			rp.Cause, rp.Detail = CauseRailMismatch, fmt.Sprintf("rail %d exists on %s only: %s has %d rails (%s)", r, who(have), who(miss), len(miss.Rails), nicList(miss))
		case rp.Server.LinkLayer != rp.Client.LinkLayer:
			rp.Cause, rp.Detail = CauseRailMismatch, fmt.Sprintf("rail %d: %s on %s is %s, %s on %s is %s: perftest cannot connect different link layers", r,
				rp.Server.NIC, who(server), cmp.Or(rp.Server.LinkLayer, "unknown"), rp.Client.NIC, who(client), cmp.Or(rp.Client.LinkLayer, "unknown"))
		case rp.Server.Skip != "":
			rp.Skip = "server side (" + who(server) + "): " + rp.Server.Skip
		case rp.Client.Skip != "":
			rp.Skip = "client side (" + who(client) + "): " + rp.Client.Skip
		}
		if rp.Server != nil && rp.Client != nil {
			for _, run := range rp.Server.Runs {
				if rp.Client.Run(run.Memory) != nil {
					rp.Memories = append(rp.Memories, run.Memory)
				} else {
					rp.Notes = append(rp.Notes, fmt.Sprintf("%s: %s registers no GPU memory that way; not run", MemoryText(run.Memory), who(client)))
				}
			}
			for _, run := range rp.Client.Runs {
				if rp.Server.Run(run.Memory) == nil {
					rp.Notes = append(rp.Notes, fmt.Sprintf("%s: %s registers no GPU memory that way; not run", MemoryText(run.Memory), who(server)))
				}
			}
			if a, b := rp.Server.MTU, rp.Client.MTU; a > 0 && b > 0 && a != b {
				rp.Notes = append(rp.Notes, fmt.Sprintf("MTUs differ: %s %d, %s %d (perftest uses the smaller path MTU)", rp.Server.NIC, a, rp.Client.NIC, b))
			}
		}
		out = append(out, rp)
	}
	return out
}

func nicList(s Side) string {
	var n []string
	for _, e := range s.Rails {
		n = append(n, e.NIC)
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}

// Run is the entry's run of a memory kind, nil if none.
func (e *Entry) Run(mem string) *Run {
	for i := range e.Runs {
		if e.Runs[i].Memory == mem {
			return &e.Runs[i]
		}
	}
	return nil
}

// SideOutcome is what one side saw of one run (rail, memory): the server's
// start and exit, or the client's measurement.
type SideOutcome struct {
	Rail   int    `json:"rail"`
	Memory string `json:"memory"`
	Role   string `json:"role"`
	// Port is the TCP port the run used (the server's).
	Port      int     `json:"tcp_port,omitempty"`
	Gbps      float64 `json:"gbps,omitempty"`
	LatencyUS float64 `json:"latency_us,omitempty"`
	Bytes     int64   `json:"bytes,omitempty"`
	Cause     string  `json:"cause,omitempty"`
	Detail    string  `json:"detail,omitempty"`
	// Out is the raw output, relative to the rank's output folder.
	Out string `json:"output,omitempty"`
	// Args is the command's arguments as run.
	Args []string `json:"args,omitempty"`
}

// RankPart is one rank's share of a cross-node run, delivered to rank 0.
type RankPart struct {
	Rank     int           `json:"rank"`
	Host     string        `json:"host"`
	Side     Side          `json:"side"`
	Partner  *Side         `json:"partner,omitempty"`
	Rails    []RailPair    `json:"rails,omitempty"`
	Outcomes []SideOutcome `json:"outcomes,omitempty"`
	Error    string        `json:"error,omitempty"`
}

func (p *RankPart) outcome(rail int, mem string) *SideOutcome {
	if p == nil {
		return nil
	}
	for i := range p.Outcomes {
		if p.Outcomes[i].Rail == rail && p.Outcomes[i].Memory == mem {
			return &p.Outcomes[i]
		}
	}
	return nil
}

// Merge is one run's outcome from the two sides' (nil: that side's rank
// delivered nothing): the client's measurement when it measured, else the
// cause that explains the others, the server's first (its registration,
// its binary, its port, its death), each named with the side's host.
func Merge(s, c *SideOutcome, serverHost, clientHost string) Outcome {
	o := Outcome{}
	if c != nil {
		o.Memory = c.Memory
	} else if s != nil {
		o.Memory = s.Memory
	}
	if c != nil && c.Cause == "" && (c.Gbps > 0 || c.LatencyUS > 0) {
		o.Gbps, o.LatencyUS, o.Bytes, o.Detail = c.Gbps, c.LatencyUS, c.Bytes, c.Detail
		return o
	}
	named := func(x *SideOutcome, host string) Outcome {
		o.Cause, o.Detail = x.Cause, x.Role+" on "+host+": "+strings.TrimPrefix(strings.TrimPrefix(x.Detail, "server: "), "client: ")
		return o
	}
	has := func(x *SideOutcome, causes ...string) bool { return x != nil && slices.Contains(causes, x.Cause) }
	switch {
	case has(s, CauseRegistration):
		return named(s, serverHost)
	case has(c, CauseRegistration):
		return named(c, clientHost)
	case has(s, CauseMissingBinary, CausePortConflict):
		return named(s, serverHost)
	case has(c, CauseMissingBinary):
		return named(c, clientHost)
	case has(s, CauseServerNotReady, CauseServerDied, CauseTimeout):
		return named(s, serverHost)
	case c != nil && c.Cause != "":
		return named(c, clientHost)
	case s != nil && s.Cause != "":
		return named(s, serverHost)
	case c == nil && s == nil:
		o.Cause, o.Detail = CausePeerMissing, "neither "+serverHost+" nor "+clientHost+" reported this run"
	case c == nil:
		o.Cause, o.Detail = CausePeerMissing, "the client on "+clientHost+" reported nothing"
	default:
		o.Cause, o.Detail = CauseNoMeasurement, "client on "+clientHost+": no result row"
	}
	return o
}

// knownCauses are every cause a side may report.
var knownCauses = []string{CauseMissingBinary, CauseRegistration, CausePortConflict, CauseServerDied, CauseClientFailed, CauseTimeout,
	CauseNoMeasurement, CauseServerNotReady, CausePeerMissing, CauseRailMismatch}

// untrusted is a copy of a rank's part (it came from another process)
// whose causes are all ours: another is a ClientFailed that quotes it.
func untrusted(p *RankPart) *RankPart {
	if p == nil {
		return nil
	}
	q := *p
	q.Outcomes = slices.Clone(p.Outcomes)
	for i := range q.Outcomes {
		o := &q.Outcomes[i]
		if o.Cause != "" && !slices.Contains(knownCauses, o.Cause) {
			c := o.Cause
			if len(c) > 64 {
				c = c[:64]
			}
			o.Cause, o.Detail = CauseClientFailed, fmt.Sprintf("rank %d reported an unknown cause %q: %s", p.Rank, c, o.Detail)
		}
	}
	return &q
}

// Combine makes one node pair's results from its two ranks' parts (nil: a
// rank that delivered nothing; lost names why): one PairResult per rail,
// the server's entry with the client's side as its Peer, the line rate
// the slower of the two ports. dir maps a rank to its output folder
// relative to the job's ("" for rank 0).
func Combine(server, client *RankPart, serverRank int, hosts []string, lost map[int]string, dir func(rank int) string) []PairResult {
	server, client = untrusted(server), untrusted(client)
	host := func(r int) string {
		if r < len(hosts) && hosts[r] != "" {
			return hosts[r]
		}
		return fmt.Sprintf("rank %d", r)
	}
	sh, ch := host(serverRank), host(serverRank+1)
	var rails []RailPair
	switch {
	case server != nil && server.Rails != nil:
		rails = server.Rails
	case client != nil && client.Rails != nil:
		rails = client.Rails
	case server != nil:
		// The client never sent its side: the server's rails, unpaired.
		for i := range server.Side.Rails {
			e := server.Side.Rails[i]
			rails = append(rails, RailPair{Rail: e.Rail, Server: &e})
		}
	case client != nil:
		for i := range client.Side.Rails {
			e := client.Side.Rails[i]
			rails = append(rails, RailPair{Rail: e.Rail, Client: &e})
		}
	}
	missing := func(r int) string {
		why := lost[r]
		if why == "" {
			why = "delivered no result"
		}
		return fmt.Sprintf("rank %d (%s): %s", r, host(r), why)
	}
	var out []PairResult
	for _, rp := range rails {
		var e Entry
		switch {
		case rp.Server != nil:
			e = *rp.Server
		case rp.Client != nil:
			e = Entry{GPU: -1, NIC: "-", Level: "-", Rail: rp.Rail, Mode: ModeCrossNode}
		}
		e.Host, e.Rail, e.Notes = sh, rp.Rail, append(slices.Clone(e.Notes), rp.Notes...)
		e.Peer = &Peer{Rank: serverRank + 1, Host: ch, GPU: -1, NIC: "-", Level: "-"}
		if c := rp.Client; c != nil {
			e.Peer = &Peer{Rank: serverRank + 1, Host: ch, GPU: c.GPU, GPUBusID: c.GPUBusID, NIC: c.NIC, Port: c.Port, LinkLayer: c.LinkLayer, RateGbps: c.RateGbps, MTU: c.MTU, Level: c.Level}
			e.Expect = slower(e.Expect, *c)
		}
		pr := PairResult{Entry: e}
		switch {
		case rp.Cause != "":
			pr.Cause, pr.Detail = rp.Cause, rp.Detail
		case rp.Skip != "":
			pr.Entry.Skip = rp.Skip
		case rp.Server == nil || rp.Client == nil:
			who := serverRank + 1
			if server == nil {
				who = serverRank
			}
			pr.Cause, pr.Detail = CausePeerMissing, missing(who)
		default:
			for _, mem := range rp.Memories {
				s, c := server.outcome(rp.Rail, mem), client.outcome(rp.Rail, mem)
				o := Merge(s, c, sh, ch)
				o.Memory = mem
				if o.Cause == CausePeerMissing {
					switch {
					case server == nil:
						o.Detail = missing(serverRank)
					case client == nil:
						o.Detail = missing(serverRank + 1)
					}
				}
				if s != nil && s.Out != "" {
					o.ServerOut = joinRel(dir(serverRank), s.Out)
				}
				if c != nil && c.Out != "" {
					o.ClientOut = joinRel(dir(serverRank+1), c.Out)
				}
				pr.Outcomes = append(pr.Outcomes, o)
			}
		}
		out = append(out, pr)
	}
	return out
}

func joinRel(dir, f string) string {
	if dir == "" {
		return f
	}
	return dir + "/" + f
}

// slower is the rail's expectation: the line rate of the slower port; the
// model's figures only when both ports run at the same rate.
func slower(x Expectation, c Entry) Expectation {
	switch {
	case c.RateGbps <= 0 || x.LineGbps <= 0:
		if c.RateGbps <= 0 {
			return Expectation{Source: "the peer port's rate is unknown: fractions are not judged"}
		}
		return Expectation{Source: "this port's rate is unknown: fractions are not judged"}
	case c.RateGbps < x.LineGbps:
		return Expectation{LineGbps: c.RateGbps, Source: fmt.Sprintf("the slower port's rate (%s port %d, %g Gb/s)", c.NIC, c.Port, c.RateGbps)}
	}
	return x
}
