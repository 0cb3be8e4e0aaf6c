package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/report/diff"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// DiffOptions are gdrcheck diff's: two reports (report.json, or a dossier
// folder holding one) and the noise model.
type DiffOptions struct {
	Old, New string
	Noise    diff.Options
	// Warn receives what the reports' manifests could not vouch for (a
	// report with no SHA256SUMS beside it); nil: not said.
	Warn io.Writer
}

// Diff reads both reports and compares them. An input that cannot be read
// or is not a gdrcheck.report/v1 document is a ToolError naming the file
// (and the line and field where the JSON says).
func Diff(ctx context.Context, o DiffOptions) (*diff.Diff, error) {
	if err := o.Noise.Validate(); err != nil {
		return nil, toolErr(err)
	}
	old, oldPath, oldAlone, err := loadReport(ctx, o.Old)
	if err != nil {
		return nil, err
	}
	new, newPath, newAlone, err := loadReport(ctx, o.New)
	if err != nil {
		return nil, err
	}
	for _, x := range []struct {
		path  string
		alone bool
	}{{oldPath, oldAlone}, {newPath, newAlone}} {
		if x.alone && o.Warn != nil {
			fmt.Fprintf(o.Warn, "gdrcheck: warning: %s: %v\n", printable.Line(x.path), errNoManifest)
		}
	}
	return diff.Compare(old, new, oldPath, newPath, o.Noise), nil
}

// LoadReport reads report.json at path, or in the dossier folder path, and
// returns it with the file's path: a regular file of at most
// MaxReportBytes, read while ctx lasts (an interrupt is ctx's cause),
// that matches its dossier's SHA256SUMS where there is one.
func LoadReport(ctx context.Context, path string) (*dossier.Report, string, error) {
	r, path, _, err := loadReport(ctx, path)
	return r, path, err
}

// loadReport is LoadReport; alone says the report has no SHA256SUMS to
// vouch for it.
func loadReport(ctx context.Context, path string) (_ *dossier.Report, _ string, alone bool, _ error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, path, false, toolErr(err)
	}
	if st.IsDir() {
		path = filepath.Join(path, "report.json")
	}
	b, err := readInput(ctx, path, MaxReportBytes, nil)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && st.IsDir() {
			return nil, path, false, toolErr(fmt.Errorf("%s: not a dossier (no report.json; gdrcheck run --out DIR writes one)", filepath.Dir(path)))
		}
		if ctx.Err() != nil {
			return nil, path, false, context.Cause(ctx)
		}
		return nil, path, false, toolErr(err)
	}
	switch err := checkManifest(ctx, path, b); {
	case errors.Is(err, errNoManifest):
		alone = true
	case ctx.Err() != nil:
		return nil, path, false, context.Cause(ctx)
	case err != nil:
		// Not the run's own: what it claims was not proven by the run.
		return nil, path, false, toolErr(fmt.Errorf("%s: %w", filepath.Dir(path), err))
	}
	r, err := dossier.Decode(bytes.NewReader(b))
	if err != nil {
		if pe, ok := textio.JSONErrorIn(path, b, err); ok {
			return nil, path, false, toolErr(pe)
		}
		return nil, path, false, toolErr(fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "report.json: ")))
	}
	return r, path, alone, nil
}
