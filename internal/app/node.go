package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/collect/discover"
	"github.com/gdrcheck/gdrcheck/internal/collect/nvml/live"

	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// DiscoverWithin runs topology discovery of r under timeout (--timeout).
// The returned root reads under the same deadline, so the collection that
// follows discovery is bounded by it too; a read that blocks fails when
// the deadline passes instead of hanging. stop releases the deadline once
// the root is no longer read. An interrupt (ctx cancelled) is returned as
// ctx's error; a deadline that passed during discovery is a ToolError
// naming --timeout, never a host with nothing on it.
func DiscoverWithin(ctx context.Context, r machine.Root, timeout time.Duration) (_ machine.Root, stop context.CancelFunc, _ *topology.Host, _ error) {
	if timeout <= 0 {
		return machine.Root{}, nil, nil, toolErr(fmt.Errorf("--timeout %s: must be positive", timeout))
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	r = r.WithContext(dctx)
	// On the live host the driver is asked through NVML; a snapshot replays its capture.
	h, err := discover.Discover(dctx, discover.WithRoot(r), discover.WithGPUFacts(live.New(live.WithRoot(r))))
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		err = fmt.Errorf("discovery of %s interrupted: %w", r.Display(""), ctx.Err())
	case dctx.Err() != nil: // this deadline, or an outer one
		err = toolErr(fmt.Errorf("discovery of %s did not finish within --timeout %s", r.Display(""), timeout))
	case err != nil:
		err = toolErr(err)
	}
	if err != nil {
		cancel()
		return machine.Root{}, nil, nil, err
	}
	return r, cancel, h, nil
}
