package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/app"
	"github.com/gdrcheck/gdrcheck/internal/machine"
	"github.com/gdrcheck/gdrcheck/internal/testutil/fakehost"
)

// TestTimeoutMustBePositive (review D9, row 119): --timeout 0 or below
// is refused with exit 2 instead of never being checked.
func TestTimeoutMustBePositive(t *testing.T) {
	t.Parallel()
	snap := repo + "/testdata/snapshots/h200x1-vm.tgz"
	for _, v := range []string{"0", "-1s"} {
		for _, cmd := range []string{"topo", "check", "run", "snapshot"} {
			args := []string{cmd, "--root", snap, "--timeout", v}
			if cmd == "snapshot" {
				args = append(args, "-o", filepath.Join(t.TempDir(), "s.tgz"))
			}
			_, errs, code := run(t, args...)
			if code != ExitToolErr || !strings.Contains(errs, "--timeout") || !strings.Contains(errs, "must be positive") {
				t.Errorf("%v: exit %d, %q", args, code, errs)
			}
		}
	}
	// A deadline that passes during discovery is said, not taken for a
	// host with nothing on it.
	dir := fakehost.Dir(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	for _, cmd := range []string{"topo", "check"} {
		_, errs, code := run(t, cmd, "--root", dir, "--timeout", "1ns")
		if code != ExitToolErr || !strings.Contains(errs, "did not finish within --timeout 1ns") {
			t.Errorf("%s --timeout 1ns: exit %d, %q", cmd, code, errs)
		}
	}
}

// TestNamedPipesInARootDoNotHang (review D9, rows 48 and 131): a named
// pipe as a GPU's vendor attribute and as commands/nvml.json is refused
// at once, named in the problems, and every command ends.
func TestNamedPipesInARootDoNotHang(t *testing.T) {
	t.Parallel()
	dir := fakehost.Dir(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	gpu, err := machine.NewRoot(dir).Resolve("sys/bus/pci/devices/0000:18:00.0")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{gpu + "/vendor", "commands/nvml.json"} {
		p = filepath.Join(dir, p)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"topo", "--format", "json"}, {"check"}, {"run", "--timeout", "3s"}} {
		done := make(chan string, 1)
		go func() {
			out, errs, _ := run(t, append(args, "--root", dir)...)
			done <- out + errs
		}()
		select {
		case out := <-done:
			if args[0] == "topo" && !strings.Contains(out, "named pipe") {
				t.Errorf("%v does not name the pipe:\n%.2000s", args, out)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%v hangs on a named pipe", args)
		}
	}
}

// TestRunOutUnwritable (review D20, row 86; D22): when --out cannot be
// written, the whole report still reaches stdout, the run exits 2, and
// the message names the user's path, not a hidden temporary file. An
// --out that cannot be a dossier at all (under a file) is refused before
// anything runs, and so is one that holds a dossier, unless --force.
func TestRunOutUnwritable(t *testing.T) {
	t.Parallel()
	snap := repo + "/testdata/snapshots/h200x1-vm.tgz"
	file := filepath.Join(t.TempDir(), "afile")
	os.WriteFile(file, nil, 0o644)
	taken := t.TempDir()
	if err := os.Mkdir(filepath.Join(taken, "report.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(taken, "report.json", "x"), nil, 0o644)
	for _, format := range []string{"text", "json"} {
		for out, want := range map[string]string{filepath.Join(file, "report"): file + "/report: " + file + " is not a folder", taken: taken + ": holds a dossier already (report.json): --force replaces it"} {
			stdout, errs, code := run(t, "run", "--root", snap, "--format", format, "--out", out)
			if code != ExitToolErr || !strings.Contains(errs, want) || stdout != "" {
				t.Errorf("--out %s: exit %d, %q, stdout %.300q; want exit 2 and %q before anything ran", out, code, errs, stdout, want)
			}
		}
	}
	for out, want := range map[string]string{taken: "cannot write " + filepath.Join(taken, "report.json")} {
		for _, format := range []string{"text", "json"} {
			stdout, errs, code := run(t, "run", "--root", snap, "--format", format, "--out", out, "--force")
			if code != ExitToolErr || !strings.Contains(errs, want) || strings.Contains(errs, ".report.json") {
				t.Errorf("--out %s: exit %d, %q; want exit 2 and %q", out, code, errs, want)
			}
			if !strings.Contains(stdout, "inventory.versions") {
				t.Errorf("--out %s --format %s: the report did not reach stdout:\n%s", out, format, stdout)
			}
		}
	}
}

// TestSnapshotIntoAUsedDirectory (review D10, row 136): a second
// snapshot into the same directory is refused; the first stays whole.
func TestSnapshotIntoAUsedDirectory(t *testing.T) {
	t.Parallel()
	root := fakehost.Dir(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	out := filepath.Join(t.TempDir(), "snap")
	if o, errs, code := run(t, "snapshot", "--root", root, "-o", out); code != ExitOK {
		t.Fatalf("first snapshot: exit %d: %s %s", code, o, errs)
	}
	want, _, _ := run(t, "topo", "--root", out)
	if _, errs, code := run(t, "snapshot", "--root", repo+"/testdata/snapshots/h200x1-vm.tgz", "-o", out); code != ExitToolErr || !strings.Contains(errs, "is not empty") {
		t.Errorf("second snapshot into %s: exit %d, %q", out, code, errs)
	}
	if got, _, _ := run(t, "topo", "--root", out); got != want {
		t.Errorf("the first snapshot changed:\n%s\nwant\n%s", got, want)
	}
}

// TestInterruptedSnapshotExits130 (review D7, rows 126 and 127): an
// interrupted snapshot writes nothing and maps to exit 130.
func TestInterruptedSnapshotExits130(t *testing.T) {
	t.Parallel()
	root := fakehost.Dir(t, repo+"/testdata/hosts/hgx-h200-8gpu-10nic.host")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range []string{"snap.tgz", "snapdir"} {
		parent := t.TempDir()
		_, err := testSession(nil).Snapshot(ctx, app.SnapshotOptions{Node: app.NodeOptions{Root: root, Timeout: time.Minute}, Out: filepath.Join(parent, name)})
		if code := exitCode(err); code != ExitInterrupted {
			t.Errorf("%s: exit %d (%v)", name, code, err)
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 0 {
			t.Errorf("%s: an interrupted snapshot left %v", name, ents)
		}
	}
}
