package ncclog

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// header is one NCCL message header found in a physical line:
//
//	host:pid:tid [dev] NCCL INFO msg
//	host:pid:tid [dev] file.cc:123 NCCL WARN msg
//	host:pid:tid [dev] 12.345 file.cc:123 NCCL TRACE msg
//
// A physical line may hold several (concurrent writers splice them), and
// anything may come before the first (launcher tags, timestamps, the start
// of an nccl-tests table row).
type header struct {
	start        int  // first byte of the header (host, or dev, or "NCCL")
	msg          int  // first byte of the message
	level        byte // 'I' INFO, 'W' WARN, 'T' TRACE
	hostS, hostE int  // host token (empty when hostS == hostE)
	pid, tid     int64
	dev          int
	hasDev       bool
	hasPID       bool
}

var ncclTok = []byte("NCCL ")

// findHeaders appends the NCCL message headers of line b to out.
func findHeaders(b []byte, out []header) []header {
	off := 0
	for off < len(b) {
		j := bytes.Index(b[off:], ncclTok)
		if j < 0 {
			break
		}
		k := off + j
		rest := b[k+len(ncclTok):]
		var lv byte
		var ll int
		switch {
		case hasWord(rest, "INFO"):
			lv, ll = 'I', 4
		case hasWord(rest, "WARN"):
			lv, ll = 'W', 4
		case hasWord(rest, "TRACE"):
			lv, ll = 'T', 5
		}
		if lv == 0 {
			off = k + len(ncclTok)
			continue
		}
		h := header{level: lv, start: k}
		msg := k + len(ncclTok) + ll
		if msg < len(b) && b[msg] == ' ' {
			msg++
		}
		h.msg = msg
		walkBack(b, k, &h)
		out = append(out, h)
		off = msg
	}
	return out
}

func hasWord(b []byte, w string) bool {
	if len(b) < len(w) || string(b[:len(w)]) != w {
		return false
	}
	return len(b) == len(w) || b[len(w)] == ' ' || b[len(w)] == '\t'
}

// walkBack finds "[dev]" up to three tokens before "NCCL" at k (the file:line
// of WARN lines and the time of TRACE lines sit between), then the
// host:pid:tid before it.
func walkBack(b []byte, k int, h *header) {
	end := k - 1 // the space before NCCL
	if end < 0 || b[end] != ' ' {
		return
	}
	for t := 0; t < 3 && end > 0; t++ {
		s := end - 1
		for s >= 0 && b[s] != ' ' {
			s--
		}
		tok := b[s+1 : end]
		if d, ok := devToken(tok); ok {
			h.dev, h.hasDev = d, true
			h.start = s + 1
			if s >= 1 {
				parseHPT(b, s, h)
			}
			return
		}
		if len(tok) == 0 || len(tok) > 96 || s < 0 {
			return
		}
		end = s
	}
}

// devToken reads "[3]" or "[-1]".
func devToken(t []byte) (int, bool) {
	if len(t) < 3 || len(t) > 8 || t[0] != '[' || t[len(t)-1] != ']' {
		return 0, false
	}
	in := t[1 : len(t)-1]
	neg := false
	if in[0] == '-' {
		neg, in = true, in[1:]
	}
	if len(in) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range in {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// parseHPT reads "host:pid:tid" ending just before the space at sp.
func parseHPT(b []byte, sp int, h *header) {
	e := sp
	i := e - 1
	for i >= 0 && isDigit(b[i]) {
		i--
	}
	if i == e-1 || i < 0 || b[i] != ':' || e-1-i > 18 {
		return
	}
	tid := atoi64(b[i+1 : e])
	e = i
	i = e - 1
	for i >= 0 && isDigit(b[i]) {
		i--
	}
	if i == e-1 || i < 0 || b[i] != ':' || e-1-i > 18 {
		return
	}
	pid := atoi64(b[i+1 : e])
	hostE := i
	s := i - 1
	for s >= 0 && isHostChar(b[s]) && hostE-s <= maxHostLen {
		s--
	}
	h.hostS, h.hostE = s+1, hostE
	h.pid, h.tid, h.hasPID = pid, tid, true
	h.start = s + 1
}

// maxHostLen bounds a host token (a DNS name has at most 253 bytes); a
// longer run of name characters keeps its last maxHostLen bytes.
const maxHostLen = 255

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHostChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

func atoi64(b []byte) int64 {
	var n int64
	for _, c := range b {
		n = n*10 + int64(c-'0')
	}
	return n
}

// cleanPrefix reports whether what comes before the first header of a line
// is only a launcher tag or a timestamp ("[1,3]<stdout>:", "12: ",
// "[2024-07-19 10:00:01] ", "2024-07-19T10:00:01.5Z "), so that the host
// token is whole. Anything else (text of another message, the start of a
// table row) means the host token may have been glued to it.
func cleanPrefix(p []byte) bool {
	p = bytes.TrimSpace(p)
	if len(p) == 0 {
		return true
	}
	if bytes.IndexByte(p, ' ') >= 0 || bytes.IndexByte(p, '\t') >= 0 {
		// "[2024-07-19 10:00:01]": one bracketed timestamp with a space.
		return p[0] == '[' && p[len(p)-1] == ']' && bytes.Count(p, []byte("]")) == 1
	}
	switch p[len(p)-1] {
	case ':', ']', 'Z':
		return true
	}
	return isDigit(p[0]) && bytes.IndexByte(p, ':') >= 0
}

// run reads the input line by line. Lines longer than the reader's buffer
// are gathered up to MaxLine; the rest of a longer line is skipped.
func (a *analyzer) run(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return &textio.ParseError{Name: a.name, Line: 1, Msg: "gzip-compressed data: decompress it first"}
	}
	head, _ := br.Peek(textio.HeadSize) // short at the end of input; errors come again from ReadSlice
	if i := bytes.IndexByte(head, 0); i >= 0 {
		head = head[:i]
	}
	paste := textio.DetectPaste(head, 0) // each log of a job has its own shape
	a.pastes = append(a.pastes, paste)
	lineNo, bytes0 := a.stats.lines, a.stats.bytes // a job's logs are numbered on
	var long []byte
	inLong, cut := false, false
	for {
		chunk, err := br.ReadSlice('\n')
		a.stats.bytes += int64(len(chunk))
		if err == bufio.ErrBufferFull || inLong {
			// A line too long for the buffer that holds a NUL before any
			// NCCL line is binary data (a device, an image, possibly
			// without a newline at all): stop at once.
			if a.stats.nccl == 0 && bytes.IndexByte(chunk, 0) >= 0 {
				return &textio.ParseError{Name: a.name, Line: int(lineNo + 1), Msg: "binary data (NUL byte), not a text log"}
			}
			room := MaxLine - len(long)
			if room < len(chunk) {
				cut = true
			}
			if room > 0 {
				long = append(long, chunk[:min(room, len(chunk))]...)
			}
			if err == bufio.ErrBufferFull {
				inLong = true
				continue
			}
		}
		line := chunk
		if inLong {
			line = long
		}
		if len(line) > 0 {
			lineNo++
			if cut {
				a.stats.long++
			}
			if b, skip := paste.Clean(trimEOL(line), int(lineNo)); !skip {
				a.line(b, lineNo, cut)
			}
		}
		long, inLong, cut = long[:0], false, false
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		return &textio.ParseError{Name: a.name, Line: int(lineNo + 1), Msg: "read: " + err.Error()}
	}
	a.stats.lines = lineNo
	if a.stats.bytes == bytes0 {
		return &textio.ParseError{Name: a.name, Line: int(lineNo + 1), Msg: "empty input"}
	}
	if a.stats.nccl == 0 && a.stats.nulLine > 0 {
		return &textio.ParseError{Name: a.name, Line: int(a.stats.nulLine), Msg: "binary data (NUL byte), not a text log"}
	}
	return nil
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// line handles one physical line.
func (a *analyzer) line(b []byte, no int64, cut bool) {
	if bytes.IndexByte(b, 0) >= 0 && a.stats.nulLine == 0 {
		a.stats.nulLine = no
	}
	a.hs = findHeaders(b, a.hs[:0])
	if len(a.hs) == 0 {
		a.plainLine(b, no)
		return
	}
	if len(a.hs) > 1 {
		a.stats.spliced++
	}
	if isNVLSWarn(a.hs, b) {
		a.nvls.failLine(b, no)
	}
	hostIDs := [8]int32{}
	for i := range a.hs {
		id := a.hosts.resolveHost(b, &a.hs[i], i == 0)
		if i < len(hostIDs) {
			hostIDs[i] = id
		}
	}
	for i := range a.hs {
		h := &a.hs[i]
		end := len(b)
		spliced := cut
		if i+1 < len(a.hs) {
			end = a.hs[i+1].start
			spliced = true
		}
		if end < h.msg {
			end = h.msg
			if i+1 < len(a.hs) && a.hs[i+1].start < h.msg {
				a.hs[i+1].start = h.msg
			}
		}
		host := int32(-1)
		if i < len(hostIDs) {
			host = hostIDs[i]
		} else {
			host = a.hosts.resolveHost(b, h, false)
		}
		a.message(h, host, b[h.msg:end], b[h.start:end], spliced, no)
	}
}
