package rendezvous

import (
	"encoding/binary"
	"fmt"
	"net"
	"time"
)

// inboxSize bounds the messages a rank has received and not yet read; a
// message past it is dropped (a protocol of a few messages per step never
// comes near it).
const inboxSize = 4096

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
func (c *Coordinator) Inbox() <-chan Message { return c.inbox }

// Inbox is the messages relayed to this member and the losses rank 0 told.
func (m *Member) Inbox() <-chan Message { return m.inbox }

func post(inbox chan Message, msg Message) {
	select {
	case inbox <- msg:
	default:
	}
}

func (m *Member) post(msg Message) { post(m.inbox, msg) }

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
	case to == 0:
		post(c.inbox, Message{From: r, Data: p[4:]})
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
	post(c.inbox, Message{From: f.Rank, Lost: f.String()})
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
