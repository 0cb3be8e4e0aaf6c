package html

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/report/fleet"
)

// plantedFleet is report/fleet's planted fleet (its golden JSON): 43
// nodes cloned from real reports, with a slow all_reduce, an old driver,
// a missing GPU, a half-rate port, a finite memlock and a stray NCCL
// variable planted.
const plantedFleet = "../fleet/testdata/planted.json"

var fleetRun = report.Run{Tool: report.Tool{Version: "v0.0.0-test", Commit: "abcdef0"}, Host: "ops-1",
	StartedAt: time.Date(2026, 12, 3, 21, 0, 0, 0, time.UTC), EndedAt: time.Date(2026, 12, 3, 21, 0, 2, 0, time.UTC),
	Command: []string{"gdrcheck", "fleet", "--out", "fleet", "/shared/dossiers"}}

func loadFleet(t *testing.T, path string) *fleet.Fleet {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f fleet.Fleet
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return &f
}

func renderFleet(t *testing.T, f *fleet.Fleet) string {
	t.Helper()
	var b bytes.Buffer
	if err := RenderFleet(&b, f, fleetRun, nil); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The planted fleet renders as testdata/fleet-planted.html (-update
// rewrites it): every finding is on the page, each outlier drawn.
func TestFleetGolden(t *testing.T) {
	f := loadFleet(t, plantedFleet)
	page := renderFleet(t, f)
	file := filepath.Join("testdata", "fleet-planted.html")
	if *update {
		if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if page != string(want) {
		t.Errorf("%s differs from the rendering (run with -update and review the diff)", file)
	}
	checkSelfContained(t, page)
	checkSVG(t, page)
	for _, w := range []string{"7 of 8 GPUS", "port mlx5_5:1 at 200 Gb/s", "driver 570.86.15", "setting memlock 65536 KiB",
		"setting NCCL_IB_HCA ^mlx5_1", "11 TO DRAIN", "all_reduce 64M (1 rank): algorithm bandwidth, GB/s"} {
		if !strings.Contains(page, escaped(w)) {
			t.Errorf("the page lacks %q", w)
		}
	}
	if got, want := strings.Count(page, `class="dot-out"`), len(f.Outliers); got != want {
		t.Errorf("%d outliers drawn, want %d", got, want)
	}
	if got := strings.Count(page, `class="outlbl"`); got != len(f.Outliers) {
		t.Errorf("%d outliers named, want %d", got, len(f.Outliers))
	}
	// 20 nodes per plot: 19 dots and the outlier.
	if got, want := strings.Count(page, `class="dot-node"`), 19*len(f.Spreads); got != want {
		t.Errorf("%d node dots, want %d", got, want)
	}
}

// escaped is s as html/template writes it in text.
func escaped(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;").Replace(s)
}

// bigFleet is a fleet of n nodes with one measurement: the outliers
// planted at the low end, host names hostile where asked.
func bigFleet(n, outliers int, host func(i int) string) *fleet.Fleet {
	f := &fleet.Fleet{}
	sp := fleet.Spread{Class: "NVIDIA H200 x8, 400 Gb/s", Key: "all_reduce 1G (8 ranks)", Unit: dossier.UnitBusBW, Nodes: n, Median: 480, MAD: 2, Band: 3.5 * 4.8 / 0.6745, Z: 3.5, Min: 300, Max: 490, Outliers: outliers}
	if n <= fleet.MaxPoints {
		for i := range n {
			v := 470 + float64(i%20)
			if i < outliers {
				v = 300 + float64(i)
			}
			sp.Points = append(sp.Points, fleet.Point{Host: host(i), Value: v})
		}
	} else {
		sp.Bins = make([]int, fleet.HistBins)
		sp.BinsMin = 470
		sp.Bins[0] = 1
		sp.Bins[fleet.HistBins-1] = n - outliers - 1
	}
	f.Spreads = []fleet.Spread{sp}
	for i := range n {
		v := "READY"
		if i < outliers {
			f.Outliers = append(f.Outliers, fleet.Outlier{Host: host(i), Class: sp.Class, Key: sp.Key, Unit: sp.Unit, Value: 300 + float64(i), Median: 480, MAD: 2, Z: -20, OffPct: -37, Peers: n})
			f.Drain = append(f.Drain, fleet.Drain{Rank: i + 1, Host: host(i), Reasons: []string{"slow: " + host(i)}})
		}
		f.Nodes = append(f.Nodes, fleet.NodeLine{Host: host(i), Source: host(i) + "/report.json", Verdict: v, Class: sp.Class})
	}
	f.Classes = []fleet.Class{{Class: sp.Class, Nodes: n}}
	return f
}

// A fleet of 20,000 nodes is drawn as a histogram with every outlier a
// red dot; the page stays bounded (the quiet nodes are cut, not listed).
func TestFleetLarge(t *testing.T) {
	f := bigFleet(20000, 15, func(i int) string { return fmt.Sprintf("gpu%05d", i) })
	page := renderFleet(t, f)
	checkSelfContained(t, page)
	checkSVG(t, page)
	if got := strings.Count(page, `class="dot-out"`); got != 15 {
		t.Errorf("%d outliers drawn, want 15", got)
	}
	if got := strings.Count(page, `class="outlbl"`); got != maxPlotLabels {
		t.Errorf("%d outliers named, want %d", got, maxPlotLabels)
	}
	if strings.Contains(page, `class="dot-node"`) || !strings.Contains(page, `class="hist"`) || !strings.Contains(page, "3 more outlier(s) drawn but not named") {
		t.Error("a class of 20,000 nodes is not drawn as a histogram with its outliers")
	}
	if !strings.Contains(page, "and 15000 more in fleet.json") {
		t.Error("the quiet nodes beyond the cap are not counted")
	}
	if len(page) > 2<<20 {
		t.Errorf("the page is %d bytes", len(page))
	}
}

// Host names, classes, keys and reasons from the reports are untrusted:
// markup and terminal escapes come out escaped, on the page and in the
// drawings.
func TestFleetHostileEscaped(t *testing.T) {
	payload := hostilePayload
	f := bigFleet(30, 3, func(i int) string { return fmt.Sprint(payload, i) })
	f.Spreads[0].Class, f.Spreads[0].Key = payload, payload
	f.Consistency = []fleet.Consistency{{Group: payload, Field: "setting " + payload, Reference: payload, Basis: "majority", Nodes: 30, Deviants: []fleet.Deviant{{Host: payload, Value: payload}}}}
	f.Missing = []fleet.Missing{{Host: payload, What: payload, Have: 7, Want: 8, Basis: payload}}
	f.Ports = []fleet.PortIssue{{Host: payload, Port: payload, Issue: payload, Have: 200, Want: 400, Basis: payload}}
	f.Skipped = []fleet.Skipped{{Source: payload, Error: payload}}
	f.Nodes[0].Failing = []string{payload}
	f.Nodes[0].Verdict = payload
	page := renderFleet(t, f)
	checkHostilePage(t, "fleet.html", page)
}

func TestKeyTitle(t *testing.T) {
	for _, c := range []struct{ key, unit, want string }{
		{"all_reduce 64M (8 ranks)", dossier.UnitBusBW, "all_reduce 64M (8 ranks): bus bandwidth, GB/s"},
		{"sendrecv 1K (1 rank)", dossier.UnitAlgBW, "sendrecv 1K (1 rank): algorithm bandwidth, GB/s"},
		{"copy d2d GPU0 64M", dossier.UnitCopy, "copy d2d GPU0 64M: GB/s"},
		{"k", "", "k"},
		{"k", "µs", "k: µs"},
	} {
		if got := keyTitle(c.key, c.unit); got != c.want {
			t.Errorf("keyTitle(%q, %q) = %q, want %q", c.key, c.unit, got, c.want)
		}
	}
}

func TestRenderFleetNil(t *testing.T) {
	if err := RenderFleet(&bytes.Buffer{}, nil, fleetRun, nil); err == nil {
		t.Error("RenderFleet(nil) did not fail")
	}
	page := renderFleet(t, &fleet.Fleet{})
	if !strings.Contains(page, "NO NODE READ") {
		t.Error("an empty fleet's page does not say so")
	}
	checkSelfContained(t, page)
}

func TestSig(t *testing.T) {
	for v, want := range map[float64]string{1883.602: "1884", 20.92: "20.92", 0.0041234: "0.004123", 163.643: "163.6", 0: "0", 12345.6: "12346", -2.5: "-2.500"} {
		if got := Sig(v); got != want {
			t.Errorf("Sig(%g) = %q, want %q", v, got, want)
		}
	}
}
