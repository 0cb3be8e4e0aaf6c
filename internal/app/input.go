package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gdrcheck/gdrcheck/internal/report/dossier"
)

// The files the commands that read results take as input (report.json
// for diff and fleet, a hostfile, a campaign's files) are opened through
// here: only a regular file (a FIFO would block for ever, a device never
// end), opened without blocking so that a FIFO is refused rather than
// waited on; read at most up to a bound; and the read stops when the
// command's context ends (the first SIGINT or SIGTERM).

// openInput opens path for reading, refusing anything but a regular file.
func openInput(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, fileKind(st.Mode()))
	}
	return f, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a folder"
	}
	return m.Type().String()
}

// readInput reads the regular file path whole into buf (reused when large
// enough): more than max bytes is an error, and so is ctx ending.
func readInput(ctx context.Context, path string, max int64, buf []byte) ([]byte, error) {
	f, err := openInput(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A regular file says its size: past the bound it is refused unread
	// (a hostile 64 MiB report cost a 64 MiB buffer and its reading);
	// within it, one buffer of that size and no regrowing, which for a
	// report of tens of MiB cost more than reading it. The read still
	// stops at the bound if the file grows meanwhile.
	if st, err := f.Stat(); err == nil {
		if st.Mode().IsRegular() && st.Size() > max {
			return nil, tooLarge(path, max) // said without reading it
		}
		if want := min(st.Size(), max) + 1; int64(cap(buf)) < want {
			buf = make([]byte, 0, want)
		}
	}
	return readAllBounded(ctx, f, path, max, buf)
}

// readAllBounded reads r to its end into buf: at most max bytes, while ctx
// lasts.
func readAllBounded(ctx context.Context, r io.Reader, name string, max int64, buf []byte) ([]byte, error) {
	b := buf[:0]
	lr := io.LimitReader(ctxReader{ctx, r}, max+1)
	for int64(len(b)) <= max { // one byte past the bound says enough
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(len(b)) > max {
		return nil, tooLarge(name, max)
	}
	return b, nil
}

// tooLarge is the refusal of an input past the bound.
func tooLarge(name string, max int64) error {
	return fmt.Errorf("%s: more than %d MiB: not a file this command reads", name, max>>20)
}

// ctxReader stops reading when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

// chunk bounds one read, so that an interrupt is seen within one.
const chunk = 1 << 20

func (c ctxReader) Read(p []byte) (int, error) {
	if err := context.Cause(c.ctx); err != nil {
		return 0, err
	}
	if len(p) > chunk {
		p = p[:chunk]
	}
	return c.r.Read(p)
}

// inputFS is the folder dir as a file system whose files are opened like
// openInput and read while ctx lasts (fleet plan --next's round folder).
type inputFS struct {
	ctx context.Context
	dir string
}

func (x inputFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := openInput(filepath.Join(x.dir, filepath.FromSlash(name)))
	if err != nil {
		return nil, err
	}
	return inputFile{f, ctxReader{x.ctx, f}}, nil
}

type inputFile struct {
	*os.File
	r ctxReader
}

func (f inputFile) Read(p []byte) (int, error) { return f.r.Read(p) }

// errNoManifest is a report.json with no SHA256SUMS beside it: not known
// to be a whole dossier (an interrupted run writes none; a lone copy has
// none).
var errNoManifest = errors.New("no " + dossier.Sums + " beside it: not known to be a whole dossier")

// checkManifest checks report b, read from path, against the SHA256SUMS of
// its dossier: nil when it matches, errNoManifest when there is none (or
// path is not a dossier's report.json), else why it does not match.
func checkManifest(ctx context.Context, path string, b []byte) error {
	if filepath.Base(path) != dossier.ReportJSON {
		return errNoManifest
	}
	sums, err := readInput(ctx, filepath.Join(filepath.Dir(path), dossier.Sums), maxManifestBytes, nil)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errNoManifest
	case err != nil:
		return err
	}
	return dossier.CheckSum(sums, dossier.ReportJSON, b)
}

// maxManifestBytes bounds SHA256SUMS: a line per file, tens of thousands
// of files.
const maxManifestBytes = 16 << 20
