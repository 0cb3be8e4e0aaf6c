package app

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/internal/model"
	"github.com/gdrcheck/gdrcheck/internal/topology"
)

// HostModel are the settings that complete a model read from a host.
type HostModel struct {
	Host   *topology.Host
	Source string // "host <root>"
	// Nodes, InterSocketGBps and HostMemGBps replace the host's when > 0.
	Nodes           int
	InterSocketGBps float64
	HostMemGBps     float64
	NVLS            *bool // nil: as the host has it
}

// System is the model of a host.
func (o HostModel) System() (model.System, error) {
	s, err := model.FromHost(o.Host)
	if err != nil {
		return s, toolErr(err)
	}
	s.Source = o.Source
	if o.Nodes > 0 {
		s.Nodes = o.Nodes
	}
	if o.InterSocketGBps > 0 {
		s.InterSocketGBps = o.InterSocketGBps
	}
	if o.HostMemGBps > 0 {
		s.HostMemGBps = o.HostMemGBps
	}
	if o.NVLS != nil {
		if s, err = s.WithNVLS(*o.NVLS); err != nil {
			return s, toolErr(fmt.Errorf("--nvls: %w", err))
		}
	}
	if err := s.Validate(); err != nil {
		return s, toolErr(err)
	}
	return s, nil
}

// Model predicts what s should reach after the what-ifs w.
func Model(s model.System, w model.WhatIf, opts model.ReportOptions) (*model.Report, error) {
	s, said, err := s.Apply(w)
	if err != nil {
		return nil, toolErr(err)
	}
	opts.WhatIfs = said
	rep, err := model.BuildReport(s, opts)
	if err != nil {
		return nil, toolErr(err)
	}
	return rep, nil
}
