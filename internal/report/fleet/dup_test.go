package fleet

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNatural(t *testing.T) {
	got := []string{"node10", "node2", "node1", "gpu-a10", "gpu-a02", "gpu-a2", "node02b", "node", "node2a", "n9x1", "n10x0"}
	slices.SortFunc(got, Natural)
	want := []string{"gpu-a02", "gpu-a2", "gpu-a10", "n9x1", "n10x0", "node", "node1", "node2", "node2a", "node02b", "node10"}
	if !slices.Equal(got, want) {
		t.Errorf("%q\nwant %q", got, want)
	}
}

// Of two reports of one host the newer is kept, whatever the order they
// are read in and whatever their verdicts; its measurements replace the
// older's. Reports whose times do not tell keep the old rule (the first,
// and an error when their verdicts disagree). A placeholder host name is
// an error, never one node for a thousand reports.
func TestNewestReportKept(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	node := func(src string, at time.Time, verdict string, v float64) Node {
		return Node{Source: src, Host: "gpu-07", ReadAt: at, Verdict: verdict, GPUModel: "H200", GPUs: 8,
			Measurements: []Measure{{Key: "all_reduce 1G (8 ranks)", Unit: "GB/s busbw", Value: v}}}
	}
	old, new := node("old/report.json", t0, "NOT READY", 100), node("new/report.json", t0.Add(24*time.Hour), "READY", 400)
	for _, order := range [][]Node{{old, new}, {new, old}} {
		a := NewAggregator(DefaultOptions())
		for _, n := range order {
			a.Add(n)
		}
		f := a.Report()
		if len(f.Nodes) != 1 || f.Nodes[0].Source != "new/report.json" || f.Nodes[0].Verdict != "READY" {
			t.Errorf("kept %+v", f.Nodes)
		}
		if len(f.Skipped) != 1 || !f.Skipped[0].Duplicate || f.Skipped[0].Source != "old/report.json" || !strings.Contains(f.Skipped[0].Error, "the newer is kept") {
			t.Errorf("skipped %+v", f.Skipped)
		}
		var vs []float64
		for _, ss := range a.samples {
			for _, s := range ss {
				vs = append(vs, s.value)
			}
		}
		if !slices.Equal(vs, []float64{400}) {
			t.Errorf("samples %v: the older report's were not taken out", vs)
		}
	}
	// Times that do not tell: the first is kept; disagreeing verdicts are an error.
	a := NewAggregator(DefaultOptions())
	a.Add(node("a/report.json", time.Time{}, "READY", 1))
	a.Add(node("b/report.json", time.Time{}, "NOT READY", 1))
	if f := a.Report(); len(f.Unreadable()) != 1 || !strings.Contains(f.Unreadable()[0].Error, "conflicting duplicate") {
		t.Errorf("untimed conflict: %+v", f.Skipped)
	}
	a = NewAggregator(DefaultOptions())
	for _, src := range []string{"1", "2", "3"} {
		n := node(src, t0, "READY", 1)
		n.Host = "localhost"
		a.Add(n)
	}
	if f := a.Report(); len(f.Nodes) != 0 || len(f.Unreadable()) != 3 || !strings.Contains(f.Unreadable()[0].Error, `host name "localhost" names no node in particular`) {
		t.Errorf("localhost: %d nodes, %+v", len(f.Nodes), f.Skipped)
	}
}

// A node that lacks measurements most of its class has is named, not
// judged fine by silence; keys few nodes have do not name the rest.
func TestUnmeasuredNamed(t *testing.T) {
	a := NewAggregator(DefaultOptions())
	sets := [][]string{{"k1", "k2"}, {"k1", "k2"}, {"k1", "k2"}, {"k1", "k2"}, {"k1", "k2"}, {"k1", "k2"}, {"k1", "k3"}, {}}
	for i, keys := range sets {
		n := Node{Source: "r", Host: fmt.Sprintf("node%d", i+1), Verdict: "READY", GPUModel: "H200", GPUs: 8}
		for _, k := range keys {
			n.Measurements = append(n.Measurements, Measure{Key: k, Unit: "GB/s", Value: 10})
		}
		a.Add(n)
	}
	f := a.Report()
	c := f.Classes[0].Class
	// k3 is one node's: nobody lacks it.
	want := []Unmeasured{{Host: "node7", Class: c, Keys: 1, Example: "k2", Peers: 6}, {Host: "node8", Class: c, Keys: 2, Example: "k1", Peers: 7}}
	if !slices.Equal(f.Unmeasured, want) {
		t.Errorf("%+v\nwant %+v", f.Unmeasured, want)
	}
}
