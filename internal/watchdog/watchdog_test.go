package watchdog_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/watchdog"
)

// TestGuard: results and panics come back; a call that overruns wedges the
// guard and no later call runs; a call interrupted by its context either
// honours the interrupt (not wedged) or does not (wedged); a busy runner is
// a hang of the caller only.
func TestGuard(t *testing.T) {
	errMine := errors.New("mine hung")
	g := watchdog.New(errMine)
	ctx := context.Background()
	want := errors.New("fn failed")
	if err := g.Do(ctx, watchdog.Call{Name: "ok", Timeout: time.Second}, func() error { return want }); err != want {
		t.Errorf("error = %v", err)
	}
	err := g.Do(ctx, watchdog.Call{Name: "boom", Timeout: time.Second}, func() error { panic("oops") })
	var pe *watchdog.PanicError
	if !errors.As(err, &pe) || pe.Value != "oops" || len(pe.Stack) == 0 || err.Error() != "boom: panicked: oops" || g.Wedged() != "" {
		t.Errorf("panic: %v", err)
	}

	// A runner that is still busy with another task.
	never := func(ctx context.Context, task func()) error { <-ctx.Done(); return ctx.Err() }
	err = g.Do(ctx, watchdog.Call{Name: "queued", Timeout: 20 * time.Millisecond, Start: never}, func() error { return nil })
	if !errors.Is(err, errMine) || !strings.Contains(err.Error(), "busy") || g.Wedged() != "" {
		t.Errorf("busy runner: %v (wedged %q)", err, g.Wedged())
	}

	// Interrupted, and the call honours it: the undo runs, not wedged.
	stop := make(chan struct{})
	var undone atomic.Bool
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	err = g.Do(cctx, watchdog.Call{Name: "spin", Timeout: time.Minute, Grace: time.Second,
		Interrupt: func() func() { close(stop); return func() { undone.Store(true) } }},
		func() error { <-stop; return nil })
	if !errors.Is(err, context.Canceled) || !undone.Load() || g.Wedged() != "" {
		t.Errorf("honoured interrupt: %v, undone %v, wedged %q", err, undone.Load(), g.Wedged())
	}

	// The deadline passes: wedged, and nothing runs any more.
	release := make(chan struct{})
	defer close(release)
	start := time.Now()
	err = g.Do(ctx, watchdog.Call{Name: "stuck", Timeout: 30 * time.Millisecond}, func() error { <-release; return nil })
	if !errors.Is(err, errMine) || !strings.Contains(err.Error(), "stuck: no answer within 30ms") || time.Since(start) > 5*time.Second {
		t.Errorf("stuck: %v", err)
	}
	select {
	case <-g.WedgedC():
	default:
		t.Error("WedgedC not closed")
	}
	ran := false
	err = g.Do(ctx, watchdog.Call{Name: "next", Timeout: time.Second}, func() error { ran = true; return nil })
	if ran || !errors.Is(err, errMine) || err.Error() != "next not attempted: stuck did not return earlier: mine hung" {
		t.Errorf("after a hang: ran %v, %v", ran, err)
	}

	// Interrupted, and the call ignores it: wedged, ctx's error.
	g2 := watchdog.New(nil)
	cctx, cancel = context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	err = g2.Do(cctx, watchdog.Call{Name: "deaf", Timeout: time.Minute, Grace: 20 * time.Millisecond,
		Interrupt: func() func() { return nil }}, func() error { <-release; return nil })
	if !errors.Is(err, context.Canceled) || errors.Is(err, watchdog.ErrHung) || g2.Wedged() != "deaf" {
		t.Errorf("ignored interrupt: %v, wedged %q", err, g2.Wedged())
	}
	if err := g2.Do(ctx, watchdog.Call{Name: "after"}, func() error { return nil }); !errors.Is(err, watchdog.ErrHung) {
		t.Errorf("default sentinel: %v", err)
	}
}
