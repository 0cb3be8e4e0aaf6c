// Package snapshot captures what gdrcheck reads on a host (sysfs and procfs
// files, captured command outputs, the driver's GPU facts) into a directory
// or a .tgz, and opens such captures as a machine.Root so every command can run
// on them with --root.
//
// What to capture is not a hand-kept list: the caller runs its readers
// (discovery, checks) over a recording root, and Write copies exactly the
// paths they touched, plus the outputs of the commands they ran.
package snapshot

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/gdrcheck/gdrcheck/internal/facts/gpu"
	"github.com/gdrcheck/gdrcheck/internal/machine"
)

// MaxFileSize bounds one captured file.
const MaxFileSize = 4 << 20

// Manifest is written at the top of every snapshot.
type Manifest struct {
	Format    int             `json:"format"`
	CreatedAt time.Time       `json:"created_at"`
	Hostname  string          `json:"hostname,omitempty"`
	Tool      string          `json:"tool"`
	Files     int             `json:"files"`
	Links     int             `json:"links"`
	Skipped   []string        `json:"skipped,omitempty"`
	Commands  []CommandStatus `json:"commands"`
	Errors    []string        `json:"errors,omitempty"`
	// LeftOut says what of the host was left out on purpose (Options.LeftOut).
	LeftOut []string `json:"left_out,omitempty"`
	// Redacted names the classes of identifiers replaced by pseudonyms
	// (Options.Redacted); empty when the snapshot is not redacted.
	Redacted []string `json:"redacted,omitempty"`
}

// CommandStatus records one captured command.
type CommandStatus struct {
	Key     string `json:"key"`
	Command string `json:"command"`
	Error   string `json:"error,omitempty"`
}

// skipNames are sysfs files never read into a snapshot: huge (BARs, ROM),
// or with side effects on read or write (remove, reset, bind...).
var skipNames = map[string]bool{
	"rom": true, "remove": true, "reset": true, "rescan": true, "bind": true, "unbind": true,
	"new_id": true, "remove_id": true, "uevent_trigger": true,
}

// Skip reports whether a file must never be captured.
func Skip(rel string) bool {
	base := path.Base(rel)
	if skipNames[base] {
		return true
	}
	if strings.HasPrefix(base, "resource") && path.Dir(rel) != "proc" {
		return true
	}
	if strings.HasPrefix(rel, "proc/kcore") || strings.HasPrefix(rel, "proc/kmsg") || strings.HasSuffix(rel, "/pagemap") {
		return true
	}
	return false
}

// Options for Write.
type Options struct {
	Tool string // tool name and version for the manifest
	// Commands are run (live) and captured in addition to those the
	// recorder saw.
	Commands []machine.Command
	// Facts are the driver facts to store as commands/nvml.json (nil: not stored).
	Facts    *gpu.Facts
	FactsErr error
	// Extra are more files to store under commands/ (name -> content; a
	// path such as EnvironFile is stored under its base name).
	Extra map[string][]byte

	// Transform, when set, rewrites the content of every file before it
	// is written (rel is the file's path in the snapshot: "proc/cmdline",
	// "commands/dmesg.txt", ...); the manifest's host name is the
	// transform of HostnameFile. LeftOut and Redacted go to the manifest
	// as they are. See sysinfo.ForSharing and snapshot/redact.
	Transform func(rel string, b []byte) []byte
	LeftOut   []string
	Redacted  []string
	// Replace lets an archive out that exists be replaced (snapshot
	// --force); without it an existing file is refused before the capture.
	Replace bool
}

// HostnameFile is where a host's name is read from.
const HostnameFile = "proc/sys/kernel/hostname"

func (o *Options) transform(rel string, b []byte) []byte {
	if o.Transform == nil {
		return b
	}
	return o.Transform(rel, b)
}

// Write copies every path rec saw under src (the live root) to out: a
// directory, or a .tgz/.tar.gz file. Either appears whole or not at all:
// the capture is made in a temporary directory beside out (never in
// TMPDIR) and renamed into place, or packed into an archive that
// replaces out atomically. A directory out must not exist or be empty;
// one that holds anything is refused, never mixed with the new capture.
// When ctx ends before the capture is complete (Ctrl-C, SIGTERM, the
// deadline) nothing is published and the error wraps ctx's.
func Write(ctx context.Context, src machine.Root, rec *machine.Recorder, out string, o Options) (*Manifest, error) {
	src = src.WithContext(ctx)
	out = filepath.Clean(out) // "snap/" is the directory snap, beside which the capture is made
	if err := CheckOut(out, o.Replace); err != nil {
		return nil, err
	}
	archive := isArchive(out)
	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".partial-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	m, err := writeDir(ctx, src, rec, tmp, o)
	if err != nil {
		return m, err
	}
	if err := interrupted(ctx); err != nil {
		return m, err
	}
	if archive {
		return m, packTGZ(ctx, tmp, out)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return m, err
	}
	// An empty directory is replaced; os.Remove fails if something was
	// put into it meanwhile.
	if err := os.Remove(out); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return m, fmt.Errorf("%s: %w", out, err)
	}
	return m, os.Rename(tmp, out)
}

// ErrInterrupted means a capture ended before it was complete and was
// not written.
var ErrInterrupted = errors.New("snapshot not written: the capture did not finish")

// interrupted is ErrInterrupted with ctx's reason, or nil while ctx runs.
func interrupted(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w (%w)", ErrInterrupted, err)
	}
	return nil
}

// emptyOrMissing refuses an output directory that already holds something
// (an older snapshot would be mixed with the new one).
func emptyOrMissing(out string) error {
	f, err := os.Open(out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory; write a snapshot directory to a new path, or a .tgz", out)
	}
	if names, _ := f.Readdirnames(1); len(names) > 0 {
		return fmt.Errorf("%s is not empty: a snapshot directory is written to a new or empty directory, never over another (remove it first, or choose another path)", out)
	}
	return nil
}

// CheckOut says, before anything is captured, whether out can take a
// snapshot: a .tgz/.tar.gz/.tar file that does not exist (or replace, to
// replace it), or a directory that is new or empty. A name that looks
// like another archive format (snap.zip, snap.tar.zst) is refused rather
// than made a directory of that name.
func CheckOut(out string, replace bool) error {
	out = filepath.Clean(out)
	if !isArchive(out) {
		if ext := otherArchive(out); ext != "" {
			return fmt.Errorf("%s: a %s archive is not a format gdrcheck writes: give a .tgz (or .tar.gz, .tar) file, or a directory", out, ext)
		}
		return emptyOrMissing(out)
	}
	fi, err := os.Lstat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not an archive: choose another name", out)
	case !replace:
		return fmt.Errorf("%s exists: gdrcheck does not replace it unless told to (--force), or choose another name", out)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s exists and is not a regular file (%s): not replaced", out, fi.Mode().Type())
	}
	return nil
}

// otherArchive is the archive suffix of p gdrcheck does not write ("" none).
func otherArchive(p string) string {
	base := strings.ToLower(filepath.Base(p))
	for _, ext := range []string{".zip", ".tar.xz", ".tar.zst", ".tar.bz2", ".txz", ".tbz2", ".tbz", ".tzst", ".7z", ".rar", ".xz", ".zst", ".bz2", ".gz"} {
		if strings.HasSuffix(base, ext) && len(base) > len(ext) {
			return ext
		}
	}
	return ""
}

func isArchive(p string) bool {
	return strings.HasSuffix(p, ".tgz") || strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tar")
}

// writeDir writes the capture into the directory out, which exists.
func writeDir(ctx context.Context, src machine.Root, rec *machine.Recorder, out string, o Options) (*Manifest, error) {
	m := &Manifest{Format: Format, CreatedAt: time.Now().UTC(), Tool: o.Tool, LeftOut: o.LeftOut, Redacted: o.Redacted}
	if h, err := src.ReadString(HostnameFile); err == nil {
		m.Hostname = strings.TrimSpace(string(o.transform(HostnameFile, []byte(h))))
	}
	for _, e := range rec.Entries() {
		if err := interrupted(ctx); err != nil {
			return m, err
		}
		rel := e.Path
		if Skip(rel) {
			m.Skipped = append(m.Skipped, rel)
			continue
		}
		if err := copyEntry(src, out, rel, e.Read, m, o.transform); err != nil {
			m.Errors = append(m.Errors, err.Error())
		}
	}
	cmds := map[string]bool{}
	write := func(c machine.Command, b []byte, err error) {
		cmds[c.Key] = true
		st := CommandStatus{Key: c.Key, Command: c.String()}
		if err != nil {
			st.Error = err.Error()
		}
		m.Commands = append(m.Commands, st)
		// A failed command's output is kept only if it printed something;
		// the error stays in the manifest.
		if err == nil || len(b) > 0 {
			if werr := writeFile(filepath.Join(out, filepath.FromSlash(CommandFile(c))), o.transform(CommandFile(c), b)); werr != nil {
				m.Errors = append(m.Errors, werr.Error())
			}
		}
	}
	for _, co := range rec.Commands() {
		write(co.Command, co.Output, co.Err)
	}
	for _, c := range o.Commands {
		if cmds[c.Key] {
			continue
		}
		if err := interrupted(ctx); err != nil {
			return m, err
		}
		b, err := machine.RunLive(ctx, c)
		write(c, b, err)
	}
	if o.Facts != nil {
		b, err := json.MarshalIndent(o.Facts, "", "  ")
		if err == nil {
			err = writeFile(filepath.Join(out, filepath.FromSlash(FactsFile)), o.transform(FactsFile, b))
		}
		if err != nil {
			m.Errors = append(m.Errors, err.Error())
		}
	} else if o.FactsErr != nil {
		m.Errors = append(m.Errors, "GPU facts: "+o.FactsErr.Error())
	}
	for name, b := range o.Extra {
		if err := writeFile(filepath.Join(out, CommandsDir, filepath.Base(name)), o.transform(CommandsDir+"/"+filepath.Base(name), b)); err != nil {
			m.Errors = append(m.Errors, err.Error())
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, err
	}
	return m, writeFile(filepath.Join(out, ManifestFile), b)
}

func writeFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

// copyEntry recreates one path: links as links, directories as
// directories, regular files with their content (bounded) when they were
// read, empty when they were only seen in a listing.
func copyEntry(src machine.Root, out, rel string, read bool, m *Manifest, transform func(string, []byte) []byte) error {
	dp := filepath.Join(out, filepath.FromSlash(rel))
	fi, err := src.Lstat(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dp), 0o755); err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := src.Readlink(rel)
		if err != nil {
			return err
		}
		if _, err := os.Lstat(dp); err == nil {
			return nil
		}
		m.Links++
		return os.Symlink(t, dp)
	case fi.IsDir():
		return os.MkdirAll(dp, 0o755)
	case fi.Mode().IsRegular():
		if _, err := os.Lstat(dp); err == nil {
			return nil
		}
		if !read {
			return os.WriteFile(dp, nil, 0o644)
		}
		b, err := src.ReadFileLimit(rel, MaxFileSize)
		if err != nil {
			// Unreadable files (permissions, EIO on a dead device) are
			// skipped; the manifest says so.
			m.Skipped = append(m.Skipped, rel+": "+err.Error())
			return nil
		}
		m.Files++
		return os.WriteFile(dp, transform(rel, b), 0o644)
	}
	return nil
}

// packTGZ writes dir as a gzip'd tar at out, atomically; nothing is
// published once ctx has ended.
func packTGZ(ctx context.Context, dir, out string) error {
	t, err := renameio.NewPendingFile(out, renameio.WithPermissions(0o644))
	if err != nil {
		return err
	}
	defer t.Cleanup()
	var w io.Writer = t
	var gz *gzip.Writer
	if !strings.HasSuffix(out, ".tar") {
		gz = gzip.NewWriter(t)
		w = gz
	}
	tw := tar.NewWriter(w)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := interrupted(ctx); err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname, hdr.Uid, hdr.Gid = "", "", 0, 0
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			return err
		}
	}
	if err := interrupted(ctx); err != nil {
		return err
	}
	return t.CloseAtomicallyReplace()
}
