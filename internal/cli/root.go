// Package cli is gdrcheck's command line: one cobra command per verb, each
// turning flags into options, calling a use-case (package app) and handing
// its document to a renderer (package report).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// Exit codes.
const (
	ExitOK          = 0   // nothing failed
	ExitFailed      = 1   // a check or benchmark failed
	ExitToolErr     = 2   // the tool itself could not run
	ExitNotJudged   = 3   // analyze: an input was read but no reader recognised it
	ExitInterrupted = 130 // Ctrl-C (the shell's 128+SIGINT)
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// errFailedQuietly exits with ExitFailed without a message: the output
// already says what failed.
var errFailedQuietly = errors.New("failed (the output says what)")

// BuildInfo is set by main from the linker flags.
type BuildInfo struct {
	Version string
	Commit  string
}

// globals are the flags every command shares.
type globals struct {
	root    string
	timeout time.Duration
	out     io.Writer
	errOut  io.Writer
	// session stamps every document's envelope.
	session *app.Session
	// build is the session's tool (snapshot manifests name it).
	build BuildInfo
	// liveRoot is what --root / reads (app.NodeOptions.LiveRoot): "" in
	// the tool, a fixture host in tests.
	liveRoot string
}

// Main runs the command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer, bi BuildInfo) int {
	s := &app.Session{Tool: report.ResolveTool(report.Tool(bi)), Host: report.Hostname(), Command: append([]string{"gdrcheck"}, args...)}
	return execute(args, stdout, stderr, s, "")
}

// execute runs the command line in a session (tests give a fixed clock
// and host) with the live host read from liveRoot ("": this host's "/";
// tests give a fixture host, see app.NodeOptions.LiveRoot).
func execute(args []string, stdout, stderr io.Writer, s *app.Session, liveRoot string) int {
	ctx, stop := signalContext()
	defer stop()
	cmd := newRoot(&globals{out: stdout, errOut: stderr, session: s, build: BuildInfo(s.Tool), liveRoot: liveRoot})
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	code := exitCode(err)
	if code != ExitOK && !errors.Is(err, errFailedQuietly) {
		fmt.Fprintln(stderr, "gdrcheck:", printable.Text(err.Error()))
	}
	return code
}

// exitCode maps a command's error to the process exit code.
func exitCode(err error) int {
	var ee *exitError
	var fe *app.Failure
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &fe), errors.Is(err, errFailedQuietly):
		return ExitFailed
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
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

With no subcommand it reads the node and judges it without starting anything on its GPUs:
discovery, the topology and every readiness check, as gdrcheck run --no-bench (nothing is
written). gdrcheck run is the main job, benchmarks included; gdrcheck COMMAND --help says more.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if what := readsNoNode(cmd); what != "" {
				for _, f := range []string{"root", "timeout"} {
					if cmd.Flags().Changed(f) {
						return toolError(fmt.Errorf("--%s: %s %s, not a node's files: --root and --timeout do not apply", f, cmd.CommandPath(), what))
					}
				}
			}
			if g.timeout <= 0 {
				return toolError(fmt.Errorf("--timeout %s: must be positive (the deadline of discovery and collection)", g.timeout))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// Read-only: a bare gdrcheck on a production node must not
			// start benchmarks on its GPUs.
			o := defaultRun()
			o.noBench = true
			return runMain(cmd.Context(), g, o)
		},
	}
	// gdrcheck --version, as operators try first; the version command adds
	// the libraries it can load. No -v: under run -v is --verbose.
	root.Flags().Bool("version", false, "print gdrcheck's version (gdrcheck version also lists the libraries it can load)")
	// nccl-tests' flags have underscores (--warmup_iters); every other
	// flag has hyphens: either spelling works for each.
	root.SetGlobalNormalizationFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
	})
	root.Version = fmt.Sprintf("%s (commit %s)", g.build.Version, g.build.Commit)
	root.SetVersionTemplate("gdrcheck {{.Version}}\n")
	root.PersistentFlags().StringVar(&g.root, "root", "/", "host root to read: / (this host), a snapshot directory, or a snapshot .tgz")
	root.PersistentFlags().DurationVar(&g.timeout, "timeout", 2*time.Minute, "overall deadline of discovery and collection; a read that blocks past it fails")
	root.AddCommand(newVersion(g), newTopo(g), newSnapshot(g), newRun(g), newCheck(g), newBench(g), newAnalyze(g), newModel(g), newDiff(g), newFleet(g), newHealth(g), newBurn(g))
	withUsage(root)
	return root
}

// withUsage makes an argument or flag error of cmd and its subcommands
// say the usage line ("accepts 2 arg(s), received 1" alone does not say
// which two).
func withUsage(cmd *cobra.Command) {
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return fmt.Errorf("%w\nusage: %s (%s --help says more)", err, c.UseLine(), c.CommandPath())
			}
			return nil
		}
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nusage: %s (%s --help says more)", err, c.UseLine(), c.CommandPath())
	})
	for _, c := range cmd.Commands() {
		withUsage(c)
	}
}

// discoverRoot resolves --root and runs topology discovery on it; cleanup
// is to be called once the host is no longer read.
func (g *globals) discoverRoot(ctx context.Context) (*topology.Host, func(), error) {
	return app.Discover(ctx, g.node())
}

// toolError marks errors that mean the tool could not run (exit 2).
func toolError(err error) error { return &exitError{code: ExitToolErr, err: err} }

// writeTextOrJSON runs a command whose output is its data alone: it checks
// --format (text or json), collects the data, then writes it as a JSON
// envelope named command or through text.
func writeTextOrJSON[T any](g *globals, command string, f report.Format, collect func() (T, error), text func(io.Writer, T) error) error {
	started := g.session.Now()
	data, err := collect()
	if err != nil {
		return err
	}
	if f == report.JSON {
		return report.WriteJSON(g.out, g.envelope(command, started, nil, data))
	}
	return text(g.out, data)
}

// envelope wraps a command's results and data for output.
func (g *globals) envelope(command string, started time.Time, results []result.Result, data any) *report.Envelope {
	return g.session.Envelope(command, started, results, data)
}

// readsNoNode says what cmd reads when it reads no node's files (so that
// the global --root and --timeout, given to it, are an error, not
// silently ignored); "" for the commands that read a node.
func readsNoNode(cmd *cobra.Command) string {
	for c := cmd; c != nil; c = c.Parent() {
		switch c.Name() {
		case "version":
			return "reports this build and the libraries it can load"
		case "analyze":
			return "reads the outputs it is given"
		case "diff", "fleet":
			return "reads reports"
		}
	}
	return ""
}
