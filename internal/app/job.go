package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/rendezvous"
)

// jobSpec is one rank's part in a multi-process job (bench nccl's, bench
// rdma's cross-node): where the ranks meet, what this rank does once all
// have met, and what its part, P, says.
type jobSpec[P any] struct {
	Config rendezvous.Config
	// ID is what rank 0 hands every rank at the rendezvous (NCCL's unique
	// id; zeros where the job needs none).
	ID []byte
	// Gather bounds the job's end: rank 0's wait for every part, a
	// member's for rank 0's end.
	Gather time.Duration
	// Run is this rank's work, with its peer and the job's id; it returns
	// the rank's part, which goes to rank 0 as JSON with the member "rank"
	// (a member writes its own document before it returns: delivering
	// waits for rank 0). An error ends this rank at once, delivering
	// nothing: the others see it lost.
	Run func(ctx context.Context, peer rendezvous.Peer, id []byte) (P, error)
	// Failed, if set, is where and why a rank other than 0 failed by
	// itself as its delivered part says ("" it did not).
	Failed func(P) (host, reason string)
	// Warn, if set, is told on rank 0 of the connections the rendezvous
	// turned away while the ranks joined (a wrong secret, a rank claimed
	// twice, strangers), though the job formed.
	Warn io.Writer
}

// jobEnd is how the job ended, as this rank saw it.
type jobEnd[P any] struct {
	// Parts are every rank's part, by rank, decoded (rank 0 only): nil
	// where a rank delivered none or one that could not be read.
	Parts []*P
	// Hosts are the ranks' host names, by rank.
	Hosts []string
	// Failures are the ranks that did not finish, by rank (rank 0 only):
	// a part that could not be read or names another rank, a part that
	// says its rank failed (Failed), a rank lost or late (Err's).
	Failures []rendezvous.Failure
	// Err is the job's end: rank 0's gathering (a *rendezvous.JobError
	// naming the ranks lost) or a member's delivery.
	Err error
}

// runJob is the one multi-rank job protocol: the ranks meet at the
// rendezvous (rank 0 serves, the others join), each runs its part, and
// the job ends with every member delivering its part to rank 0, which
// gathers and decodes them and names every rank that did not finish. The
// error is the rendezvous's (a Failure, see jobFailure) or Run's own.
func runJob[P any](ctx context.Context, j jobSpec[P]) (jobEnd[P], error) {
	peer, id, err := rendezvous.Meet(ctx, j.Config, j.ID)
	if err != nil {
		return jobEnd[P]{}, jobFailure(err)
	}
	defer peer.Close()
	if c, ok := peer.(*rendezvous.Coordinator); ok && j.Warn != nil {
		if away := c.TurnedAway(); away != "" {
			fmt.Fprintf(j.Warn, "gdrcheck: rendezvous: %s\n", printable.Line(away))
		}
	}
	part, err := j.Run(ctx, peer, id)
	if err != nil {
		return jobEnd[P]{}, err
	}
	// A part that does not marshal goes empty: rank 0 then names the rank
	// as one whose result could not be read.
	mine, _ := json.Marshal(part)
	raw, endErr := peer.Finish(ctx, mine, j.Gather)
	end := jobEnd[P]{Hosts: peer.Hosts(), Err: endErr}
	if j.Config.Rank != 0 {
		return end, nil
	}
	end.Parts = make([]*P, len(raw))
	for r, b := range raw {
		if b == nil {
			continue // endErr names it
		}
		p, why := decodePart[P](b, r)
		if why != "" {
			// A part that cannot be read is a rank missing from the job,
			// not one left out in silence.
			end.Failures = append(end.Failures, rendezvous.Failure{Rank: r, Host: end.Hosts[r], Reason: why})
			continue
		}
		end.Parts[r] = p
		if r == 0 || j.Failed == nil {
			continue
		}
		if host, reason := j.Failed(*p); reason != "" {
			end.Failures = append(end.Failures, rendezvous.Failure{Rank: r, Host: host, Reason: reason})
		}
	}
	var je *rendezvous.JobError
	if errors.As(endErr, &je) {
		for _, f := range je.Failures {
			if !slices.ContainsFunc(end.Failures, func(x rendezvous.Failure) bool { return x.Rank == f.Rank }) {
				end.Failures = append(end.Failures, f)
			}
		}
	}
	slices.SortFunc(end.Failures, func(a, b rendezvous.Failure) int { return a.Rank - b.Rank })
	return end, nil
}

// decodePart reads rank r's part; why says what is wrong with it.
func decodePart[P any](b []byte, r int) (*P, string) {
	var p P
	var head struct {
		Rank int `json:"rank"`
	}
	err := json.Unmarshal(b, &p)
	if err == nil {
		err = json.Unmarshal(b, &head)
	}
	switch {
	case err != nil:
		return nil, "its result could not be read: " + err.Error()
	case head.Rank != r:
		return nil, fmt.Sprintf("its result names rank %d", head.Rank)
	}
	return &p, ""
}

// errPeerLost is the cause of a run cancelled because the job lost a rank.
var errPeerLost = errors.New("a peer rank failed")

// abortable runs f for a job whose ranks depend on each other (bench
// nccl's communicator): a lost rank cancels f's context (the bench's
// guard then aborts the communicator), and an error f ends with while
// the loss is on its way (it reached NCCL first) is an abort too. aborted
// says f ended because of the job; its error then says whose loss. A rank
// that failed by itself tells the others (Peer.Fail), so none waits for it.
func abortable[T any](ctx context.Context, peer rendezvous.Peer, f func(context.Context) (T, error)) (v T, aborted bool, err error) {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-peer.Lost():
			cancel(errPeerLost)
		case <-runCtx.Done():
		}
	}()
	v, err = f(runCtx)
	aborted = err != nil && context.Cause(runCtx) == errPeerLost
	if !aborted && err != nil {
		select {
		case <-peer.Lost():
			aborted = true
		case <-time.After(time.Second):
		}
	}
	switch {
	case aborted:
		err = fmt.Errorf("%w; aborted: %v", peer.Err(), err)
	case err != nil:
		peer.Fail(err.Error())
	}
	return v, aborted, err
}

// jobFailure is a job that did not run to its end: a Failure (exit 1),
// naming the ranks; an interrupt stays one.
func jobFailure(err error) error {
	if errors.Is(err, context.Canceled) {
		var je *rendezvous.JobError
		if !errors.As(err, &je) {
			return err
		}
	}
	return &Failure{err}
}
