// Package cli is gdrcheck's command line: one cobra command per verb, each a
// thin layer over the capability packages.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// Exit codes.
const (
	ExitOK      = 0 // nothing failed
	ExitFailed  = 1 // a check or benchmark failed
	ExitToolErr = 2 // the tool itself could not run
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// failed makes an error that exits with ExitFailed (a finding, not a tool error).
func failed(format string, a ...any) error {
	return &exitError{code: ExitFailed, err: fmt.Errorf(format, a...)}
}

// BuildInfo is set by main.
type BuildInfo struct {
	Version string
	Commit  string
	Date    string
}

// globals are the flags every command shares.
type globals struct {
	root    string
	timeout time.Duration
	out     io.Writer
	errOut  io.Writer
	build   BuildInfo
}

// Main runs the command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer, bi BuildInfo) int {
	ctx, stop := signalContext()
	defer stop()
	cmd := newRoot(&globals{out: stdout, errOut: stderr, build: bi})
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.code != ExitFailed || ee.err.Error() != "" {
			fmt.Fprintln(stderr, "gdrcheck:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "gdrcheck:", err)
	return ExitToolErr
}

// signalContext ends at the first SIGINT or SIGTERM, and then stops
// catching them: a second one ends the process at once (the default
// action), even while the first one's cleanup runs.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "gdrcheck",
		Short: "Commission GPU nodes: topology, GPU Direct RDMA readiness, NCCL and copy benchmarks",
		Long: `gdrcheck checks that a GPU node's data paths are real: GPU memory -> PCIe switch -> NIC
-> fabric (GPU Direct RDMA) and GPU <-> GPU over NVLink, and that NCCL uses them.

With no subcommand it runs the main job (gdrcheck run).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMain(cmd.Context(), g, runOptions{format: "text", checks: checkOptions{timeout: 10 * time.Second, xidWindow: 24 * time.Hour}})
		},
	}
	root.PersistentFlags().StringVar(&g.root, "root", "/", "host root to read: / (this host), a snapshot directory, or a snapshot .tgz")
	root.PersistentFlags().DurationVar(&g.timeout, "timeout", 2*time.Minute, "overall deadline of discovery and checks")
	root.AddCommand(newVersion(g), newTopo(g), newSnapshot(g), newRun(g), newCheck(g), newBench(g), newAnalyze(g), newModel(g))
	return root
}

// openRoot resolves --root; cleanup removes an extracted archive.
func (g *globals) openRoot() (machine.Root, func(), error) {
	r, cleanup, err := snapshot.Open(g.root)
	if err != nil {
		return machine.Root{}, nil, &exitError{code: ExitToolErr, err: err}
	}
	return r, cleanup, nil
}

// discover runs topology discovery under the global deadline.
func (g *globals) discover(ctx context.Context, r machine.Root) (*topology.Host, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	h, err := topology.Discover(ctx, topology.WithRoot(r))
	if err != nil {
		return nil, &exitError{code: ExitToolErr, err: err}
	}
	return h, nil
}
