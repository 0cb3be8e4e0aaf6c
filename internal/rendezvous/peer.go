package rendezvous

import (
	"context"
	"time"
)

// Peer is one rank's side of a job's rendezvous for the run: rank 0's
// Coordinator or another rank's Member. A job's code is written once
// against it; only Meet and Finish know which side a rank is.
type Peer interface {
	// Hosts and Nodes are every rank's host name and the node it counts
	// on (Config.Node), by rank.
	Hosts() []string
	Nodes() []string
	// GPUs are every rank's GPU count (Config.GPUs, 1 where none was
	// announced), by rank.
	GPUs() []int
	// Lost is closed when the job loses a rank (rank 0's view) or rank 0
	// aborts the job (a member's); Err says why, nil while none is lost.
	Lost() <-chan struct{}
	Err() error
	// Fail says this rank failed by itself: a member tells rank 0, rank
	// 0 aborts the job (Coordinator.Abort).
	Fail(reason string)
	// LocalIP is this rank's address on the job's network ("" unknown).
	LocalIP() string
	// Send and Inbox carry messages between ranks during the run.
	Send(to int, data []byte) error
	Inbox() <-chan Message
	// Finish ends this rank's part with its result, waiting at most
	// timeout: rank 0 gathers every rank's (Coordinator.Gather: results
	// by rank, nil where none came), a member delivers its own and waits
	// for rank 0's end of the job (Member.Deliver: no results). The error
	// is the job's failure as this rank knows it.
	Finish(ctx context.Context, mine []byte, timeout time.Duration) ([][]byte, error)
	Close()
}

var (
	_ Peer = (*Coordinator)(nil)
	_ Peer = (*Member)(nil)
)

// Meet brings this rank to the rendezvous: rank 0 serves id (Serve), any
// other rank joins (Join). It returns the rank's peer and the job's id
// (rank 0's own, or the one a member received).
func Meet(ctx context.Context, cfg Config, id []byte) (Peer, []byte, error) {
	if cfg.Rank == 0 {
		c, err := Serve(ctx, cfg, id)
		if err != nil {
			return nil, nil, err
		}
		return c, id, nil
	}
	m, got, err := Join(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return m, got, nil
}

// Fail is Abort: rank 0 itself failed, so every member aborts.
func (c *Coordinator) Fail(reason string) { c.Abort(reason) }

// Finish is Gather.
func (c *Coordinator) Finish(ctx context.Context, mine []byte, timeout time.Duration) ([][]byte, error) {
	return c.Gather(ctx, mine, timeout)
}

// Finish is Deliver; a member receives no results.
func (m *Member) Finish(ctx context.Context, mine []byte, timeout time.Duration) ([][]byte, error) {
	return nil, m.Deliver(ctx, mine, timeout)
}
