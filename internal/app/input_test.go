package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/campaign"
	"github.com/gdrcheck/gdrcheck/internal/report/diff"
	"github.com/gdrcheck/gdrcheck/internal/report/fleet"
)

const h200Dossier = "../../docs/examples/h200x1-quick"

// The first SIGINT or SIGTERM (the command's context ending) stops diff,
// fleet and fleet plan while they read: they end with the interrupt, not
// after the whole read (the review's D9: a single SIGTERM did nothing).
func TestReadersHonourInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	camp := filepath.Join(t.TempDir(), "camp")
	if _, err := FleetPlan(context.Background(), FleetPlanOptions{Dir: camp, Nodes: "gpu[01-04]", Config: fleetPlanConfig()}); err != nil {
		t.Fatal(err)
	}
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("gpu01\ngpu02\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"diff": func() error {
			_, err := Diff(ctx, DiffOptions{Old: h200Dossier, New: h200Dossier, Noise: diff.DefaultOptions()})
			return err
		},
		"fleet": func() error {
			_, err := Fleet(ctx, FleetOptions{Inputs: []string{h200Dossier}, Fleet: fleet.DefaultOptions()})
			return err
		},
		"hostfile": func() error {
			_, err := FleetPlan(ctx, FleetPlanOptions{Dir: filepath.Join(t.TempDir(), "c"), Hostfile: hosts, Config: fleetPlanConfig()})
			return err
		},
		"next": func() error {
			if err := os.MkdirAll(filepath.Join(camp, "round-01", "results"), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(camp, "round-01", "results", "s0001.rc"), []byte("0\n"), 0o644); err != nil {
				return err
			}
			_, err := FleetPlan(ctx, FleetPlanOptions{Dir: camp, Next: true, AllowMissing: true})
			return err
		},
	} {
		if err := f(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want the interrupt", name, err)
		}
	}
}

// A file past its bound is refused having read no more than the bound.
func TestReadInputBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, make([]byte, 3<<20+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readInput(context.Background(), p, 3<<20, nil); err == nil || !strings.Contains(err.Error(), "more than 3 MiB") {
		t.Errorf("over the bound: %v", err)
	}
	if b, err := readInput(context.Background(), p, 4<<20, make([]byte, 10)); err != nil || len(b) != 3<<20+1 {
		t.Errorf("under it: %d bytes, %v", len(b), err)
	}
	// A stream gives no size: the read itself stops one byte past the
	// bound, whatever the buffer given.
	for _, buf := range [][]byte{nil, make([]byte, 0, 3<<20+1), make([]byte, 0, 8<<20)} {
		if _, err := readAllBounded(context.Background(), bytes.NewReader(make([]byte, 3<<20+1)), "stream", 3<<20, buf); err == nil || !strings.Contains(err.Error(), "stream: more than 3 MiB") {
			t.Errorf("a stream over the bound, buffer of %d: %v", cap(buf), err)
		}
		if b, err := readAllBounded(context.Background(), bytes.NewReader(make([]byte, 3<<20)), "stream", 3<<20, buf); err != nil || len(b) != 3<<20 {
			t.Errorf("a stream at the bound, buffer of %d: %d bytes, %v", cap(buf), len(b), err)
		}
	}
}

// BenchmarkReadInputPastBound: a file over the bound (a hostile report of
// 64 MiB, MaxReportBytes) is refused from its size, unread. 86c1913 read
// 64 MiB and regrew the buffer for the byte past it (151 MB, 97-360 ms an
// input); 986473e read it into one buffer (67 MB, 17-144 ms); now 1 KB,
// 24-40 µs.
func BenchmarkReadInputPastBound(b *testing.B) {
	p := filepath.Join(b.TempDir(), "big")
	if err := os.WriteFile(p, make([]byte, MaxReportBytes+1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := readInput(context.Background(), p, MaxReportBytes, nil); err == nil {
			b.Fatal("read past the bound")
		}
	}
}

func fleetPlanConfig() campaign.Config {
	c := campaign.DefaultConfig(nil)
	c.MinBusBW = 100
	return c
}
