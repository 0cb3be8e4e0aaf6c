package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"

	"github.com/gdrcheck/gdrcheck/internal/campaign"
)

// CampaignFile is the campaign's state in its folder.
const CampaignFile = "campaign.json"

// FindingsFile is a finished campaign's findings in its folder.
const FindingsFile = "findings.json"

// FleetPlanOptions are gdrcheck fleet plan's. A new campaign takes the
// nodes (a Slurm node list or a hostfile) and the campaign's settings
// (Config, whose Nodes are filled here); Next continues the one in Dir.
type FleetPlanOptions struct {
	Dir      string
	Next     bool
	Nodes    string
	Hostfile string
	Config   campaign.Config
	// AllowMissing records steps that did not run as missing and plans
	// them again, instead of refusing the round.
	AllowMissing bool
	// Stamp wraps the findings in the command's envelope for
	// findings.json.
	Stamp func(*campaign.Findings) any
}

// FleetPlanResult is what a fleet plan call did: the round it wrote, or
// the findings.
type FleetPlanResult struct {
	Dir      string                 `json:"dir"`
	Round    *campaign.RoundSummary `json:"round,omitempty"`
	Findings *campaign.Findings     `json:"findings,omitempty"`
}

// maxCampaignBytes bounds campaign.json (a 1,024-node campaign with 8 rails
// is a few MB after its first round).
const maxCampaignBytes = 256 << 20

// maxHostfileBytes bounds --hostfile: 65536 hosts of 253 bytes fit.
const maxHostfileBytes = 16 << 20

// FleetPlan starts a campaign in o.Dir (campaign.json and round-01/) or,
// with o.Next, reads the latest round's results and writes the next round
// or the findings (findings.json). Bad input is a ToolError.
func FleetPlan(ctx context.Context, o FleetPlanOptions) (*FleetPlanResult, error) {
	if o.Dir == "" {
		return nil, toolErr(fmt.Errorf("no campaign folder"))
	}
	if o.Next {
		return fleetPlanNext(ctx, o)
	}
	var nodes []string
	var err error
	switch {
	case o.Nodes != "" && o.Hostfile != "":
		return nil, toolErr(fmt.Errorf("--nodes and --hostfile both name the nodes: give one"))
	case o.Nodes != "":
		nodes, err = campaign.ParseNodeList(o.Nodes)
	case o.Hostfile != "":
		var b []byte
		if b, err = readInput(ctx, o.Hostfile, maxHostfileBytes, nil); err == nil {
			nodes, err = campaign.ParseHostfile(o.Hostfile, b)
		} else if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
	default:
		return nil, toolErr(fmt.Errorf("give the nodes: --nodes 'gpu[001-128]' or --hostfile FILE"))
	}
	if err != nil {
		return nil, toolErr(err)
	}
	cfg := o.Config
	cfg.Nodes = nodes
	c, err := campaign.New(cfg)
	if err != nil {
		return nil, toolErr(err)
	}
	path := filepath.Join(o.Dir, CampaignFile)
	if _, err := os.Stat(path); err == nil {
		return nil, toolErr(fmt.Errorf("%s exists: continue that campaign with --next %s, or choose another folder", path, o.Dir))
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, toolErr(err)
	}
	if err := writeRound(o.Dir, c, c.Latest()); err != nil {
		return nil, err
	}
	if err := WriteAtomic(path, c); err != nil {
		return nil, err
	}
	s := c.Summary(c.Latest())
	return &FleetPlanResult{Dir: o.Dir, Round: &s}, nil
}

func fleetPlanNext(ctx context.Context, o FleetPlanOptions) (*FleetPlanResult, error) {
	c, err := LoadCampaign(o.Dir)
	if err != nil {
		return nil, err
	}
	if c.Findings != nil {
		return &FleetPlanResult{Dir: o.Dir, Findings: c.Findings}, nil
	}
	r := c.Latest()
	if err := c.Record(inputFS{ctx, filepath.Join(o.Dir, campaign.RoundDir(r.N))}, o.AllowMissing); err != nil {
		return nil, toolErr(fmt.Errorf("%s: %w", o.Dir, err))
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	next, findings, err := c.Plan()
	if err != nil {
		return nil, toolErr(err)
	}
	res := &FleetPlanResult{Dir: o.Dir, Findings: findings}
	if next != nil {
		if err := writeRound(o.Dir, c, next); err != nil {
			return nil, err
		}
		s := c.Summary(next)
		res.Round = &s
	} else {
		var doc any = findings
		if o.Stamp != nil {
			doc = o.Stamp(findings)
		}
		if err := WriteAtomic(filepath.Join(o.Dir, FindingsFile), doc); err != nil {
			return nil, err
		}
	}
	if err := WriteAtomic(filepath.Join(o.Dir, CampaignFile), c); err != nil {
		return nil, err
	}
	return res, nil
}

// LoadCampaign reads dir's campaign.json, checked.
func LoadCampaign(dir string) (*campaign.Campaign, error) {
	path := filepath.Join(dir, CampaignFile)
	f, err := openInput(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, toolErr(fmt.Errorf("%s: no campaign here (start one with --out %s)", path, dir))
	}
	if err != nil {
		return nil, toolErr(err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > maxCampaignBytes {
		return nil, toolErr(fmt.Errorf("%s: %d bytes, larger than a campaign file can be", path, st.Size()))
	}
	var c campaign.Campaign
	if err := json.NewDecoder(io.LimitReader(f, maxCampaignBytes+1)).Decode(&c); err != nil {
		return nil, toolErr(fmt.Errorf("%s: %w", path, err))
	}
	if err := c.Check(); err != nil {
		return nil, toolErr(fmt.Errorf("%s: %w", path, err))
	}
	return &c, nil
}

// writeRound writes round r's folder: its scripts and hostfiles.
func writeRound(dir string, c *campaign.Campaign, r *campaign.Round) error {
	rd := filepath.Join(dir, campaign.RoundDir(r.N))
	if err := os.MkdirAll(rd, 0o755); err != nil {
		return toolErr(err)
	}
	for _, f := range c.Files(r) {
		if err := renameio.WriteFile(filepath.Join(rd, f.Name), f.Data, os.FileMode(f.Mode)); err != nil {
			return toolErr(err)
		}
	}
	return nil
}
