// Package watchdog runs calls that may never return (into a GPU driver, a
// vendor library, a check) under a deadline. A call that overruns cannot be
// stopped: it may still hold a driver lock or a thread. The guard that ran
// it is then wedged, and every later call through it fails at once instead
// of queueing behind the stuck one ("once hung, never call again").
package watchdog

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// ErrHung is wrapped into the error of a call that did not return within
// its deadline, and of every call a wedged guard refuses, unless the guard
// was given its own sentinel.
var ErrHung = errors.New("call did not return within its deadline")

// PanicError is a call that panicked; the guard is not wedged by it.
type PanicError struct {
	Call  string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("%s: panicked: %v", e.Call, e.Value) }

// Call is one call's settings.
type Call struct {
	Name    string        // for errors
	Timeout time.Duration // from the start of the call; <= 0: no deadline but ctx's
	// Start hands the task to whatever runs it (a dedicated thread's
	// queue) and returns once it was accepted, or ctx's error. nil runs
	// the task on a new goroutine.
	Start func(ctx context.Context, task func()) error
	// Interrupt, when set, is called once if ctx ends while the call runs,
	// to ask it to stop (raise a cancel flag); the guard then waits Grace
	// for it to return before it counts as hung. The function Interrupt
	// returns runs once the call has returned (lower the flag).
	Interrupt func() (undo func())
	Grace     time.Duration
}

// Guard runs calls under deadlines. Use New.
type Guard struct {
	hung   error
	mu     sync.Mutex
	wedged string        // the call that never returned
	done   chan struct{} // closed when wedged
}

// New makes a guard whose hang errors wrap hung (ErrHung when nil), so a
// package can keep its own sentinel.
func New(hung error) *Guard {
	if hung == nil {
		hung = ErrHung
	}
	return &Guard{hung: hung, done: make(chan struct{})}
}

// Wedged is the name of the call that never returned, or "".
func (g *Guard) Wedged() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wedged
}

// WedgedC is closed when the guard becomes wedged.
func (g *Guard) WedgedC() <-chan struct{} { return g.done }

func (g *Guard) wedge(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.wedged == "" {
		g.wedged = name
		close(g.done)
	}
}

// Do runs fn as c describes and returns its error, or: a *PanicError; an
// error wrapping the guard's sentinel when the call overran its deadline
// (the guard is then wedged), when the guard already was wedged (fn is not
// run), or when Start could not hand the task over in time (the runner is
// busy; not wedged by this call); ctx's error when ctx ended first (the
// guard is wedged too if the call did not return after all).
func (g *Guard) Do(ctx context.Context, c Call, fn func() error) error {
	if w := g.Wedged(); w != "" {
		return fmt.Errorf("%s not attempted: %s did not return earlier: %w", c.Name, w, g.hung)
	}
	deadline := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		deadline, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	done := make(chan error, 1)
	task := func() {
		defer func() {
			if p := recover(); p != nil {
				done <- &PanicError{Call: c.Name, Value: p, Stack: debug.Stack()}
			}
		}()
		done <- fn()
	}
	if c.Start == nil {
		go task()
	} else if err := c.Start(deadline, task); err != nil {
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %w", c.Name, ctx.Err())
		case deadline.Err() != nil:
			return fmt.Errorf("%s: not started within %s (busy with an earlier call): %w", c.Name, c.Timeout, g.hung)
		}
		return err
	}
	select {
	case err := <-done:
		return err
	case <-deadline.Done():
	}
	select { // it may have returned just as the deadline passed
	case err := <-done:
		return err
	default:
	}
	if ctx.Err() == nil {
		g.wedge(c.Name)
		return fmt.Errorf("%s: no answer within %s: %w", c.Name, c.Timeout, g.hung)
	}
	if c.Interrupt != nil {
		undo := c.Interrupt()
		t := time.NewTimer(c.Grace)
		defer t.Stop()
		select {
		case err := <-done:
			if undo != nil {
				undo()
			}
			if err == nil {
				err = ctx.Err()
			}
			return err
		case <-t.C:
		}
	}
	g.wedge(c.Name)
	return fmt.Errorf("%s: interrupted before it returned: %w", c.Name, ctx.Err())
}
