package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/testutil/ansitest"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// hostileRoot is a snapshot (an archive, read into memory) whose host
// name, first RDMA device's name and port state, and NVML name of the
// first GPU carry ansitest.Payload (review row 37, S3). A file name must
// be UTF-8 (fs.ValidPath), so the device's name carries the payload with
// the C1 CSI as a rune and without the invalid byte.
func hostileRoot(t *testing.T) string {
	t.Helper()
	s, err := fakehost.Load(repo + "/testdata/hosts/hgx-h200-8gpu-10nic.host")
	if err != nil {
		t.Fatal(err)
	}
	s.Hostname = "node" + ansitest.Payload
	s.RDMA[0].Name = "mlx5_0" + strings.NewReplacer("\x9b", "\u009b", "\xff", "").Replace(ansitest.Payload)
	s.RDMA[0].Ports[0].State = "4: ACTIVE" + ansitest.Payload
	s.NVML.GPUs[0].Attrs["name"] = "NVIDIA H200" + ansitest.Payload
	return fakehost.MaterializeArchive(t, s)
}

// plant writes a copy of a reader's corpus file with ansitest.Payload
// after the first occurrence of after.
func plant(t *testing.T, corpus, after string) string {
	t.Helper()
	b, err := os.ReadFile(corpus)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), after) {
		t.Fatalf("%s lacks %q", corpus, after)
	}
	p := filepath.Join(t.TempDir(), filepath.Base(corpus))
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), after, after+ansitest.Payload, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Review rows 37 and 80 (S3): escape sequences in a snapshot or an
// analysed file reached the terminal raw. Every command, in every text
// format, prints them escaped and still shows them.
func TestHostileInputPrintsEscaped(t *testing.T) {
	t.Parallel()
	root := hostileRoot(t)
	// shows: the pieces of the planted value the page shows, escaped. The
	// device's name holds the C1 CSI as a rune; the GPU's name went
	// through JSON (commands/nvml.json), which made its invalid bytes
	// U+FFFD; ncclog removes CSI sequences from a line before reading it.
	type cmd struct {
		args  []string
		shows []string
		usage bool // exits 2: the arguments are refused
	}
	dev := []string{`\x1b]0;PWNED-TITLE\a`, `\x1b[2J`, `\x1b]52;c;UFdORUQ=\a`, `\u009b31m\rPASS`}
	devMD := make([]string, len(dev))
	for i, d := range dev {
		devMD[i] = printable.Cell(d)
	}
	gpu := []string{`\x1b]0;PWNED-TITLE\a`, `\x1b[2J`, `\rPASS`}
	osc := []string{`\x1b]0;PWNED-TITLE\a`, `\rPASS`}
	cmds := []cmd{
		{args: []string{"topo", "--root", root}, shows: dev},
		{args: []string{"topo", "--root", root, "--pcie", "--color", "always"}, shows: dev},
		{args: []string{"model", "--root", root}, shows: gpu},
		{args: []string{"run", "--root", root}, shows: append(dev, ansitest.Visible...)},
		{args: []string{"snapshot", "--root", root, "-o", filepath.Join(t.TempDir(), "again.tgz")}, shows: ansitest.Visible},
		{args: []string{"check", "--root", root}, shows: dev},
		{args: []string{"health", "--root", root, "--drain", "print", "--node", "n1", "--nfd", t.TempDir()}},
		// A node name scontrol cannot take: the node is still judged (its
		// verdict's exit status), the name never reaches scontrol.
		{args: []string{"health", "--root", root, "--drain", "print", "--node", ansitest.Payload}},
	}
	for _, c := range []string{"topo", "model", "check", "run"} { // JSON: escaped by encoding/json and report.WriteJSON
		cmds = append(cmds, cmd{args: []string{c, "--root", root, "--format", "json"}})
	}
	for _, f := range []string{"md", "junit"} {
		shows := dev
		if f == "md" {
			shows = devMD
		}
		cmds = append(cmds, cmd{args: []string{"check", "--root", root, "--format", f}, shows: shows},
			cmd{args: []string{"run", "--root", root, "--format", f}, shows: shows})
	}
	logs := []struct {
		file, after string
		shown       bool // the text view quotes the planted line
	}{
		{"ncclog/testdata/synthetic-errors-ib-completion.txt", "failed with error Connection timed out", true},
		{"nccltests/testdata/a100x8-allreduce-superbench.txt", "Rank  0 Pid 112424 on localhost", false},
		{"perftest/testdata/gke-a3ultra-h200-ib-write-bw-host-failed-status10.txt", "Failed status 10", true},
		{"smitopo/testdata/hgx-h100-roce400g-12nic-tabs.txt", "NIC0: mlx5_0", false},
	}
	for _, l := range logs {
		p := plant(t, repo+"/internal/analyze/"+l.file, l.after)
		for _, f := range []string{"table", "md", "junit", "json"} {
			cmds = append(cmds, cmd{args: []string{"analyze", p, "--format", f}})
		}
		c := cmd{args: []string{"analyze", p}}
		if l.shown {
			c.shows = osc
		}
		cmds = append(cmds, c)
	}
	// A file whose name holds the payload.
	named := filepath.Join(t.TempDir(), "log"+ansitest.Payload)
	if err := os.Rename(plant(t, repo+"/internal/analyze/"+logs[0].file, logs[0].after), named); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"text", "table", "md", "junit"} {
		var shows []string // table and md do not print evidence, where the name is
		if f == "text" || f == "junit" {
			shows = ansitest.Visible
		}
		cmds = append(cmds, cmd{args: []string{"analyze", named, "--format", f}, shows: shows})
	}
	// A file that cannot be read: its name, holding the payload, is in the
	// error message.
	nosuch := filepath.Join(t.TempDir(), "nosuch"+ansitest.Payload)
	cmds = append(cmds, cmd{args: []string{"analyze", nosuch}, shows: ansitest.Visible, usage: true})
	// Arguments quoted in usage errors (exit 2).
	cmds = append(cmds, cmd{args: []string{"topo", "--root", root, "--format", ansitest.Payload}, usage: true},
		cmd{args: []string{"topo", "--root", root, "--" + ansitest.Payload}, usage: true},
		cmd{args: []string{"nosuch" + ansitest.Payload}, usage: true},
		cmd{args: []string{"check", "--root", root, "--only", ansitest.Payload}, usage: true})
	for _, c := range cmds {
		out, errs, code := run(t, c.args...)
		what := printable.Line(strings.Join(c.args, " "))
		if slices.Contains(c.args, "always") { // the underline gdrcheck writes itself
			if !strings.Contains(out, "\x1b[4m") {
				t.Errorf("%s: no underline", what)
			}
			out = strings.NewReplacer("\x1b[4m", "", "\x1b[0m", "").Replace(out)
		}
		ansitest.Clean(t, what+": stdout", out)
		ansitest.Clean(t, what+": stderr", errs)
		if ok := code == ExitOK || code == ExitFailed; ok == c.usage {
			t.Errorf("%s: exit %d: %s", what, code, errs)
		}
		if c.shows != nil {
			ansitest.Shows(t, what, out+errs, c.shows...)
		}
	}
}
