// Package rendezvous is the TCP bootstrap of a multi-process run: rank 0
// listens at the rendezvous address, every other rank connects, proves it
// holds the job's secret (HMAC challenge and response, both ways), and
// receives the NCCL unique id once every rank has arrived. The connections
// stay open for the run: a rank whose connection drops is dead, and rank 0
// tells every other rank to abort. At the end rank 0 gathers every rank's
// result document.
//
// Every frame after the handshake is authenticated: each connection
// derives a key per direction from the handshake (the secret, rank 0's
// challenge and the member's nonce), and each frame carries an HMAC over
// its sequence number, type and payload, so a frame forged, replayed or
// rewritten on the way is refused (the channel is not encrypted).
//
// It scales and cannot be starved by connections that do not hold the
// secret: rank 0 admits at most maxPending connections still proving
// themselves and stops accepting while they are all taken (the kernel's
// backlog queues the rest); a connection must start its answer within
// firstByteTimeout and finish it within answerTimeout; a member retries
// its connection and handshake until the join deadline, and only a
// refusal rank 0 authenticated is final. Rank 0 counts the connections it
// turned away and names them when ranks never arrive.
//
// Everything is bounded: a frame is at most Config.MaxMessage bytes (an
// answer to the challenge far less), rank 0 holds at most Size-1 members
// and maxPending connections still proving themselves, relayed messages
// wait in a rank's inbox up to inboxBytes, every read and write has a
// deadline, and rank 0 listens only on the address it is given (a host is
// required, and neither it nor what its name resolves to may be all
// interfaces).
package rendezvous

import (
	"bufio"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
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

// MaxGPUs bounds the GPUs one process announces (a node has at most a
// few dozen).
const MaxGPUs = 64

// DefaultMaxMessage bounds one frame: a rank's whole result document.
const DefaultMaxMessage = 4 << 20

// handshakeTimeout bounds a write, and a member's wait for rank 0's
// welcome once it answered.
const handshakeTimeout = 10 * time.Second

// A connection rank 0 accepted must start its answer to the challenge
// within firstByteTimeout and finish it within answerTimeout: a member
// answers at once, and one that was slow retries; a silent or dribbling
// connection holds a slot no longer.
const (
	firstByteTimeout = 2 * time.Second
	answerTimeout    = 5 * time.Second
)

// handshakeMax bounds a frame before the handshake is done (the challenge,
// the answer, the welcome): a connection that does not hold the secret
// costs rank 0 no more than this.
const handshakeMax = 4 << 10

// tagSize is the size of a frame's authentication tag (HMAC-SHA256).
const tagSize = sha256.Size

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
	// GPUs is how many GPUs this process drives (0 or 1: one). Every rank
	// learns every rank's count (Peer.GPUs): a job of several GPUs per
	// process numbers its NCCL ranks by them. A count above 1 is announced
	// in the member's authenticated answer and carried in rank 0's id
	// message; a job of one GPU per process sends neither, as before.
	GPUs int
	// KeepGoing: the ranks work in independent groups (bench rdma's node
	// pairs), so a member's failure does not abort the job: rank 0 tells
	// every rank which rank was lost (a Message with Lost set) and the
	// others carry on. A rank that never arrives is likewise lost once
	// the join deadline passes, and the job goes on with the ranks that
	// came (at least one besides rank 0). Without it (bench nccl) a
	// failure aborts everyone and the job needs every rank.
	KeepGoing bool

	// firstByte replaces firstByteTimeout where set: the package's tests
	// judge silent connections without waiting 2 s.
	firstByte time.Duration
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
	case c.GPUs < 0 || c.GPUs > MaxGPUs:
		return fmt.Errorf("rendezvous: %d GPUs in one process: want 1..%d", c.GPUs, MaxGPUs)
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
	tRefuse   // rank 0 refuses a member that proved the secret (authenticated: final)
)

// ErrRejected is a connection refused by rank 0 (a wrong secret, a rank
// already taken, a world size that differs).
var ErrRejected = errors.New("rejected by rank 0")

// ErrForged is a frame whose authentication tag is wrong: forged,
// replayed or rewritten on the way. The connection is then closed.
var ErrForged = errors.New("a frame failed its authentication (forged, replayed or rewritten on the way)")

// conn is one framed, deadline-bound connection. Once keyed (after the
// handshake), every frame carries a tag over its sequence number in its
// direction, its type and its payload.
type conn struct {
	c   net.Conn
	r   *bufio.Reader
	max int
	wmu sync.Mutex
	// The session: the keys of each direction and the frames counted in
	// each; sendSeq under wmu, recvSeq by the one reader.
	sendKey, recvKey []byte
	sendSeq, recvSeq uint64
}

func newConn(c net.Conn, max int) *conn {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetKeepAlive(true)
		_ = tc.SetKeepAlivePeriod(5 * time.Second)
		_ = tc.SetNoDelay(true)
	}
	return &conn{c: c, r: bufio.NewReaderSize(c, 1024), max: max}
}

// session keys the connection: frames from rank 0 with one key, frames
// from the member with another, both derived from the handshake.
func (c *conn) session(secret, challenge, memberNonce []byte, rank0 bool) {
	down := mac(secret, "gdrcheck-rendezvous/1 session rank0", challenge, memberNonce)
	up := mac(secret, "gdrcheck-rendezvous/1 session member", challenge, memberNonce)
	if rank0 {
		c.sendKey, c.recvKey = down, up
	} else {
		c.sendKey, c.recvKey = up, down
	}
}

// frameTag authenticates frame number seq of type t.
func frameTag(key []byte, seq uint64, t byte, p []byte) []byte {
	h := hmac.New(sha256.New, key)
	var b [9]byte
	binary.BigEndian.PutUint64(b[:8], seq)
	b[8] = t
	h.Write(b[:])
	h.Write(p)
	return h.Sum(nil)
}

// write sends one frame: 4 bytes of length, the type, the payload, and
// once keyed the tag.
func (c *conn) write(t byte, p []byte, timeout time.Duration) error {
	if len(p)+1 > c.max {
		return fmt.Errorf("message of %d bytes exceeds the %d-byte limit", len(p)+1, c.max)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.c.SetWriteDeadline(time.Now().Add(timeout))
	n := 1 + len(p)
	if c.sendKey != nil {
		n += tagSize
	}
	b := make([]byte, 4, 4+n)
	binary.BigEndian.PutUint32(b, uint32(n))
	b = append(b, t)
	b = append(b, p...)
	if c.sendKey != nil {
		b = append(b, frameTag(c.sendKey, c.sendSeq, t, p)...)
		c.sendSeq++
	}
	_, err := c.c.Write(b)
	return err
}

// read receives one frame before the deadline (zero: none); once keyed, a
// frame whose tag is wrong is ErrForged.
func (c *conn) read(deadline time.Time) (byte, []byte, error) {
	_ = c.c.SetReadDeadline(deadline)
	var h [4]byte
	if _, err := io.ReadFull(c.r, h[:]); err != nil {
		return 0, nil, err
	}
	return c.body(binary.BigEndian.Uint32(h[:]))
}

// body reads the rest of a frame of n bytes whose length was read.
func (c *conn) body(n uint32) (byte, []byte, error) {
	lo, hi := uint32(1), uint32(c.max)
	if c.recvKey != nil {
		lo, hi = lo+tagSize, hi+tagSize
	}
	if c.recvKey != nil && n < lo {
		return 0, nil, ErrForged // too short to carry a tag
	}
	if n < lo || n > hi {
		return 0, nil, fmt.Errorf("frame of %d bytes: want %d..%d", n, lo, hi)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.r, b); err != nil {
		return 0, nil, err
	}
	if c.recvKey == nil {
		return b[0], b[1:], nil
	}
	p, tag := b[1:n-tagSize], b[n-tagSize:]
	if !hmac.Equal(tag, frameTag(c.recvKey, c.recvSeq, b[0], p)) {
		return 0, nil, ErrForged
	}
	c.recvSeq++
	return b[0], p, nil
}

// readAnswer reads the first frame a new connection sends: its first byte
// within firstByte (firstByteTimeout where 0), all of it within
// answerTimeout.
func (c *conn) readAnswer(firstByte time.Duration) (byte, []byte, error) {
	if firstByte <= 0 {
		firstByte = firstByteTimeout
	}
	start := time.Now()
	_ = c.c.SetReadDeadline(start.Add(firstByte))
	if _, err := c.r.Peek(1); err != nil {
		return 0, nil, errSilent{err}
	}
	_ = c.c.SetReadDeadline(start.Add(answerTimeout))
	var h [4]byte
	if _, err := io.ReadFull(c.r, h[:]); err != nil {
		return 0, nil, errSilent{err}
	}
	t, p, err := c.body(binary.BigEndian.Uint32(h[:]))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = errSilent{err}
	}
	return t, p, err
}

// errSilent is a connection that gave no answer in time.
type errSilent struct{ error }

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

// auth is a member's answer to the challenge. Process is random per
// process: a member that reconnects (its connection dropped before the id
// came) is told from another process claiming the same rank.
type auth struct {
	Rank int    `json:"rank"`
	Size int    `json:"size"`
	Host string `json:"host"`
	Node string `json:"node,omitempty"`
	// GPUs is the member's GPU count where above 1 (0: one GPU).
	GPUs    int    `json:"gpus,omitempty"`
	Process []byte `json:"process"`
	Nonce   []byte `json:"nonce"`
	MAC     []byte `json:"mac"`
}

func (a auth) tag(secret, challenge []byte) []byte {
	parts := [][]byte{challenge, a.Nonce, []byte(strconv.Itoa(a.Rank)), []byte(strconv.Itoa(a.Size)), []byte(a.Host), []byte(a.Node), a.Process}
	if a.GPUs != 0 {
		// Only where announced: a one-GPU member's tag is as before. The
		// parts are length-prefixed, so adding one cannot be confused
		// with another answer's.
		parts = append(parts, []byte("gpus="+strconv.Itoa(a.GPUs)))
	}
	return mac(secret, "gdrcheck-rendezvous/2 member", parts...)
}

// idMsg carries the unique id and the hosts of every rank.
type idMsg struct {
	ID    []byte   `json:"id"`
	Hosts []string `json:"hosts"`
	Nodes []string `json:"nodes"`
	// GPUs are every rank's GPU count, where any rank drives more than
	// one (absent otherwise, as before).
	GPUs []int `json:"gpus,omitempty"`
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

// ---------------------------------------------------------------- rank 0

// Coordinator is rank 0's side: the members' connections, watched for the
// run, and the gathering at the end.
type Coordinator struct {
	cfg     Config
	ln      net.Listener
	members []*conn  // by rank; [0] nil
	hosts   []string // by rank
	nodes   []string // by rank
	gpus    []int    // by rank
	mu      sync.Mutex
	results [][]byte // by rank
	failed  map[int]Failure
	lost    chan struct{} // closed on the first failure
	once    sync.Once
	changed chan struct{} // pulsed on every result or failure
	done    bool
	inbox   *mailbox      // messages to rank 0 and losses (relay.go)
	closed  chan struct{} // closed by Close
	close1  sync.Once
	away    turnedAway // the connections not admitted while the ranks joined
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
	ln, err := listen(ctx, cmp.Or(cfg.Listen, cfg.Addr), cfg.JoinTimeout)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg, ln: ln, members: make([]*conn, cfg.Size), hosts: make([]string, cfg.Size), nodes: make([]string, cfg.Size), gpus: make([]int, cfg.Size),
		results: make([][]byte, cfg.Size), failed: map[int]Failure{}, lost: make(chan struct{}), changed: make(chan struct{}, 1),
		closed: make(chan struct{})}
	c.inbox = newMailbox(c.closed)
	c.hosts[0], c.nodes[0] = cfg.Host, cmp.Or(cfg.Node, cfg.Host)
	for r := range c.gpus {
		c.gpus[r] = 1
	}
	c.gpus[0] = max(cfg.GPUs, 1)
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
		case errors.Is(err, ErrForged):
			c.fail(Failure{Rank: r, Host: c.hosts[r], Reason: "its connection was closed: " + err.Error()})
			c.mu.Unlock()
			m.close()
			return
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

// GPUs are the GPU counts the ranks announced (Config.GPUs, 1 where
// none), by rank.
func (c *Coordinator) GPUs() []int { return slices.Clone(c.gpus) }

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
	c.close1.Do(func() { close(c.closed) })
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
	cfg    Config
	cn     *conn
	hosts  []string
	nodes  []string
	gpus   []int
	lost   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	err    error         // why the job ended for this rank, once lost
	done   chan struct{} // closed when rank 0 says done
	inbox  *mailbox      // messages from other ranks and losses (relay.go)
	closed chan struct{} // closed by Close
	close1 sync.Once
}

func hostOf(cfg Config, r int) string {
	if r < len(cfg.Hosts) && cfg.Hosts[r] != "" {
		return cfg.Hosts[r]
	}
	return "rank " + strconv.Itoa(r)
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
		case err == nil && (t == tAbort || t == tRefuse):
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

// GPUs are the GPU counts of the ranks, by rank, as rank 0 sent them (1
// each where it sent none).
func (m *Member) GPUs() []int { return slices.Clone(m.gpus) }

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
func (m *Member) Close() {
	m.close1.Do(func() { close(m.closed) })
	m.cn.close()
}
