package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/gdrcheck/gdrcheck/internal/report"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/report/fleet"
	"github.com/gdrcheck/gdrcheck/internal/report/html"
)

// FleetOptions are gdrcheck fleet's: the inputs (report.json files,
// dossier folders, or folders to walk for */report.json), the site
// profile and the noise model.
type FleetOptions struct {
	Inputs []string
	Expect string
	Fleet  fleet.Options
}

// MaxReportBytes bounds one report.json: a dossier's is ~100 KB; a file
// far larger is not one, and must not be read into memory.
const MaxReportBytes = 64 << 20

// Fleet finds the node reports among the inputs and rolls them up, a few
// at a time, keeping only each node's summary. An input argument that
// cannot be read, or names no report, is a ToolError naming it; a report
// found that cannot be decoded is named in the fleet's skipped list.
func Fleet(ctx context.Context, o FleetOptions) (*fleet.Fleet, error) {
	if err := o.Fleet.Validate(); err != nil {
		return nil, toolErr(err)
	}
	e, err := LoadProfile(o.Expect)
	if err != nil {
		return nil, err
	}
	o.Fleet.Expect = e
	var paths []string
	for _, in := range o.Inputs {
		found, err := reportPaths(in)
		if err != nil {
			return nil, toolErr(err)
		}
		paths = append(paths, found...)
	}
	if len(paths) == 0 {
		return nil, toolErr(errors.New("no report.json among the inputs"))
	}
	load := func(i int, buf []byte) ([]byte, string, error) {
		b, err := readInput(ctx, paths[i], MaxReportBytes, buf)
		if err == nil {
			// A report its dossier's SHA256SUMS does not vouch for (edited,
			// or of another run) is skipped, named; one with no manifest is
			// read (a copy of report.json alone, an interrupted run's).
			if merr := checkManifest(ctx, paths[i], b); merr != nil && !errors.Is(merr, errNoManifest) {
				return b, paths[i], merr
			}
		}
		return b, paths[i], err
	}
	fl := fleet.Read(len(paths), min(runtime.GOMAXPROCS(0), fleetWorkers), load, o.Fleet)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return fl, nil
}

// fleetWorkers bounds the reports read at once: each worker holds a report
// (up to MaxReportBytes) while it reads it, so memory must not grow with
// the cores (the review's D12: 16 workers, 1.8 GB).
const fleetWorkers = 4

// reportPaths is in itself when it is a file, its report.json when it is
// a dossier, else every report.json below it, sorted.
func reportPaths(in string) ([]string, error) {
	st, err := os.Stat(in)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{in}, nil
	}
	if _, err := os.Stat(filepath.Join(in, "report.json")); err == nil {
		return []string{filepath.Join(in, "report.json")}, nil
	}
	var out []string
	err = filepath.WalkDir(in, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "report.json" {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no report.json below it (gdrcheck run --out DIR writes one)", in)
	}
	slices.Sort(out)
	return out, nil
}

// The cluster report's files, written by gdrcheck fleet --out DIR.
const (
	FleetJSON = "fleet.json"
	FleetMD   = "fleet.md"
)

// FleetFiles are the cluster report's files: fleet.json (the envelope
// env, whose data is fl), fleet.md and fleet.html, each rendered in full
// before it is written.
// fleet.html, written into dir, links each node to the report.html
// beside its report.json.
func FleetFiles(dir string, env *report.Envelope, fl *fleet.Fleet) []FleetFile {
	return []FleetFile{
		{FleetJSON, func(w io.Writer) error { return report.WriteJSON(w, env) }},
		{FleetMD, fl.WriteMarkdown},
		{html.FleetHTML, func(w io.Writer) error { return html.RenderFleet(w, fl, env.Run, ReportLinks(dir)) }},
	}
}

// ReportLinks links a node's report (its report.json's path, as read) to
// the report.html beside it, relative to dir, where the page is: "" when
// there is no report.html there.
func ReportLinks(dir string) func(source string) string {
	base, err := filepath.Abs(dir)
	return func(source string) string {
		h := filepath.Join(filepath.Dir(source), html.ReportHTML)
		if err != nil || filepath.Base(source) != dossier.ReportJSON {
			return ""
		}
		if st, err := os.Stat(h); err != nil || !st.Mode().IsRegular() {
			return ""
		}
		abs, err := filepath.Abs(h)
		if err != nil {
			return ""
		}
		rel, err := filepath.Rel(base, abs)
		if err != nil {
			return ""
		}
		return filepath.ToSlash(rel)
	}
}

// FleetFile is one file of the cluster report and its renderer.
type FleetFile struct {
	Name   string
	Render func(io.Writer) error
}

// WriteFleet writes the cluster report's files into dir, each atomically
// (a temporary file renamed into place): an interrupted write leaves the
// previous file or the new one, never a torn one. An error names the file.
func WriteFleet(dir string, env *report.Envelope, fl *fleet.Fleet) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", dir, dossier.WithoutPath(err))
	}
	for _, f := range FleetFiles(dir, env, fl) {
		if _, err := dossier.WriteRendered(dir, f.Name, f.Render); err != nil {
			return err
		}
	}
	return nil
}
