package nvml_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gdrcheck/gdrcheck/internal/collect/nvml"
	"github.com/gdrcheck/gdrcheck/internal/machine"
)

// Replay reads a snapshot's facts: nvml.json first, the captured
// nvidia-smi -q -x without it, and names what is missing or broken.
func TestReplay(t *testing.T) {
	smi, err := os.ReadFile("../../facts/gpu/testdata/h200x1-vm-nvidia-smi-q-x.xml")
	if err != nil {
		t.Fatal(err)
	}
	json := `{"source":"nvml","gpus":[{"index":0,"bus_id":"0000:18:00.0","name":"NVIDIA H100 80GB HBM3"},{"index":1,"bus_id":"0000:2a:00.0"}]}`
	smiFile := machine.CommandsDir + "/" + machine.CmdNvidiaSMIQuery.Key
	jsonFile := machine.CommandsDir + "/nvml.json"
	for _, c := range []struct {
		name       string
		files      map[string]string
		gpus       int
		source     string // the facts' Source
		err        string // part of the error; "" none
		errIsNoFac bool
	}{
		{"nvml.json", map[string]string{jsonFile: json}, 2, "snapshot nvml.json (nvml)", "", false},
		{"nvml.json wins over nvidia-smi", map[string]string{jsonFile: json, smiFile: string(smi)}, 2, "snapshot nvml.json (nvml)", "", false},
		{"nvidia-smi -q -x alone", map[string]string{smiFile: string(smi)}, 1, "nvidia-smi -q -x", "", false},
		{"nothing captured", map[string]string{"sys/bus/pci/devices/.keep": ""}, 0, "", "no GPU facts captured", true},
		{"broken nvml.json", map[string]string{jsonFile: `{"gpus": [`}, 0, "", "nvml.json", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, body := range c.files {
				fsys[name] = &fstest.MapFile{Data: []byte(body)}
			}
			f, err := nvml.Replay(machine.NewRootFS(fsys, "snap")).Collect(t.Context())
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || errors.Is(err, nvml.ErrNoFacts) != c.errIsNoFac {
					t.Fatalf("err = %v, want one with %q (ErrNoFacts: %v)", err, c.err, c.errIsNoFac)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.GPUs) != c.gpus || !strings.HasPrefix(f.Source, c.source) {
				t.Errorf("facts: %d GPUs from %q, want %d from %q", len(f.GPUs), f.Source, c.gpus, c.source)
			}
		})
	}
}

// Without nvml.json, the NVLink counters come from the captured
// nvidia-smi nvlink -e; without that, the GPUs have none (not read, never
// 0) and the facts say why.
func TestReplayNVLinkErrors(t *testing.T) {
	smi, err := os.ReadFile("../../facts/gpu/testdata/h200x1-vm-nvidia-smi-q-x.xml")
	if err != nil {
		t.Fatal(err)
	}
	smiFile := machine.CommandsDir + "/" + machine.CmdNvidiaSMIQuery.Key
	eFile := machine.CommandsDir + "/" + machine.CmdNvidiaSMINVLinkErrors.Key
	for _, c := range []struct {
		name   string
		nvlink string // "" not captured
		crc    uint64
		errs   string
	}{
		{name: "captured", nvlink: "GPU 0: NVIDIA H200\n\t Link 0: Replay Errors: 0\n\t Link 0: Recovery Errors: 0\n\t Link 0: CRC Errors: 5\n", crc: 5},
		{name: "not captured", errs: "nvidia-smi nvlink -e: not captured"},
		{name: "garbled", nvlink: "Link 0: CRC Errors: 0\n", errs: "nvidia-smi-nvlink-e.txt:1:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{smiFile: &fstest.MapFile{Data: smi}}
			if c.nvlink != "" {
				fsys[eFile] = &fstest.MapFile{Data: []byte(c.nvlink)}
			}
			f, err := nvml.Replay(machine.NewRootFS(fsys, "snap")).Collect(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			nc := f.GPUs[0].NVLinkCounters
			if c.errs != "" {
				if nc != nil || !strings.Contains(strings.Join(f.Errors, "\n"), c.errs) {
					t.Fatalf("counters %+v, errors %q; want none and %q", nc, f.Errors, c.errs)
				}
				return
			}
			if len(nc) != 1 || nc[0].Values["crc_flit_errors"] != c.crc {
				t.Fatalf("counters = %+v (errors %q)", nc, f.Errors)
			}
		})
	}
}
