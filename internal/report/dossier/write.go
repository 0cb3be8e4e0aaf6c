package dossier

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/google/renameio/v2"
)

// ArtifactKind names what a raw file is, from its name.
func ArtifactKind(rel string) string {
	base := path.Base(rel)
	switch {
	case strings.HasPrefix(base, "nccl-debug."):
		return "nccl-log"
	case base == "nccl-topo.xml":
		return "nccl-topo"
	case base == "nccl-graph.xml":
		return "nccl-graph"
	case base == "results.json":
		return "bench-results"
	case base == "burn.json":
		return "burn"
	case strings.Contains(rel, "/burn/samples/"):
		return "burn-sample"
	}
	return "tool-output"
}

// Artifacts lists every regular file under dir/raw with its digest, by
// path relative to dir. A missing raw folder is no artifact.
func Artifacts(dir string) ([]Artifact, error) {
	out := []Artifact{}
	root := filepath.Join(dir, RawDir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && os.IsNotExist(err) {
				return filepath.SkipDir
			}
			return err
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), ".") {
			return nil // renameio's temporary files start with a dot
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		n, err := io.Copy(h, f)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		out = append(out, Artifact{Name: path.Base(rel), Path: rel, Kind: ArtifactKind(rel), Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))})
		return nil
	})
	sortArtifacts(out)
	return out, err
}

// LockFile is the dossier's lock, taken by the run that writes it (hidden:
// it is not one of the dossier's files, and SHA256SUMS does not list it).
const LockFile = ".gdrcheck.lock"

// Lock takes the lock of the dossier in dir (an advisory flock on
// dir/LockFile) for as long as the returned Closer stays open. A dossier
// another process is writing is refused at once: two runs writing one
// folder would leave files of both under a SHA256SUMS that matches
// neither.
func Lock(dir string) (io.Closer, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot take the dossier's lock %s: %w", LockFile, WithoutPath(err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errors.New("another gdrcheck run is writing this dossier (it holds " + LockFile + "): wait for it to end, or give another folder")
		}
		return nil, fmt.Errorf("cannot take the dossier's lock %s: %w", LockFile, err)
	}
	return f, nil
}

// WriteDir writes the dossier into dir: report.json, then each of files,
// then SHA256SUMS over all of them and the artifacts, last (the old one
// removed first), so that a manifest present means a dossier whole. Every file is written
// atomically (a temporary file renamed into place): a reader, or a run
// killed mid-write, sees the old file or the new one, never a torn one.
// r.Artifacts is refreshed from dir/raw first. Errors name the file.
func WriteDir(dir string, r *Report, files []File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot make the directory: %w", WithoutPath(err))
	}
	// The old manifest goes first: while the files change, none claims them.
	if err := os.Remove(filepath.Join(dir, Sums)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("cannot remove %s: %w", filepath.Join(dir, Sums), WithoutPath(err))
	}
	arts, err := Artifacts(dir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", filepath.Join(dir, RawDir), err)
	}
	r.Artifacts = arts
	var sums strings.Builder
	write := func(name string, render func(io.Writer) error) error {
		b, err := WriteRendered(dir, name, render)
		if err == nil {
			sums.WriteString(SumLine(name, b))
		}
		return err
	}
	if err := write(ReportJSON, r.WriteJSON); err != nil {
		return err
	}
	for _, f := range files {
		if err := write(f.Name, func(w io.Writer) error { return f.Render(w, r) }); err != nil {
			return err
		}
	}
	for _, a := range arts {
		sums.WriteString(a.SHA256 + "  " + a.Path + "\n")
	}
	if err := renameio.WriteFile(filepath.Join(dir, Sums), []byte(sums.String()), 0o644); err != nil {
		return fmt.Errorf("cannot write %s: %w", filepath.Join(dir, Sums), WithoutPath(err))
	}
	return nil
}

// WriteRendered renders a file in full and writes it into dir
// atomically (a temporary file renamed into place); it returns the bytes
// written. Errors name the file.
func WriteRendered(dir, name string, render func(io.Writer) error) ([]byte, error) {
	var b bytes.Buffer
	if err := render(&b); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", name, err)
	}
	if err := renameio.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", filepath.Join(dir, name), WithoutPath(err))
	}
	return b.Bytes(), nil
}

// WithoutPath is a file-system error without the path it names (for
// renameio, a hidden temporary file nobody asked for).
func WithoutPath(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// CheckOut says, before a run does any work, whether dir can take its
// dossier: a folder that does not exist yet (made later) under a parent
// this process can write, or an empty folder. A folder that holds a
// dossier (report.json) or anything else is replaced only when replace
// (run --force): a rerun must not silently overwrite the evidence of the
// last one, nor mix its files into someone else's folder. Errors do not
// repeat dir (the caller names it).
func CheckOut(dir string, replace bool) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		// The nearest existing ancestor must be a folder we can write.
		p := filepath.Dir(filepath.Clean(dir))
		for {
			st, err := os.Stat(p)
			if err == nil {
				if !st.IsDir() {
					return fmt.Errorf("%s is not a folder", p)
				}
				if syscall.Access(p, 2 /* W_OK */) != nil {
					return fmt.Errorf("cannot make the folder: %s is not writable", p)
				}
				return nil
			}
			if !(errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) || filepath.Dir(p) == p {
				return WithoutPath(err)
			}
			p = filepath.Dir(p)
		}
	}
	if err != nil {
		return WithoutPath(err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("exists and is not a folder (%s): a dossier is a folder", fileType(fi.Mode()))
	}
	if syscall.Access(dir, 2 /* W_OK */) != nil {
		return errors.New("the folder is not writable")
	}
	names, err := readNames(dir)
	if err != nil {
		return WithoutPath(err)
	}
	// The lock a run leaves is ours, not content.
	names = slices.DeleteFunc(names, func(n string) bool { return n == LockFile })
	if len(names) == 0 || replace {
		return nil
	}
	if slices.Contains(names, ReportJSON) {
		return errors.New("holds a dossier already (report.json): --force replaces it, or give another folder")
	}
	return fmt.Errorf("holds %d files that are not a gdrcheck dossier (%s): --force writes the dossier among them, or give a new or empty folder", len(names), strings.Join(names[:min(3, len(names))], ", "))
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

func fileType(m fs.FileMode) string {
	if m&fs.ModeSymlink != 0 {
		return "a symbolic link"
	}
	if m.IsRegular() {
		return "a file"
	}
	return m.Type().String()
}
