package rendezvous

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// maxPending bounds the connections rank 0 lets prove themselves at once;
// while all are taken it accepts no more (the kernel's backlog queues
// them). Each costs a goroutine and handshakeMax of buffer at most.
const maxPending = 512

// listNamed bounds the ranks a message names one by one.
const listNamed = 32

// lookupIP resolves a listen host (a variable: tests give names that
// resolve to all interfaces).
var lookupIP = net.DefaultResolver.LookupIPAddr

// listen listens at addr, a host and a port. The host must not be all
// interfaces, nor resolve to them: rank 0 listens on the address its name
// resolves to, retrying while the name does not resolve yet (a Kubernetes
// pod's own name appears in DNS shortly after it starts), at most wait.
func listen(ctx context.Context, addr string, wait time.Duration) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return nil, fmt.Errorf("rendezvous: listen address %q: want a host and a port, not all interfaces", addr)
	}
	until := time.Now().Add(wait)
	var ip net.IP
	for ip == nil {
		if ip = net.ParseIP(host); ip != nil {
			break
		}
		ips, err := lookupIP(ctx, host)
		if err == nil && len(ips) == 0 {
			err = fmt.Errorf("no address")
		}
		if err == nil {
			for _, a := range ips {
				if a.IP.IsUnspecified() {
					return nil, fmt.Errorf("rendezvous: listen address %q: %s resolves to %s, all interfaces: want the address of one", addr, host, a.IP)
				}
			}
			ip = ips[0].IP
			for _, a := range ips { // IPv4 first, as the members' dial tries it first
				if a.IP.To4() != nil {
					ip = a.IP
					break
				}
			}
			break
		}
		var dns *net.DNSError
		if !errors.As(err, &dns) || time.Now().After(until) {
			return nil, fmt.Errorf("rendezvous: rank 0 cannot listen at %s: %w", addr, err)
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return nil, fmt.Errorf("rendezvous: rank 0 cannot listen at %s: %w", addr, err)
		}
	}
	if ip.IsUnspecified() {
		return nil, fmt.Errorf("rendezvous: listen address %q: want a host and a port, not all interfaces", addr)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(ip.String(), port))
	if err != nil {
		return nil, fmt.Errorf("rendezvous: rank 0 cannot listen at %s: %w", addr, err)
	}
	return ln, nil
}

// turnedAway counts the connections rank 0 did not admit, by why, with a
// few of their addresses, and the ranks they claimed.
type turnedAway struct {
	mu      sync.Mutex
	n       map[string]int
	from    map[string][]string
	claimed map[int][]claim // rank -> connections claiming it, refused
}

// claim is what connections claiming a rank were refused for, and how
// many.
type claim struct {
	what string
	n    int
}

// Why a connection was turned away.
const (
	awaySilent    = "gave no answer in time (or closed)"
	awayNotOurs   = "did not speak gdrcheck's rendezvous"
	awaySecret    = "had the wrong secret"
	awayRefused   = "proved the secret but were refused"
	awayDuplicate = "claimed a rank another process holds"
)

func (ta *turnedAway) add(why, from string, rank int, detail string) {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	if ta.n == nil {
		ta.n, ta.from, ta.claimed = map[string]int{}, map[string][]string{}, map[int][]claim{}
	}
	ta.n[why]++
	if f := ta.from[why]; len(f) < 4 && !slices.Contains(f, from) {
		ta.from[why] = append(f, from)
	}
	if rank > 0 {
		what := fmt.Sprintf("from %s claiming it %s", from, detail)
		cs := ta.claimed[rank]
		if i := slices.IndexFunc(cs, func(c claim) bool { return c.what == what }); i >= 0 {
			cs[i].n++
		} else if len(cs) < 4 {
			ta.claimed[rank] = append(cs, claim{what, 1})
		}
	}
}

// TurnedAway sums the connections rank 0 did not admit while the ranks
// joined ("" none): wrong secrets, silent or foreign connections, a rank
// claimed twice. The job may have formed anyway; the operator should know.
func (c *Coordinator) TurnedAway() string { return c.away.String() }

// String sums the connections turned away ("" none).
func (ta *turnedAway) String() string {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	var parts []string
	total := 0
	for _, why := range []string{awaySilent, awayNotOurs, awaySecret, awayRefused, awayDuplicate} {
		if n := ta.n[why]; n > 0 {
			total += n
			parts = append(parts, fmt.Sprintf("%d %s (from %s)", n, why, strings.Join(ta.from[why], ", ")))
		}
	}
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("rank 0 turned away %d connection(s) meanwhile: %s", total, strings.Join(parts, "; "))
}

// about is what was seen of connections claiming rank r ("" nothing).
func (ta *turnedAway) about(r int) string {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	var s []string
	for _, c := range ta.claimed[r] {
		s = append(s, fmt.Sprintf("%d connection(s) %s", c.n, c.what))
	}
	return strings.Join(s, "; ")
}

// missingError names the ranks that never arrived and their hosts, what
// rank 0 saw of connections claiming them, and the connections it turned
// away.
func missingError(cfg Config, joined []bool, waited time.Duration, away *turnedAway) *JobError {
	e := &JobError{}
	for r := 1; r < cfg.Size; r++ {
		if joined[r] {
			continue
		}
		f := Failure{Rank: r, Reason: fmt.Sprintf("never arrived at the rendezvous %s within %s", cfg.Addr, waited)}
		if r < len(cfg.Hosts) {
			f.Host = cfg.Hosts[r]
		}
		if s := away.about(r); s != "" {
			f.Reason += " (" + s + ")"
		}
		e.Failures = append(e.Failures, f)
	}
	var ranks []string
	for i, f := range e.Failures {
		if i == listNamed {
			ranks = append(ranks, fmt.Sprintf("and %d more", len(e.Failures)-listNamed))
			break
		}
		ranks = append(ranks, f.String())
	}
	e.Msg = fmt.Sprintf("%d of %d ranks never arrived at the rendezvous %s within %s: %s", len(e.Failures), cfg.Size, cfg.Addr, waited, strings.Join(ranks, "; "))
	if s := away.String(); s != "" {
		e.Msg += "; " + s
	}
	return e
}

// arrival is a member that proved the secret.
type arrival struct {
	a    auth
	cn   *conn
	from string
}

// join accepts members until all arrived or the deadline.
func (c *Coordinator) join(ctx context.Context, id []byte) error {
	start := time.Now()
	deadline := start.Add(c.cfg.JoinTimeout)
	arrived := make(chan arrival)
	stop := make(chan struct{})
	defer close(stop)
	away := &c.away
	go c.accept(arrived, stop, away)
	joined := make([]bool, c.cfg.Size)
	process := make([][]byte, c.cfg.Size)
	joined[0] = true
	n := 1
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var missing []Failure
wait:
	for n < c.cfg.Size {
		select {
		case a := <-arrived:
			r := a.a.Rank
			switch {
			case joined[r] && bytes.Equal(process[r], a.a.Process):
				// The same process again: its first connection dropped
				// before the id came. The new one replaces it.
				c.members[r].close()
			case joined[r]:
				away.add(awayDuplicate, a.from, 0, "")
				_ = a.cn.write(tRefuse, fmt.Appendf(nil, "rank %d has already joined (from %s): another process holds it", r, c.hosts[r]), time.Second)
				a.cn.close()
				continue
			default:
				n++
			}
			joined[r], process[r], c.members[r], c.hosts[r], c.nodes[r] = true, a.a.Process, a.cn, a.a.Host, cmp.Or(a.a.Node, a.a.Host)
			c.gpus[r] = max(a.a.GPUs, 1)
		case <-timer.C:
			e := missingError(c.cfg, joined, c.cfg.JoinTimeout, away)
			if !c.cfg.KeepGoing || n == 1 {
				c.abortAll(e.Msg)
				return e
			}
			// KeepGoing: the job goes on with the ranks that came; the
			// missing ones are lost, and told so once the id is out.
			missing = e.Failures
			break wait
		case <-ctx.Done():
			c.abortAll("rank 0 was interrupted")
			return fmt.Errorf("rendezvous: %w", context.Cause(ctx))
		}
	}
	_ = c.ln.Close() // every rank is here (or, KeepGoing, the deadline passed): nobody else may connect
	for _, f := range missing {
		c.hosts[f.Rank], c.nodes[f.Rank] = f.Host, f.Host
	}
	im := idMsg{ID: id, Hosts: c.hosts, Nodes: c.nodes}
	if slices.ContainsFunc(c.gpus, func(n int) bool { return n > 1 }) {
		im.GPUs = c.gpus
	}
	msg, _ := json.Marshal(im)
	for r := 1; r < c.cfg.Size; r++ {
		if c.members[r] == nil {
			continue
		}
		if err := c.members[r].write(tID, msg, handshakeTimeout); err != nil {
			e := &JobError{Failures: []Failure{{Rank: r, Host: c.hosts[r], Reason: "lost before it received the unique id: " + err.Error()}}}
			c.abortAll(e.Error())
			return e
		}
	}
	for _, f := range missing {
		c.mu.Lock()
		c.failed[f.Rank] = f
		c.once.Do(func() { close(c.lost) })
		c.mu.Unlock()
		c.tellLost(f)
	}
	return nil
}

// accept admits connections while a slot for one proving itself is free,
// and hands those that proved the secret to join.
func (c *Coordinator) accept(arrived chan<- arrival, stop <-chan struct{}, away *turnedAway) {
	pending := make(chan struct{}, maxPending)
	for {
		select {
		case pending <- struct{}{}:
		case <-stop:
			return
		}
		nc, err := c.ln.Accept()
		if err != nil {
			<-pending
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors or the like: wait, then accept again.
			select {
			case <-time.After(100 * time.Millisecond):
				continue
			case <-stop:
				return
			}
		}
		go func() {
			defer func() { <-pending }()
			cn := newConn(nc, handshakeMax)
			a, err := c.handshake(cn, away)
			if err != nil {
				cn.close()
				return
			}
			cn.max = c.cfg.MaxMessage
			select {
			case arrived <- arrival{a, cn, hostPart(nc.RemoteAddr())}:
			case <-stop:
				_ = cn.write(tAbort, []byte("rank 0 is no longer accepting members"), time.Second)
				cn.close()
			}
		}()
	}
}

// hostPart is an address's host: its port says nothing.
func hostPart(a net.Addr) string {
	if ip := ipOf(a); ip != "" {
		return ip
	}
	return a.String()
}

// handshake challenges a new connection and checks its answer. A member
// that proved the secret is welcomed (rank 0 proves it back) and the
// connection keyed; a refusal after that is authenticated, and final for
// the member.
func (c *Coordinator) handshake(cn *conn, away *turnedAway) (auth, error) {
	from := hostPart(cn.c.RemoteAddr())
	ch := nonce()
	if err := cn.write(tChallenge, ch, handshakeTimeout); err != nil {
		away.add(awaySilent, from, 0, "")
		return auth{}, err
	}
	t, p, err := cn.readAnswer(c.cfg.firstByte)
	if err != nil {
		var silent errSilent
		if errors.As(err, &silent) {
			away.add(awaySilent, from, 0, "")
		} else {
			away.add(awayNotOurs, from, 0, "")
		}
		return auth{}, err
	}
	var a auth
	if t != tAuth || json.Unmarshal(p, &a) != nil || len(a.Nonce) != 32 || len(a.Process) != 16 {
		away.add(awayNotOurs, from, 0, "")
		_ = cn.write(tAbort, []byte("not a gdrcheck rendezvous answer"), time.Second)
		return auth{}, fmt.Errorf("bad answer")
	}
	if !hmac.Equal(a.MAC, a.tag(c.cfg.Secret, ch)) {
		// The rank it claims is not proven; it is a hint for the operator.
		claimed := a.Rank
		if claimed < 1 || claimed >= c.cfg.Size {
			claimed = 0
		}
		away.add(awaySecret, from, claimed, "had the wrong secret")
		_ = cn.write(tAbort, []byte("wrong secret"), time.Second)
		return auth{}, fmt.Errorf("wrong secret")
	}
	if err := cn.write(tWelcome, mac(c.cfg.Secret, "gdrcheck-rendezvous/2 rank0", a.Nonce, ch), handshakeTimeout); err != nil {
		away.add(awaySilent, from, 0, "")
		return auth{}, err
	}
	cn.session(c.cfg.Secret, ch, a.Nonce, true)
	var why string
	switch {
	case a.Size != c.cfg.Size:
		why = fmt.Sprintf("world size %d differs from rank 0's %d", a.Size, c.cfg.Size)
	case a.Rank < 1 || a.Rank >= c.cfg.Size:
		why = fmt.Sprintf("rank %d is not one of 1..%d", a.Rank, c.cfg.Size-1)
	case len(a.Host) > 255 || len(a.Node) > 255:
		why = "host or node name longer than 255 bytes"
	case a.GPUs < 0 || a.GPUs > MaxGPUs:
		why = fmt.Sprintf("it announced %d GPUs: want 1..%d", a.GPUs, MaxGPUs)
	}
	if why != "" {
		claimed := a.Rank
		if a.Rank < 1 || a.Rank >= c.cfg.Size {
			claimed = 0
		}
		away.add(awayRefused, from, claimed, "was refused: "+why)
		_ = cn.write(tRefuse, []byte(why), time.Second)
		return auth{}, errors.New(why)
	}
	return a, nil
}

// ---------------------------------------------------------------- members

// Join connects to rank 0, proves the secret, checks rank 0's proof and
// waits for the unique id. It retries the whole (rank 0 may start later,
// be busy with others, or a connection may drop) until the join deadline;
// only a refusal or an abort that rank 0 authenticated ends it before.
func Join(ctx context.Context, cfg Config) (*Member, []byte, error) {
	if err := cfg.check(); err != nil {
		return nil, nil, err
	}
	if cfg.Rank == 0 {
		return nil, nil, fmt.Errorf("rendezvous: rank 0 serves, it does not join")
	}
	deadline := time.Now().Add(cfg.JoinTimeout)
	process := nonce()[:16]
	var lastErr error
	failed := 0 // handshakes that failed: each waits longer before the next
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			// Members retry at random moments, not in bursts: every
			// 100-300 ms while rank 0 is not listening yet, backing off
			// up to 2 s after handshakes that failed.
			wait := min(200*time.Millisecond<<min(failed, 4), 2*time.Second)
			wait = wait/2 + rand.N(wait)
			select {
			case <-time.After(min(wait, max(time.Until(deadline), 0))):
			case <-ctx.Done():
				return nil, nil, fmt.Errorf("rendezvous: %w", context.Cause(ctx))
			}
		}
		if time.Now().After(deadline) {
			return nil, nil, unreachable(cfg, lastErr)
		}
		d := net.Dialer{Timeout: min(5*time.Second, time.Until(deadline)+time.Millisecond)}
		nc, err := d.DialContext(ctx, "tcp", cfg.Addr)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, fmt.Errorf("rendezvous: %w", context.Cause(ctx))
			}
			lastErr = telling(lastErr, err)
			continue
		}
		cn := newConn(nc, handshakeMax)
		m := &Member{cfg: cfg, cn: cn, lost: make(chan struct{}), done: make(chan struct{}), closed: make(chan struct{})}
		id, final, err := m.handshake(ctx, deadline, process)
		if err == nil {
			m.inbox = newMailbox(m.closed)
			go m.watch()
			return m, id, nil
		}
		cn.close()
		if final || ctx.Err() != nil {
			return nil, nil, err
		}
		failed++
		lastErr = telling(lastErr, err)
	}
}

// telling is the error to report of two attempts': a refusal or a forged
// frame seen says more than a later failed dial or closed connection.
func telling(last, err error) error {
	says := func(e error) bool { return errors.Is(e, ErrRejected) || errors.Is(e, ErrForged) }
	if says(last) && !says(err) {
		return last
	}
	return err
}

// unreachable is a member's join that ran out of time, with the last
// reason.
func unreachable(cfg Config, last error) error {
	e := fmt.Errorf("rendezvous: rank 0 at %s (%s) unreachable within %s: %v", cfg.Addr, hostOf(cfg, 0), cfg.JoinTimeout, last)
	if errors.Is(last, ErrRejected) {
		return fmt.Errorf("%w (%w)", e, ErrRejected)
	}
	return e
}

// handshake is one attempt at the rendezvous on a new connection; final
// says the answer was rank 0's own (authenticated): no retry.
func (m *Member) handshake(ctx context.Context, deadline time.Time, process []byte) (id []byte, final bool, err error) {
	stop := context.AfterFunc(ctx, func() { m.cn.close() })
	defer stop()
	// Rank 0 may be busy admitting others: the connection waits in its
	// backlog, as long as the join may take.
	t, ch, err := m.cn.read(deadline)
	if err != nil || t != tChallenge || len(ch) != 32 {
		return nil, false, fmt.Errorf("rendezvous: %s did not greet as gdrcheck's rank 0: %v", m.cfg.Addr, errOr(err, "unexpected message"))
	}
	a := auth{Rank: m.cfg.Rank, Size: m.cfg.Size, Host: m.cfg.Host, Node: m.cfg.Node, Process: process, Nonce: nonce()}
	if m.cfg.GPUs > 1 {
		a.GPUs = m.cfg.GPUs
	}
	a.MAC = a.tag(m.cfg.Secret, ch)
	b, _ := json.Marshal(a)
	if err := m.cn.write(tAuth, b, handshakeTimeout); err != nil {
		return nil, false, fmt.Errorf("rendezvous: %s: %w", m.cfg.Addr, err)
	}
	t, p, err := m.cn.read(time.Now().Add(handshakeTimeout))
	switch {
	case err != nil:
		return nil, false, fmt.Errorf("rendezvous: %s: %w", m.cfg.Addr, err)
	case t == tAbort:
		// Not authenticated: anyone on the way could have said it.
		return nil, false, fmt.Errorf("rendezvous: %w: %s", ErrRejected, printableReason(p))
	case t != tWelcome || !hmac.Equal(p, mac(m.cfg.Secret, "gdrcheck-rendezvous/2 rank0", a.Nonce, ch)):
		return nil, false, fmt.Errorf("rendezvous: %s does not hold the job's secret (its answer did not prove it)", m.cfg.Addr)
	}
	// Authenticated both ways: every frame from now on carries its tag.
	m.cn.session(m.cfg.Secret, ch, a.Nonce, false)
	m.cn.max = m.cfg.MaxMessage
	// Wait for the id (rank 0 sends it once all arrived).
	t, p, err = m.cn.read(deadline.Add(handshakeTimeout))
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return nil, true, fmt.Errorf("rendezvous: %w", context.Cause(ctx))
		}
		return nil, false, fmt.Errorf("rendezvous: no unique id from rank 0 at %s: %w", m.cfg.Addr, err)
	case t == tRefuse:
		return nil, true, fmt.Errorf("rendezvous: %w: %s", ErrRejected, p)
	case t == tAbort:
		return nil, true, &JobError{Msg: string(p)}
	case t != tID:
		return nil, true, fmt.Errorf("rendezvous: unexpected message type %d from rank 0", t)
	}
	var im idMsg
	if err := json.Unmarshal(p, &im); err != nil || len(im.ID) != IDSize || len(im.Hosts) != m.cfg.Size || len(im.Nodes) != m.cfg.Size {
		return nil, true, fmt.Errorf("rendezvous: malformed unique id message from rank 0")
	}
	gpus, err := m.gpusOf(im.GPUs)
	if err != nil {
		return nil, true, err
	}
	m.hosts, m.nodes, m.gpus = im.Hosts, im.Nodes, gpus
	return im.ID, false, nil
}

// gpusOf checks the GPU counts of rank 0's id message: one per rank, each
// 1..MaxGPUs, this rank's its own; absent, every rank has one GPU, which
// a member driving several cannot join (its rank 0 is an older gdrcheck,
// that would number the NCCL ranks one per process).
func (m *Member) gpusOf(gpus []int) ([]int, error) {
	mine := max(m.cfg.GPUs, 1)
	if gpus == nil {
		if mine > 1 {
			return nil, fmt.Errorf("rendezvous: rank 0 at %s did not take this process's %d GPUs (it numbers one GPU per process: an older gdrcheck?)", m.cfg.Addr, mine)
		}
		out := make([]int, m.cfg.Size)
		for r := range out {
			out[r] = 1
		}
		return out, nil
	}
	if len(gpus) != m.cfg.Size {
		return nil, fmt.Errorf("rendezvous: rank 0's GPU counts name %d ranks, want %d", len(gpus), m.cfg.Size)
	}
	for r, n := range gpus {
		if n < 1 || n > MaxGPUs {
			return nil, fmt.Errorf("rendezvous: rank 0 says rank %d drives %d GPUs: want 1..%d", r, n, MaxGPUs)
		}
	}
	if gpus[m.cfg.Rank] != mine {
		return nil, fmt.Errorf("rendezvous: rank 0 counts %d GPUs for this rank (%d), which drives %d", gpus[m.cfg.Rank], m.cfg.Rank, mine)
	}
	return gpus, nil
}

// printableReason bounds an unauthenticated reason (the caller's error
// is printed through printable where it reaches a terminal).
func printableReason(p []byte) string {
	if len(p) > 200 {
		p = p[:200]
	}
	return string(p)
}
