package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"

	"github.com/gdrcheck/gdrcheck/internal/checks"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/fleet"
	"github.com/gdrcheck/gdrcheck/internal/report/sched"
)

// What gdrcheck health and fleet do about a node to drain (--drain).
const (
	DrainNone  = "none"  // nothing
	DrainPrint = "print" // print the scontrol command
	DrainApply = "apply" // run it
)

// DefaultDrainTimeout bounds one scontrol command.
const DefaultDrainTimeout = 15 * time.Second

// DrainOptions say how a node is drained.
type DrainOptions struct {
	Mode string // DrainNone, DrainPrint or DrainApply
	// Scontrol is the program ("" sched.Scontrol, looked up on PATH).
	Scontrol string
	// Timeout bounds each command (0: DefaultDrainTimeout).
	Timeout time.Duration
}

// Validate says what is wrong with o.
func (o DrainOptions) Validate() error {
	switch o.Mode {
	case DrainNone, DrainPrint, DrainApply:
	default:
		return toolErr(fmt.Errorf("--drain %q: want none, print or apply", o.Mode))
	}
	if o.Timeout < 0 {
		return toolErr(fmt.Errorf("--drain-timeout %s: must be positive", o.Timeout))
	}
	return nil
}

// HealthOptions are gdrcheck health's.
type HealthOptions struct {
	Node  NodeOptions
	Check CheckOptions
	// NodeName is the node's name to the scheduler (--node): the one
	// drained. NodeGiven says the user named it (--node), rather than it
	// being this machine's name.
	NodeName  string
	NodeGiven bool
	Drain     DrainOptions
	// Resume: when the node passes (ready or degraded), read its state
	// and, when gdrcheck drained it and it is only drained, resume it
	// (Drain.Mode apply) or print the command (print). Needs a Drain.Mode
	// other than none.
	Resume bool
	// NFD is the features.d file to write ("" none), NFDTTL how long its
	// labels hold (its expiry directive).
	NFD    string
	NFDTTL time.Duration
	// Version is gdrcheck's, for the labels; Now stamps the file.
	Version string
	Now     time.Time
	// Burn, when its Duration is positive, is a short burn-in run by
	// Session after checks that did not fail (a prolog's "under load"):
	// a fault it finds fails the node as a failed check does.
	Burn    BurnOptions
	Session *Session
}

// Health is gdrcheck health's outcome.
type Health struct {
	// Judged is the node as the checks saw it; nil when they could not
	// run (Err says why).
	Judged *Judged
	Err    error
	// Line is the one line: the verdict and its reason (sched.HealthLine),
	// or why gdrcheck could not run (sched.ErrorLine).
	Line string
	// NotReady: a check failed (with --strict, could not look); the node
	// is to be drained.
	NotReady bool
	// Drain is the drain command when the node is to be drained and
	// --drain is not none; DrainErr why running it failed (apply).
	Drain    []string
	DrainErr error
	// Resume is what became of resuming the node (HealthOptions.Resume, a
	// node that passed); nil when it was not tried.
	Resume *Resume
	// NFDErr is why the features file could not be written.
	NFDErr error
	// Burned is the short burn-in's document and BurnDir its folder; nil
	// when none ran.
	Burned  *report.Envelope
	BurnDir string
}

// Resume is a node that passed, looked at to be resumed.
type Resume struct {
	// Node is the node as scontrol showed it.
	Node sched.Node
	// Argv is the resume command; nil when the node is left as it is.
	Argv []string
	// Left is why a drained node is left as it is: down, drained by
	// someone else or for another reason, a state gdrcheck does not
	// resume. Nil when the node is not drained, or is resumed.
	Left error
	// Err is why the node's state could not be read (scontrol failed or
	// hung, its output did not say), or why the resume command failed
	// (apply). The node is then left as it is.
	Err error
}

// ValidateHealth refuses options that cannot mean anything, before the
// node is read.
func ValidateHealth(o HealthOptions) error {
	if err := o.Drain.Validate(); err != nil {
		return err
	}
	if o.Resume && o.Drain.Mode == DrainNone {
		return toolErr(errors.New("--resume needs --drain print or apply"))
	}
	if !isLive(o.Node.Root) && o.Drain.Mode != DrainNone && !o.NodeGiven {
		// The checks judge a captured node; the scheduler's node by
		// default is this machine: draining it would act on the wrong one.
		return toolErr(fmt.Errorf("--root %s judges a captured node, not this machine (%s): draining or resuming would act on this machine; name the node with --node NAME, or give --drain none", o.Node.Root, o.NodeName))
	}
	if o.NFD != "" && o.NFDTTL <= 0 {
		return toolErr(fmt.Errorf("--nfd-ttl %s: must be positive (how long the labels hold)", o.NFDTTL))
	}
	if o.Burn.Duration > 0 {
		if o.Session == nil {
			return toolErr(errors.New("a burn-in needs a session"))
		}
		if err := requireLive(o.Node.Root); err != nil {
			return fmt.Errorf("--burn: %w", err)
		}
		return o.Burn.validate()
	}
	return nil
}

// RunHealth is gdrcheck health: the readiness checks of Check, no
// benchmarks, judged into one line; the node drained (or its command
// printed) when a check fails; the features file written. Its own
// options' errors are returned; everything after is in Health.
func RunHealth(ctx context.Context, o HealthOptions) (*Health, error) {
	if err := ValidateHealth(o); err != nil {
		return nil, err
	}
	h := &Health{}
	j, err := Check(ctx, o.Node, o.Check)
	if err != nil {
		h.Err = err
		h.Line = sched.ErrorLine(err)
		if errors.Is(err, context.Canceled) {
			return h, nil
		}
	} else {
		h.Judged = j
		h.Line = sched.HealthLine(j.Checks)
		h.NotReady = j.Checks.Verdict.NotReady()
		if o.Burn.Duration > 0 && !h.NotReady {
			healthBurn(ctx, h, o)
		}
	}
	if h.NotReady && o.Drain.Mode != DrainNone {
		// The checks ran whatever the node's name: a name scontrol cannot
		// be given leaves the node undrained, but still failing (exit 1).
		if h.Drain, err = sched.DrainArgv(o.Drain.Scontrol, o.NodeName, h.Line); err != nil {
			h.DrainErr = fmt.Errorf("--node: %w: the node cannot be drained", err)
		} else if o.Drain.Mode == DrainApply {
			h.DrainErr = RunDrain(ctx, h.Drain, o.Drain.Timeout)
		}
	}
	if o.Resume && o.Drain.Mode != DrainNone && h.Err == nil && !h.NotReady {
		h.Resume = resumeNode(ctx, o.NodeName, o.Drain)
	}
	if o.NFD != "" {
		h.NFDErr = writeFeatures(o.NFD, nodeLabels(j, o.Version), o.Now, o.NFDTTL)
	}
	return h, nil
}

// healthBurn runs the short burn-in of a node whose checks did not fail:
// a fault it finds (under --strict, a verdict it could not give) makes the
// node not ready, its line naming the fault; a burn-in that could not run
// is the run's error, as checks that could not run are.
func healthBurn(ctx context.Context, h *Health, o HealthOptions) {
	b := o.Burn
	b.Strict = b.Strict || o.Check.Strict
	env, dir, err := o.Session.Burn(ctx, o.Node, b)
	h.Burned, h.BurnDir = env, dir
	var f *Failure
	switch {
	case err == nil:
	case errors.As(err, &f) && env != nil:
		h.NotReady = true
		h.Line = sched.BurnLine(env.Results, b.Strict)
	default:
		h.Err = err
		h.Line = sched.ErrorLine(fmt.Errorf("burn-in: %w", err))
	}
}

// RunDrain runs a drain command under its deadline, through the door's
// command runner (no shell; the process group is killed at the deadline).
func RunDrain(ctx context.Context, argv []string, timeout time.Duration) error {
	_, err := runScontrol(ctx, argv, timeout)
	return err
}

// runScontrol runs an scontrol command under its deadline (0:
// DefaultDrainTimeout) and returns its standard output.
func runScontrol(ctx context.Context, argv []string, timeout time.Duration) ([]byte, error) {
	if timeout <= 0 {
		timeout = DefaultDrainTimeout
	}
	return machine.RunLive(ctx, machine.Command{Name: argv[0], Args: argv[1:], Timeout: timeout})
}

// resumeNode reads the node's state with scontrol show node and, when
// gdrcheck drained it and it is only drained (sched.Resumable), makes the
// resume command and runs it (DrainApply). Anything it cannot read with
// certainty leaves the node as it is.
func resumeNode(ctx context.Context, node string, d DrainOptions) *Resume {
	r := &Resume{}
	show, err := sched.ShowNodeArgv(d.Scontrol, node)
	if err != nil {
		r.Err = fmt.Errorf("--node: %w", err)
		return r
	}
	out, err := runScontrol(ctx, show, d.Timeout)
	if err != nil {
		r.Err = fmt.Errorf("reading the node's state: %w", err)
		return r
	}
	if r.Node, err = sched.ParseShowNode(string(out), node); err != nil {
		r.Err = fmt.Errorf("reading the node's state: %w", err)
		return r
	}
	switch err := sched.Resumable(r.Node); {
	case errors.Is(err, sched.ErrNotDrained):
		return r
	case err != nil:
		r.Left = err
		return r
	}
	r.Argv, _ = sched.ResumeArgv(d.Scontrol, node)
	if d.Mode == DrainApply {
		r.Err = RunDrain(ctx, r.Argv, d.Timeout)
	}
	return r
}

// nodeLabels are the labels of a judged node (nil: it could not be
// judged).
func nodeLabels(j *Judged, version string) sched.Labels {
	l := sched.Labels{Version: version}
	if j == nil {
		return l
	}
	v := j.Checks.Verdict
	l.Verdict, l.Failing = v.Status, v.Failing
	l.GDRPath = checks.GDRPath(j.Env)
	l.GPUs = len(j.Host.GPUs)
	if l.GPUs > 0 {
		l.GPUModel = j.Host.GPUs[0].Name
	}
	for _, n := range j.Host.NICs {
		for _, p := range n.Ports {
			l.NICRateGbps = max(l.NICRateGbps, p.RateGbps)
		}
	}
	return l
}

// writeFeatures writes the features file atomically: renameio's temporary
// file starts with a dot, which NFD's local source skips, and the rename
// replaces the old file at once.
func writeFeatures(path string, l sched.Labels, now time.Time, ttl time.Duration) error {
	if now.IsZero() {
		now = time.Now()
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, sched.FeaturesFile)
	}
	if err := renameio.WriteFile(path, sched.Features(l, now, ttl), 0o644); err != nil {
		return fmt.Errorf("--nfd: %w", err)
	}
	return nil
}

// FleetDrainResult is one node's drain command and, with Apply, its
// outcome.
type FleetDrainResult struct {
	sched.FleetDrain
	Applied bool
	// RunErr is why the command failed (Apply).
	RunErr error
}

// FleetDrain makes the drain commands of the fleet's drain list and, with
// apply, runs them one after another, each under its deadline. A host
// that is not a valid host name is refused (its Err), never run.
func FleetDrain(ctx context.Context, fl *fleet.Fleet, scontrol string, apply bool, timeout time.Duration) []FleetDrainResult {
	ds := sched.FleetDrains(scontrol, fl.Drain)
	out := make([]FleetDrainResult, len(ds))
	for i, d := range ds {
		out[i].FleetDrain = d
		if apply && d.Err == nil {
			out[i].Applied = true
			out[i].RunErr = RunDrain(ctx, d.Argv, timeout)
		}
	}
	return out
}
