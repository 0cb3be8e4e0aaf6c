package model

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/collective"
)

// TestPublicRuns holds the model to every published run
// (publicruns.go): the best prediction's busbw must be within
// publicRunTolerance of the figure (deviceRunTolerance for the device
// machine's one-rank runs, judged by algbw). It writes the runs in two
// halves, the calibration half (a factor was fitted to the run) and the
// held-out half (none was), and the interval of every evidence class;
// the page (testdata/golden/public-runs.md) is the one in docs/model.md,
// so the residuals and intervals the docs state are the model's.
func TestPublicRuns(t *testing.T) {
	type row struct {
		r     publicRun
		e     Prediction
		ratio float64
	}
	var calib, held, device []row
	check := func(r publicRun, tol float64) row {
		t.Helper()
		s := mustSystem(t, r.p)
		e, err := Expect(s, r.c, r.size)
		if err != nil {
			t.Fatalf("%s %s: %v", r.name, r.c, err)
		}
		ratio := r.measured / observed(e)
		if math.Abs(ratio-1) > tol {
			t.Errorf("%s %s %s (%s): measured %.2f, predicted %.2f by %s: ratio %.3f outside ±%.0f%%",
				r.name, r.c, sizeText(r.size), r.source, r.measured, observed(e), e.Algorithm, ratio, 100*tol)
		}
		return row{r, e, ratio}
	}
	for _, r := range publicRuns {
		if r.calibration() {
			calib = append(calib, check(r, publicRunTolerance))
		} else {
			held = append(held, check(r, publicRunTolerance))
		}
	}
	for _, r := range deviceRuns {
		device = append(device, check(r, deviceRunTolerance))
	}
	if len(calib) == 0 || len(held) == 0 {
		t.Fatalf("%d calibration runs, %d held out: both halves must have runs", len(calib), len(held))
	}
	var md bytes.Buffer
	table := func(title, what string, rows []row) {
		fmt.Fprintf(&md, "**%s**\n\n", title)
		fmt.Fprintf(&md, "| run | collective, size | source | measured %s | predicted (algorithm) | measured / predicted | class | fitted |\n", what)
		fmt.Fprintln(&md, "|---|---|---|---|---|---|---|---|")
		for _, x := range rows {
			fitted := x.r.calib
			if fitted == "" {
				fitted = "—"
			}
			fmt.Fprintf(&md, "| %s | %s %s | %s | %.2f | %.1f (%s) | %.3f | %s | %s |\n",
				x.r.name, x.r.c, sizeText(x.r.size), x.r.source, x.r.measured, observed(x.e), x.e.Algorithm, x.ratio, x.e.Interval.Class, fitted)
		}
		fmt.Fprintln(&md)
	}
	table("Calibration half (a factor was set from these runs)", "busbw", calib)
	table("Held-out half (no factor was set from these runs)", "busbw", held)
	table("The project's device machine (one rank: algbw)", "algbw", device)
	// Residuals per half, and the interval of every class.
	for _, h := range []struct {
		name string
		rows []row
	}{{"calibration", calib}, {"held-out", held}} {
		worst, ss := 0.0, 0.0
		for _, x := range h.rows {
			worst = math.Max(worst, math.Abs(x.ratio-1))
			ss += (x.ratio - 1) * (x.ratio - 1)
		}
		fmt.Fprintf(&md, "- %s half: %d runs, largest residual %.1f%%, RMS %.1f%% (tolerance ±%.0f%%)\n",
			h.name, len(h.rows), 100*worst, 100*math.Sqrt(ss/float64(len(h.rows))), 100*publicRunTolerance)
	}
	fmt.Fprintln(&md)
	fmt.Fprintln(&md, "| evidence class | runs | interval | what it rests on |")
	fmt.Fprintln(&md, "|---|---|---|---|")
	for _, cl := range Classes() {
		w, runs, basis := classWidth(cl)
		fmt.Fprintf(&md, "| %s | %d | ±%.0f%% | %s |\n", cl, runs, 100*w, basis)
	}
	golden(t, "public-runs.md", md.Bytes())
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "model.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, md.Bytes()) {
		t.Error("docs/model.md does not carry the tables of testdata/golden/public-runs.md: copy them into the section \"Calibration against published runs\"")
	}
}

// Every run of the calibration half names a factor the model has (a
// constant, or a family's NVLink or network factor), so the halves are
// what they say: a held-out run names none.
func TestPublicRunHalves(t *testing.T) {
	have := map[string]bool{}
	for _, c := range constants() {
		have[c.Name] = true
	}
	for _, r := range allRuns() {
		if !r.calibration() {
			continue
		}
		name := r.calib
		if fam, kind, ok := strings.Cut(r.calib, " "); ok {
			key := strings.ReplaceAll(fam, "/", "_")
			name = map[string]string{"NVLink": "calibration_nvlink_" + key, "network": "calibration_net_" + key}[kind]
		}
		if !have[name] {
			t.Errorf("%s (%s %s): fitted %q names no factor of the model", r.name, r.c, sizeText(r.size), r.calib)
		}
	}
}

// Every collective belongs to one calibration family, every factor is a
// share (0, 1] with a source, and the families cover what they say.
func TestCalibrationFamilies(t *testing.T) {
	seen := map[collective.Collective]string{}
	for _, f := range calibrations() {
		for _, c := range f.collectives {
			if prev, ok := seen[c]; ok {
				t.Errorf("%s in families %s and %s", c, prev, f.name)
			}
			seen[c] = f.name
		}
		for _, v := range []float64{f.nvlink, f.net} {
			if v <= 0 || v > 1 {
				t.Errorf("%s: factor %g, want (0, 1]", f.name, v)
			}
		}
		if strings.TrimSpace(f.nvlinkSrc) == "" || strings.TrimSpace(f.netSrc) == "" {
			t.Errorf("%s: a factor without a source", f.name)
		}
	}
	for _, c := range collective.All() {
		if _, ok := seen[c]; !ok {
			t.Errorf("%s in no calibration family", c)
		}
	}
}

func sizeText(b float64) string {
	switch {
	case b >= gib && math.Mod(b, gib) == 0:
		return fmt.Sprintf("%gG", b/gib)
	case b >= mib && math.Mod(b, mib) == 0:
		return fmt.Sprintf("%gM", b/mib)
	}
	return fmt.Sprintf("%g", b)
}
