package ncclog

import (
	"bytes"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Caps on what is kept in detail live with the tracker that keeps it.
// Everything beyond a cap is still counted; the caps only bound memory (a
// 1 GB log of thousands of ranks stays well under 200 MB).

// maxTextLen bounds one line of text kept as evidence.
const maxTextLen = 400

// Transport classes.
const (
	clP2P     = 'p'
	clSHM     = 's'
	clNET     = 'n'
	clCollNet = 'c'
	clNVLS    = 'v'
	clOther   = 'o'
)

func className(c byte) string {
	switch c {
	case clP2P:
		return "p2p"
	case clSHM:
		return "shm"
	case clNET:
		return "net"
	case clCollNet:
		return "collnet"
	case clNVLS:
		return "nvls"
	}
	return "other"
}

// Localities.
const (
	locUnknown = iota
	locIntra
	locInter
)

var locName = [...]string{"unknown", "intra-node", "inter-node"}

const ambiguous = int32(-2)

// analyzer reads one log: the line lexer (lines.go) finds the NCCL
// messages, message sends each to the tracker of its concern, and report
// assembles the trackers' fragments. Each tracker owns its state and caps.
type analyzer struct {
	name   string
	files  []JobFile // the logs of a job read so far (Job); none for one log
	stats  lineStats
	pastes []*textio.Paste // one per log read
	hs     []header        // the headers of the current line, reused
	hosts  hostTracker
	comms  commTracker
	chans  channelTracker
	graph  graphTracker
	net    netTracker
	trees  treeTracker
	events eventTracker
	nvls   nvlsTracker
	diag   diagTracker
	probe  probeThread // the last probe warning's thread (events.go)
}

// lineStats counts what the lexer saw.
type lineStats struct {
	lines, bytes  int64
	nccl, spliced int64 // NCCL messages; lines holding several
	long          int64 // lines longer than MaxLine
	nulLine       int64 // first line with a NUL byte
}

func newAnalyzer(name string) *analyzer {
	return &analyzer{
		name:   name,
		hosts:  newHostTracker(),
		comms:  newCommTracker(),
		chans:  newChannelTracker(),
		graph:  newGraphTracker(),
		net:    newNetTracker(),
		events: eventTracker{kinds: map[string]*eventKind{}},
	}
}

// plainLine handles a line without an NCCL header: a bare "NCCL version"
// line (old releases print it so), an application's NCCL error, a
// framework watchdog's collective timeout, or the nccl-tests "#  Rank N
// Group G Pid P on HOST device D [bus] NAME" header.
func (a *analyzer) plainLine(b []byte, no int64) {
	// NCCL's diagnostics ("NCCL DIAG ...") carry no debug header.
	if bytes.Contains(b, sDiag) {
		a.diag.line(b, no)
		return
	}
	if watchdogLine(b) {
		a.events.timeouts++
		a.events.add('E', -1, bytes.TrimSpace(b), no)
		return
	}
	if i := bytes.Index(b, ncclTok); i >= 0 {
		r := b[i:]
		switch {
		case bytes.HasPrefix(r, pfxVersion):
			a.hosts.addBareVersion(firstToken(r[len(pfxVersion):]), no, b)
			return
		case bytes.HasPrefix(r, []byte("NCCL error")), bytes.HasPrefix(r, []byte("NCCL failure")):
			a.events.add('E', -1, bytes.TrimSpace(b), no)
			return
		}
	}
	if bytes.Contains(b, sNVLSBind) || bytes.Contains(b, sNVLSSource) && bytes.Contains(b, []byte("WARN")) {
		a.nvls.failLine(bytes.TrimSpace(b), no)
	}
	if bytes.Contains(b, []byte("Pid")) && bytes.Contains(b, []byte("Rank")) {
		a.testRankLine(b, no)
		return
	}
	if bytes.Contains(b, []byte("nccl")) && bytes.Contains(b, []byte("Error")) && strongError(b) {
		a.events.add('E', -1, bytes.TrimSpace(b), no)
	}
}

func atoiOr(b []byte, def int) int {
	if len(b) == 0 || len(b) > 9 {
		return def
	}
	n := 0
	for _, c := range b {
		if !isDigit(c) {
			return def
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func firstToken(b []byte) []byte {
	b = bytes.TrimLeft(b, " \t")
	if i := bytes.IndexAny(b, " \t"); i >= 0 {
		return b[:i]
	}
	return b
}

// clip copies at most maxTextLen bytes of b into a string.
func clip(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > maxTextLen {
		return string(b[:maxTextLen]) + "..."
	}
	return string(b)
}
