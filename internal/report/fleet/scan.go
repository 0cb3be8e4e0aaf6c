package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// errEOF is what encoding/json says of a truncated document.
var errEOF = errors.New("unexpected end of JSON input")

// members finds the values of the named members of the JSON object b
// without decoding the others: they are skipped by matching brackets and
// quotes, which is several times faster than encoding/json's scanner on a
// report whose bulk (results, curves, topology) the roll-up does not read.
// A skipped value is not validated; a truncated document, unbalanced
// brackets or a stray character between members is an error with its
// byte offset. Values found are decoded by encoding/json, which validates
// them.
func members(b []byte, names ...string) ([][]byte, error) {
	out := make([][]byte, len(names))
	return out, membersInto(b, names, out)
}

// membersInto is members writing into out (one per name, nil absent).
func membersInto(b []byte, names []string, out [][]byte) error {
	clear(out)
	i := skipSpace(b, 0)
	if i >= len(b) {
		return errEOF
	}
	if b[i] != '{' {
		return fmt.Errorf("invalid character %q looking for beginning of object (offset %d)", b[i], i)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for {
		if i >= len(b) {
			return errEOF
		}
		if b[i] != '"' {
			return fmt.Errorf("invalid character %q looking for a member name (offset %d)", b[i], i)
		}
		end, err := skipString(b, i)
		if err != nil {
			return err
		}
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if err := json.Unmarshal(b[i:end], &k); err != nil {
				return fmt.Errorf("member name at offset %d: %w", i, err)
			}
			key = []byte(k)
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			return errEOF
		}
		if b[i] != ':' {
			return fmt.Errorf("invalid character %q after member name (offset %d)", b[i], i)
		}
		i = skipSpace(b, i+1)
		start := i
		if i, err = skipValue(b, i); err != nil {
			return err
		}
		for k, n := range names {
			if string(key) == n {
				out[k] = b[start:i]
			}
		}
		var done bool
		if i, done, err = next(b, i, '}', "object member"); done || err != nil {
			return err
		}
	}
}

// next steps over what follows a member or element at b[i:]: a comma
// (done false, i at the next one) or the closing byte (done true).
func next(b []byte, i int, closing byte, after string) (int, bool, error) {
	i = skipSpace(b, i)
	switch {
	case i >= len(b):
		return 0, false, errEOF
	case b[i] == ',':
		return skipSpace(b, i+1), false, nil
	case b[i] == closing:
		return i, true, nil
	}
	return 0, false, fmt.Errorf("invalid character %q after %s (offset %d)", b[i], after, i)
}

func structural(c byte) bool { return c == '"' || c == '{' || c == '}' || c == '[' || c == ']' }

func valueEnd(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\t' || c == '\r'
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset after the string that starts at b[i].
func skipString(b []byte, i int) (int, error) {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, errEOF
		}
		j += k
		bs := 0 // an odd run of backslashes before the quote escapes it
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			bs++
		}
		if bs%2 == 0 {
			return j + 1, nil
		}
		j++
	}
}

// skipValue returns the offset after the value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errEOF
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		var stack []byte
		for j := i; j < len(b); {
			for j < len(b) && !structural(b[j]) {
				j++
			}
			if j == len(b) {
				break
			}
			switch c := b[j]; c {
			case '"':
				e, err := skipString(b, j)
				if err != nil {
					return 0, err
				}
				j = e
				continue
			case '{', '[':
				stack = append(stack, c)
			default:
				open := byte('{')
				if c == ']' {
					open = '['
				}
				if len(stack) == 0 || stack[len(stack)-1] != open {
					return 0, fmt.Errorf("invalid character %q: unbalanced (offset %d)", c, j)
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return j + 1, nil
				}
			}
			j++
		}
		return 0, errEOF
	}
	j := i
	for j < len(b) && !valueEnd(b[j]) {
		j++
	}
	if j == i {
		return 0, fmt.Errorf("invalid character %q looking for beginning of value (offset %d)", b[i], i)
	}
	return j, nil
}

// elements calls f with each element of the JSON array b.
func elements(b []byte, f func(int, []byte) error) error {
	i := skipSpace(b, 0)
	if i >= len(b) {
		return errEOF
	}
	if bytes.HasPrefix(b[i:], []byte("null")) {
		return nil
	}
	if b[i] != '[' {
		return fmt.Errorf("invalid character %q looking for beginning of array (offset %d)", b[i], i)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return nil
	}
	for n := 0; ; n++ {
		start := i
		end, err := skipValue(b, i)
		if err != nil {
			return err
		}
		if err := f(n, b[start:end]); err != nil {
			return fmt.Errorf("[%d]: %w", n, err)
		}
		var done bool
		if i, done, err = next(b, end, ']', "array element"); done || err != nil {
			return err
		}
	}
}

// row reads the members of one object (membersInto's out, with their
// names) field by field, keeping the first error.
type row struct {
	f     [][]byte
	names []string
	err   error
}

func (r *row) str(i int) string {
	s, err := str(r.f[i], r.names[i])
	if r.err == nil {
		r.err = err
	}
	return s
}

func (r *row) num(i int) float64 {
	v, err := num(r.f[i], r.names[i])
	if r.err == nil {
		r.err = err
	}
	return v
}

// boolean is false when absent.
func (r *row) boolean(i int) bool {
	switch string(r.f[i]) {
	case "true":
		return true
	case "false", "":
	default:
		if r.err == nil {
			r.err = fmt.Errorf("field %q: %s value, want a boolean", r.names[i], r.f[i])
		}
	}
	return false
}

// str decodes a JSON string value ("" when absent).
func str(b []byte, field string) (string, error) {
	if b == nil {
		return "", nil
	}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' && bytes.IndexByte(b, '\\') < 0 {
		return string(b[1 : len(b)-1]), nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", fmt.Errorf("field %q: %w", field, err)
	}
	return s, nil
}

// num decodes a JSON number value (0 when absent or null).
func num(b []byte, field string) (float64, error) {
	if b == nil || string(b) == "null" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, fmt.Errorf("field %q: %s value, want a number", field, b)
	}
	return v, nil
}
