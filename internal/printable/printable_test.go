package printable

import (
	"strings"
	"testing"
)

// hostile holds what a snapshot or a log can carry: an OSC 0 title, a CSI
// 2J clear, an OSC 52 clipboard write, a raw 0x9b CSI byte, the C1 CSI as
// a rune, invalid UTF-8, a fake PASS over a carriage return, DEL, NUL and a
// bidi override.
const hostile = "4: ACTIVE\x1b]0;PWNED\a\x1b[2J\x1b]52;c;ZXZpbA==\x07\x9b31m\u009b2J\xff\xfe\rPASS\x7f\x00\u202eevil\tcol\nline"

func TestLine(t *testing.T) {
	got := Line(hostile)
	want := `4: ACTIVE\x1b]0;PWNED\a\x1b[2J\x1b]52;c;ZXZpbA==\a\x9b31m\u009b2J\xff\xfe\rPASS\x7f\x00\u202eevil\tcol\nline`
	if got != want {
		t.Errorf("Line:\n got %s\nwant %s", got, want)
	}
	if Text(got) != got || strings.ContainsAny(got, "\t\n") {
		t.Errorf("Line left a control character: %q", got)
	}
}

func TestText(t *testing.T) {
	got := Text(hostile)
	want := "4: ACTIVE\\x1b]0;PWNED\\a\\x1b[2J\\x1b]52;c;ZXZpbA==\\a\\x9b31m\\u009b2J\\xff\\xfe\\rPASS\\x7f\\x00\\u202eevil\tcol\nline"
	if got != want {
		t.Errorf("Text:\n got %q\nwant %q", got, want)
	}
}

func TestKeepsPrintable(t *testing.T) {
	for _, s := range []string{"", "GPU0 NVIDIA H100 80GB HBM3", "GPU→NIC ≥ 90% × 2 µs", `C:\path a|b`, "日本語"} {
		if Line(s) != s || Text(s) != s {
			t.Errorf("%q changed: %q %q", s, Line(s), Text(s))
		}
	}
	// A cut UTF-8 sequence at the end is escaped byte by byte.
	if got := Line("ok\xe2\x86"); got != `ok\xe2\x86` {
		t.Errorf("truncated rune: %q", got)
	}
}

func TestCell(t *testing.T) {
	got := Cell("a|b `x` *y* _z_ [l](u) <img src=x> c:\\d\nPASS\x1b[2J")
	want := "a\\|b \\`x\\` \\*y\\* \\_z\\_ \\[l\\](u) \\<img src=x\\> c:\\\\d\\\\nPASS\\\\x1b\\[2J"
	if got != want {
		t.Errorf("Cell:\n got %s\nwant %s", got, want)
	}
	if got := Code("a`b|c\x1b"); got != `a'b\|c\x1b` {
		t.Errorf("Code: %s", got)
	}
}

func FuzzLine(f *testing.F) {
	f.Add(hostile)
	f.Fuzz(func(t *testing.T, s string) {
		l, x := Line(s), Text(s)
		if Text(l) != l || Text(x) != x || strings.ContainsAny(l, "\t\n") {
			t.Errorf("not printable: %q -> %q / %q", s, l, x)
		}
	})
}
