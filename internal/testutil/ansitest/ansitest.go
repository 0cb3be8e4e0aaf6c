// Package ansitest plants terminal escape sequences in test inputs and
// checks that outputs meant for people carry none of them.
package ansitest

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/printable"
)

// Payload is what a hostile snapshot or log carries in one value: an OSC 0
// window-title change, a CSI 2J screen clear, an OSC 52 clipboard write,
// a raw 0x9b byte (the 8-bit CSI; not UTF-8), invalid UTF-8 and a
// carriage return that overprints the line with a fake PASS. It holds no
// line feed, so that line-based readers keep it in one piece.
const Payload = "X\x1b]0;PWNED-TITLE\a\x1b[2J\x1b]52;c;UFdORUQ=\a\x9b31m\xff\rPASS"

// Visible are pieces of Payload as printable renders them: an output that
// kept the planted value shows them.
var Visible = []string{`\x1b]0;PWNED-TITLE\a`, `\x1b[2J`, `\x1b]52;c;UFdORUQ=\a`, `\x9b31m\xff\rPASS`}

// Clean fails the test when out holds a byte sequence a terminal acts on:
// a C0 control other than tab and line feed, DEL, a C1 control, invalid
// UTF-8 (among which a raw 0x9b) or a bidirectional override.
func Clean(t testing.TB, what, out string) {
	t.Helper()
	esc := printable.Text(out)
	if esc == out {
		return
	}
	i := 0
	for i < len(out) && out[i] == esc[i] {
		i++
	}
	t.Errorf("%s: control character or invalid UTF-8 at offset %d: %q", what, i, out[max(0, i-40):min(len(out), i+40)])
}

// Shows fails the test when out does not show the planted payload in its
// escaped form: every piece of Visible, or the pieces given (for an input
// a reader cleans up first, e.g. by removing CSI sequences).
func Shows(t testing.TB, what, out string, pieces ...string) {
	t.Helper()
	if len(pieces) == 0 {
		pieces = Visible
	}
	for _, v := range pieces {
		if !strings.Contains(out, v) {
			t.Errorf("%s: the planted value is not shown escaped (%s missing):\n%s", what, v, out)
			return
		}
	}
}
