package model

import (
	"bytes"
	"encoding/json"
	"flag"
	"path/filepath"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/testutil/readertest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/golden/name (rewriting it with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	readertest.Golden(t, filepath.Join("testdata", "golden", name), got, *update)
}

func TestReportGolden(t *testing.T) {
	h200, err := FromHost(discoverFixture(t, "hgx-h200-8gpu-10nic"))
	if err != nil {
		t.Fatal(err)
	}
	h200.Source = "host testdata/hosts/hgx-h200-8gpu-10nic.host"
	l40s, err := FromHost(discoverFixture(t, "pcie-l40s-remote-nic"))
	if err != nil {
		t.Fatal(err)
	}
	l40s.Source = "host testdata/hosts/pcie-l40s-remote-nic.host"
	l40s.Nodes = 2
	vm, err := FromHost(discoverFixture(t, "h200x1-vm.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	vm.Source = "host testdata/snapshots/h200x1-vm.tgz"
	cluster := mustSystem(t, Params{GPU: "h100", Nodes: 8, GPUsPerNode: 8, NICsPerNode: 8, NICRateGbps: 400})
	whatIf, said, err := cluster.Apply(WhatIf{GDROff: true, HalfRails: true, SHARP: on()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    System
		o    ReportOptions
	}{
		{"hgx-h200-8gpu-10nic", h200, ReportOptions{Sizes: []float64{8, 1 << 20, 16 << 30}}},
		{"pcie-l40s-remote-nic-2nodes", l40s, ReportOptions{Collectives: []collective.Collective{collective.AllReduce, collective.AllGather, collective.SendRecv}, Sizes: []float64{4096, 8 << 30}, All: true}},
		{"h200x1-vm", vm, ReportOptions{Collectives: []collective.Collective{collective.AllReduce, collective.Broadcast}}},
		{"h100-8nodes-whatif", whatIf, ReportOptions{Collectives: []collective.Collective{collective.AllReduce}, Sizes: []float64{8 << 30}, All: true, WhatIfs: said, NoCopies: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := BuildReport(tc.s, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			var txt bytes.Buffer
			if err := r.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".txt", txt.Bytes())
			js := readertest.JSON(t, r)
			golden(t, tc.name+".json", js)
			var back Report
			if err := json.Unmarshal(js, &back); err != nil || len(back.Collectives) != len(r.Collectives) {
				t.Errorf("JSON does not read back: %v", err)
			}
		})
	}
}

func TestBuildReportRefuses(t *testing.T) {
	s := mustSystem(t, Params{GPU: "h100"})
	if _, err := BuildReport(s, ReportOptions{Margin: Margin{Pass: 0.5, Warn: 0.9}}); err == nil {
		t.Error("inverted margin accepted")
	}
	s.Nodes = 0
	if _, err := BuildReport(s, ReportOptions{}); err == nil {
		t.Error("0 nodes accepted")
	}
	r, err := BuildReport(mustSystem(t, Params{GPU: "h100"}), ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Collectives) != len(collective.All())*len(DefaultSizes()) || len(r.Copies) == 0 {
		t.Errorf("default report: %d predictions, %d copies", len(r.Collectives), len(r.Copies))
	}
}
