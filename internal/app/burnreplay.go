package app

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/burn"
	cf "github.com/gdrcheck/gdrcheck/internal/facts/counters"
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
