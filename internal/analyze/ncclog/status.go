package ncclog

import (
	"bytes"
	"fmt"

	"github.com/gdrcheck/gdrcheck/internal/collective"
)

// explainEvent says what the ncclResult_t a log message quotes means: the
// code of a propagation trace ("transport/net.cc:1302 -> 6"), or one
// named after "NCCL error"/"ncclResult" ("NCCL error 2", "(ncclResult 6)").
// "" when the message quotes none.
func explainEvent(m string) string {
	code, ok := quotedResult([]byte(m))
	if !ok {
		return ""
	}
	rc, ok := collective.ExplainResult(code)
	if !ok || code == 0 {
		return ""
	}
	return fmt.Sprintf("ncclResult %d is %s: %s", rc.Code, rc.Name, rc.Meaning)
}

// quotedResult finds the ncclResult_t code a message quotes.
func quotedResult(m []byte) (int, bool) {
	if isPropagation(m) {
		if k := bytes.LastIndex(m, []byte(" [")); k > 0 && m[len(m)-1] == ']' {
			m = m[:k]
		}
		i := bytes.LastIndex(m, []byte(" -> "))
		return int(atoi64(m[i+4:])), true
	}
	for _, p := range [][]byte{[]byte("ncclResult "), []byte("NCCL error "), []byte("ncclResult_t ")} {
		i := bytes.Index(m, p)
		if i < 0 {
			continue
		}
		d := m[i+len(p):]
		n := 0
		for n < len(d) && isDigit(d[n]) {
			n++
		}
		if n > 0 && n <= 2 {
			return int(atoi64(d[:n])), true
		}
	}
	return 0, false
}
