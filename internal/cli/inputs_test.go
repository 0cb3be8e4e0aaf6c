package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInputsSpecialFilesRefused: where diff, fleet and fleet plan expect
// a file, a FIFO or a device is refused at once, never read (a FIFO
// blocked for ever, /dev/zero took the machine's memory: the review's D6,
// D8). Each command must end within a few seconds.
func TestInputsSpecialFilesRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := func(p string) string {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(p, to string) string {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifoDossier := filepath.Dir(fifo(filepath.Join(dir, "fifo", "report.json")))
	zeroDossier := filepath.Dir(link(filepath.Join(dir, "zero", "report.json"), "/dev/zero"))
	fleetDir := filepath.Join(dir, "fleet")
	fifo(filepath.Join(fleetDir, "b", "report.json"))
	link(filepath.Join(fleetDir, "a", "report.json"), "../../../"+filepath.Base(filepath.Dir(dir))) // dangling is skipped too
	hostFIFO := fifo(filepath.Join(dir, "hosts.fifo"))
	camp := filepath.Join(dir, "camp")
	if _, errs, code := run(t, "fleet", "plan", "--nodes", "gpu[01-04]", "--min-busbw", "100", "--out", camp); code != ExitOK {
		t.Fatalf("fleet plan: %s", errs)
	}
	results := filepath.Join(camp, "round-01", "results")
	fifo(filepath.Join(results, "s0001.rc"))
	link(filepath.Join(results, "s0002.rc"), "/dev/zero")
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"diff FIFO", []string{"diff", h200Dossier, fifoDossier}, ExitToolErr, "not a regular file (a FIFO)"},
		{"diff /dev/zero", []string{"diff", zeroDossier, h200Dossier}, ExitToolErr, "not a regular file (a device)"},
		{"fleet FIFO", []string{"fleet", h200Dossier, fleetDir}, ExitToolErr, "not a regular file (a FIFO)"},
		{"hostfile /dev/zero", []string{"fleet", "plan", "--hostfile", "/dev/zero", "--min-busbw", "1", "--out", filepath.Join(dir, "x")}, ExitToolErr, "not a regular file (a device)"},
		{"hostfile FIFO", []string{"fleet", "plan", "--hostfile", hostFIFO, "--min-busbw", "1", "--out", filepath.Join(dir, "y")}, ExitToolErr, "not a regular file (a FIFO)"},
		{"next with FIFO and device", []string{"fleet", "plan", "--next", camp}, ExitOK, "Round 2 planned"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			type res struct {
				out, errs string
				code      int
			}
			done := make(chan res, 1)
			go func() {
				o, e, c := run(t, tc.args...)
				done <- res{o, e, c}
			}()
			select {
			case r := <-done:
				if r.code != tc.code || !strings.Contains(r.out+r.errs, tc.want) {
					t.Errorf("exit %d (want %d), output lacks %q:\n%s%s", r.code, tc.code, tc.want, r.out, r.errs)
				}
				if tc.args[2] == "--next" {
					// Both steps failed, saying why; round 2 retests them.
					b, _ := os.ReadFile(filepath.Join(camp, "campaign.json"))
					if n := strings.Count(string(b), "not a regular file"); n != 2 {
						t.Errorf("campaign.json names %d special files, want 2", n)
					}
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("still running after 20 s: blocked on a special file")
			}
		})
	}
}

// TestManifestVerified: diff and fleet read a dossier's report.json only
// as its SHA256SUMS vouches for it: an edited one is refused (diff, exit
// 2) or skipped, named (fleet); one with no manifest is read, and diff
// says it is not known whole (the review's D13).
func TestManifestVerified(t *testing.T) {
	copyDossier := func(edit bool, keepSums bool) string {
		dir := filepath.Join(t.TempDir(), "gpu01")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"report.json", "SHA256SUMS"} {
			b, err := os.ReadFile(filepath.Join(h200Dossier, f))
			if err != nil {
				t.Fatal(err)
			}
			if f == "report.json" && edit {
				b = []byte(strings.Replace(string(b), `"status": "READY"`, `"status": "NOT READY"`, 1))
			}
			if f == "SHA256SUMS" && !keepSums {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	edited, alone, whole := copyDossier(true, true), copyDossier(false, false), copyDossier(false, true)
	if _, errs, code := run(t, "diff", h200Dossier, edited); code != ExitToolErr || !strings.Contains(errs, "report.json does not match SHA256SUMS") {
		t.Errorf("diff of an edited dossier: exit %d: %s", code, errs)
	}
	if _, errs, code := run(t, "diff", h200Dossier, alone); code != ExitOK || !strings.Contains(errs, "no SHA256SUMS beside it: not known to be a whole dossier") {
		t.Errorf("diff of a dossier without a manifest: exit %d: %s", code, errs)
	}
	if _, errs, code := run(t, "diff", h200Dossier, whole); code != ExitOK || errs != "" {
		t.Errorf("diff of a whole dossier: exit %d: %s", code, errs)
	}
	if out, errs, code := run(t, "fleet", edited); code != ExitToolErr || !strings.Contains(out+errs, "does not match SHA256SUMS") {
		t.Errorf("fleet of an edited dossier: exit %d:\n%s%s", code, out, errs)
	}
}
