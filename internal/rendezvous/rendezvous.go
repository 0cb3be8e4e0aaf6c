// Package rendezvous is the TCP bootstrap of a multi-process run: rank 0
// listens at the rendezvous address, every other rank connects, proves it
// holds the job's secret (HMAC challenge and response, both ways), and
// receives the NCCL unique id once every rank has arrived. The connections
// stay open for the run: a rank whose connection drops is dead, and rank 0
// tells every other rank to abort. At the end rank 0 gathers every rank's
// result document.
//
// Everything is bounded: a frame is at most Config.MaxMessage bytes, rank
// 0 holds at most Size-1 members and a few connections still proving
// themselves, every read and write has a deadline, and rank 0 listens only
// on the address it is given (a host is required: never all interfaces).
package rendezvous

import (
	"bufio"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// IDSize is the size of NCCL's unique id (ncclUniqueId, NCCL_UNIQUE_ID_BYTES).
const IDSize = 128

// DefaultMaxMessage bounds one frame: a rank's whole result document.
const DefaultMaxMessage = 4 << 20

// handshakeTimeout bounds a connection's proof of the secret.
const handshakeTimeout = 10 * time.Second

// Config is one rank's part in the rendezvous.
type Config struct {
	Addr string // rank 0's address, host:port
	Rank int
	Size int
	Host string // this process's host name, reported to rank 0
	// Node is the node this rank counts on (its host, or NCCL_HOSTID where
	// set, as NCCL counts nodes); every rank learns every rank's.
	Node   string
	Secret []byte // the job's secret, the same on every rank
	// JoinTimeout bounds the wait for every rank to arrive (rank 0) and
	// for rank 0 to answer (the others, who retry connecting meanwhile).
	JoinTimeout time.Duration
	MaxMessage  int // 0: DefaultMaxMessage
	// Hosts are the expected hosts by rank where the launcher knows them,
	// named beside missing ranks.
	Hosts []string
	// Listen is where rank 0 listens ("": Addr). Tests use it; a site
	// whose rank 0 reaches itself by another name does too.
	Listen string
	// KeepGoing: the ranks work in independent groups (bench rdma's node
	// pairs), so a member's failure does not abort the job: rank 0 tells
	// every rank which rank was lost (a Message with Lost set) and the
	// others carry on. A rank that never arrives is likewise lost once
	// the join deadline passes, and the job goes on with the ranks that
	// came (at least one besides rank 0). Without it (bench nccl) a
	// failure aborts everyone and the job needs every rank.
	KeepGoing bool
}

func (c *Config) check() error {
	switch {
	case c.Size < 2:
		return fmt.Errorf("rendezvous: world size %d: a rendezvous needs 2 ranks or more", c.Size)
	case c.Rank < 0 || c.Rank >= c.Size:
		return fmt.Errorf("rendezvous: rank %d is not one of 0..%d", c.Rank, c.Size-1)
	case len(c.Secret) < 16:
		return fmt.Errorf("rendezvous: the secret has %d bytes: want at least 16", len(c.Secret))
	case c.JoinTimeout <= 0:
		return fmt.Errorf("rendezvous: no join deadline")
	}
	if c.MaxMessage <= 0 {
		c.MaxMessage = DefaultMaxMessage
	}
	return nil
}

// Frame types.
const (
	tChallenge byte = 1 + iota
	tAuth
	tWelcome
	tID
	tAbort
	tResult
	tDone
	tFail
	tMsg      // a message between two ranks, relayed by rank 0 (relay.go)
	tPeerLost // rank 0 tells the members that a rank was lost (KeepGoing)
)

// ErrRejected is a connection refused by rank 0 (a wrong secret, a rank
// already taken, a world size that differs).
var ErrRejected = errors.New("rejected by rank 0")

// conn is one framed, deadline-bound connection.
type conn struct {
	c   net.Conn
	r   *bufio.Reader
	max int
	wmu sync.Mutex
}

func newConn(c net.Conn, max int) *conn {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetKeepAlive(true)
		_ = tc.SetKeepAlivePeriod(5 * time.Second)
		_ = tc.SetNoDelay(true)
	}
	return &conn{c: c, r: bufio.NewReader(c), max: max}
}

// write sends one frame: 4 bytes of length (type and payload), the type,
// the payload.
func (c *conn) write(t byte, p []byte, timeout time.Duration) error {
	if len(p)+1 > c.max {
		return fmt.Errorf("message of %d bytes exceeds the %d-byte limit", len(p)+1, c.max)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.c.SetWriteDeadline(time.Now().Add(timeout))
	b := make([]byte, 5+len(p))
	binary.BigEndian.PutUint32(b, uint32(len(p)+1))
	b[4] = t
	copy(b[5:], p)
	_, err := c.c.Write(b)
	return err
}

// read receives one frame before the deadline (zero: none).
func (c *conn) read(deadline time.Time) (byte, []byte, error) {
	_ = c.c.SetReadDeadline(deadline)
	var h [4]byte
	if _, err := io.ReadFull(c.r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n == 0 || n > uint32(c.max) {
		return 0, nil, fmt.Errorf("frame of %d bytes: want 1..%d", n, c.max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.r, b); err != nil {
		return 0, nil, err
	}
	return b[0], b[1:], nil
}

func (c *conn) close() { _ = c.c.Close() }

// mac is HMAC-SHA256 over a label and the parts, each length-prefixed.
func mac(secret []byte, label string, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, secret)
	for _, p := range append([][]byte{[]byte(label)}, parts...) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	return h.Sum(nil)
}

func nonce() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux (Go 1.24+ panics instead)
	return b
}

// auth is a member's answer to the challenge.
type auth struct {
	Rank   int    `json:"rank"`
	Size   int    `json:"size"`
	Host   string `json:"host"`
	Node   string `json:"node,omitempty"`
	Nonce  []byte `json:"nonce"`
	MAC    []byte `json:"mac"`
	Reason string `json:"reason,omitempty"`
}

func (a auth) tag(secret, challenge []byte) []byte {
	return mac(secret, "gdrcheck-rendezvous/1 member", challenge, a.Nonce, []byte(strconv.Itoa(a.Rank)), []byte(strconv.Itoa(a.Size)), []byte(a.Host), []byte(a.Node))
}

// idMsg carries the unique id and the hosts of every rank.
type idMsg struct {
	ID    []byte   `json:"id"`
	Hosts []string `json:"hosts"`
	Nodes []string `json:"nodes"`
}

// Failure is a rank that did not finish: never arrived, died, or said it
// failed.
type Failure struct {
	Rank   int    `json:"rank"`
	Host   string `json:"host,omitempty"`
	Reason string `json:"reason"`
}

func (f Failure) String() string {
	if f.Host != "" {
		return fmt.Sprintf("rank %d (%s): %s", f.Rank, f.Host, f.Reason)
	}
	return fmt.Sprintf("rank %d: %s", f.Rank, f.Reason)
}

// JobError is the job's failure as rank 0 saw it, or as rank 0 told a
// member.
type JobError struct {
	Failures []Failure
	Msg      string // a member's copy of rank 0's message
}

func (e *JobError) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	var s []string
	for _, f := range e.Failures {
		s = append(s, f.String())
	}
	return strings.Join(s, "; ")
}

// missingError names the ranks that never arrived and their hosts.
func missingError(cfg Config, joined []bool, waited time.Duration) *JobError {
	e := &JobError{}
	for r := 1; r < cfg.Size; r++ {
		if joined[r] {
			continue
		}
		f := Failure{Rank: r, Reason: fmt.Sprintf("never arrived at the rendezvous %s within %s", cfg.Addr, waited)}
		if r < len(cfg.Hosts) {
			f.Host = cfg.Hosts[r]
		}
		e.Failures = append(e.Failures, f)
	}
	var ranks []string
	for _, f := range e.Failures {
		ranks = append(ranks, f.String())
	}
	e.Msg = fmt.Sprintf("%d of %d ranks never arrived at the rendezvous %s within %s: %s", len(e.Failures), cfg.Size, cfg.Addr, waited, strings.Join(ranks, "; "))
	return e
}

// ---------------------------------------------------------------- rank 0

// Coordinator is rank 0's side: the members' connections, watched for the
// run, and the gathering at the end.
type Coordinator struct {
	cfg     Config
	ln      net.Listener
	members []*conn  // by rank; [0] nil
	hosts   []string // by rank
	nodes   []string // by rank
	mu      sync.Mutex
	results [][]byte // by rank
	failed  map[int]Failure
	lost    chan struct{} // closed on the first failure
	once    sync.Once
	changed chan struct{} // pulsed on every result or failure
	done    bool
	inbox   chan Message // messages to rank 0 and losses (relay.go)
}

// Serve listens at the address, waits until every rank has arrived and
// proved the secret (or the join deadline passed: every connected rank is
// told which ranks are missing, and so is the caller), then hands the
// unique id to all. The connections stay open: see Lost and Gather.
func Serve(ctx context.Context, cfg Config, id []byte) (*Coordinator, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Rank != 0 {
		return nil, fmt.Errorf("rendezvous: rank %d cannot serve: rank 0 does", cfg.Rank)
	}
	if len(id) != IDSize {
		return nil, fmt.Errorf("rendezvous: unique id of %d bytes, want %d", len(id), IDSize)
	}
	addr := cmp.Or(cfg.Listen, cfg.Addr)
	if h, _, err := net.SplitHostPort(addr); err != nil || h == "" || net.ParseIP(h) != nil && net.ParseIP(h).IsUnspecified() {
		return nil, fmt.Errorf("rendezvous: listen address %q: want a host and a port, not all interfaces", addr)
	}
	ln, err := listen(ctx, addr, cfg.JoinTimeout)
	if err != nil {
		return nil, fmt.Errorf("rendezvous: rank 0 cannot listen at %s: %w", addr, err)
	}
	c := &Coordinator{cfg: cfg, ln: ln, members: make([]*conn, cfg.Size), hosts: make([]string, cfg.Size), nodes: make([]string, cfg.Size),
		results: make([][]byte, cfg.Size), failed: map[int]Failure{}, lost: make(chan struct{}), changed: make(chan struct{}, 1),
		inbox: make(chan Message, inboxSize)}
	c.hosts[0], c.nodes[0] = cfg.Host, cmp.Or(cfg.Node, cfg.Host)
	if err := c.join(ctx, id); err != nil {
		c.Close()
		return nil, err
	}
	for r := 1; r < cfg.Size; r++ {
		if c.members[r] != nil {
			go c.watch(r)
		}
	}
	return c, nil
}

// listen listens at addr, retrying while its name does not resolve yet
// (a Kubernetes pod's own name appears in DNS shortly after it starts),
// at most wait.
func listen(ctx context.Context, addr string, wait time.Duration) (net.Listener, error) {
	var lc net.ListenConfig
	until := time.Now().Add(wait)
	for {
		ln, err := lc.Listen(ctx, "tcp", addr)
		var dns *net.DNSError
		if err == nil || !errors.As(err, &dns) || time.Now().After(until) {
			return ln, err
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return nil, err
		}
	}
}

// maxPending bounds the connections still proving themselves.
const maxPending = 16

// join accepts members until all arrived or the deadline.
func (c *Coordinator) join(ctx context.Context, id []byte) error {
	start := time.Now()
	deadline := start.Add(c.cfg.JoinTimeout)
	type arrival struct {
		rank       int
		cn         *conn
		host, node string
	}
	arrived := make(chan arrival)
	stop := make(chan struct{})
	defer close(stop)
	pending := make(chan struct{}, maxPending)
	go func() {
		for {
			nc, err := c.ln.Accept()
			if err != nil {
				return
			}
			select {
			case pending <- struct{}{}:
			default: // too many connections proving themselves: refuse
				nc.Close()
				continue
			}
			go func() {
				defer func() { <-pending }()
				cn := newConn(nc, c.cfg.MaxMessage)
				a, err := c.handshake(cn)
				if err != nil {
					cn.close()
					return
				}
				select {
				case arrived <- arrival{a.Rank, cn, a.Host, cmp.Or(a.Node, a.Host)}:
				case <-stop:
					_ = cn.write(tAbort, []byte("rank 0 is no longer accepting members"), time.Second)
					cn.close()
				}
			}()
		}
	}()
	joined := make([]bool, c.cfg.Size)
	joined[0] = true
	n := 1
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var missing []Failure
wait:
	for n < c.cfg.Size {
		select {
		case a := <-arrived:
			if joined[a.rank] {
				_ = a.cn.write(tAbort, fmt.Appendf(nil, "rank %d has already joined (from %s)", a.rank, c.hosts[a.rank]), time.Second)
				a.cn.close()
				continue
			}
			joined[a.rank], c.members[a.rank], c.hosts[a.rank], c.nodes[a.rank] = true, a.cn, a.host, a.node
			n++
		case <-timer.C:
			e := missingError(c.cfg, joined, c.cfg.JoinTimeout)
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
	msg, _ := json.Marshal(idMsg{ID: id, Hosts: c.hosts, Nodes: c.nodes})
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

// handshake challenges a new connection and checks its answer.
func (c *Coordinator) handshake(cn *conn) (auth, error) {
	deadline := time.Now().Add(handshakeTimeout)
	ch := nonce()
	if err := cn.write(tChallenge, ch, handshakeTimeout); err != nil {
		return auth{}, err
	}
	t, p, err := cn.read(deadline)
	if err != nil {
		return auth{}, err
	}
	var a auth
	if t != tAuth || json.Unmarshal(p, &a) != nil || len(a.Nonce) != 32 {
		_ = cn.write(tAbort, []byte("not a gdrcheck rendezvous answer"), time.Second)
		return auth{}, fmt.Errorf("bad answer")
	}
	if !hmac.Equal(a.MAC, a.tag(c.cfg.Secret, ch)) {
		_ = cn.write(tAbort, []byte("wrong secret"), time.Second)
		return auth{}, fmt.Errorf("wrong secret")
	}
	switch {
	case a.Size != c.cfg.Size:
		_ = cn.write(tAbort, fmt.Appendf(nil, "world size %d differs from rank 0's %d", a.Size, c.cfg.Size), time.Second)
		return auth{}, fmt.Errorf("size")
	case a.Rank < 1 || a.Rank >= c.cfg.Size:
		_ = cn.write(tAbort, fmt.Appendf(nil, "rank %d is not one of 1..%d", a.Rank, c.cfg.Size-1), time.Second)
		return auth{}, fmt.Errorf("rank")
	}
	if len(a.Host) > 255 || len(a.Node) > 255 {
		_ = cn.write(tAbort, []byte("host or node name longer than 255 bytes"), time.Second)
		return auth{}, fmt.Errorf("name")
	}
	if err := cn.write(tWelcome, mac(c.cfg.Secret, "gdrcheck-rendezvous/1 rank0", a.Nonce, ch), handshakeTimeout); err != nil {
		return auth{}, err
	}
	return a, nil
}

// abortAll tells every connected member to abort, with the reason.
func (c *Coordinator) abortAll(reason string) {
	for r := 1; r < c.cfg.Size; r++ {
		if m := c.members[r]; m != nil {
			_ = m.write(tAbort, []byte(reason), 2*time.Second)
		}
	}
}

// watch reads member r's frames for the run: its result, its failure, or
// the end of its connection.
func (c *Coordinator) watch(r int) {
	m := c.members[r]
	for {
		t, p, err := m.read(time.Time{})
		if err == nil && t == tMsg {
			// Relayed outside the lock: a slow receiver must not stall
			// the others' bookkeeping.
			if !c.relay(r, p) {
				m.close()
				return
			}
			continue
		}
		c.mu.Lock()
		if c.done {
			c.mu.Unlock()
			return
		}
		switch {
		case err != nil:
			if c.results[r] == nil {
				c.fail(Failure{Rank: r, Host: c.hosts[r], Reason: "connection lost (process died or network failed): " + err.Error()})
			}
			c.mu.Unlock()
			return
		case t == tResult && c.results[r] == nil:
			c.results[r] = p
		case t == tFail:
			c.fail(Failure{Rank: r, Host: c.hosts[r], Reason: string(p)})
		default:
			c.fail(Failure{Rank: r, Host: c.hosts[r], Reason: fmt.Sprintf("unexpected message type %d", t)})
			c.mu.Unlock()
			m.close()
			return
		}
		c.mu.Unlock()
		c.pulse()
	}
}

// fail records a failure; c.mu is held.
func (c *Coordinator) fail(f Failure) {
	if _, ok := c.failed[f.Rank]; ok {
		return
	}
	c.failed[f.Rank] = f
	if c.cfg.KeepGoing && !c.done {
		go c.tellLost(f)
	}
	c.once.Do(func() {
		close(c.lost)
		if !c.done && !c.cfg.KeepGoing {
			// The others must not wait for a rank that is gone: they
			// abort their communicators now.
			go c.abortAll(fmt.Sprintf("rank 0 aborted the job: %s", f))
		}
	})
	c.pulse()
}

func (c *Coordinator) pulse() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Hosts are the ranks' host names, by rank.
func (c *Coordinator) Hosts() []string { return slices.Clone(c.hosts) }

// Nodes are the nodes the ranks count on (Config.Node), by rank.
func (c *Coordinator) Nodes() []string { return slices.Clone(c.nodes) }

// Lost is closed when a member fails: its connection dropped or it said
// it failed. The caller aborts its communicator then.
func (c *Coordinator) Lost() <-chan struct{} { return c.lost }

// Err is the failures so far, nil if none.
func (c *Coordinator) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errLocked()
}

func (c *Coordinator) errLocked() error {
	if len(c.failed) == 0 {
		return nil
	}
	e := &JobError{}
	for _, f := range c.failed {
		e.Failures = append(e.Failures, f)
	}
	slices.SortFunc(e.Failures, func(a, b Failure) int { return a.Rank - b.Rank })
	return e
}

// Abort tells every member to abort (rank 0 itself failed).
func (c *Coordinator) Abort(reason string) { c.abortAll("rank 0 aborted the job: " + reason) }

// Gather waits, at most timeout, for every member's result or failure,
// then ends the job: done to all when every rank delivered, else abort
// with the failures. It returns the results by rank (mine at 0; nil for a
// rank that delivered none) and the failures (ranks that did not deliver
// in time included).
func (c *Coordinator) Gather(ctx context.Context, mine []byte, timeout time.Duration) ([][]byte, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		pending := 0
		for r := 1; r < c.cfg.Size; r++ {
			if _, bad := c.failed[r]; c.results[r] == nil && !bad {
				pending++
			}
		}
		c.mu.Unlock()
		if pending == 0 {
			break
		}
		select {
		case <-c.changed:
			continue
		case <-deadline.C:
		case <-ctx.Done():
		}
		break
	}
	c.mu.Lock()
	for r := 1; r < c.cfg.Size; r++ {
		if _, bad := c.failed[r]; c.results[r] == nil && !bad {
			c.fail(Failure{Rank: r, Host: c.hosts[r], Reason: fmt.Sprintf("sent no result within %s", timeout)})
		}
	}
	c.done = true
	c.results[0] = mine
	out := slices.Clone(c.results)
	err := c.errLocked()
	c.mu.Unlock()
	if err != nil {
		c.abortAll("the job failed: " + err.Error())
	} else {
		for r := 1; r < c.cfg.Size; r++ {
			_ = c.members[r].write(tDone, nil, 2*time.Second)
		}
	}
	return out, err
}

// Close closes the listener and every connection.
func (c *Coordinator) Close() {
	_ = c.ln.Close()
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
	for _, m := range c.members {
		if m != nil {
			m.close()
		}
	}
}

// ---------------------------------------------------------------- members

// Member is the side of a rank other than 0.
type Member struct {
	cfg   Config
	cn    *conn
	hosts []string
	nodes []string
	lost  chan struct{}
	once  sync.Once
	mu    sync.Mutex
	err   error         // why the job ended for this rank, once lost
	done  chan struct{} // closed when rank 0 says done
	inbox chan Message  // messages from other ranks and losses (relay.go)
}

// Join connects to rank 0 (retrying until the join deadline: rank 0 may
// start later), proves the secret, checks rank 0's proof and waits for
// the unique id.
func Join(ctx context.Context, cfg Config) (*Member, []byte, error) {
	if err := cfg.check(); err != nil {
		return nil, nil, err
	}
	if cfg.Rank == 0 {
		return nil, nil, fmt.Errorf("rendezvous: rank 0 serves, it does not join")
	}
	deadline := time.Now().Add(cfg.JoinTimeout)
	var cn *conn
	var lastErr error
	for cn == nil {
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("rendezvous: rank 0 at %s (%s) unreachable within %s: %v", cfg.Addr, hostOf(cfg, 0), cfg.JoinTimeout, lastErr)
		}
		d := net.Dialer{Timeout: min(5*time.Second, time.Until(deadline)+time.Millisecond)}
		nc, err := d.DialContext(ctx, "tcp", cfg.Addr)
		if err != nil {
			lastErr = err
			if ctx.Err() != nil {
				return nil, nil, fmt.Errorf("rendezvous: %w", context.Cause(ctx))
			}
			select {
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
			}
			continue
		}
		cn = newConn(nc, cfg.MaxMessage)
	}
	m := &Member{cfg: cfg, cn: cn, lost: make(chan struct{}), done: make(chan struct{}), inbox: make(chan Message, inboxSize)}
	id, err := m.handshake(ctx, deadline)
	if err != nil {
		cn.close()
		return nil, nil, err
	}
	go m.watch()
	return m, id, nil
}

func hostOf(cfg Config, r int) string {
	if r < len(cfg.Hosts) && cfg.Hosts[r] != "" {
		return cfg.Hosts[r]
	}
	return "rank " + strconv.Itoa(r)
}

func (m *Member) handshake(ctx context.Context, deadline time.Time) ([]byte, error) {
	stop := context.AfterFunc(ctx, func() { m.cn.close() })
	defer stop()
	hd := time.Now().Add(handshakeTimeout)
	t, ch, err := m.cn.read(hd)
	if err != nil || t != tChallenge || len(ch) != 32 {
		return nil, fmt.Errorf("rendezvous: %s did not greet as gdrcheck's rank 0: %v", m.cfg.Addr, errOr(err, "unexpected message"))
	}
	a := auth{Rank: m.cfg.Rank, Size: m.cfg.Size, Host: m.cfg.Host, Node: m.cfg.Node, Nonce: nonce()}
	a.MAC = a.tag(m.cfg.Secret, ch)
	b, _ := json.Marshal(a)
	if err := m.cn.write(tAuth, b, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("rendezvous: %s: %w", m.cfg.Addr, err)
	}
	t, p, err := m.cn.read(hd)
	switch {
	case err != nil:
		return nil, fmt.Errorf("rendezvous: %s: %w", m.cfg.Addr, err)
	case t == tAbort:
		return nil, fmt.Errorf("rendezvous: %w: %s", ErrRejected, p)
	case t != tWelcome || !hmac.Equal(p, mac(m.cfg.Secret, "gdrcheck-rendezvous/1 rank0", a.Nonce, ch)):
		return nil, fmt.Errorf("rendezvous: %s does not hold the job's secret (its answer did not prove it)", m.cfg.Addr)
	}
	// Authenticated: wait for the id (rank 0 sends it once all arrived).
	t, p, err = m.cn.read(deadline.Add(handshakeTimeout))
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rendezvous: %w", context.Cause(ctx))
		}
		return nil, fmt.Errorf("rendezvous: no unique id from rank 0 at %s: %w", m.cfg.Addr, err)
	case t == tAbort:
		return nil, &JobError{Msg: string(p)}
	case t != tID:
		return nil, fmt.Errorf("rendezvous: unexpected message type %d from rank 0", t)
	}
	var im idMsg
	if err := json.Unmarshal(p, &im); err != nil || len(im.ID) != IDSize || len(im.Hosts) != m.cfg.Size || len(im.Nodes) != m.cfg.Size {
		return nil, fmt.Errorf("rendezvous: malformed unique id message from rank 0")
	}
	m.hosts, m.nodes = im.Hosts, im.Nodes
	return im.ID, nil
}

func errOr(err error, s string) any {
	if err != nil {
		return err
	}
	return s
}

// watch reads rank 0's frames during the run: relayed messages and
// losses go to the inbox; done, abort or the connection's end end it.
func (m *Member) watch() {
	for {
		t, p, err := m.cn.read(time.Time{})
		switch {
		case err == nil && t == tDone:
			close(m.done)
			return
		case err == nil && t == tAbort:
			// The connection stays: this rank still delivers what it measured.
			m.lose(&JobError{Msg: string(p)})
			m.post(Message{From: 0, Lost: string(p)})
			return
		case err == nil && (t == tMsg || t == tPeerLost) && len(p) >= 4:
			msg := Message{From: int(binary.BigEndian.Uint32(p))}
			if t == tMsg {
				msg.Data = p[4:]
			} else {
				msg.Lost = string(p[4:])
			}
			m.post(msg)
			continue
		case err == nil:
			m.lose(fmt.Errorf("unexpected message type %d from rank 0", t))
		default:
			m.lose(fmt.Errorf("lost rank 0 (%s at %s): %w", m.hosts[0], m.cfg.Addr, err))
		}
		m.post(Message{From: 0, Lost: m.Err().Error()})
		m.cn.close()
		return
	}
}

func (m *Member) lose(err error) {
	m.once.Do(func() {
		m.mu.Lock()
		m.err = err
		m.mu.Unlock()
		close(m.lost)
	})
}

// Hosts are the ranks' host names, by rank, as rank 0 sent them.
func (m *Member) Hosts() []string { return slices.Clone(m.hosts) }

// Nodes are the nodes the ranks count on, by rank, as rank 0 sent them.
func (m *Member) Nodes() []string { return slices.Clone(m.nodes) }

// Lost is closed when rank 0 aborts the job or its connection drops; Err
// says why.
func (m *Member) Lost() <-chan struct{} { return m.lost }

// Err is why the job ended for this rank, nil while it runs.
func (m *Member) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Fail tells rank 0 this rank failed.
func (m *Member) Fail(reason string) {
	if len(reason) > 4096 {
		reason = reason[:4096]
	}
	_ = m.cn.write(tFail, []byte(reason), 2*time.Second)
}

// Deliver sends this rank's result and waits, at most timeout, for rank
// 0's end of the job: nil when it said done, the job's error otherwise.
func (m *Member) Deliver(ctx context.Context, result []byte, timeout time.Duration) error {
	if err := m.cn.write(tResult, result, timeout); err != nil {
		return fmt.Errorf("rendezvous: sending the result to rank 0: %w", err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-m.done:
		return nil
	case <-m.lost:
		return m.Err()
	case <-t.C:
		return fmt.Errorf("rendezvous: rank 0 did not end the job within %s", timeout)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Close ends the connection.
func (m *Member) Close() { m.cn.close() }
