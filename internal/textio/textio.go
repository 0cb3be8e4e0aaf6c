// Package textio is the input kit every parser shares (the readers under
// analyze/, the fact parsers under facts/, the reports that read documents
// back): a line reader that numbers lines and survives overlong or binary
// input, a line counter for JSON input, the one error type that names a
// file and a line (ParseError), lenient number parsing, and the clipping of
// quoted input lines.
package textio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// HeadSize is how much of a file Detect functions are given.
const HeadSize = 64 << 10

// MaxLine bounds one stored line; the rest of a longer line is dropped
// (and counted), so a runaway line cannot exhaust memory.
const MaxLine = 1 << 20

// ParseError names the file and the 1-based line a reader could not read.
type ParseError struct {
	Name string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg) }

// Errorf makes a ParseError.
func Errorf(name string, line int, format string, a ...any) *ParseError {
	return &ParseError{Name: name, Line: line, Msg: fmt.Sprintf(format, a...)}
}

// LineReader reads numbered lines without a length limit on the input:
// lines longer than MaxLine are cut (Truncated counts them).
//
// Every line passes through a Paste found from the first 64 KiB (see
// DetectPaste): launcher and log prefixes, Markdown quotes and fences and
// shell prompts are removed, and the lines skipped are counted in Paste().
// Line numbers stay those of the input.
type LineReader struct {
	name      string
	br        *bufio.Reader
	line      int
	err       error
	paste     *Paste
	Truncated int
}

// NewLineReader reads r; name is used in errors.
func NewLineReader(name string, r io.Reader) *LineReader {
	return NewLineReaderOpt(name, r, 0)
}

// NewLineReaderOpt is NewLineReader leaving the shapes of opt to the reader.
func NewLineReaderOpt(name string, r io.Reader, opt PasteOpt) *LineReader {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(HeadSize) // a short head at the end of input; errors come again from Next
	if i := bytes.IndexByte(head, 0); i >= 0 {
		head = head[:i]
	}
	return &LineReader{name: name, br: br, paste: DetectPaste(head, opt)}
}

// Paste says what was removed from the lines and which were skipped.
func (lr *LineReader) Paste() *PasteNote { return lr.paste.Note() }

// Next returns the next line without its end of line ("\n" or "\r\n"),
// cleaned of paste prefixes; lines that are not output (code fences) are
// skipped. ok is false at the end of input or on a read error (see Err).
func (lr *LineReader) Next() (string, bool) {
	for {
		b, ok := lr.next()
		if !ok {
			return "", false
		}
		b, skip := lr.paste.Clean(b, lr.line)
		if !skip {
			return string(b), true
		}
	}
}

func (lr *LineReader) next() ([]byte, bool) {
	if lr.err != nil {
		return nil, false
	}
	// The common case, a line that fits the buffer: no copy here (the
	// bytes stay valid until the next read), one into the string Next
	// returns.
	chunk, err := lr.br.ReadSlice('\n')
	if err == nil {
		if i := bytes.IndexByte(chunk, 0); i >= 0 {
			lr.line++
			lr.err = Errorf(lr.name, lr.line, "binary data (NUL byte at column %d): not a text output", i+1)
			return nil, false
		}
		lr.line++
		chunk = chunk[:len(chunk)-1]
		if n := len(chunk); n > 0 && chunk[n-1] == '\r' {
			chunk = chunk[:n-1]
		}
		return chunk, true
	}
	return lr.slow(chunk, err)
}

// slow finishes Next for a line longer than the buffer or the last line
// of the input (first is what ReadSlice gave, with its error).
func (lr *LineReader) slow(first []byte, firstErr error) ([]byte, bool) {
	var buf []byte
	cut := false
	col := 0 // bytes of the line before chunk
	for i := 0; ; i++ {
		chunk, err := first, firstErr
		if i > 0 {
			chunk, err = lr.br.ReadSlice('\n')
		}
		// A NUL ends the input at once, before the end of its line: binary
		// data (a device, an image) may have no newline at all.
		if i := bytes.IndexByte(chunk, 0); i >= 0 {
			lr.line++
			lr.err = Errorf(lr.name, lr.line, "binary data (NUL byte at column %d): not a text output", col+i+1)
			return nil, false
		}
		col += len(chunk)
		if len(buf)+len(chunk) <= MaxLine {
			buf = append(buf, chunk...)
		} else if !cut {
			buf = append(buf, chunk[:MaxLine-len(buf)]...)
			cut = true
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil { // io.EOF or a read error: the line read so far is the last
			lr.err = err
			if len(buf) == 0 {
				return nil, false
			}
		}
		break
	}
	lr.line++
	if cut {
		lr.Truncated++
	}
	buf = bytes.TrimSuffix(buf, []byte("\n"))
	buf = bytes.TrimSuffix(buf, []byte("\r"))
	return buf, true
}

// All yields the numbered lines of Next until the end of input or a read
// error (see Err).
func (lr *LineReader) All() iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		for {
			line, ok := lr.Next()
			if !ok || !yield(lr.line, line) {
				return
			}
		}
	}
}

// Line is the number of the line Next returned last.
func (lr *LineReader) Line() int { return lr.line }

// Err is the read error that stopped Next (nil at a clean end of input),
// as a ParseError naming the line.
func (lr *LineReader) Err() error {
	if lr.err == nil || lr.err == io.EOF {
		return nil
	}
	var pe *ParseError
	if errors.As(lr.err, &pe) {
		return pe
	}
	return Errorf(lr.name, lr.line+1, "read: %v", lr.err)
}

var reANSI = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// StripANSI removes terminal escape sequences.
func StripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return reANSI.ReplaceAllString(s, "")
}

// ParseFloat parses a finite decimal number, spaces allowed around it
// ("N/A", "nan", "inf", hex and underscores are refused).
func ParseFloat(s string) (float64, bool) {
	if v, ok := parseDecimal(s); ok {
		return v, true
	}
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, "xXpP_") {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// parseDecimal is ParseFloat's fast path for the numbers of tables:
// [+-]digits[.digits] with at most 15 digits. The digits make an integer
// below 2^53 and the scale a power of ten below 1e16, both exact, so one
// division gives the correctly rounded value, as strconv's own exact path
// does. Anything else is left to strconv (ok false).
func parseDecimal(s string) (float64, bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" || len(s) > 16 {
		return 0, false
	}
	var mant uint64
	nd, frac, dot := 0, 0, false
	for i := range len(s) {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			nd++
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if nd == 0 || nd > 15 {
		return 0, false
	}
	v := float64(mant) / pow10[frac]
	if neg {
		v = -v
	}
	return v, true
}

// Clip shortens s to at most n bytes (on a rune boundary), marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// FormatFloat prints v with at most prec decimals, trailing zeros dropped
// (12.500 prints "12.5", 3.000 "3").
func FormatFloat(v float64, prec int) string {
	return strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', prec, 64), "0"), ".")
}

// StartsJSON reports whether head, past blanks and a byte order mark,
// starts with '{': the Detect functions' test for a JSON output.
func StartsJSON(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	return len(t) > 0 && t[0] == '{'
}

// TextOrJSON reads r with json when its head (4 KiB) StartsJSON, with text
// otherwise.
//
// A JSON output pasted in a code fence, a quote or behind prefixes is
// decoded through the Paste found from its head (skipped lines become
// empty lines, so the decoder's line numbers are the file's).
func TextOrJSON[R any](name string, r io.Reader, text, json func(name string, r io.Reader) (R, error)) (R, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4096) // shorter at the end of the input; the error is the reader's to report
	if StartsJSON(head) {
		return json(name, br)
	}
	if clean := CleanHead(head); StartsJSON(clean) {
		full, _ := br.Peek(HeadSize)
		return json(name, NewPasteReader(DetectPaste(full, 0), br))
	}
	return text(name, br)
}

// Quote is an input line worth quoting in a report.
type Quote struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// MaxQuotes bounds the quotes of one list, MaxQuoteLen the text of one.
const (
	MaxQuotes   = 200
	MaxQuoteLen = 400
)

// AddQuote appends the text of a line, clipped, to qs unless qs is full.
func AddQuote(qs []Quote, line int, text string) []Quote {
	if len(qs) >= MaxQuotes {
		return qs
	}
	return append(qs, Quote{line, Clip(text, MaxQuoteLen)})
}

// AppendFields appends the fields of s, as strings.Fields (bytes.Fields)
// splits them, to dst: a reader reuses dst line after line instead of
// allocating a slice per line. Both the string readers and the byte
// readers (ncclog) split with it.
func AppendFields[S ~string | ~[]byte](dst []S, s S) []S {
	n := len(dst)
	start := -1
	for i := range len(s) {
		c := s[i]
		if c >= utf8.RuneSelf { // Unicode blanks: strings.Fields knows them
			return append(dst[:n], unicodeFields(s)...)
		}
		if asciiSpace(c) {
			if start >= 0 {
				dst = append(dst, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		dst = append(dst, s[start:])
	}
	return dst
}

// unicodeFields is strings.Fields or bytes.Fields, as S is.
func unicodeFields[S ~string | ~[]byte](s S) []S {
	var out []S
	for _, f := range strings.Fields(string(s)) {
		out = append(out, S(f))
	}
	return out
}

// asciiSpace is unicode.IsSpace on ASCII.
func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
