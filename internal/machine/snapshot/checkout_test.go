package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Where a snapshot goes is judged before the capture: an existing archive
// is replaced only when told, an archive format gdrcheck does not write
// is refused (not made a directory of that name), a directory must be
// new or empty.
func TestCheckOut(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "old.tgz")
	full := filepath.Join(dir, "full")
	for _, p := range []string{file, filepath.Join(full, "x")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		out     string
		replace bool
		want    string // "" ok
	}{
		{filepath.Join(dir, "new.tgz"), false, ""},
		{file, false, "exists: gdrcheck does not replace it unless told to (--force)"},
		{file, true, ""},
		{filepath.Join(dir, "snap.zip"), false, "a .zip archive is not a format gdrcheck writes"},
		{filepath.Join(dir, "snap.tar.zst"), false, "a .tar.zst archive"},
		{filepath.Join(dir, "new-dir"), false, ""},
		{full, false, "is not empty"},
		{full + ".tgz", false, ""},
		{dir + "/full/x.tar", true, ""},
		{filepath.Join(dir, "d.tgz"), false, ""},
	} {
		err := CheckOut(c.out, c.replace)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s (replace %v): %v", c.out, c.replace, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s (replace %v): %v, want %q", c.out, c.replace, err, c.want)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "d.tgz"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckOut(filepath.Join(dir, "d.tgz"), true); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory named .tgz: %v", err)
	}
}
