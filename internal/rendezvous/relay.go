package rendezvous

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"time"
)

// A rank's inbox holds at most inboxCount messages and inboxBytes of
// their data not yet read (a protocol of a few small messages per step
// never comes near either). Past them rank 0 fails a member that sends to
// it, and a member drops what rank 0 relays (the sender is another
// member, which rank 0 cannot stop from spending its own budget).
const (
	inboxCount = 4096
	inboxBytes = 8 << 20
)

// Message is what a rank receives from another during the run: Data sent
// by rank From (Send), or, with Lost set, the news that rank From was lost
// (its connection dropped, it said it failed, or it never delivered) and
// why. A member that loses rank 0 itself, or is aborted by it, receives a
// Lost message from rank 0: nothing can be relayed any more.
type Message struct {
	From int
	Data []byte
	Lost string
}

// Inbox is rank 0's messages from the members and the members' losses
// (with KeepGoing).
func (c *Coordinator) Inbox() <-chan Message { return c.inbox.out }

// Inbox is the messages relayed to this member and the losses rank 0 told.
func (m *Member) Inbox() <-chan Message { return m.inbox.out }

// mailbox is a rank's inbox: a queue bounded in messages and in bytes,
// handed out one message at a time through out.
type mailbox struct {
	out    chan Message
	notify chan struct{}
	mu     sync.Mutex
	q      []Message
	bytes  int // data queued, and the message on its way out
}

func newMailbox(stop <-chan struct{}) *mailbox {
	b := &mailbox{out: make(chan Message), notify: make(chan struct{}, 1)}
	go b.pump(stop)
	return b
}

// post queues msg; false when the inbox is full (a loss always fits: there
// is one per rank at most).
func (b *mailbox) post(msg Message) bool {
	b.mu.Lock()
	if msg.Lost == "" && (len(b.q) >= inboxCount || b.bytes+len(msg.Data) > inboxBytes) {
		b.mu.Unlock()
		return false
	}
	b.q = append(b.q, msg)
	b.bytes += len(msg.Data)
	b.mu.Unlock()
	select {
	case b.notify <- struct{}{}:
	default:
	}
	return true
}

func (b *mailbox) pump(stop <-chan struct{}) {
	for {
		b.mu.Lock()
		if len(b.q) == 0 {
			b.mu.Unlock()
			select {
			case <-b.notify:
				continue
			case <-stop:
				return
			}
		}
		msg := b.q[0]
		b.q[0] = Message{}
		b.q = b.q[1:]
		b.mu.Unlock()
		select {
		case b.out <- msg:
		case <-stop:
			return
		}
		b.mu.Lock()
		b.bytes -= len(msg.Data)
		b.mu.Unlock()
	}
}

func (m *Member) post(msg Message) { m.inbox.post(msg) }

func framed(rank int, p []byte) []byte {
	b := make([]byte, 4+len(p))
	binary.BigEndian.PutUint32(b, uint32(rank))
	copy(b[4:], p)
	return b
}

// Send sends data to member `to` (1..size-1) directly.
func (c *Coordinator) Send(to int, data []byte) error {
	if to < 1 || to >= c.cfg.Size {
		return fmt.Errorf("rendezvous: no member rank %d (world size %d)", to, c.cfg.Size)
	}
	c.mu.Lock()
	f, bad := c.failed[to]
	c.mu.Unlock()
	if bad {
		return fmt.Errorf("rendezvous: %s", f)
	}
	return c.members[to].write(tMsg, framed(0, data), handshakeTimeout)
}

// Send sends data to rank `to` through rank 0 (to itself when to is 0).
func (m *Member) Send(to int, data []byte) error {
	if to < 0 || to >= m.cfg.Size || to == m.cfg.Rank {
		return fmt.Errorf("rendezvous: rank %d cannot send to rank %d (world size %d)", m.cfg.Rank, to, m.cfg.Size)
	}
	return m.cn.write(tMsg, framed(to, data), handshakeTimeout)
}

// relay forwards member r's message; false when r broke the protocol (its
// connection is then closed and it counts as failed).
func (c *Coordinator) relay(r int, p []byte) bool {
	if len(p) < 4 {
		c.mu.Lock()
		c.fail(Failure{Rank: r, Host: c.hosts[r], Reason: "malformed message"})
		c.mu.Unlock()
		return false
	}
	to := int(binary.BigEndian.Uint32(p))
	switch {
	case !c.cfg.KeepGoing:
		c.mu.Lock()
		c.fail(Failure{Rank: r, Host: c.hosts[r], Reason: "sent a message to another rank, but this job relays none"})
		c.mu.Unlock()
		return false
	case to == 0:
		if !c.inbox.post(Message{From: r, Data: p[4:]}) {
			c.mu.Lock()
			c.fail(Failure{Rank: r, Host: c.hosts[r], Reason: fmt.Sprintf("sent rank 0 more messages than it reads (past %d messages or %d MiB)", inboxCount, inboxBytes>>20)})
			c.mu.Unlock()
			return false
		}
		return true
	case to >= c.cfg.Size || to == r:
		c.mu.Lock()
		c.fail(Failure{Rank: r, Host: c.hosts[r], Reason: fmt.Sprintf("message to rank %d: no such peer", to)})
		c.mu.Unlock()
		return false
	}
	c.mu.Lock()
	f, bad := c.failed[to]
	c.mu.Unlock()
	if bad {
		// The sender learns at once that its peer is gone.
		_ = c.members[r].write(tPeerLost, framed(to, []byte(f.String())), handshakeTimeout)
		return true
	}
	// A write that fails is the receiver's loss, which its own watch sees.
	_ = c.members[to].write(tMsg, framed(r, p[4:]), handshakeTimeout)
	return true
}

// tellLost tells every other member, and rank 0's own inbox, that f.Rank
// was lost (KeepGoing).
func (c *Coordinator) tellLost(f Failure) {
	c.inbox.post(Message{From: f.Rank, Lost: f.String()})
	for r := 1; r < c.cfg.Size; r++ {
		if m := c.members[r]; m != nil && r != f.Rank {
			_ = m.write(tPeerLost, framed(f.Rank, []byte(f.String())), 2*time.Second)
		}
	}
}

// LocalIP is this rank's address on the network that reaches rank 0 (a
// member), or on which the members reached it (rank 0): an address its
// peers can connect to. "" when unknown.
func (c *Coordinator) LocalIP() string {
	for _, m := range c.members {
		if m != nil {
			return ipOf(m.c.LocalAddr())
		}
	}
	return ""
}

// LocalIP: see Coordinator.LocalIP.
func (m *Member) LocalIP() string { return ipOf(m.cn.c.LocalAddr()) }

func ipOf(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	h, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return ""
	}
	return h
}
