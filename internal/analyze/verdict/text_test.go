package verdict

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/testutil/ansitest"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

func TestText(t *testing.T) {
	long := strings.Repeat("x", 156) + "é" + strings.Repeat("y", 10)
	vs := []result.Result{
		New("a.pass", result.Pass, "s", "Fine", "ok", Ev("f.txt", 3, " v ", "why")),
		New("b.fail", result.Fail, "s", "Broken", "bad", Ev("f.txt", 1, long, ""), Ev("f.txt", 0, "2", ""), Ev("f.txt", 4, "3", ""), Ev("f.txt", 5, "4", "")),
	}
	vs[1].Remedy = "fix it"
	var b strings.Builder
	if err := (Text{}).Write(&b, vs); err != nil {
		t.Fatal(err)
	}
	want := "Verdicts:\n" +
		"  FAIL    b.fail [Broken] s: bad\n" +
		"          remedy: fix it\n" +
		"          f.txt:1: " + strings.Repeat("x", 156) + "...\n" +
		"          f.txt: 2\n" +
		"          f.txt:4: 3\n" +
		"          ... 1 more evidence lines\n" +
		"  PASS    a.pass [Fine] s: ok\n" +
		"          f.txt:3: v\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := (Text{Notes: true}).Write(&b, vs[:1]); err != nil || !strings.HasSuffix(b.String(), "f.txt:3: v (why)\n") {
		t.Errorf("with notes: %q %v", b.String(), err)
	}
	b.Reset()
	if err := (Text{}).Write(&b, nil); err != nil || b.String() != "Verdicts: none\n" {
		t.Errorf("no verdicts: %q %v", b.String(), err)
	}
	if vs[0].Status != result.Pass {
		t.Error("Write reordered its input")
	}
}

func TestPage(t *testing.T) {
	var b strings.Builder
	if err := (Text{}).Page(&b, "Head", nil, "\nbody\n"); err != nil || b.String() != "Head\n\nVerdicts: none\n\nbody\n" {
		t.Errorf("with a head: %q %v", b.String(), err)
	}
	b.Reset()
	if err := (Text{}).Page(&b, "", nil, "body\n"); err != nil || b.String() != "Verdicts: none\nbody\n" {
		t.Errorf("without a head: %q %v", b.String(), err)
	}
}

func TestQuotes(t *testing.T) {
	qs := []textio.Quote{{Line: 1, Text: "a"}, {Line: 2, Text: " b "}}
	if ev := Quotes("f", qs); len(ev) != 2 || ev[1].Source != "f:2" || ev[1].Value != "b" {
		t.Errorf("evidence %+v", ev)
	}
	if s := Source("f", 0); s != "f" {
		t.Errorf("whole-file source %q", s)
	}
}

// Review row 80: evidence from a NCCL WARN line holding OSC 0, CSI 2J and
// OSC 52 reached the terminal raw. Every value, the head and the body are
// printed escaped.
func TestTextEscapesInput(t *testing.T) {
	p := ansitest.Payload
	v := New("nccl.warn", result.Fail, "rank"+p, "Warn"+p, "msg"+p, Ev("log"+p, 2, "WARN "+p, "note"+p))
	v.Remedy = "fix" + p
	var b strings.Builder
	if err := (Text{Notes: true}).Page(&b, "head"+p, []result.Result{v}, "body "+p+"\n\tnext\n"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	ansitest.Clean(t, "page", out)
	ansitest.Shows(t, "page", out)
	for _, want := range []string{"rank" + printable.Line(p), "msg" + printable.Line(p), "fix" + printable.Line(p), "WARN " + printable.Line(p), "(note" + printable.Line(p) + ")", "head" + printable.Line(p) + "\n\n", "body " + printable.Line(p) + "\n\tnext\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q:\n%s", want, out)
		}
	}
}
