package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
	"github.com/gdrcheck/gdrcheck/internal/rendezvous"
)

// RDMAChannel is a rank's link to the other ranks during a cross-node
// run: the job's rendezvous (a Coordinator on rank 0, a Member elsewhere),
// which relays messages and tells of lost ranks.
type RDMAChannel interface {
	Send(to int, data []byte) error
	Inbox() <-chan rendezvous.Message
}

// RDMACrossOptions run one rank's side of a cross-node plan.
type RDMACrossOptions struct {
	RDMAOptions
	Rank int
	Host string
	// Addr is where the partner's perftest clients reach this rank's
	// servers (the host's address on the job's network, or --server-addr).
	Addr string
	// Wait bounds the wait for the partner's side (default Timeout).
	Wait time.Duration
}

// crossMsg is what two partners tell each other: their sides, and per run
// the server's start (ready: its TCP port; failed: why) and the client's
// end (done).
type crossMsg struct {
	Kind   string     `json:"kind"`
	Side   *rdma.Side `json:"side,omitempty"`
	Rail   int        `json:"rail"`
	Memory string     `json:"memory,omitempty"`
	Port   int        `json:"port,omitempty"`
	Cause  string     `json:"cause,omitempty"`
	Detail string     `json:"detail,omitempty"`
}

const (
	msgSide   = "side"
	msgReady  = "ready"
	msgFailed = "failed"
	msgDone   = "done"
)

// crossRun is one rank's state during the run.
type crossRun struct {
	opt     RDMACrossOptions
	ch      RDMAChannel
	partner int
	peer    rdma.Side // the partner's side, once known
	side    chan rdma.Side
	mu      sync.Mutex
	boxes   map[string]chan crossMsg
	gone    chan struct{} // closed when the partner (or the relay) is lost
	why     string
	once    sync.Once
}

func (x *crossRun) box(rail int, mem string) chan crossMsg {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := strconv.Itoa(rail) + "/" + mem
	b := x.boxes[k]
	if b == nil {
		b = make(chan crossMsg, 8)
		x.boxes[k] = b
	}
	return b
}

func (x *crossRun) lose(why string) {
	x.once.Do(func() {
		x.mu.Lock()
		x.why = why
		x.mu.Unlock()
		close(x.gone)
	})
}

func (x *crossRun) lostWhy() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.why
}

// dispatch routes the partner's messages to the runs waiting for them and
// notices the partner's loss (or, on a member, the loss of rank 0, which
// relays everything).
func (x *crossRun) dispatch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-x.ch.Inbox():
			switch {
			case m.Lost != "" && (m.From == x.partner || m.From == 0 && x.opt.Rank != 0):
				x.lose(m.Lost)
			case m.Lost != "" || m.From != x.partner:
			default:
				var cm crossMsg
				if json.Unmarshal(m.Data, &cm) != nil {
					continue
				}
				if cm.Kind == msgSide && cm.Side != nil {
					select {
					case x.side <- *cm.Side:
					default:
					}
					continue
				}
				select {
				case x.box(cm.Rail, cm.Memory) <- cm:
				default:
				}
			}
		}
	}
}

func (x *crossRun) send(m crossMsg) {
	b, _ := json.Marshal(m)
	if err := x.ch.Send(x.partner, b); err != nil {
		x.lose(fmt.Sprintf("rank %d unreachable: %v", x.partner, err))
	}
}

// RunRDMACross runs this rank's side of a cross-node plan with its
// partner (rank^1): the two exchange their sides (rails, NICs, link
// layers, MTUs, the servers' address), pair their rails (rdma.PairRails),
// and run each rail's memory kinds, the even rank's perftest server
// first, the odd rank's client once the server said it listens; one rail
// at a time or, with p.Concurrent, every rail at once. Every wait is
// bounded; a partner lost is PeerMissing for the runs left, never a hang.
// The part is what this rank saw, for rank 0 to combine (rdma.Combine).
func RunRDMACross(ctx context.Context, p *rdma.Plan, ch RDMAChannel, opt RDMACrossOptions) (*rdma.RankPart, error) {
	opt.defaults()
	if opt.Wait <= 0 {
		opt.Wait = opt.Timeout
	}
	if err := os.MkdirAll(opt.Out, 0o755); err != nil {
		return nil, err
	}
	me := rdma.Side{Rank: opt.Rank, Host: opt.Host, Addr: opt.Addr, Test: p.Test, Size: p.Size, Rails: p.Entries}
	part := &rdma.RankPart{Rank: opt.Rank, Host: opt.Host, Side: me}
	x := &crossRun{opt: opt, ch: ch, partner: rdma.PartnerOf(opt.Rank), side: make(chan rdma.Side, 1), boxes: map[string]chan crossMsg{}, gone: make(chan struct{})}
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	go x.dispatch(dctx)
	x.send(crossMsg{Kind: msgSide, Side: &me})
	wait := time.NewTimer(opt.Wait)
	defer wait.Stop()
	select {
	case x.peer = <-x.side:
	case <-x.gone:
		part.Error = fmt.Sprintf("no side from rank %d: %s", x.partner, x.lostWhy())
		return part, nil
	case <-wait.C:
		part.Error = fmt.Sprintf("no side from rank %d within %s", x.partner, opt.Wait)
		return part, nil
	case <-ctx.Done():
		return part, ctx.Err()
	}
	part.Partner = &x.peer
	if err := rdma.CheckAddr(x.peer.Addr); err != nil {
		// Untrusted: no perftest runs with what the partner sent.
		part.Error = fmt.Sprintf("rank %d's side: %v", x.partner, err)
		return part, nil
	}
	server := rdma.IsServer(opt.Rank)
	if server {
		part.Rails = rdma.PairRails(me, x.peer)
	} else {
		part.Rails = rdma.PairRails(x.peer, me)
	}
	var mu sync.Mutex
	railRun := func(rp rdma.RailPair) {
		for _, mem := range rp.Memories {
			if ctx.Err() != nil {
				return
			}
			var so rdma.SideOutcome
			if server {
				so = x.serve(ctx, rp, mem, p.Test)
			} else {
				so = x.connect(ctx, rp, mem, p.Test)
			}
			mu.Lock()
			part.Outcomes = append(part.Outcomes, so)
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for _, rp := range part.Rails {
		if !rp.Runs() {
			continue
		}
		if p.Concurrent {
			wg.Go(func() { railRun(rp) })
		} else {
			railRun(rp)
		}
	}
	wg.Wait()
	slices.SortStableFunc(part.Outcomes, func(a, b rdma.SideOutcome) int { return a.Rail - b.Rail })
	return part, ctx.Err()
}

func crossName(e *rdma.Entry, mem, role string) string {
	return fmt.Sprintf("rail%d-gpu%d-%s-%s-%s.txt", e.Rail, e.GPU, safeName(e.NIC), mem, role)
}

// serve is the even rank's side of one run: start the server, tell the
// partner its port, wait for the client's end.
func (x *crossRun) serve(ctx context.Context, rp rdma.RailPair, mem, test string) rdma.SideOutcome {
	run := rp.Server.Run(mem)
	so := rdma.SideOutcome{Rail: rp.Rail, Memory: mem, Role: rdma.RoleServer, Port: run.TCPPort, Out: crossName(rp.Server, mem, rdma.RoleServer), Args: run.Server.Args}
	fail := func(cause, detail string) rdma.SideOutcome {
		so.Cause, so.Detail = cause, detail
		x.send(crossMsg{Kind: msgFailed, Rail: rp.Rail, Memory: mem, Cause: cause, Detail: detail})
		return so
	}
	select {
	case <-x.gone:
		so.Cause, so.Detail = rdma.CausePeerMissing, "client rank: "+x.lostWhy()
		return so
	default:
	}
	path, err := perftestBinary(x.opt.PerftestDir, run.Server.Tool)
	if err != nil {
		return fail(rdma.CauseMissingBinary, "server: "+err.Error())
	}
	rctx, cancel := context.WithTimeout(ctx, x.opt.Timeout)
	defer cancel()
	srv, cause, detail := startServer(rctx, path, run.Server, filepath.Join(x.opt.Out, so.Out), x.opt.RDMAOptions)
	if srv == nil {
		return fail(cause, detail)
	}
	defer srv.close()
	x.send(crossMsg{Kind: msgReady, Rail: rp.Rail, Memory: mem, Port: run.TCPPort})
	exited := false
	died := func() {
		if srv.err != nil {
			c, d := srv.exitCause()
			so.Cause, so.Detail = c, "server: "+d
		}
	}
	box := x.box(rp.Rail, mem)
	for {
		select {
		case <-box:
			// The client ended; the server ends on its own after the test.
			if !exited {
				select {
				case <-srv.done:
					died()
				case <-time.After(2 * time.Second):
				}
			}
			return so
		case <-srv.done:
			if !exited {
				exited = true
				died()
			}
			// Keep waiting for the client's end: the two stay in step.
		case <-x.gone:
			if so.Cause == "" {
				so.Cause, so.Detail = rdma.CausePeerMissing, "client rank: "+x.lostWhy()
			}
			return so
		case <-rctx.Done():
			if so.Cause == "" {
				so.Cause, so.Detail = rdma.CauseTimeout, fmt.Sprintf("the run did not end within --pair-timeout %s", x.opt.Timeout)
			}
			return so
		}
	}
}

// connect is the odd rank's side of one run: wait for the server's start,
// run the client against the server's address and port, tell the partner
// it ended.
func (x *crossRun) connect(ctx context.Context, rp rdma.RailPair, mem, test string) rdma.SideOutcome {
	run := rp.Client.Run(mem)
	so := rdma.SideOutcome{Rail: rp.Rail, Memory: mem, Role: rdma.RoleClient, Out: crossName(rp.Client, mem, rdma.RoleClient)}
	wait := time.NewTimer(x.opt.Timeout)
	defer wait.Stop()
	var m crossMsg
	select {
	case m = <-x.box(rp.Rail, mem):
	case <-x.gone:
		so.Cause, so.Detail = rdma.CausePeerMissing, "server rank: "+x.lostWhy()
		return so
	case <-wait.C:
		so.Cause, so.Detail = rdma.CauseServerNotReady, fmt.Sprintf("client: no word from the server on %s within --pair-timeout %s", x.peer.Host, x.opt.Timeout)
		return so
	case <-ctx.Done():
		so.Cause, so.Detail = rdma.CauseTimeout, "client: interrupted"
		return so
	}
	if m.Kind == msgFailed {
		so.Cause, so.Detail = m.Cause, "as the server on "+x.peer.Host+" reported: "+m.Detail
		return so
	}
	if err := rdma.CheckPort(m.Port); err != nil {
		so.Cause, so.Detail = rdma.CauseServerNotReady, "client: "+err.Error()
		return so
	}
	so.Port = m.Port
	done := func() rdma.SideOutcome {
		x.send(crossMsg{Kind: msgDone, Rail: rp.Rail, Memory: mem, Cause: so.Cause})
		return so
	}
	args := clientArgs(run.Client.Args, m.Port, x.peer.Addr)
	so.Args = args
	path, err := perftestBinary(x.opt.PerftestDir, run.Client.Tool)
	if err != nil {
		so.Cause, so.Detail = rdma.CauseMissingBinary, "client: "+err.Error()
		return done()
	}
	rctx, cancel := context.WithTimeout(ctx, x.opt.Timeout)
	defer cancel()
	f, err := os.Create(filepath.Join(x.opt.Out, so.Out))
	if err != nil {
		so.Cause, so.Detail = rdma.CauseClientFailed, err.Error()
		return done()
	}
	defer f.Close()
	cmd := command(rctx, path, rdma.Cmd{Tool: run.Client.Tool, Args: args, Env: run.Client.Env}, f)
	errc := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		so.Cause, so.Detail = rdma.CauseClientFailed, "client: "+err.Error()
		return done()
	}
	go func() { errc <- cmd.Wait() }()
	var cerr error
	select {
	case cerr = <-errc:
	case <-x.gone:
		cmd.Process.Kill()
		<-errc
		so.Cause, so.Detail = rdma.CausePeerMissing, "server rank: "+x.lostWhy()
		return so
	}
	ctext := readText(filepath.Join(x.opt.Out, so.Out))
	switch {
	case rctx.Err() != nil:
		so.Cause, so.Detail = rdma.CauseTimeout, fmt.Sprintf("the run did not end within --pair-timeout %s", x.opt.Timeout)
	case cerr != nil:
		c, d := classify(ctext, "")
		if c == "" {
			c, d = rdma.CauseClientFailed, exitText(cerr)
		}
		so.Cause, so.Detail = c, "client: "+d
	default:
		ms := measure(so.Out, ctext, test)
		so.Gbps, so.LatencyUS, so.Bytes, so.Cause, so.Detail = ms.Gbps, ms.LatencyUS, ms.Bytes, ms.Cause, ms.Detail
	}
	return done()
}

// clientArgs are the planned client arguments with the server's TCP port
// and address.
func clientArgs(planned []string, port int, addr string) []string {
	a := slices.Clone(planned)
	for i := 0; i+1 < len(a); i++ {
		if a[i] == "-p" {
			a[i+1] = strconv.Itoa(port)
		}
	}
	if n := len(a); n > 0 && a[n-1] == rdma.PeerAddr {
		a[n-1] = addr
	}
	return a
}
