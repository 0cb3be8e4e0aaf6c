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
	// NVLinkDomain, when more than the host's GPUs, models the host as
	// one tray of a rack-scale NVLink domain of that many GPUs
	// (model.System.InDomain); Nodes then counts domains.
	NVLinkDomain int
	// Want is the site profile's part that describes the hardware as it
	// should be (model.WantOf); Profile is its path ("": none), named as the
	// expectation's basis.
	Want    model.Want
	Profile string
}

// System is the model of the host as found.
func (o HostModel) System() (model.System, error) {
	s, err := model.FromHost(o.Host)
	if err != nil {
		return s, toolErr(err)
	}
	s.Source = o.Source
	if s, err = s.InDomain(o.NVLinkDomain); err != nil {
		return s, toolErr(fmt.Errorf("--nvlink-domain: %w", err))
	}
	if o.Nodes > 0 {
		s.Nodes = o.Nodes
	}
	if o.InterSocketGBps > 0 {
		s.InterSocketGBps = o.InterSocketGBps
	}
	if o.HostMemGBps > 0 {
		s.HostMemGBps = o.HostMemGBps
	}
	if s, err = o.withNVLS(s); err != nil {
		return s, err
	}
	if err := s.Validate(); err != nil {
		return s, toolErr(err)
	}
	return s, nil
}

func (o HostModel) withNVLS(s model.System) (model.System, error) {
	if o.NVLS == nil {
		return s, nil
	}
	s, err := s.WithNVLS(*o.NVLS)
	if err != nil {
		return s, toolErr(fmt.Errorf("--nvls: %w", err))
	}
	return s, nil
}

// Basis is what the host is judged against: the hardware as it should be
// (the catalogue and the site profile, model.Healthy) and the host as
// found (System), whose prediction explains a shortfall. --nvls holds for
// both.
func (o HostModel) Basis() (model.Basis, error) {
	found, err := o.System()
	if err != nil {
		return model.Basis{}, err
	}
	b := model.Healthy(found, o.Host, o.Want)
	if b.Should, err = o.withNVLS(b.Should); err != nil {
		return b, err
	}
	if err := b.Should.Validate(); err != nil {
		return b, toolErr(err)
	}
	return b, nil
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

// ModelBasis predicts what the hardware as it should be (b.Should) reaches
// after the what-ifs w: the expectation, whose source the report names
// (Basis.Source of profile). Where the node as found falls short, its own
// prediction goes beside it (Report.AsFound), as the explanation; one the
// what-ifs cannot apply to is left out.
func ModelBasis(b model.Basis, profile string, w model.WhatIf, opts model.ReportOptions) (*model.Report, error) {
	if len(b.Deviations) == 0 {
		// The same hardware: what the model noted about the host as
		// found holds for it.
		b.Should.Notes = b.Found.Notes
	}
	rep, err := Model(b.Should, w, opts)
	if err != nil {
		return nil, err
	}
	rep.Basis = b.Source(profile)
	if len(b.Deviations) > 0 {
		rep.Deviations = b.Deviations
		if found, err := Model(b.Found, w, opts); err == nil {
			rep.AsFound = found
		}
	}
	return rep, nil
}
