package perftest

import (
	"io"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/textio"
)

var (
	reTool     = textio.MustCompile(`\b((?:ib_(?:write|read|send|atomic)_(?:bw|lat))|raw_ethernet_\w+)\b`)
	reTitle    = textio.MustCompile(`^\s*(\S.*?)\s+(BW|Latency|Lat)\s+Test\s*$`)
	reBWHeader = textio.MustCompile(`^\s*#bytes\s+(#sl\s+)?#iterations\s+BW peak\[([^\]]+)\]\s+BW average\[([^\]]+)\]`)
	reLatHead  = textio.MustCompile(`^\s*#bytes\s+#iterations\s+(t_\w+|tps)`)
	reAddress  = textio.MustCompile(`^\s*(local|remote) address:`)
	reGID      = textio.MustCompile(`^\s*GID:`)

	reCUDAAddr = textio.MustCompile(`CUDA device \d+: PCIe address is (\S+)`)
	reCUDAName = textio.MustCompile(`device name = \[([^\]]+)\]`)
	reIntegr   = textio.MustCompile(`CUDA device integrated: (\S+)`)
	reDMABuf   = textio.MustCompile(`using DMA-BUF for GPU buffer|Calling ibv_reg_dmabuf_mr\(`)
	reGPUAlloc = textio.MustCompile(`cuMemAlloc\(\) of a|allocated GPU buffer|initializing CUDA|Picking (?:device|GPU) (?:No\.|number)`)
	reROCm     = textio.MustCompile(`(?i)\brocm\b|hipMalloc|Using ROCm`)

	reMTULow  = textio.MustCompile(`Requested mtu is higher than active mtu`)
	reNoPeak  = textio.MustCompile(`BW peak won't be measured`)
	reFreq    = textio.MustCompile(`Conflicting CPU frequency values`)
	reWarning = textio.MustCompile(`(?i)^\s*warning\b`)
	// Failures of the data path: the transfer itself went wrong.
	reFailPath = textio.MustCompile(`Completion with error|Failed status \d+|Failed to complete run_iter|^\s*scnt=\d+, ccnt=\d+|Couldn't (?:allocate|register) MR|ibv_reg_(?:dmabuf_)?mr failed|does not support DMA-BUF|DMA-BUF is not supported|poll CQ failed|Problems with warm up|Couldn't post send|Couldn't post recv`)
	// Failures of the tool: it could not set the test up.
	reFailTool = textio.MustCompile(`(?i)couldn't|unable to|failed to|\berror\b|no ib devices found|not found|invalid|unrecognized option|unknown option|segmentation fault|core dumped`)
	reStatus   = textio.MustCompile(`Failed status (\d+)`)
	// reRegFail: the buffer could not be registered with the NIC (a
	// memory region: ibv_reg_mr, ibv_reg_dmabuf_mr). For GPU memory this
	// is GPU Direct RDMA not working (no nvidia-peermem, no dma-buf).
	reRegFail = textio.MustCompile(`Couldn't (?:allocate|register) MR|ibv_reg_(?:dmabuf_)?mr failed|[Ff]ailed to create (?:MR|mr)|does not support DMA-BUF|DMA-BUF is not supported`)
)

// Limits keeping memory bounded.
const (
	maxRows = 1 << 16
)

type textState struct {
	rep    *Report
	inHead bool
	table  string // "bw", "lat" or ""
	latCol []string
	seen   map[string]bool
	fields []string // scratch for a row's fields
	key    []byte   // and for its key in seen
}

func analyzeText(name string, r io.Reader) (*Report, error) {
	st := &textState{rep: &Report{Format: "text", Params: map[string]string{}}, seen: map[string]bool{}}
	lr := textio.NewLineReader(name, r)
	found := false
	for n, line := range lr.All() {
		if st.line(textio.StripANSI(line), n) {
			found = true
		}
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	st.rep.Paste = lr.Paste()
	if !found {
		return nil, textio.Errorf(name, max(lr.Line(), 1), "no perftest output found (no test title, '#bytes' result header or result row)")
	}
	if len(st.rep.Params) == 0 {
		st.rep.Params = nil
	}
	return st.rep, nil
}

func (st *textState) quote(list *[]textio.Quote, n int, text string) {
	*list = textio.AddQuote(*list, n, strings.TrimSpace(text))
}

// line handles one line; it reports whether the line was perftest's.
func (st *textState) line(s string, n int) bool {
	rep := st.rep
	t := strings.TrimSpace(s)
	if t == "" {
		return false
	}
	if rep.Command == "" && (strings.Contains(t, "ib_") || strings.Contains(t, "raw_ethernet_")) && st.command(t) {
		return true
	}
	switch {
	case strings.Contains(t, "Test") && reTitle.MatchString(t) && !strings.HasPrefix(t, "#"):
		m := reTitle.FindStringSubmatch(t)
		if rep.Test == "" {
			rep.Test = textio.Clip(t, 128)
		}
		if m[2] == "BW" {
			rep.Type = "bw"
		} else {
			rep.Type = "lat"
		}
		rep.Sides++
		st.inHead, st.table = true, ""
		return true
	case strings.HasPrefix(t, "-----") && isDashes(t):
		st.inHead = false
		st.table = ""
		return false
	case strings.Contains(t, "Waiting for client to connect"):
		rep.Server = true
		return true
	case strings.HasPrefix(t, "#bytes") && reBWHeader.MatchString(t):
		m := reBWHeader.FindStringSubmatch(t)
		rep.Unit, st.table, st.inHead = textio.Clip(m[3], 16), "bw", false
		if rep.Type == "" {
			rep.Type = "bw"
		}
		st.latCol = nil
		if m[1] != "" {
			st.latCol = []string{"#sl"}
		}
		return true
	case strings.HasPrefix(t, "#bytes") && reLatHead.MatchString(t):
		st.table, st.inHead = "lat", false
		st.latCol = latColumns(t)
		if rep.Type == "" {
			rep.Type = "lat"
		}
		return true
	}
	if st.table != "" {
		if st.row(t, n) {
			return true
		}
	}
	words := lineWords.tags(t)
	if words&memoryTag != 0 && st.memoryLine(t, n) {
		return true
	}
	switch {
	case reMTULow.MatchString(t):
		rep.MTULowered = true
		st.quote(&rep.Warnings, n, t)
		return true
	case reNoPeak.MatchString(t):
		rep.DurationMode = true
		st.quote(&rep.Warnings, n, t)
		return true
	case reFreq.MatchString(t):
		st.quote(&rep.Warnings, n, t)
		return true
	case words&failTag != 0 && (reFailPath.MatchString(t) || (reFailTool.MatchString(t) && !st.inHead && !reAddress.MatchString(t))):
		st.quote(&rep.Errors, n, t)
		return true
	case reWarning.MatchString(t):
		st.quote(&rep.Warnings, n, t)
		return true
	}
	if st.inHead && !reAddress.MatchString(t) && !reGID.MatchString(t) {
		keyValues(t, 8, func(k, v string) { param(st.rep, strings.TrimSpace(k), v) })
		return true
	}
	if reAddress.MatchString(t) {
		return true
	}
	return false
}

// The regular expressions below run only on lines that hold one of their
// words (in lower case): run on every line, their backtracking made the
// reader crawl (3 MB/s).
var (
	memoryList = []string{"dma-buf", "dmabuf", "cuda", "device name", "cumemalloc", "gpu buffer", "picking", "rocm", "hipmalloc"}
	failList   = []string{"error", "failed", "scnt=", "couldn't", "ibv_reg_", "dma-buf", "problems with warm up",
		"unable to", "not found", "devices found", "invalid", "unrecognized option", "unknown option", "segmentation fault", "core dumped"}
	lineWords = new(wordSet).addWords(memoryTag, memoryList...).addWords(failTag, failList...)
)

// The tags of lineWords.
const (
	memoryTag uint8 = 1 << iota
	failTag
)

// command takes the first line that names the tool as its command line.
func (st *textState) command(t string) bool {
	m := reTool.FindStringSubmatch(t)
	if m == nil {
		return false
	}
	rep := st.rep
	rep.Tool, rep.Command = m[1], textio.Clip(t, 1024)
	if strings.Contains(t, "--use_cuda") {
		rep.Memory.Kind = "cuda"
	}
	if strings.Contains(t, "--use_rocm") {
		rep.Memory.Kind = "rocm"
	}
	if strings.Contains(t, "--use_cuda_dmabuf") || strings.Contains(t, "--use_rocm_dmabuf") {
		rep.Memory.DMABufRequested = true
	}
	return true
}

// param records one of perftest's parameters, the key as printed, and sets
// the fields of the report that some of them give. The JSON output writes
// the keys of the text with "_" for each space ("Link_type").
func param(rep *Report, k, v string) {
	k, v = textio.Clip(k, 64), textio.Clip(v, 128)
	if len(rep.Params) < 64 {
		rep.Params[k] = v
	}
	switch strings.ReplaceAll(k, "_", " ") {
	case "Device":
		rep.Device = v
	case "Link type":
		rep.LinkType = v
	case "Transport type":
		rep.Transport = v
	case "Connection type":
		rep.ConnectionType = v
	case "Number of qps":
		rep.QPs, _ = strconv.Atoi(v)
	case "Mtu":
		rep.MTU, _ = strconv.Atoi(strings.TrimSuffix(v, "[B]"))
	case "rdma cm QPs":
		rep.RDMACM = v == "ON"
	}
}

// memoryLine reads the CUDA/ROCm set-up lines perftest prints.
func (st *textState) memoryLine(t string, n int) bool {
	m := &st.rep.Memory
	switch {
	case reDMABuf.MatchString(t):
		m.Kind, m.Registration = gpuKind(m.Kind), "dma-buf"
	case reCUDAAddr.MatchString(t):
		m.Kind, m.GPUBusID = gpuKind(m.Kind), textio.Clip(reCUDAAddr.FindStringSubmatch(t)[1], 32)
	case reCUDAName.MatchString(t):
		m.Kind, m.GPU = gpuKind(m.Kind), textio.Clip(reCUDAName.FindStringSubmatch(t)[1], 128)
	case reIntegr.MatchString(t):
		v := reIntegr.FindStringSubmatch(t)[1]
		m.Integrated = v != "0"
		m.Kind = gpuKind(m.Kind)
	case reGPUAlloc.MatchString(t):
		m.Kind = gpuKind(m.Kind)
	case reROCm.MatchString(t) && !strings.Contains(t, "Use_ROCm_memory"):
		m.Kind = "rocm"
	default:
		return false
	}
	if len(m.Evidence) < 12 {
		m.Evidence = append(m.Evidence, textio.Quote{Line: n, Text: textio.Clip(t, textio.MaxQuoteLen)})
	}
	return true
}

func gpuKind(k string) string {
	if k == "rocm" {
		return k
	}
	return "cuda"
}

func latColumns(h string) []string {
	f := strings.Fields(h)
	var out []string
	for i := 0; i < len(f); i++ {
		c := f[i]
		switch {
		case c == "tps" && i+1 < len(f) && f[i+1] == "average":
			out = append(out, "tps")
			i++
		case strings.HasSuffix(c, "percentile[usec]"):
			// "99% percentile[usec]" is two fields; the first was kept.
			continue
		case c == "99%" || c == "99.9%":
			out = append(out, "p"+strings.TrimSuffix(c, "%"))
		default:
			out = append(out, strings.SplitN(c, "[", 2)[0])
		}
	}
	return out
}

func (st *textState) row(t string, n int) bool {
	if len(t) > 512 {
		return false
	}
	f := textio.AppendFields(st.fields[:0], t)
	st.fields = f[:0] // f is not kept: the next row reuses it
	if len(f) < 3 || len(f) > 16 {
		return false
	}
	var buf [16]float64
	nums := buf[:len(f)]
	for i, x := range f {
		if x[0] == '*' { // a cell a person set in Markdown bold: **5544.28**
			x = strings.Trim(x, "*")
			f[i] = x
		}
		v, ok := textio.ParseFloat(x)
		if !ok {
			return false
		}
		nums[i] = v
	}
	if !isCount(f[0]) {
		return false
	}
	// The fields joined by one blank: the key of the rows seen, built in
	// a reused buffer (the lookup does not allocate; a new key does).
	key := st.key[:0]
	for i, x := range f {
		if i > 0 {
			key = append(key, ' ')
		}
		key = append(key, x...)
	}
	st.key = key
	rep := st.rep
	if st.seen[string(key)] {
		return true // the other side printed the same line
	}
	if len(st.seen) < maxRows {
		st.seen[string(key)] = true
	}
	switch st.table {
	case "bw":
		off := 0
		if len(st.latCol) == 1 { // QoS format: #bytes #sl #iterations ...
			off = 1
		}
		if len(f) < 5+off || !isCount(f[1+off]) || len(rep.Rows) >= maxRows {
			return false
		}
		b, _ := strconv.ParseInt(f[0], 10, 64)
		it, _ := strconv.ParseInt(f[1+off], 10, 64)
		rep.Rows = append(rep.Rows, Row{Bytes: b, Iterations: it, BWPeak: nums[2+off], BWAverage: nums[3+off], MsgRate: nums[4+off], Line: n})
	case "lat":
		if len(f) < 3 || !isCount(f[1]) || len(rep.LatRows) >= maxRows {
			return false
		}
		b, _ := strconv.ParseInt(f[0], 10, 64)
		it, _ := strconv.ParseInt(f[1], 10, 64)
		lr := LatRow{Bytes: b, Iterations: it, Line: n}
		for i := 2; i < len(f) && i < len(st.latCol); i++ {
			if p := lr.field(st.latCol[i]); p != nil {
				v := nums[i]
				*p = &v
			}
		}
		rep.LatRows = append(rep.LatRows, lr)
	default:
		return false
	}
	return true
}

func isCount(s string) bool {
	v, err := strconv.ParseInt(s, 10, 64)
	return err == nil && v >= 0
}
