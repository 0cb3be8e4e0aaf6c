package app

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// The live host is the machine gdrcheck runs on, named by a --root of "/"
// (the default) or "". The benchmarks run there only: they load the CUDA
// runtime and NCCL into this process and drive this machine's GPUs and
// NICs, which a snapshot has not got. So do the probe of the libraries
// loaded into this process and the environment of this process (the
// collectors read those from the snapshot elsewhere). This file is the one
// definition of that rule; every command that benchmarks asks it.

// isLive reports whether root names the live host.
func isLive(root string) bool { return root == "" || filepath.Clean(root) == "/" }

// requireLive is the rule "benchmarks run on the live host only": nil when
// root names the live host, else the ToolError that says so.
func requireLive(root string) error {
	if isLive(root) {
		return nil
	}
	return toolErr(fmt.Errorf("benchmarks run on the live host only (--root is %s)", root))
}

// source is what the node's root is read from: Root, or LiveRoot where
// Root names the live host and LiveRoot is set (tests).
func (n NodeOptions) source() string {
	if isLive(n.Root) && n.LiveRoot != "" {
		return n.LiveRoot
	}
	return n.Root
}

// Discover opens the node's root and discovers the host behind it
// (topology only, no collection), for a command that needs the host alone
// (model of a host); cleanup releases the root.
func Discover(ctx context.Context, n NodeOptions) (*topology.Host, func(), error) {
	_, cleanup, h, err := openNode(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	return h, cleanup, nil
}
