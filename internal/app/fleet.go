package app

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/gdrcheck/gdrcheck/internal/report/fleet"
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
func Fleet(o FleetOptions) (*fleet.Fleet, error) {
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
		b, err := readBounded(paths[i], buf)
		return b, paths[i], err
	}
	return fleet.Read(len(paths), runtime.GOMAXPROCS(0), load, o.Fleet), nil
}

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

// readBounded reads path into buf (reused when large enough), refusing a
// file larger than MaxReportBytes.
func readBounded(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := bytes.NewBuffer(buf[:0])
	if _, err := b.ReadFrom(io.LimitReader(f, MaxReportBytes+1)); err != nil {
		return nil, err
	}
	if b.Len() > MaxReportBytes {
		return nil, fmt.Errorf("more than %d bytes: not a report", MaxReportBytes)
	}
	return b.Bytes(), nil
}
