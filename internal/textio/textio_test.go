package textio

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
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

func TestLineReaderAll(t *testing.T) {
	lr := NewLineReader("f.txt", strings.NewReader("a\nb\x00\nc\n"))
	var got []string
	for n, line := range lr.All() {
		got = append(got, fmt.Sprintf("%d:%s", n, line))
	}
	if strings.Join(got, " ") != "1:a" || lr.Err() == nil || !strings.HasPrefix(lr.Err().Error(), "f.txt:2:") {
		t.Errorf("lines %q, error %v", got, lr.Err())
	}
	lr = NewLineReader("f.txt", strings.NewReader("a\nb\nc\n"))
	for n := range lr.All() {
		if n == 2 {
			break
		}
	}
	if line, ok := lr.Next(); !ok || line != "c" || lr.Line() != 3 {
		t.Errorf("after a break at line 2, Next = %q %v at %d", line, ok, lr.Line())
	}
}

func TestClip(t *testing.T) {
	if Clip("abc", 5) != "abc" || Clip("abcdef", 3) != "abc..." || Clip("aé", 2) != "a..." {
		t.Errorf("%q %q %q", Clip("abc", 5), Clip("abcdef", 3), Clip("aé", 2))
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
	var pe *ParseError
	for in, line := range map[string]int{"{\n\"a\": 1,\n\"b\": x\n}\n": 3, "{\n\"a\":\n\"s\"}": 3, "{\n\"a\": 1,\n": 3} {
		var a struct{ A int }
		if err := UnmarshalJSON("u.json", []byte(in), &a); !errors.As(err, &pe) || pe.Line != line || pe.Name != "u.json" {
			t.Errorf("UnmarshalJSON(%q): %v, want a ParseError at line %d", in, err, line)
		}
	}
	var f struct{ A, B, C, D FlexFloat }
	if err := json.Unmarshal([]byte(`{"A": 1.5, "B": "2.5", "C": "nan", "D": null}`), &f); err != nil {
		t.Fatal(err)
	}
	if !f.A.Valid || f.A.V != 1.5 || !f.B.Valid || f.B.V != 2.5 || f.C.Valid || f.D.Valid {
		t.Errorf("%+v", f)
	}
}

// JSONErrorIn names the line and, for a value of the wrong type, the
// field; an error with no place in the input is not one of its.
func TestJSONErrorIn(t *testing.T) {
	type doc struct {
		A struct {
			B int `json:"b"`
		} `json:"a"`
	}
	cases := []struct {
		name, in string
		line     int
		msg      string // "": not an error in the input
	}{
		{"wrong type", "{\n\"a\": {\n\"b\": \"x\"}}", 3, `unexpected JSON value: field "a.b": string value, want int`},
		{"wrong type at the top", "[1]", 1, "unexpected JSON value: array value, want textio.doc"},
		{"syntax", "{\n\"a\":\n}", 3, "invalid JSON: invalid character '}'"},
		{"truncated", "{\n\"a\": {", 2, "invalid JSON: unexpected end of JSON input"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var v doc
			err := json.Unmarshal([]byte(tc.in), &v)
			pe, ok := JSONErrorIn("d.json", []byte(tc.in), err)
			if !ok || pe.Name != "d.json" || pe.Line != tc.line || !strings.HasPrefix(pe.Msg, tc.msg) {
				t.Errorf("%v (%v), want line %d: %s", pe, ok, tc.line, tc.msg)
			}
		})
	}
	if pe, ok := JSONErrorIn("d.json", []byte("{}"), errors.New("schema \"x\", want \"y\"")); ok {
		t.Errorf("an error with no place in the input: %v", pe)
	}
}

func TestFormatFloat(t *testing.T) {
	for _, c := range []struct {
		v    float64
		prec int
		want string
	}{{12.5, 3, "12.5"}, {3, 3, "3"}, {0, 2, "0"}, {1.23456, 2, "1.23"}, {100, 3, "100"}} {
		if got := FormatFloat(c.v, c.prec); got != c.want {
			t.Errorf("FormatFloat(%v, %d) = %q, want %q", c.v, c.prec, got, c.want)
		}
	}
}

func TestTextOrJSON(t *testing.T) {
	read := func(kind string) func(string, io.Reader) (string, error) {
		return func(_ string, r io.Reader) (string, error) {
			b, err := io.ReadAll(r)
			return kind + ":" + string(b), err
		}
	}
	for in, want := range map[string]string{
		"\ufeff \n{\"a\": 1}": "json:\ufeff \n{\"a\": 1}",
		"  # text {":          "text:  # text {",
		"":                    "text:",
	} {
		got, err := TextOrJSON("f", strings.NewReader(in), read("text"), read("json"))
		if err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
		if StartsJSON([]byte(in)) != strings.HasPrefix(want, "json:") {
			t.Errorf("%q: StartsJSON disagrees", in)
		}
	}
}

func TestAddQuote(t *testing.T) {
	var qs []Quote
	for i := 1; i <= MaxQuotes+5; i++ {
		qs = AddQuote(qs, i, strings.Repeat("x", MaxQuoteLen+1))
	}
	if len(qs) != MaxQuotes || qs[0].Line != 1 || len(qs[0].Text) != MaxQuoteLen+3 {
		t.Errorf("%d quotes, first %d %d bytes", len(qs), qs[0].Line, len(qs[0].Text))
	}
}

// TestParseDecimalExact: the fast path gives strconv's value, bit for bit,
// and leaves to strconv what it does not take.
func TestParseDecimalExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cases := []string{"0", "-0", "+1", "1.", ".5", "0.1", "123456789012345", "1234567890123456", "99.99", "-3.14159", ".", "-", "", "1.2.3", "1e5", " 1", "0x10", "12_3"}
	for range 200000 {
		var b strings.Builder
		if rng.IntN(4) == 0 {
			b.WriteByte("-+"[rng.IntN(2)])
		}
		n := 1 + rng.IntN(17)
		dot := rng.IntN(n + 2)
		for i := range n {
			if i == dot {
				b.WriteByte('.')
			}
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		got, ok := parseDecimal(s)
		if !ok {
			continue
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseDecimal(%q) = %v; strconv %v, %v", s, got, want, err)
		}
	}
	for _, s := range []string{"1e5", "0x10", "12_3", "", ".", "-"} {
		if _, ok := parseDecimal(s); ok {
			t.Errorf("parseDecimal(%q) took a number it should leave to strconv", s)
		}
	}
}
