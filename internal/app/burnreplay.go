package app

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/burn"
	"github.com/gdrcheck/gdrcheck/internal/collect/counters"
	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/machine/snapshot"
	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// BurnReplay judges a burn-in directory again (`gdrcheck burn --replay
// DIR`): its burn.json (the schedule and the work) and its samples, with
// the node discovered from n (the live host, or a snapshot of the node
// the burn-in ran on), under the judging of this release and o.Judge's
// thresholds. Nothing in dir is written.
func (s *Session) BurnReplay(ctx context.Context, n NodeOptions, dir string, o BurnOptions) (*report.Envelope, error) {
	started := s.Now()
	path := filepath.Join(dir, "burn.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, toolErr(fmt.Errorf("burn --replay: %w", err))
	}
	var doc BurnDoc
	var head struct {
		Schema string `json:"schema"`
	}
	if err := textio.UnmarshalJSON(path, b, &head); err != nil {
		return nil, toolErr(err)
	}
	if head.Schema != report.Schema("burn") {
		return nil, toolErr(fmt.Errorf("%s: schema %q, want %q (a gdrcheck burn directory)", path, head.Schema, report.Schema("burn")))
	}
	if err := textio.UnmarshalJSON(path, b, &doc); err != nil {
		return nil, toolErr(err)
	}
	// The samples come in pairs, a counter sample and its GPU reading: the
	// baselines, then one pair per window end.
	var before, after burnSamples
	var sm *cf.Sample
	for _, name := range doc.Samples {
		p := filepath.Join(dir, filepath.Clean("/" + name)[1:])
		sb, err := os.ReadFile(p)
		if err != nil {
			return nil, toolErr(fmt.Errorf("burn --replay: %w", err))
		}
		if !strings.HasSuffix(name, "-gpu.json") {
			sm = &cf.Sample{}
			if err := textio.UnmarshalJSON(p, sb, sm); err != nil {
				return nil, toolErr(err)
			}
			continue
		}
		gr := &burn.GPUReading{}
		if err := textio.UnmarshalJSON(p, sb, gr); err != nil {
			return nil, toolErr(err)
		}
		if sm == nil {
			return nil, toolErr(fmt.Errorf("%s: %s comes without its counter sample before it", path, name))
		}
		into := &after
		if strings.HasPrefix(filepath.Base(name), "baseline") {
			into = &before
		}
		into.add(sm, gr)
		sm = nil
	}
	root, cleanup, err := snapshot.OpenContext(ctx, n.source())
	if err != nil {
		return nil, toolErr(err)
	}
	defer cleanup()
	_, stop, h, err := DiscoverWithin(ctx, root, cmp.Or(n.Timeout, burnReadTimeout))
	if err != nil {
		return nil, err
	}
	stop()
	rs, err := judgeBurn(h, &doc, before, after, o.Judge)
	if err != nil {
		return nil, toolErr(fmt.Errorf("burn --replay %s: %w (is --root the node the burn-in ran on?)", dir, err))
	}
	return s.Envelope("burn", started, rs, &doc), burnOutcome(rs, o.Strict)
}

// BurnReplayCaptures judges a series of captures of one node (`gdrcheck
// burn --replay A B C...`): each a directory or archive laid out like a
// snapshot, the first the state before, each next one the end of a
// window, taken around a workload gdrcheck did not run (an operator's
// own job between two `gdrcheck snapshot`s). They are ordered by their
// manifests' times when every one has a manifest, else taken in the order
// given. There is no schedule, so no bits are known: a fatal counter
// (link_downed, an uncorrectable AER error), a GPU's new uncorrectable
// ECC error, row remap or Xid fails naming its device and window, and the
// NICs' temperatures and optical modules are judged as in a burn-in;
// correctable errors are counted, not rated. A counter that went down is
// a reset, said, never subtracted. A capture that cannot be read is the
// tool's error (exit 2).
func (s *Session) BurnReplayCaptures(ctx context.Context, paths []string, o BurnOptions) (*report.Envelope, error) {
	started := s.Now()
	if len(paths) < 2 {
		return nil, toolErr(fmt.Errorf("burn --replay with captures needs two at least: the node before and after"))
	}
	type capture struct {
		path string
		root machine.Root
		at   time.Time
	}
	var caps []capture
	timed := true
	for _, p := range paths {
		root, cleanup, err := snapshot.OpenContext(ctx, p)
		if err != nil {
			return nil, toolErr(fmt.Errorf("burn --replay %s: %w", p, err))
		}
		defer cleanup()
		m, err := snapshot.ReadManifest(root)
		if err != nil {
			return nil, toolErr(fmt.Errorf("burn --replay %s: %w", p, err))
		}
		c := capture{path: p, root: root}
		if m != nil && !m.CreatedAt.IsZero() {
			c.at = m.CreatedAt
		} else {
			timed = false
		}
		caps = append(caps, c)
	}
	doc := &BurnDoc{Window: "between captures", Schedule: burn.Schedule{Windows: []burn.Window{}}, Work: []BurnWork{}, Samples: []string{}, Complete: true}
	if timed {
		slices.SortStableFunc(caps, func(a, b capture) int { return a.at.Compare(b.at) })
		for i := 1; i < len(caps); i++ {
			if !caps[i].at.After(caps[i-1].at) {
				return nil, toolErr(fmt.Errorf("burn --replay: %s and %s were taken at the same time (%s): not a series", caps[i-1].path, caps[i].path, caps[i].at.Format(time.RFC3339)))
			}
		}
	} else {
		// Without every manifest's time the order given is the order, and
		// the windows' times are not known: they are counted in minutes
		// from the first capture, said so.
		doc.Notes = append(doc.Notes, "not every capture has a manifest with its time: taken in the order given, the windows' times are not known (shown as minutes from the first capture)")
		base := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range caps {
			caps[i].at = base.Add(time.Duration(i) * time.Minute)
		}
	}
	doc.Duration = caps[len(caps)-1].at.Sub(caps[0].at).String()
	doc.Notes = append(doc.Notes, "captures of a workload gdrcheck did not run: no schedule, so no bits are known; fatal counters and the GPUs' own counters are judged, correctable errors counted, not rated")
	_, stop, h, err := DiscoverWithin(ctx, caps[0].root, cmp.Or(o.OpTimeout, burnReadTimeout))
	if err != nil {
		return nil, err
	}
	stop()
	var before, after burnSamples
	for i, c := range caps {
		label := fmt.Sprintf("window-%d", i)
		if i == 0 {
			label = "baseline"
		}
		at := c.at
		sm := counters.Read(c.root, h, label, func() time.Time { return at })
		sm.NICs = counters.ReadNICs(ctx, c.root, h, func() time.Time { return at })
		gr := gpuReadingOf(ctx, c.root, label, at) // a capture's facts
		doc.Samples = append(doc.Samples, c.path)
		if i == 0 {
			before.add(sm, gr)
			continue
		}
		after.add(sm, gr)
		// The window is the time between the two captures.
		doc.Schedule.Windows = append(doc.Schedule.Windows, burn.Window{Start: caps[i-1].at, End: at, Traffic: []burn.Traffic{}})
	}
	series, err := burn.Attribute(h, doc.Schedule, before.counters, after.counters)
	if err != nil {
		return nil, toolErr(fmt.Errorf("burn --replay: %w (are the captures of one node?)", err))
	}
	doc.Series = series
	rs := append(burn.Judge(series, o.Judge), burn.JudgeGPUs(doc.Schedule, before.gpus, after.gpus)...)
	rs = append(rs, burn.JudgeOptics(h, doc.Schedule, before.counters, after.counters)...)
	return s.Envelope("burn", started, rs, doc), burnOutcome(rs, o.Strict)
}
