package readkit

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", MaxLine+10)
	lr := NewLineReader("f.txt", strings.NewReader("a\r\nb\n"+long+"\nlast"))
	var got []string
	for {
		l, ok := lr.Next()
		if !ok {
			break
		}
		got = append(got, l)
	}
	if lr.Err() != nil || len(got) != 4 || got[0] != "a" || got[1] != "b" || len(got[2]) != MaxLine || got[3] != "last" || lr.Truncated != 1 || lr.Line() != 4 {
		t.Errorf("lines %q... err %v truncated %d line %d", got[:2], lr.Err(), lr.Truncated, lr.Line())
	}

	lr = NewLineReader("f.txt", strings.NewReader("ok\nbad\x00line\nmore\n"))
	for {
		if _, ok := lr.Next(); !ok {
			break
		}
	}
	var pe *ParseError
	if !errors.As(lr.Err(), &pe) || pe.Line != 2 || !strings.HasPrefix(pe.Error(), "f.txt:2: binary data") {
		t.Errorf("NUL byte: %v", lr.Err())
	}
}

func TestClip(t *testing.T) {
	if Clip("abc", 5) != "abc" || Clip("abcdef", 3) != "abc..." || Clip("aé", 2) != "a..." {
		t.Errorf("%q %q %q", Clip("abc", 5), Clip("abcdef", 3), Clip("aé", 2))
	}
}

func TestCorpusBody(t *testing.T) {
	b, ok := CorpusBody([]byte("source: x\nhardware: y\nnotes: z\n---\nbody\n"))
	if !ok || string(b) != "body\n" {
		t.Errorf("%q %v", b, ok)
	}
	if _, ok := CorpusBody([]byte("body only\n")); ok {
		t.Error("no header taken for one")
	}
}

func TestJSONLines(t *testing.T) {
	lc := NewLineCounter(strings.NewReader("{\n\"a\": 1,\n\"b\": x\n}\n"))
	dec := json.NewDecoder(lc)
	var v any
	err := dec.Decode(&v)
	if pe := lc.JSONError("j.json", dec, err); pe.Line != 3 {
		t.Errorf("syntax error at line %d (%v), want 3", pe.Line, pe)
	}
	var f struct{ A, B, C, D FlexFloat }
	if err := json.Unmarshal([]byte(`{"A": 1.5, "B": "2.5", "C": "nan", "D": null}`), &f); err != nil {
		t.Fatal(err)
	}
	if !f.A.Valid || f.A.V != 1.5 || !f.B.Valid || f.B.V != 2.5 || f.C.Valid || f.D.Valid {
		t.Errorf("%+v", f)
	}
}
