package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/testutil/ansitest"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
	"github.com/gdrcheck/gdrcheck/internal/testutil/long"
)

// The adversarial suite (issue 12; docs/adversarial.md): every command
// that reads a root, run in-process on every case of
// testdata/adversarial, as a directory and as a .tgz, and analyze on every
// log sample of testdata/adversarial/logs.
const advDir = repo + "/testdata/adversarial"

const (
	// advCommandLimit bounds one command's wall time. Generous: the two
	// cores of CI are shared, and the point is "ends", not "is fast".
	advCommandLimit = 30 * time.Second
	// advAllocCeiling bounds what one command allocates, and
	// advCaseAllocCeiling what all of a case's commands allocate, in total
	// (runtime.MemStats.TotalAlloc: the bombs of the review allocate
	// gigabytes). Cases run in parallel, so a figure measured is an upper
	// bound of the command's or case's own.
	advAllocCeiling     = 512 << 20
	advCaseAllocCeiling = 2 << 30
)

// advKnown are the cases that fail on this tree because of a defect
// another piece of work fixes: the finding of the reliability review, and
// what fixes it. The coordinator removes an entry once that work is in.
var advKnown = map[string]string{}

// advSection is one "-- NAME --" part of a case file (the txtar format:
// a comment, then sections up to the next "-- NAME --" line).
type advSection struct {
	name string
	data string
}

// parseAdv splits a case file into its comment and its sections.
func parseAdv(b string) (string, []advSection) {
	var comment strings.Builder
	var secs []advSection
	for line := range strings.Lines(b) {
		l := strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(l, "-- ") && strings.HasSuffix(l, " --") && len(l) > 6 {
			secs = append(secs, advSection{name: strings.TrimSpace(l[3 : len(l)-3])})
			continue
		}
		if len(secs) == 0 {
			comment.WriteString(line)
		} else {
			secs[len(secs)-1].data += line
		}
	}
	return comment.String(), secs
}

// advWorld is a materialised case: the root, and next to it (outside the
// root) canary.txt, whose content must never appear in any output.
type advWorld struct {
	top, root, canary string
}

// materialiseAdv writes a case under a fresh directory. The host is the
// case's "host" section, or base.host; the other sections change it:
//
//	-- PATH --             write the file (replacing what is there)
//	-- quoted PATH --      write the Go-quoted string (control bytes)
//	-- repeat N PATH --    write the content N times
//	-- append N PATH --    add the content N times at the end
//	-- zeros N PATH --     write N zero bytes (as read from /dev/zero)
//	-- entries N DIR --    make N files DIR/eI holding the content
//	-- link PATH --        a symbolic link to the content (trimmed)
//	-- fifo PATH --        a named pipe (git cannot store one)
//	-- dir PATH --         an empty directory
//	-- remove PATH --      remove what is there
//	-- unreadable PATH --  mode 000 (root still reads it)
//	-- copy PATH --        copy the file the content names (relative to
//	                       the repository)
//	-- edit PATH --        replace in the file: each line of the content
//	                       is OLD, a tab, NEW (literal; JSON's \u escapes
//	                       put control characters in a report)
//
// A PATH holding a backslash is read as the inside of a Go string: \x1b
// puts an escape byte in a file name.
// In contents and link targets, $TOP is the directory holding the root
// and the canary, $CANARY the canary's path.
func materialiseAdv(t *testing.T, name string, secs []advSection) advWorld {
	t.Helper()
	top := t.TempDir()
	w := advWorld{top: top, root: filepath.Join(top, "root"), canary: "CANARY-CONTENT-" + strings.ToUpper(strconv.FormatUint(uint64(len(name))*0x9e3779b97f4a7c15, 36))}
	if err := os.WriteFile(filepath.Join(top, "canary.txt"), []byte(w.canary+"\n0-3\n0x10de\nActive\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	host := ""
	for _, s := range secs {
		if s.name == "host" {
			host = s.data
		}
	}
	var spec *fakehost.Spec
	var err error
	if host == "" {
		spec, err = fakehost.Load(advDir + "/base.host")
	} else {
		spec, err = fakehost.Parse(name, strings.NewReader(host))
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Materialize(w.root); err != nil {
		t.Fatal(err)
	}
	expand := strings.NewReplacer("$TOP", top, "$CANARY", filepath.Join(top, "canary.txt")).Replace
	for _, s := range secs {
		if s.name == "host" {
			continue
		}
		if err := w.apply(s.name, expand(s.data)); err != nil {
			t.Fatalf("%s: section %q: %v", name, s.name, err)
		}
	}
	return w
}

func (w advWorld) apply(name, data string) error {
	op, rest, _ := strings.Cut(name, " ")
	count := 0
	switch op {
	case "repeat", "append", "entries", "zeros":
		n, p, _ := strings.Cut(rest, " ")
		var err error
		if count, err = strconv.Atoi(n); err != nil {
			return err
		}
		rest = p
	case "quoted", "link", "fifo", "dir", "remove", "unreadable", "copy", "edit":
	default:
		op, rest = "file", name
	}
	if strings.Contains(rest, `\`) { // a name holding control bytes, Go-escaped
		u, err := strconv.Unquote(`"` + rest + `"`)
		if err != nil {
			return err
		}
		rest = u
	}
	p := filepath.Join(w.root, rest)
	if op != "unreadable" && op != "entries" && op != "append" && op != "edit" {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	if op != "remove" && op != "unreadable" {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
	}
	switch op {
	case "file":
		return os.WriteFile(p, []byte(data), 0o644)
	case "quoted":
		s, err := strconv.Unquote(strings.TrimSpace(data))
		if err != nil {
			return err
		}
		return os.WriteFile(p, []byte(s), 0o644)
	case "repeat":
		return os.WriteFile(p, bytes.Repeat([]byte(data), count), 0o644)
	case "append":
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(bytes.Repeat([]byte(data), count))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case "zeros":
		return os.WriteFile(p, make([]byte, count), 0o644)
	case "entries":
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		for i := range count {
			if err := os.WriteFile(filepath.Join(p, fmt.Sprintf("e%d", i)), []byte(data), 0o644); err != nil {
				return err
			}
		}
	case "link":
		return os.Symlink(strings.TrimSpace(data), p)
	case "fifo":
		return syscall.Mkfifo(p, 0o644)
	case "dir":
		return os.MkdirAll(p, 0o755)
	case "unreadable":
		return os.Chmod(p, 0)
	case "copy":
		b, err := os.ReadFile(filepath.Join(repo, strings.TrimSpace(data)))
		if err != nil {
			return err
		}
		return os.WriteFile(p, b, 0o644)
	case "edit":
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for line := range strings.Lines(data) {
			from, to, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
			if !ok {
				return fmt.Errorf("edit line %q: want OLD, a tab, NEW", line)
			}
			if !bytes.Contains(b, []byte(from)) {
				return fmt.Errorf("edit: %q is not in %s", from, rest)
			}
			b = bytes.ReplaceAll(b, []byte(from), []byte(to))
		}
		return os.WriteFile(p, b, 0o644)
	}
	return nil
}

// archive writes the root as a .tgz: links stay links, named pipes are
// FIFO entries, files that cannot be read are left out.
func (w advWorld) archive(t *testing.T) string {
	t.Helper()
	p := filepath.Join(w.top, "root.tgz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(w.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == w.root {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		var data []byte
		if fi.Mode().IsRegular() {
			if data, err = os.ReadFile(path); err != nil {
				return nil
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(w.root, path)
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	for _, c := range []io.Closer{tw, zw, f} {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// advResult is what one command did.
type advResult struct {
	out, errs string
	code      int
	panicked  any
	stack     []byte
	alloc     uint64 // bytes allocated while it ran (TotalAlloc)
}

// runAdv runs the command line in-process under advCommandLimit.
func runAdv(t *testing.T, args ...string) advResult {
	t.Helper()
	done := make(chan advResult, 1)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	go func() {
		var r advResult
		defer func() {
			if p := recover(); p != nil {
				r.panicked, r.stack = p, debug.Stack()
			}
			done <- r
		}()
		var out, errb bytes.Buffer
		r.code = execute(args, &out, &errb, testSession(args), liveRoot)
		r.out, r.errs = out.String(), errb.String()
	}()
	select {
	case r := <-done:
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		r.alloc = after.TotalAlloc - before.TotalAlloc
		return r
	case <-time.After(advCommandLimit):
		t.Fatalf("%q did not end within %s", args, advCommandLimit)
		return advResult{}
	}
}

// checkAdv asserts what every command on hostile input must do: end
// without a panic, exit 0, 1 or 2, print no control bytes, and never show
// the canary.
func checkAdv(t *testing.T, canary string, r advResult, args []string) {
	t.Helper()
	what := fmt.Sprintf("%q", args)
	if r.panicked != nil {
		t.Fatalf("%s panicked: %v\n%s", what, r.panicked, r.stack)
	}
	for _, s := range []string{r.out, r.errs} {
		if strings.Contains(s, "panic:") || strings.Contains(s, "goroutine ") {
			t.Errorf("%s printed a panic:\n%.3000s", what, s)
		}
		if canary != "" && strings.Contains(s, canary) {
			t.Errorf("%s printed the canary, read from outside the root:\n%.3000s", what, s)
		}
	}
	notJudged := len(args) > 0 && args[0] == "analyze" && r.code == ExitNotJudged // an input not recognised
	if r.code != ExitOK && r.code != ExitFailed && r.code != ExitToolErr && !notJudged {
		t.Errorf("%s: exit %d: %.2000s", what, r.code, r.errs)
	}
	if r.alloc > advAllocCeiling {
		t.Errorf("%s allocated %d MiB, over the ceiling of %d MiB", what, r.alloc>>20, advAllocCeiling>>20)
	}
	if r.code == ExitToolErr && strings.TrimSpace(r.errs) == "" {
		t.Errorf("%s: exit 2 without a message", what)
	}
	ansitest.Clean(t, what+": stdout", r.out)
	ansitest.Clean(t, what+": stderr", r.errs)
}

// noCanaryIn fails the test when a file under dir (or the file dir, a
// .tgz read through gzip) holds the canary.
func noCanaryIn(t *testing.T, canary, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		if strings.HasSuffix(path, ".tgz") {
			if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
				if u, err := io.ReadAll(io.LimitReader(zr, 256<<20)); err == nil {
					b = u
				}
			}
		}
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s holds the canary, read from outside the root", path)
		}
		return nil
	})
}

// everyFormat are the cases whose directory root is also run in every
// output format: those whose damage reaches the renderers (escape
// sequences, garbage text). The other cases damage what discovery and
// collection read, which every format prints alike, so one text and one
// JSON form of each command judge them (the suite stays fast);
// TestHostileInputPrintsEscaped runs every format on planted escapes.
var everyFormat = map[string]bool{"escape-sequences": true, "garbage-attributes": true, "nvml-phantoms": true}

// advCommands are the commands run on a root; out is a fresh directory.
// every adds the other output formats.
func advCommands(root, out string, everyFormat bool) [][]string {
	cmds := [][]string{
		{"topo", "--format", "json"}, {"check"},
		{"run", "--out", filepath.Join(out, "run")},
		{"model"},
		{"snapshot", "-o", filepath.Join(out, "again.tgz")},
	}
	if everyFormat {
		cmds = append(cmds, []string{"topo"}, []string{"topo", "--pcie"},
			[]string{"check", "--format", "md"}, []string{"check", "--format", "junit"}, []string{"check", "--format", "json"})
	}
	for i := range cmds {
		cmds[i] = append(cmds[i], "--root", root)
	}
	return cmds
}

// eachAdv runs test, in parallel, on every case file in the folder sub
// ("" or "logs/") of testdata/adversarial, skipping those in advKnown.
func eachAdv(t *testing.T, sub string, test func(t *testing.T, name string, secs []advSection)) {
	cases, err := filepath.Glob(advDir + "/" + sub + "*.txtar")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases in %s/%s: %v", advDir, sub, err)
	}
	for _, file := range cases {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if why, ok := advKnown[sub+name]; ok {
				t.Skip(why)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			_, secs := parseAdv(string(b))
			test(t, name, secs)
		})
	}
}

// TestAdversarialSnapshots runs every command that reads a root on every
// case of testdata/adversarial, as a directory and as a .tgz.
func TestAdversarialSnapshots(t *testing.T) {
	eachAdv(t, "", func(t *testing.T, name string, secs []advSection) {
		w := materialiseAdv(t, name, secs)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, root := range []string{w.root, w.archive(t)} {
			out := t.TempDir()
			for _, args := range advCommands(root, out, root == w.root && everyFormat[name]) {
				checkAdv(t, w.canary, runAdv(t, args...), args)
			}
			if _, err := os.Stat(filepath.Join(out, "again.tgz")); err == nil {
				args := []string{"topo", "--root", filepath.Join(out, "again.tgz")}
				checkAdv(t, w.canary, runAdv(t, args...), args)
			}
			noCanaryIn(t, w.canary, out)
		}
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > advCaseAllocCeiling {
			t.Errorf("the commands allocated %d MiB, over the ceiling of %d MiB", d>>20, advCaseAllocCeiling>>20)
		}
	})
}

// TestAdversarialLogs runs analyze, in every format, on every log sample
// of testdata/adversarial/logs (each case file holds one or more).
func TestAdversarialLogs(t *testing.T) {
	eachAdv(t, "logs/", func(t *testing.T, _ string, secs []advSection) {
		w := advWorld{root: t.TempDir()}
		var files []string
		for _, s := range secs {
			if err := w.apply(s.name, s.data); err != nil {
				t.Fatalf("section %q: %v", s.name, err)
			}
			if f := filepath.Join(w.root, s.name[strings.LastIndex(s.name, " ")+1:]); !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, f := range []string{"text", "table", "md", "junit", "json"} {
			args := append([]string{"analyze", "--format", f}, files...)
			checkAdv(t, "", runAdv(t, args...), args)
		}
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > advCaseAllocCeiling {
			t.Errorf("analyze allocated %d MiB, over the ceiling of %d MiB", d>>20, advCaseAllocCeiling>>20)
		}
	})
}

// TestAdversarialReports runs diff and fleet, in every format, on every
// case of testdata/adversarial/reports: a folder of hostile dossiers
// (report.json edited, special files, conflicting copies of a node).
// fleet reads the whole folder; diff compares the H200 dossier with each
// dossier of the case, both ways.
func TestAdversarialReports(t *testing.T) {
	eachAdv(t, "reports/", func(t *testing.T, _ string, secs []advSection) {
		w := advWorld{root: t.TempDir()}
		for _, s := range secs {
			if err := w.apply(s.name, s.data); err != nil {
				t.Fatalf("section %q: %v", s.name, err)
			}
		}
		out := t.TempDir()
		cmds := [][]string{{"fleet", w.root}, {"fleet", "--format", "json", w.root}, {"fleet", "--format", "md", w.root}, {"fleet", w.root, "--out", out}}
		dirs, _ := filepath.Glob(filepath.Join(w.root, "*"))
		// diff in its text form by default; every format in the long form
		// (fleet above renders every format of the whole folder).
		formats := []string{"text"}
		if long.Enabled() {
			formats = []string{"text", "json", "md"}
		}
		for _, d := range dirs {
			for _, f := range formats {
				cmds = append(cmds, []string{"diff", "--format", f, h200Dossier, d}, []string{"diff", "--format", f, d, h200Dossier})
			}
		}
		for _, args := range cmds {
			checkAdv(t, "", runAdv(t, args...), args)
		}
	})
}

// TestAdversarialCampaigns runs fleet plan --next on a campaign of four
// nodes whose round 1 wrote the hostile step results of each case of
// testdata/adversarial/campaigns (sections are relative to the round's
// folder: results/s0001.json, ...).
func TestAdversarialCampaigns(t *testing.T) {
	eachAdv(t, "campaigns/", func(t *testing.T, _ string, secs []advSection) {
		for _, format := range []string{"text", "json", "md"} {
			camp := filepath.Join(t.TempDir(), "camp")
			if r := runAdv(t, "fleet", "plan", "--nodes", "gpu[01-04]", "--min-busbw", "100", "--out", camp); r.code != ExitOK {
				t.Fatalf("fleet plan: %s", r.errs)
			}
			w := advWorld{root: filepath.Join(camp, "round-01")}
			for _, s := range secs {
				if err := w.apply(s.name, s.data); err != nil {
					t.Fatalf("section %q: %v", s.name, err)
				}
			}
			args := []string{"fleet", "plan", "--next", camp, "--allow-missing", "--format", format}
			checkAdv(t, "", runAdv(t, args...), args)
		}
	})
}
