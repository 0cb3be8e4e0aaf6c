package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/report/diff"
	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// DiffOptions are gdrcheck diff's: two reports (report.json, or a dossier
// folder holding one) and the noise model.
type DiffOptions struct {
	Old, New string
	Noise    diff.Options
}

// Diff reads both reports and compares them. An input that cannot be read
// or is not a gdrcheck.report/v1 document is a ToolError naming the file
// (and the line and field where the JSON says).
func Diff(ctx context.Context, o DiffOptions) (*diff.Diff, error) {
	if err := o.Noise.Validate(); err != nil {
		return nil, toolErr(err)
	}
	old, oldPath, err := LoadReport(ctx, o.Old)
	if err != nil {
		return nil, err
	}
	new, newPath, err := LoadReport(ctx, o.New)
	if err != nil {
		return nil, err
	}
	return diff.Compare(old, new, oldPath, newPath, o.Noise), nil
}

// LoadReport reads report.json at path, or in the dossier folder path, and
// returns it with the file's path: a regular file of at most
// MaxReportBytes, read while ctx lasts (an interrupt is ctx's cause).
func LoadReport(ctx context.Context, path string) (*dossier.Report, string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, path, toolErr(err)
	}
	if st.IsDir() {
		path = filepath.Join(path, "report.json")
	}
	b, err := readInput(ctx, path, MaxReportBytes, nil)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && st.IsDir() {
			return nil, path, toolErr(fmt.Errorf("%s: not a dossier (no report.json; gdrcheck run --out DIR writes one)", filepath.Dir(path)))
		}
		if ctx.Err() != nil {
			return nil, path, context.Cause(ctx)
		}
		return nil, path, toolErr(err)
	}
	r, err := dossier.Decode(bytes.NewReader(b))
	if err != nil {
		if pe, ok := textio.JSONErrorIn(path, b, err); ok {
			return nil, path, toolErr(pe)
		}
		return nil, path, toolErr(fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "report.json: ")))
	}
	return r, path, nil
}
