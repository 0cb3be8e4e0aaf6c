package ncclog

import (
	"bytes"
	"strings"
)

// Caps of the event tracker.
const (
	maxEventKinds = 256
	maxEventsOut  = 50
)

// eventTracker owns the errors and warnings, grouped by their text with
// the numbers taken out.
type eventTracker struct {
	kinds     map[string]*eventKind
	order     []string
	errCount  int64
	warnCount int64
	// timeouts counts a framework watchdog's lines: a collective hung
	// (or failed) and the framework gave up on it.
	timeouts int64
	// ibTraffic is the first line that shows NCCL's IB transport moving
	// data ("NET/IB : Got completion from peer ..."): the job's network
	// is IB even where no "Using network" line survived; 0: none.
	ibTraffic     int64
	ibTrafficText string
}

type eventKind struct {
	level   byte
	line    int64
	host    int32
	message string
	count   int64
}

// isPropagation matches NCCL's error return traces: "init.cc:1234 -> 2".
func isPropagation(m []byte) bool {
	if len(m) > 0 && m[len(m)-1] == ']' {
		if k := bytes.LastIndex(m, []byte(" [")); k > 0 {
			m = m[:k] // "proxy.cc:878 -> 6 [Progress Thread]"
		}
	}
	n := len(m)
	if n < 8 || !isDigit(m[n-1]) {
		return false
	}
	i := n - 1
	for i >= 0 && isDigit(m[i]) {
		i--
	}
	if i < 4 || string(m[i-3:i+1]) != " -> " {
		return false
	}
	code := atoi64(m[i+1:])
	if code == 0 || code == 7 || n-i > 4 { // ncclSuccess, ncclInProgress
		return false
	}
	return bytes.Contains(m[:i], []byte(".c")) && bytes.IndexByte(m[:i], ':') >= 0
}

var strongPatterns = [][]byte{
	[]byte("unhandled system error"), []byte("unhandled cuda error"), []byte("internal error"),
	[]byte("remote process exited"), []byte("Got completion"), []byte("completion with error"),
	[]byte("Call to ibv_"), []byte("NCCL error"), []byte("NCCL failure"), []byte("Cuda failure"),
	[]byte("ncclSystemError"), []byte("ncclInternalError"), []byte("ncclUnhandledCudaError"),
	[]byte("ncclRemoteError"), []byte("ncclInvalidUsage"), []byte("ncclInvalidArgument"),
	[]byte("Connection closed"), []byte("Connection reset"), []byte("timed out"), []byte("Timeout"),
	[]byte("Error :"), []byte("async event"),
}

func strongError(m []byte) bool {
	for _, p := range strongPatterns {
		if bytes.Contains(m, p) {
			return true
		}
	}
	return false
}

var benignWarn = [][]byte{[]byte("deprecated"), []byte("Ignoring"), []byte("ignoring"), []byte("ignored")}

// probeWarn are the WARN lines of NCCL probing for a library the host does
// not have (libibverbs on a host without InfiniBand: "misc/ibvwrap.cc:63
// NCCL WARN Failed to open libibverbs.so[.1]", "ibvwrap.cc:173 NCCL WARN
// lib wrapper not initialized."): NCCL falls back (to its socket
// transport) and goes on. A warning, not an error; the return codes the
// same thread then propagates ("gdr.cc:… -> 3") are the probe's too.
var probeWarn = [][]byte{[]byte("Failed to open libibverbs"), []byte("lib wrapper not initialized")}

func isProbeWarn(m []byte) bool {
	for _, p := range probeWarn {
		if bytes.Contains(m, p) {
			return true
		}
	}
	return false
}

// maskNumbers replaces every number of s, hexadecimal (0x...) or decimal,
// with "#": messages that differ only in their numbers get one key. It
// is the regexp `0x[0-9a-fA-F]+|[0-9]+` replaced by hand (scan_test.go
// checks both agree): it runs on many lines of a large log.
func maskNumbers(s []byte) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '0' && i+2 < len(s) && s[i+1] == 'x' && isHexDigit(s[i+2]):
			i += 2
			for i < len(s) && isHexDigit(s[i]) {
				i++
			}
			b.WriteByte('#')
		case c >= '0' && c <= '9':
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			b.WriteByte('#')
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// event records an error ('E' or a WARN line), or a warning ('I': an INFO
// line that mentions an error).
func (e *eventTracker) add(level byte, host int32, m []byte, no int64) {
	isErr := level == 'E'
	if level == 'W' {
		isErr = !isProbeWarn(m)
		for _, bw := range benignWarn {
			if bytes.Contains(m, bw) {
				isErr = false
				break
			}
		}
	}
	if e.ibTraffic == 0 && bytes.HasPrefix(m, sNetIB) && bytes.Contains(m, sGotCompletion) {
		e.ibTraffic, e.ibTrafficText = no, clip(m)
	}
	lv := byte('w')
	if isErr {
		lv = 'e'
		e.errCount++
	} else {
		e.warnCount++
	}
	key := m
	if len(key) > 200 {
		key = key[:200]
	}
	k := string(lv) + maskNumbers(key)
	if ev := e.kinds[k]; ev != nil {
		ev.count++
		return
	}
	if len(e.kinds) >= maxEventKinds {
		return
	}
	e.kinds[k] = &eventKind{level: lv, line: no, host: host, message: clip(m), count: 1}
	e.order = append(e.order, k)
}

// report is the errors and the warnings, the first maxEventsOut of each.
func (e *eventTracker) report(name func(int32) string) (errs, warns []Event) {
	for _, k := range e.order {
		x := e.kinds[k]
		ev := Event{Line: x.line, Host: name(x.host), Message: x.message, Count: x.count, Explanation: explainEvent(x.message)}
		if x.level == 'e' {
			ev.Level = "error"
			if len(errs) < maxEventsOut {
				errs = append(errs, ev)
			}
		} else {
			ev.Level = "warning"
			if len(warns) < maxEventsOut {
				warns = append(warns, ev)
			}
		}
	}
	return errs, warns
}

// fromInfo records the errors NCCL reports at INFO level: propagated return
// codes ("transport/net.cc:1302 -> 6"), error texts and the proxy service
// thread's "Connection closed by localRank N" (a local rank went away: it
// crashed or was killed); a line that only mentions an error or a retry is
// a warning.
func (e *eventTracker) fromInfo(host int32, m []byte, no int64) {
	switch {
	case bytes.Contains(m, sClosedByLocal):
		e.add('E', host, m, no)
	case isPropagation(m):
		e.add('E', host, m, no)
	case bytes.Contains(m, sRror):
		if strongError(m) {
			e.add('E', host, m, no)
		} else {
			e.add('I', host, m, no)
		}
	case bytes.Contains(m, sRetry):
		e.add('I', host, m, no)
	}
}

var sClosedByLocal = []byte("Connection closed by localRank")

// watchdogTexts are what a framework prints when a collective did not
// complete in time, or when its watchdog found a failed one: PyTorch's
// ProcessGroupNCCL ("[Rank 0] Watchdog caught collective operation timeout:
// WorkNCCL(SeqNum=1, OpType=ALLREDUCE, ...) ran for 600000 milliseconds",
// "Exception (either an error or timeout) detected by watchdog at work: 1,
// last enqueued NCCL work: 1, last completed NCCL work: -1", "Timeout at
// NCCL work", "failure detected by watchdog", "watchdog got stuck", "Some
// NCCL operations have failed or timed out"). None is an NCCL debug line,
// yet each says the job hung in (or failed under) NCCL.
var watchdogTexts = [][]byte{
	[]byte("Watchdog caught collective operation timeout"),
	[]byte("detected by watchdog"),
	[]byte("Timeout at NCCL work"),
	[]byte("watchdog got stuck"),
	[]byte("NCCL operations have failed or timed out"),
}

// watchdogLine reports whether b is a framework's collective-timeout or
// watchdog-failure line. The common case (no "atchdog" nor "timed out" in
// the line) costs two searches.
func watchdogLine(b []byte) bool {
	if !bytes.Contains(b, []byte("atchdog")) && !bytes.Contains(b, []byte("NCCL work")) && !bytes.Contains(b, []byte("timed out")) {
		return false
	}
	for _, t := range watchdogTexts {
		if bytes.Contains(b, t) {
			return true
		}
	}
	return false
}

var (
	sNetIB         = []byte("NET/IB")
	sGotCompletion = []byte("Got completion")
)
