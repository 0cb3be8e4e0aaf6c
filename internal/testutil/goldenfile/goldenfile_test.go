package goldenfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder stands in for a test: it keeps what Check reports; Fatal stops
// Check by a panic that run recovers.
type recorder struct {
	testing.TB
	errs  []string
	fatal bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(f string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(f, a...))
}
func (r *recorder) Fatal(a ...any) {
	r.errs, r.fatal = append(r.errs, fmt.Sprint(a...)), true
	panic(r)
}
func (r *recorder) Fatalf(f string, a ...any) {
	r.errs, r.fatal = append(r.errs, fmt.Sprintf(f, a...)), true
	panic(r)
}

func (r *recorder) run(path string, got []byte, update bool) {
	defer func() {
		if v := recover(); v != nil && v != any(r) {
			panic(v)
		}
	}()
	Check(r, path, got, update)
}

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "out.txt")
	for _, tc := range []struct {
		name   string
		got    string
		update bool
		want   string // a piece of the report; "" is no report
		fatal  bool
	}{
		{name: "missing golden", got: "a\n", want: "run go test -update", fatal: true},
		{name: "update makes folder and file", got: "a\nb\n", update: true},
		{name: "same bytes", got: "a\nb\n"},
		{name: "one byte differs", got: "a\nc\n", want: `"a\nb\n"`},
		{name: "trailing newline differs", got: "a\nb", want: "out.txt differs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			r.run(path, []byte(tc.got), tc.update)
			switch {
			case tc.want == "" && len(r.errs) > 0:
				t.Errorf("reported %q", r.errs)
			case tc.want != "" && (len(r.errs) != 1 || !strings.Contains(r.errs[0], tc.want)):
				t.Errorf("reported %q, want one report with %q", r.errs, tc.want)
			case r.fatal != tc.fatal:
				t.Errorf("fatal %v, want %v", r.fatal, tc.fatal)
			}
		})
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "a\nb\n" {
		t.Errorf("golden file %q, %v; want the updated bytes", b, err)
	}
}
