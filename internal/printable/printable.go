// Package printable makes text that came from the input safe to print.
//
// A snapshot, a log or a pasted tool output can hold terminal escape
// sequences (a window-title change, a screen clear, an OSC 52 clipboard
// write), a carriage return that overprints a line with a fake PASS, a
// newline that forges a line of a table, or bytes that are not UTF-8.
// Every printer that writes input-derived strings to a terminal, a
// Markdown table or an XML report passes them through this package first:
// Line for a value that sits on one line (a table cell, a name, a message),
// Text for a block whose own line breaks and tabs are legitimate, Cell for
// a value in a Markdown table cell.
//
// What is escaped, and how (Go's notation, so that the planted content
// stays visible and readable):
//
//   - C0 controls (U+0000–U+001F) and DEL (U+007F): \a \b \t \n \v \f \r as
//     such, the others as \xHH (ESC is \x1b);
//   - C1 controls (U+0080–U+009F, which some terminals act on as CSI, OSC,
//     ...), the line and paragraph separators and the bidirectional
//     formatting characters: \uHHHH;
//   - bytes that are not UTF-8: \xHH.
//
// Every other character, including the backslash, is kept: the output is
// for people, not a quoting that can be read back.
package printable

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Line returns s with every control character escaped, tabs and line
// breaks included: what it returns prints on one line.
func Line(s string) string { return escape(s, false) }

// Text returns s with every control character escaped except tab and line
// feed, which lay out a block of text.
func Text(s string) string { return escape(s, true) }

// Cell returns s fit for a Markdown (GitHub-flavoured) table cell: Line,
// then a backslash before every character that would end the cell or
// start Markdown or HTML markup (| ` * _ [ ] < > and the backslash).
func Cell(s string) string { return cellEscaper.Replace(Line(s)) }

var cellEscaper = strings.NewReplacer(
	`\`, `\\`, "|", `\|`, "`", "\\`", "*", `\*`, "_", `\_`,
	"[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`,
)

// Code returns s fit for a Markdown code span inside a table cell: Line,
// with a backtick (which would end the span) replaced by an apostrophe
// and | escaped (GitHub splits cells before it parses code spans).
func Code(s string) string {
	return strings.NewReplacer("`", "'", "|", `\|`).Replace(Line(s))
}

// escape is Line (keepLayout false) and Text (true).
func escape(s string, keepLayout bool) string {
	i := firstUnsafe(s, keepLayout)
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII(c, keepLayout) {
				b.WriteByte(c)
			} else {
				b.WriteString(asciiEscape(c))
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, c)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// firstUnsafe is the index of the first byte that needs escaping, or
// len(s).
func firstUnsafe(s string, keepLayout bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if !safeASCII(c, keepLayout) {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafeRune(r) {
			return i
		}
		i += n
	}
	return len(s)
}

func safeASCII(c byte, keepLayout bool) bool {
	switch {
	case c >= 0x20 && c < 0x7f:
		return true
	case c == '\t' || c == '\n':
		return keepLayout
	}
	return false
}

// asciiEscape writes \a \b \t \n \v \f \r (0x07–0x0d) by name, other
// ASCII controls as \xHH.
func asciiEscape(c byte) string {
	if c >= '\a' && c <= '\r' {
		return `\` + string("abtnvfr"[c-'\a'])
	}
	return fmt.Sprintf(`\x%02x`, c)
}

// unsafeRune reports a non-ASCII rune that acts on a terminal or on the
// order or breaking of lines: C1 controls, U+2028/U+2029 and the
// bidirectional formatting characters.
// UnsafeRune says whether a terminal could act on r though it is not an
// ASCII control: a C1 control, or a bidirectional mark, override or
// isolate (which reorder what follows on the line).
func UnsafeRune(r rune) bool { return unsafeRune(r) }

func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
