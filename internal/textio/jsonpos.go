package textio

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
)

// LineCounter wraps a reader and remembers where its newlines are, so that a
// JSON decoder's byte offset can be turned into a line number.
type LineCounter struct {
	r   io.Reader
	off int64
	nl  []int64
}

// NewLineCounter wraps r.
func NewLineCounter(r io.Reader) *LineCounter { return &LineCounter{r: r} }

func (c *LineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i := 0; i < n && len(c.nl) < 1<<26; i++ {
		k := bytes.IndexByte(p[i:n], '\n')
		if k < 0 {
			break
		}
		i += k
		c.nl = append(c.nl, c.off+int64(i))
	}
	c.off += int64(n)
	return n, err
}

// LineAt is the 1-based line holding byte offset off.
func (c *LineCounter) LineAt(off int64) int {
	return 1 + sort.Search(len(c.nl), func(i int) bool { return c.nl[i] >= off })
}

// Lines is the number of lines read so far.
func (c *LineCounter) Lines() int { return len(c.nl) + 1 }

// JSONError turns a decoding error into a ParseError naming the line.
func (c *LineCounter) JSONError(name string, dec *json.Decoder, err error) *ParseError {
	if pe, ok := c.jsonAt(name, err); ok {
		return pe
	}
	return Errorf(name, c.LineAt(dec.InputOffset()), "invalid JSON: %v", err)
}

// jsonAt is a syntax error, a value of the wrong type or an early end as
// a ParseError naming the line (and the field, for a wrong type); false
// for any other error, which has no place in the input.
func (c *LineCounter) jsonAt(name string, err error) (*ParseError, bool) {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return Errorf(name, c.LineAt(se.Offset), "invalid JSON: %v", se), true
	case errors.As(err, &te) && te.Field != "":
		return Errorf(name, c.LineAt(te.Offset), "unexpected JSON value: field %q: %s value, want %s", te.Field, te.Value, te.Type), true
	case errors.As(err, &te):
		return Errorf(name, c.LineAt(te.Offset), "unexpected JSON value: %s value, want %s", te.Value, te.Type), true
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Errorf(name, c.Lines(), "JSON ends early (truncated file?)"), true
	}
	return nil, false
}

// JSONErrorIn is err, from decoding b (a whole file held in memory), as a
// ParseError naming the line where decoding stopped; false when err has
// no place in b (a check of the decoded value, say).
func JSONErrorIn(name string, b []byte, err error) (*ParseError, bool) {
	c := NewLineCounter(bytes.NewReader(b))
	_, _ = io.Copy(io.Discard, c) // reading memory: no error
	return c.jsonAt(name, err)
}

// UnmarshalJSON is json.Unmarshal of a whole file held in b; an error is a
// ParseError naming the file and the line where decoding stopped.
func UnmarshalJSON(name string, b []byte, v any) error {
	err := json.Unmarshal(b, v)
	if err == nil {
		return nil
	}
	if pe, ok := JSONErrorIn(name, b, err); ok {
		return pe
	}
	return Errorf(name, 1, "invalid JSON: %v", err)
}

// FlexFloat is a JSON number that may also be written as a string
// ("12.5", "nan"); Valid is false for null, NaN and non-numbers.
type FlexFloat struct {
	V     float64
	Valid bool
}

// UnmarshalJSON accepts numbers, numeric strings and null.
func (f *FlexFloat) UnmarshalJSON(b []byte) error {
	*f = FlexFloat{}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case float64:
		f.V, f.Valid = x, true
	case string:
		if g, ok := ParseFloat(x); ok {
			f.V, f.Valid = g, true
		}
	}
	return nil
}

// DecodeAll decodes the one JSON value that dec (reading c) holds into v,
// then reads the input to its end (a trailing newline, or a second value
// nobody reads), so that a read error still names the file.
func (c *LineCounter) DecodeAll(name string, dec *json.Decoder, v any) error {
	if err := dec.Decode(v); err != nil {
		return c.JSONError(name, dec, err)
	}
	if _, err := io.Copy(io.Discard, io.MultiReader(dec.Buffered(), c)); err != nil {
		return Errorf(name, c.Lines(), "read: %v", err)
	}
	return nil
}
