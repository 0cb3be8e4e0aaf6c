package dcgmi

import (
	"io"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// DCGM wraps warning text into 45-character pieces (DATA_INFO_TAG_LEN in
// dcgmi/Diag.cpp), each in the result column after one space.
const infoLen = 45

var (
	reHeader   = textio.MustCompile(`^\|\s*Diagnostic\s*\|\s*Result\s*\|\s*$`)
	reGPUSub   = textio.MustCompile(`^GPU(\d+):\s*(Pass|Fail|Error|Warn|Skip|Not Run)\b`)
	reMsgName  = textio.MustCompile(`^(Warning|Info|Error)(?::\s*GPU\s*(\d+))?$`)
	reGPUInMsg = textio.MustCompile(`^GPU (\d+)\b`)
)

const (
	maxTests  = 1024
	maxMsgs   = 256
	maxMsgLen = 16 << 10
	// maxMsgTotal bounds all warning and info text kept.
	maxMsgTotal = 8 << 20
)

type textState struct {
	msgBytes   int // message text kept so far, against maxMsgTotal
	rep        *Report
	section    string
	cur        *Test
	msg        *Message // the message being continued
	msgRaw     strings.Builder
	msgInfo    bool
	inTable    bool
	lastMeta   string
	tableSeen  bool
	headerSeen bool
}

// testRow reports whether a "| name | result |" row is a test's result
// ("| GPU Memory | Fail - GPU: 0 |", "| pcie | Pass |").
func testRow(s string) bool {
	body := strings.TrimPrefix(strings.TrimSpace(s), "|")
	name, rest, ok := strings.Cut(body, "|")
	if !ok || strings.TrimSpace(name) == "" || reMsgName.MatchString(strings.TrimSpace(name)) {
		return false
	}
	val := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "|"))
	return result3Match(val) != nil
}

func analyzeText(name string, r io.Reader) (*Report, error) {
	st := &textState{rep: &Report{Format: "text"}}
	lr := textio.NewLineReader(name, r)
	for n, line := range lr.All() {
		st.line(strings.TrimRight(textio.StripANSI(line), " \t"), n)
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	st.rep.Paste = lr.Paste()
	st.flushMsg()
	if !st.tableSeen && len(st.rep.Errors) == 0 {
		return nil, textio.Errorf(name, max(lr.Line(), 1), "no dcgmi diag table found (no '| Diagnostic | Result |' header or section line)")
	}
	if len(st.rep.Metadata) == 0 {
		st.rep.Metadata = nil
	}
	return st.rep, nil
}

func (st *textState) line(s string, n int) {
	t := strings.TrimSpace(s)
	var m []string
	switch {
	case t == "":
		return
	case strings.HasPrefix(t, "Error:") && !st.inTable:
		st.rep.Errors = textio.AddQuote(st.rep.Errors, n, t)
		return
	case reHeader.MatchString(t):
		st.inTable, st.tableSeen = true, true
		st.headerSeen = true
		st.rep.Complete = false
		return
	case len(t) > 1 && t[1] == '-' && sectionLine(t, &m): // "|----- Name -----+---|"
		st.flushMsg()
		st.section = textio.Clip(m[1], 64)
		st.cur = nil
		if !st.headerSeen {
			st.rep.Headless = true // the paste starts at a section
		}
		st.inTable, st.tableSeen = true, true
		st.rep.Complete = false
		return
	case isBorder(t):
		st.flushMsg()
		if st.inTable && !strings.Contains(t, "=") && st.section != "" {
			// The bottom border closes the table.
			st.rep.Complete = true
			st.inTable = false
			st.section, st.cur = "", nil
		}
		return
	}
	if !st.inTable && !st.tableSeen && strings.HasPrefix(t, "|") {
		if testRow(s) {
			// Rows alone (no header, border or section): read them, so
			// that a "Fail - GPU: 0" row is never lost.
			st.inTable, st.tableSeen, st.rep.Headless = true, true, true
		} else if len(st.rep.Orphans) < maxMsgs {
			st.rep.Orphans = append(st.rep.Orphans, n)
		}
	}
	if !st.inTable || !strings.HasPrefix(t, "|") {
		return
	}
	// "| name | info |": the name column, then the result column.
	body := strings.TrimPrefix(s[strings.Index(s, "|"):], "|")
	k := strings.Index(body, "|")
	if k < 0 {
		return
	}
	nameCol := textio.Clip(strings.TrimSpace(body[:k]), 128)
	info := body[k+1:]
	if j := strings.LastIndex(info, "|"); j >= 0 {
		info = info[:j]
	}
	st.rep.Complete = false
	st.cell(nameCol, info, n)
}

func (st *textState) cell(nameCol, info string, n int) {
	val := textio.Clip(strings.TrimSpace(info), 256)
	if strings.EqualFold(st.section, "Metadata") {
		if nameCol != "" {
			st.meta(nameCol, val)
			st.lastMeta = nameCol
		} else if st.lastMeta != "" && st.rep.Metadata != nil {
			if len(st.rep.Metadata[st.lastMeta]) < 1024 {
				st.rep.Metadata[st.lastMeta] += val
			}
		}
		return
	}
	if m := reMsgName.FindStringSubmatch(nameCol); m != nil {
		st.flushMsg()
		if st.cur == nil {
			st.cur = st.newTest("(global)", "", n)
		}
		msg := &Message{Line: n, Error: m[1] == "Error"}
		if m[2] != "" {
			g, _ := strconv.Atoi(m[2])
			msg.GPU = &g
		}
		st.msg, st.msgInfo = msg, m[1] == "Info"
		st.msgRaw.Reset()
		st.appendRaw(info)
		return
	}
	if nameCol == "" {
		if sm := reGPUSub.FindStringSubmatch(val); sm != nil && st.cur != nil {
			st.flushMsg()
			g, _ := strconv.Atoi(sm[1])
			if len(st.cur.GPUs) < maxMsgs {
				st.cur.GPUs = append(st.cur.GPUs, GPUResult{g, sm[2]})
			}
			if sm[2] == "Fail" || sm[2] == "Error" {
				// A GPU that fails fails the test, whatever its row says.
				st.cur.Result = worst(st.cur.Result, sm[2])
			}
			return
		}
		if st.msg != nil {
			st.appendRaw(info)
			return
		}
		// DCGM 3: further "Fail - GPU: 0" lines of the same test.
		if r3 := result3Match(val); r3 != nil && st.cur != nil {
			st.result3(st.cur, r3)
		}
		return
	}
	// A test row: "| pcie | Fail |" or "| PCIe | Pass - All |".
	st.flushMsg()
	t := st.newTest(nameCol, val, n)
	if r3 := result3Match(val); r3 != nil {
		st.result3(t, r3)
	} else {
		t.Result = val
	}
}

func (st *textState) newTest(name, val string, n int) *Test {
	t := &Test{Name: name, Category: st.section, Line: n}
	if len(st.rep.Tests) < maxTests {
		st.rep.Tests = append(st.rep.Tests, t)
	}
	st.cur = t
	return t
}

// result3 applies "Pass - All", "Fail - GPU: 0", "Fail - GPUs: 0, 1".
func (st *textState) result3(t *Test, m []string) {
	res := m[1]
	switch {
	case m[2] == "All":
		t.AllGPUs = true
		t.Result = res
	case m[3] != "":
		for _, f := range strings.FieldsFunc(m[3], func(r rune) bool { return r == ',' || r == ' ' }) {
			g, err := strconv.Atoi(f)
			if err == nil && len(t.GPUs) < maxMsgs {
				t.GPUs = append(t.GPUs, GPUResult{g, res})
			}
		}
		t.Result = worst(t.Result, res)
	default:
		t.Result = worst(t.Result, res)
	}
}

var rank = map[string]int{"Error": 0, "Fail": 0, "Warn": 1, "Pass": 2, "Skip": 3, "Not Run": 4, "": 5}

func worst(a, b string) string {
	ra, oka := rank[a]
	rb, okb := rank[b]
	if !oka {
		return a
	}
	if !okb || rb < ra {
		return b
	}
	return a
}

func (st *textState) meta(k, v string) {
	rep := st.rep
	if rep.Metadata == nil {
		rep.Metadata = map[string]string{}
	}
	if len(rep.Metadata) < 64 {
		rep.Metadata[k] = v
	}
	switch k {
	case "DCGM Version":
		rep.DCGMVersion = v
	case "Driver Version Detected":
		rep.DriverVersion = v
	case "GPU Device IDs Detected":
		rep.DeviceIDs = nil
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" && len(rep.DeviceIDs) < 1024 {
				rep.DeviceIDs = append(rep.DeviceIDs, f)
			}
		}
	}
}

// appendRaw adds one wrapped piece: the column holds " " + up to 45
// characters of the message + padding.
func (st *textState) appendRaw(info string) {
	piece := strings.TrimPrefix(info, " ")
	if len(piece) > infoLen {
		piece = piece[:infoLen]
	}
	if st.msgRaw.Len()+len(piece) <= maxMsgLen && st.msgBytes+len(piece) <= maxMsgTotal {
		st.msgRaw.WriteString(piece)
		st.msgBytes += len(piece)
	}
}

func (st *textState) flushMsg() {
	if st.msg == nil {
		return
	}
	m := st.msg
	m.Text = strings.Join(strings.Fields(st.msgRaw.String()), " ")
	if m.GPU == nil {
		if g := reGPUInMsg.FindStringSubmatch(m.Text); g != nil {
			v, _ := strconv.Atoi(g[1])
			m.GPU = &v
		}
	}
	if st.cur != nil {
		if st.msgInfo {
			if len(st.cur.Info) < maxMsgs {
				st.cur.Info = append(st.cur.Info, *m)
			}
		} else if len(st.cur.Warnings) < maxMsgs {
			st.cur.Warnings = append(st.cur.Warnings, *m)
		}
	}
	st.msg = nil
	st.msgRaw.Reset()
}
