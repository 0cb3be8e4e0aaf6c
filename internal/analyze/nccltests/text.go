package nccltests

import (
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/collective"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// typeAlt are the datatype names nccl-tests prints (current and pre-2.10
// builds): the keys of typeSize.
const typeAlt = `int8|uint8|int32|uint32|int64|uint64|half|float|double|bfloat16|f8e4m3|f8e5m2|char|int`

var (
	// srun --label puts "rank: " at the start of each line. (mpirun
	// --tag-output puts "[job,rank]<stdout>:" before every write, so in the
	// middle of lines too: see findTags.)
	reSrun = textio.MustCompile(`^\s*(\d+): `)

	reLogVersion = textio.MustCompile(`NCCL (?:INFO|VERSION) NCCL version (\S+)`)
	reLogOp      = textio.MustCompile(`NCCL INFO (AllReduce|AllGather|ReduceScatter|Broadcast|Reduce|AllToAll|AlltoAll|SendRecv|Send|Recv|Gather|Scatter|HyperCube): opCount`)
	reVersion    = textio.MustCompile(`^NCCL version (\S+)`)
	reBinary     = textio.MustCompile(`(?:^|[/\s])([a-z][a-z0-9_]*?_perf)(_mpi)?(?:\s|$)`)
	reFailure    = textio.MustCompile(`\bTest (?:NCCL |CUDA |MPI )?failure\b`)

	reTestsVersion = textio.MustCompile(`^nccl-tests version (\S+)`)
	reStarting     = textio.MustCompile(`^Collective test starting:\s*(\S+)`)
	reConcluded    = textio.MustCompile(`^Collective test concluded:\s*(\S+)`)
	// reGdrCollective is the marker gdrcheck's own dossier file
	// (raw/nccl/nccl-tests.txt) prints before each collective's table:
	// "# Collective all_reduce".
	reGdrCollective = textio.MustCompile(`^Collective ([a-z][a-z0-9_]*)$`)
	reColumns       = textio.MustCompile(`^size\s+count\s+type\b`)
	reOOB           = textio.MustCompile(`^Out of bounds values\s*:\s*(\d+)\s*(\w*)`)
	reAvg           = textio.MustCompile(`^Avg bus bandwidth\s*:\s*(\S+)\s*(\w*)`)
	reReducing      = textio.MustCompile(`^Reducing maxBytes to (\d+)`)
	reHashError     = textio.MustCompile(`^error:\s*(.+)`)
	reJSONOut       = textio.MustCompile(`^Writing JSON output to (\S+)`)

	reParamInt = map[string]*textio.Pattern{
		"minBytes": textio.MustCompile(`\bminBytes\s+(\d+)`),
		"maxBytes": textio.MustCompile(`\bmaxBytes\s+(\d+)`),
		"warmup":   textio.MustCompile(`\bwarmup iters:\s*(\d+)`),
		"agg":      textio.MustCompile(`\bagg iters:\s*(\d+)`),
		"valid":    textio.MustCompile(`\bvalidation:\s*(\d+)`),
		"graph":    textio.MustCompile(`\bgraph:\s*(\d+)`),
	}
	reParamIters = textio.MustCompile(`(\S+\s+)?iters:\s*(\d+)`)
	reParamStep  = textio.MustCompile(`\bstep:\s*(\S+)`)
	reParamExtra = textio.MustCompile(`\b([a-z_]+):\s*(\S+)`)
	reTimestamp  = textio.MustCompile(`^\d{1,2}:\d{2}:\d{2}(?:\.\d+)?$`)
	reDate       = textio.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
)

// Limits that keep memory bounded on hostile input.
const (
	maxStreams   = 4096
	maxHosts     = 4096
	maxRowTokens = 64
	// maxRows bounds the rows kept per test (a benchmark prints tens).
	maxRows = 1 << 16
	// maxTests bounds the tests kept, maxTotalRows the rows kept over
	// all of them: 200 MB of one-row tables must not cost gigabytes.
	maxTests     = 1024
	maxTotalRows = 1 << 16
)

type stream struct {
	key     string
	cur     *Test
	pending []string
	pendLn  int
	// Metadata waiting for the next test of this stream.
	nextVersion, nextBinary string
	binaryHint, opHint      string
	ncclVersion             string
	used                    bool
	// discard is the stream's record of its tests past maxTests.
	discard *Test
	// carry is the test whose rank lines and parameters the next test
	// inherits: gdrcheck's dossier file prints them once, before its
	// first "# Collective X".
	carry *Test
	// sumTest is the test the summary lines go to; deferred the tests
	// waiting for one when the summaries come together after the last
	// table (gdrcheck's dossier file), in order, from defIdx on.
	sumTest  *Test
	deferred []*Test
	defIdx   int
	// open is the stream's text of a line not ended yet: a launcher that
	// tags every write (mpirun --tag-output, mpiexec -prepend-rank) puts
	// the next rank's tag where this write stopped, maybe inside a
	// number; the line goes on at the stream's next tag. openLn is
	// where it started.
	open   string
	openLn int
}

// maxOpen bounds a stream's unended line: past it the text is read as it
// is, a fragment.
const maxOpen = 64 << 10

type textParser struct {
	// rowsLeft is how many more rows the kept tests may hold.
	rowsLeft int
	rep      *Report
	streams  map[string]*stream
	tests    []*Test
	hosts    map[string]bool
	// noRows (always 0) is the room for rows of the tests past maxTests.
	noRows int
	// buf holds the row being read, fields the tokens of the line.
	buf    rowBuf
	fields []string
	// hydra is set once a line starts with an MPICH/Intel MPI
	// "-prepend-rank" tag "[N] ": from then on such tags are looked for
	// inside lines too (that launcher tags every write).
	hydra bool
}

// fileHints name collectives in file names, most specific first.
var fileHints = []struct {
	re   *textio.Pattern
	coll string
}{
	{textio.MustCompile(`all_?reduce`), "all_reduce"},
	{textio.MustCompile(`all_?gather`), "all_gather"},
	{textio.MustCompile(`reduce_?scatter`), "reduce_scatter"},
	{textio.MustCompile(`all_?to_?all`), "alltoall"},
	{textio.MustCompile(`broadcast|bcast`), "broadcast"},
	{textio.MustCompile(`send_?recv`), "sendrecv"},
	{textio.MustCompile(`hypercube`), "hypercube"},
	{textio.MustCompile(`gather`), "gather"},
	{textio.MustCompile(`scatter`), "scatter"},
}

// nameHint is the last resort for a table that names no collective.
func nameHint(rep *Report, name string) {
	base := strings.ToLower(name)
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	for _, t := range rep.Tests {
		if t.Collective != "unknown" {
			continue
		}
		for _, h := range fileHints {
			if h.re.MatchString(base) {
				t.Collective, t.CollectiveFrom = h.coll, "file-name"
				break
			}
		}
	}
}

func analyzeText(name string, r io.Reader) (*Report, error) {
	p := &textParser{
		rowsLeft: maxTotalRows,
		rep:      &Report{Format: "text"},
		streams:  map[string]*stream{},
		hosts:    map[string]bool{},
	}
	lr := textio.NewLineReaderOpt(name, r, textio.KeepLaunchTags)
	for n, line := range lr.All() {
		p.line(line, n)
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	p.rep.TruncatedLines = lr.Truncated
	p.rep.Paste = lr.Paste()
	keys := make([]string, 0, len(p.streams))
	for k := range p.streams {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		st := p.streams[k]
		if st.open != "" { // a write whose line never ended
			p.segment(st, st.open, false, st.openLn)
			st.open = ""
		}
		p.finishPending(st)
		if st.used {
			p.rep.Streams++
		}
	}
	found := false
	for _, t := range p.tests {
		if len(t.Rows) > 0 || len(t.Columns) > 0 || t.summary || t.Params.NGpus > 0 {
			found = true
		}
	}
	if !found {
		return nil, textio.Errorf(name, max(lr.Line(), 1), "no nccl-tests output found (no '# nThread' header, table header, result row or summary line)")
	}
	sort.SliceStable(p.tests, func(i, j int) bool { return p.tests[i].Line < p.tests[j].Line })
	for _, t := range p.tests {
		finishTest(t, p.streams[t.Stream])
	}
	p.rep.Tests = p.tests
	return p.rep, nil
}

func (p *textParser) stream(key string) *stream {
	if st, ok := p.streams[key]; ok {
		return st
	}
	if len(p.streams) >= maxStreams {
		key = "overflow"
		if st, ok := p.streams[key]; ok {
			return st
		}
	}
	st := &stream{key: key}
	p.streams[key] = st
	return st
}

type segment struct {
	key, text string
}

// line splits a physical line into per-stream segments: the mpirun tags
// mark where each rank's write starts; only the last segment ends with the
// newline.
func (p *textParser) line(raw string, n int) {
	s := textio.StripANSI(raw)
	var segs []segment
	if !p.hydra && hydraTagLen(s) > 0 {
		p.hydra = true
	}
	var locs [][]int
	if p.hydra {
		locs = findHydraTags(s)
	} else {
		locs = findTags(s)
	}
	if len(locs) == 0 {
		segs = []segment{{"", s}}
	} else {
		if locs[0][0] > 0 {
			segs = append(segs, segment{"", s[:locs[0][0]]})
		}
		for i, l := range locs {
			end := len(s)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			segs = append(segs, segment{s[l[2]:l[3]], s[l[1]:end]})
		}
	}
	for i, sg := range segs {
		if i == 0 && sg.key == "" {
			if m := reSrun.FindStringSubmatch(sg.text); m != nil {
				sg.key, sg.text = m[1], sg.text[len(m[0]):]
			}
		}
		st := p.stream(sg.key)
		last, ln := i == len(segs)-1, n
		if st.open != "" {
			sg.text, ln = st.open+sg.text, st.openLn
			st.open = ""
		}
		if !last && len(sg.text) < maxOpen {
			// This write of the stream stopped before its line
			// ended: the line goes on at the stream's next tag.
			st.open, st.openLn = sg.text, ln
			continue
		}
		p.segment(st, sg.text, last, ln)
	}
}

// hydraTagLen is the length of an MPICH/Intel MPI "-prepend-rank" tag
// "[N] " at the start of s (0: none). NCCL's "[N] NCCL" (a device after
// host:pid:tid) is never one.
func hydraTagLen(s string) int {
	if len(s) < 4 || s[0] != '[' {
		return 0
	}
	i := 1
	for i < len(s) && i < 8 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 1 || i+1 >= len(s) || s[i] != ']' || s[i+1] != ' ' || strings.HasPrefix(s[i+2:], "NCCL ") {
		return 0
	}
	return i + 2
}

// findHydraTags locates the "-prepend-rank" tags "[N] " of a line, as
// findTags does mpirun's. That launcher tags every write, so a tag may
// stand inside a row; but once an NCCL_DEBUG line has started, the rest
// of the physical line is that log line (its "0[0] -> 1[1]" and
// "Trees [0] 1/-1/-1" are not tags).
func findHydraTags(s string) [][]int {
	var out [][]int
	from := 0 // where the current segment's text starts
	for off := 0; off < len(s); {
		k := strings.IndexByte(s[off:], '[')
		if k < 0 {
			break
		}
		k += off
		n := hydraTagLen(s[k:])
		if n == 0 {
			off = k + 1
			continue
		}
		if _, _, ok := findLog(s[from:k]); ok {
			break
		}
		out = append(out, []int{k, k + n, k + 1, k + n - 2})
		from, off = k+n, k+n
		if len(out) > 1024 {
			break
		}
	}
	return out
}

// segment handles one stream's piece of a line: table text, possibly with
// an NCCL_DEBUG line glued after it (the row's newline then comes later).
func (p *textParser) segment(st *stream, text string, terminated bool, n int) {
	hs, he, ok := findLog(text)
	if !ok {
		p.fragment(st, text, terminated, n)
		return
	}
	split := p.splitGlued(text, hs, he)
	if frag := text[:split]; strings.TrimSpace(frag) != "" {
		p.fragment(st, frag, false, n)
	}
	p.logLine(st, text[split:], n)
}

// findTags locates the mpirun tags "[job,rank]<stdout>:" of a line:
// {start, end, rank-start, rank-end} per tag (the shape of a regexp's
// submatch index). A hand scan: this runs on every line of large logs.
func findTags(s string) [][]int {
	var out [][]int
	for off := 0; ; {
		k := strings.Index(s[off:], "]<std")
		if k < 0 {
			return out
		}
		k += off
		off = k + 5
		rest := s[k+5:]
		if !strings.HasPrefix(rest, "out>:") && !strings.HasPrefix(rest, "err>:") {
			continue
		}
		// Back over "digits,digits" to the '['.
		i := k - 1
		for i >= 0 && s[i] >= '0' && s[i] <= '9' {
			i--
		}
		if i < 0 || s[i] != ',' || i == k-1 {
			continue
		}
		comma := i
		i--
		for i >= 0 && s[i] >= '0' && s[i] <= '9' {
			i--
		}
		if i < 0 || s[i] != '[' || i == comma-1 {
			continue
		}
		out = append(out, []int{i, k + 10, i + 1, k})
		off = k + 10
		if len(out) > 1024 {
			return out
		}
	}
}

// findLog locates an NCCL_DEBUG line "host:pid:tid [dev] NCCL LEVEL" in
// text and returns where its host name starts and ends (as reLog would).
func findLog(text string) (hs, he int, ok bool) {
	for off := 0; off < len(text); {
		k := strings.Index(text[off:], "] NCCL ")
		if k < 0 {
			return 0, 0, false
		}
		k += off
		off = k + 7
		lvl := text[k+7:]
		if !(strings.HasPrefix(lvl, "INFO") || strings.HasPrefix(lvl, "WARN") || strings.HasPrefix(lvl, "TRACE") ||
			strings.HasPrefix(lvl, "ABORT") || strings.HasPrefix(lvl, "ERROR")) {
			continue
		}
		i := k - 1
		for i >= 0 && text[i] >= '0' && text[i] <= '9' {
			i--
		}
		if i < 1 || text[i] != '[' || i == k-1 || text[i-1] != ' ' {
			continue
		}
		// tid, pid
		j := i - 2
		for part := 0; part < 2; part++ {
			e := j
			for j >= 0 && text[j] >= '0' && text[j] <= '9' {
				j--
			}
			if j < 0 || text[j] != ':' || j == e {
				j = -2
				break
			}
			j--
		}
		if j < 0 {
			continue
		}
		he = j + 1 // the ':' before pid
		h := j
		for h >= 0 && isHostChar(text[h]) {
			h--
		}
		h++
		for h < he && !isHostStart(text[h]) {
			h++
		}
		if h >= he {
			continue
		}
		return h, he, true
	}
	return 0, 0, false
}

func isHostChar(c byte) bool { return isHostStart(c) || c == '_' || c == '.' || c == '-' }

// splitGlued finds where table text ends and an NCCL line's host name
// begins inside one glued token ("-1mew0:6570:6570 [0] NCCL INFO").
func (p *textParser) splitGlued(text string, hs, he int) int {
	ts := hs
	for ts > 0 && text[ts-1] != ' ' && text[ts-1] != '\t' {
		ts--
	}
	// A host name is at most 253 characters and a table token a few dozen:
	// only the tail of a long glued token can hold the split.
	if he-ts > 320 {
		ts = he - 320
	}
	if strings.TrimSpace(text[:ts]) == "" {
		return ts // the log line starts the segment: the whole token is its host
	}
	glued := text[ts:he]
	// A host seen elsewhere in the file decides.
	for k := 0; k < len(glued); k++ {
		if p.hosts[glued[k:]] {
			return ts + k
		}
	}
	if strings.HasPrefix(glued, "N/A") && len(glued) > 3 {
		return ts + 3
	}
	// Otherwise the longest numeric prefix that leaves a valid host name.
	n := 0
	for n < len(glued) && n < 40 && strings.IndexByte("0123456789.eE+-", glued[n]) >= 0 {
		n++
	}
	for k := min(n, len(glued)-1); k > 0; k-- {
		if isNumber(glued[:k]) && isHostStart(glued[k]) {
			return ts + k
		}
	}
	return ts
}

func isHostStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *textParser) logLine(st *stream, log string, n int) {
	p.rep.NCCLLogLines++
	if i := strings.IndexByte(log, ':'); i > 0 && i <= 253 && len(p.hosts) < maxHosts {
		p.hosts[log[:i]] = true
	}
	if st.ncclVersion == "" && strings.Contains(log, "NCCL version") {
		if m := reLogVersion.FindStringSubmatch(log); m != nil {
			st.ncclVersion = textio.Clip(m[1], 64)
		}
	}
	if st.opHint == "" && strings.Contains(log, ": opCount") {
		if m := reLogOp.FindStringSubmatch(log); m != nil {
			st.opHint = m[1]
		}
	}
	if isFailure(log) {
		p.quoteFailure(n, log)
	}
}

// isFailure spots "Test NCCL failure" and the like (every line goes through it).
func isFailure(s string) bool { return strings.Contains(s, "failure") && reFailure.MatchString(s) }

func (p *textParser) quoteFailure(n int, text string) {
	p.rep.Failures = textio.AddQuote(p.rep.Failures, n, strings.TrimSpace(text))
}

// newTest starts a test on the stream, taking the metadata printed before it.
func (p *textParser) newTest(st *stream, n int) *Test {
	var t *Test
	if len(p.tests) >= maxTests {
		// Past the cap a stream reads every test into one reused,
		// discarded record: 200 MB of one-row tables allocate nothing per table.
		if st.discard == nil {
			st.discard = new(Test)
		}
		t = st.discard
		*t = Test{}
	} else {
		t = new(Test)
	}
	t.Stream, t.Line, t.TestsVersion = st.key, n, st.nextVersion
	if st.nextBinary != "" {
		t.Binary, t.CollectiveFrom = st.nextBinary, "header"
	}
	if c := st.carry; c != nil {
		t.Devices, t.Params = c.Devices, c.Params
		st.carry = nil
	}
	st.nextVersion, st.nextBinary = "", ""
	st.cur = t
	st.used = true
	if len(p.tests) >= maxTests {
		// Past the cap a test is read into a discarded record.
		p.rep.DroppedTests++
		t.rowsLeft, t.dropped = &p.noRows, true
		return t
	}
	t.rowsLeft = &p.rowsLeft
	p.tests = append(p.tests, t)
	return t
}

// current returns the stream's test, starting one when fresh is true and
// the current one already has rows.
func (p *textParser) current(st *stream, n int, fresh bool) *Test {
	if st.cur == nil || (fresh && len(st.cur.Rows) > 0) {
		return p.newTest(st, n)
	}
	return st.cur
}

func (p *textParser) fragment(st *stream, frag string, terminated bool, n int) {
	t := strings.TrimSpace(frag)
	if t == "" {
		return
	}
	if t[0] == '#' {
		p.finishPending(st)
		p.comment(st, strings.TrimSpace(strings.TrimLeft(t, "#")), n)
		return
	}
	if bareHeader(t) {
		// A header or summary line whose "#" was lost in the paste
		// (a Markdown heading): read as the comment it was.
		p.finishPending(st)
		p.comment(st, t, n)
		return
	}
	switch {
	case t == "..." || t == "…":
		p.rep.Elided = true
		return
	case reVersion.MatchString(t):
		st.ncclVersion = textio.Clip(reVersion.FindStringSubmatch(t)[1], 64)
		return
	case isFailure(t):
		p.quoteFailure(n, t)
		return
	}
	toks := textio.AppendFields(p.fields[:0], t)
	p.fields = toks[:0] // the scratch for the next line: toks is not kept
	switch {
	case rowStart(toks):
		p.finishPending(st)
		if terminated { // the common case: a whole row on its line
			p.finishRow(st, toks, n)
			return
		}
		st.pending, st.pendLn = slices.Clone(toks), n
	case len(st.pending) > 0 && allValues(toks):
		if len(st.pending)+len(toks) > maxRowTokens {
			p.partial(st)
			return
		}
		st.pending = append(st.pending, toks...)
	default:
		if m := reBinary.FindStringSubmatch(t); m != nil && strings.Contains(t, m[1]) {
			for _, x := range p.tests { // finished tests do not take a later command
				x.noHint = x.noHint || x.Stream == st.key && x.summary
			}
			st.binaryHint = textio.Clip(m[1]+m[2], 128)
		}
		return
	}
	if terminated {
		p.finishPending(st)
	}
}

// bareHeader reports whether t (trimmed, not starting with '#') is one of
// nccl-tests' own comment lines without its "#": the parameters, a device,
// the column names, a summary or a test marker. Only these shapes are
// taken: any other '#'-less text stays what it was.
func bareHeader(t string) bool {
	var m []string
	switch t[0] {
	case 'n':
		return nThreadLine(t, &m) || reTestsVersion.MatchString(t)
	case 'R':
		return deviceLine(t, &m)
	case 's':
		return reColumns.MatchString(t)
	case 'O':
		return reOOB.MatchString(t)
	case 'A':
		return reAvg.MatchString(t)
	case 'C':
		return reStarting.MatchString(t) || reConcluded.MatchString(t)
	}
	return false
}

func (p *textParser) partial(st *stream) {
	p.quotePartial(st.pending, st.pendLn)
	st.pending = nil
}

func (p *textParser) quotePartial(toks []string, line int) {
	p.rep.PartialRows = textio.AddQuote(p.rep.PartialRows, line, strings.Join(toks, " "))
}

func (p *textParser) finishPending(st *stream) {
	if len(st.pending) == 0 {
		return
	}
	toks, line := st.pending, st.pendLn
	st.pending = nil
	p.finishRow(st, toks, line)
}

// finishRow reads the tokens of one row (from line) into the stream's
// test; toks is not kept.
func (p *textParser) finishRow(st *stream, toks []string, line int) {
	t := p.current(st, line, false)
	row, err := parseRowInto(toks, t.Columns, &p.buf)
	if err != nil {
		p.quotePartial(toks, line)
		return
	}
	row.Line = line
	if !t.keeps() {
		// A row past the caps is counted, and its #wrong still fails
		// the run; it is not kept (nor copied out of the buffer).
		t.noteOrder(row)
		t.DroppedRows++
		if wrongIn(row) {
			if p.rep.DroppedWrongRows == 0 {
				p.rep.FirstDroppedWrongLine = row.Line
			}
			p.rep.DroppedWrongRows++
		}
		return
	}
	t.addRow(cloneRow(row))
}

// wrongIn reports whether a half of r counted wrong results.
func wrongIn(r collective.Row) bool {
	for _, m := range []*collective.Measure{r.OutOfPlace, r.InPlace} {
		if m != nil && m.Wrong != nil && *m.Wrong > 0 {
			return true
		}
	}
	return false
}

func (p *textParser) comment(st *stream, c string, n int) {
	var m []string
	switch {
	case reTestsVersion.Submatch(c, &m):
		st.cur = nil
		st.nextVersion = textio.Clip(m[1], 64)
	case reStarting.Submatch(c, &m):
		st.cur = nil
		st.nextBinary = textio.Clip(m[1], 128)
	case reConcluded.MatchString(c):
		st.cur = nil
	case reGdrCollective.Submatch(c, &m):
		name := textio.Clip(m[1], 128)
		if t := st.cur; t != nil && len(t.Rows) == 0 && len(t.Columns) == 0 && t.Binary == "" {
			// The rank lines before the first marker: the same test.
			t.Binary, t.CollectiveFrom = name, "header"
			break
		}
		if st.cur != nil {
			st.carry = st.cur
		}
		st.cur = nil
		st.nextBinary = name
	case nThreadLine(c, &m):
		t := st.cur
		if t == nil || len(t.Rows) > 0 || len(t.Columns) > 0 || t.Params.NGpus > 0 {
			t = p.newTest(st, n)
		}
		if t.dropped {
			// A test past the cap is not kept: its parameters are not read.
			t.Params = Params{NThread: atoi(m[1]), NGpus: atoi(m[2])}
		} else {
			t.Params = parseParams(c)
		}
	case deviceLine(c, &m):
		t := st.cur
		if t == nil || len(t.Rows) > 0 || len(t.Columns) > 0 {
			t = p.newTest(st, n)
		}
		d := Device{Rank: atoi(m[1]), Group: atoi(m[2]), Pid: atoi(m[3]), Host: textio.Clip(m[4], 253), Device: atoi(m[5]),
			BusID: textio.Clip(m[6], 64), Name: textio.Clip(strings.TrimSpace(m[7]), 256)}
		if len(t.Devices) < 1<<16 {
			t.Devices = append(t.Devices, d)
		}
		if len(p.hosts) < maxHosts && len(m[4]) <= 253 {
			p.hosts[d.Host] = true
		}
	case reColumns.MatchString(c):
		t := st.cur
		if t == nil || len(t.Rows) > 0 || len(t.Columns) > 0 {
			t = p.newTest(st, n)
		}
		t.Columns = strings.Fields(c)
		if len(t.Columns) > maxRowTokens {
			t.Columns = t.Columns[:maxRowTokens]
		}
		for i, col := range t.Columns {
			t.Columns[i] = textio.Clip(col, 32)
		}
	case reOOB.Submatch(c, &m):
		t := p.summaryTest(st, n)
		v, _ := strconv.ParseInt(m[1], 10, 64)
		ok := v == 0
		if m[2] != "" {
			ok = m[2] == "OK"
		}
		t.OutOfBounds, t.OutOfBoundsOK, t.summary = &v, &ok, true
	case reAvg.Submatch(c, &m):
		t := st.sumTest
		if t == nil || t.AvgFrom == "printed" {
			t = p.summaryTest(st, n)
		}
		if v, ok := textio.ParseFloat(m[1]); ok {
			t.AvgBusBW, t.AvgFrom = v, "printed"
		}
		t.AvgCheck = m[2]
		t.summary = true
	case reReducing.Submatch(c, &m):
		t := p.current(st, n, false)
		t.note("maxBytes reduced to " + textio.Clip(m[1], 24) + " because of GPU memory")
	case reJSONOut.Submatch(c, &m):
		t := p.current(st, n, false)
		t.note("JSON output written to " + textio.Clip(m[1], 256))
	case reHashError.MatchString(c):
		p.quoteFailure(n, "# "+c)
	}
}

// summaryTest is the test an "Out of bounds values" line (or an "Avg bus
// bandwidth" line without one before it) belongs to: the current test,
// unless that one already has its summary. Then the summaries come
// together after the last table, one per test in order (gdrcheck's
// dossier file): the tests of the stream without a summary wait for them,
// and the first, given to the last test, moves to the first of them.
func (p *textParser) summaryTest(st *stream, n int) *Test {
	t := p.current(st, n, false)
	if st.deferred != nil {
		if st.defIdx < len(st.deferred) {
			t = st.deferred[st.defIdx]
			st.defIdx++
		}
		st.sumTest = t
		return t
	}
	if t.OutOfBounds == nil && t.AvgFrom != "printed" || t.dropped {
		st.sumTest = t
		return t
	}
	var wait []*Test
	for _, x := range p.tests {
		if x.Stream == st.key && x != t && !x.summary {
			wait = append(wait, x)
		}
	}
	if len(wait) == 0 {
		st.sumTest = t
		return t
	}
	first := wait[0]
	first.OutOfBounds, first.OutOfBoundsOK, first.AvgBusBW, first.AvgFrom, first.AvgCheck, first.summary =
		t.OutOfBounds, t.OutOfBoundsOK, t.AvgBusBW, t.AvgFrom, t.AvgCheck, true
	t.OutOfBounds, t.OutOfBoundsOK, t.AvgBusBW, t.AvgFrom, t.AvgCheck, t.summary = nil, nil, 0, "", "", false
	st.deferred = append(wait[1:], t)
	st.defIdx = 1
	st.sumTest = st.deferred[0]
	return st.sumTest
}

// keeps reports whether the test has room for one more row.
func (t *Test) keeps() bool {
	return len(t.Rows) < maxRows && (t.rowsLeft == nil || *t.rowsLeft > 0)
}

// noteOrder notes a size that goes down.
func (t *Test) noteOrder(r collective.Row) {
	if k := len(t.Rows); k > 0 && r.Bytes < t.Rows[k-1].Bytes {
		t.Unordered = true
	}
}

// addRow keeps a row (up to maxRows), noting sizes that go down.
func (t *Test) addRow(r collective.Row) {
	t.noteOrder(r)
	if t.keeps() {
		t.Rows = append(t.Rows, r)
		if t.rowsLeft != nil {
			*t.rowsLeft--
		}
	} else {
		t.DroppedRows++
	}
}

func (t *Test) note(s string) {
	if len(t.Notes) < 16 {
		t.Notes = append(t.Notes, s)
	}
}

func parseParams(c string) Params {
	var pr Params
	var m []string
	nThreadLine(c, &m)
	pr.NThread, pr.NGpus = atoi(m[1]), atoi(m[2])
	get := func(k string) string {
		if mm := reParamInt[k].FindStringSubmatch(c); mm != nil {
			return mm[1]
		}
		return ""
	}
	pr.MinBytes, _ = strconv.ParseInt(get("minBytes"), 10, 64)
	pr.MaxBytes, _ = strconv.ParseInt(get("maxBytes"), 10, 64)
	pr.WarmupIters = atoi(get("warmup"))
	pr.AggIters = atoi(get("agg"))
	for _, mm := range reParamIters.FindAllStringSubmatch(c, 8) {
		if w := strings.TrimSpace(mm[1]); w != "warmup" && w != "agg" {
			pr.Iters = atoi(mm[2])
			break
		}
	}
	if v := get("valid"); v != "" {
		x := atoi(v)
		pr.Validation = &x
	}
	pr.Graph = atoi(get("graph"))
	if mm := reParamStep.FindStringSubmatch(c); mm != nil {
		pr.Step = textio.Clip(mm[1], 32)
	}
	known := map[string]bool{"step": true, "iters": true, "validation": true, "graph": true}
	for _, mm := range reParamExtra.FindAllStringSubmatch(c, 32) {
		if known[mm[1]] {
			continue
		}
		if pr.Extra == nil {
			pr.Extra = map[string]string{}
		}
		pr.Extra[textio.Clip(mm[1], 32)] = textio.Clip(mm[2], 64)
	}
	return pr
}

func atoi(s string) int {
	v, _ := strconv.Atoi(s)
	return v
}

func isNumber(s string) bool {
	_, ok := textio.ParseFloat(s)
	return ok
}

func isInt(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// rowStart: size count type ...
func rowStart(t []string) bool {
	if len(t) < 3 || typeSize[t[2]] == 0 {
		return false
	}
	a, err1 := strconv.ParseInt(t[0], 10, 64)
	b, err2 := strconv.ParseInt(t[1], 10, 64)
	return err1 == nil && err2 == nil && a >= 0 && b >= 0
}

func allValues(t []string) bool {
	for _, s := range t {
		if s != "N/A" && !isNumber(s) {
			return false
		}
	}
	return true
}

func isWord(s string) bool {
	if s == "" || s == "N/A" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}

// groupWidth is the number of columns of one result group (time algbw
// busbw #wrong, plus the per-iteration columns when -R prints them).
func groupWidth(cols []string) int {
	first := -1
	for i, c := range cols {
		if c == "time" || c == "cputime" {
			if first < 0 {
				first = i
				continue
			}
			return i - first
		}
	}
	return 4
}

type rowError string

func (e rowError) Error() string { return string(e) }

// parseRow reads "size count type [redop] [root] time algbw busbw #wrong
// time algbw busbw #wrong [timestamp]"; redop may be blank and root absent.
func parseRow(t []string, cols []string) (collective.Row, error) {
	r, err := parseRowInto(t, cols, new(rowBuf))
	return cloneRow(r), err
}

// rowBuf holds the halves of a row being read: the row's pointers point
// into it until the row is kept (clone), so that rows past the caps cost
// no allocation.
type rowBuf struct {
	oop, ip   collective.Measure
	oopW, ipW int64
	root      int
}

// cloneRow gives r with its halves and root copied out of the buffer.
func cloneRow(r collective.Row) collective.Row {
	copyOf := func(m *collective.Measure) *collective.Measure {
		if m == nil {
			return nil
		}
		c := *m
		if m.Wrong != nil {
			c.Wrong = new(*m.Wrong)
		}
		return &c
	}
	r.OutOfPlace, r.InPlace = copyOf(r.OutOfPlace), copyOf(r.InPlace)
	if r.Root != nil {
		r.Root = new(*r.Root)
	}
	return r
}

// parseRowInto is parseRow with the halves and root in b.
func parseRowInto(t []string, cols []string, b *rowBuf) (collective.Row, error) {
	var r collective.Row
	if len(t) < 3 || typeSize[t[2]] == 0 {
		return r, rowError("not a result row")
	}
	var err1, err2 error
	r.Bytes, err1 = strconv.ParseUint(t[0], 10, 64)
	r.Count, err2 = strconv.ParseUint(t[1], 10, 64)
	if err1 != nil || err2 != nil {
		return r, rowError("not a result row")
	}
	r.Type = t[2]
	rest := t[3:]
	// A trailing timestamp column (-T): "2025-01-02 12:34:56" or a bare time.
	if k := len(rest); k > 0 && reTimestamp.MatchString(rest[k-1]) {
		rest = rest[:k-1]
		if k := len(rest); k > 0 && reDate.MatchString(rest[k-1]) {
			rest = rest[:k-1]
		}
	}
	i := 0
	if i < len(rest) && isWord(rest[i]) {
		r.RedOp = rest[i]
		i++
	}
	g := groupWidth(cols)
	if n := len(rest) - i; n == 2*g+1 {
		if !isInt(rest[i]) {
			return r, rowError("root is not an integer")
		}
		b.root = atoi(rest[i])
		r.Root = &b.root
		i++
	}
	if len(rest)-i != 2*g {
		return r, rowError("row does not have two result groups")
	}
	var err error
	if r.OutOfPlace, err = parseMeasure(rest[i:i+g], &b.oop, &b.oopW); err != nil {
		return r, err
	}
	if r.InPlace, err = parseMeasure(rest[i+g:i+2*g], &b.ip, &b.ipW); err != nil {
		return r, err
	}
	return r, nil
}

// parseMeasure reads one half of a row into *m (its #wrong into *w).
func parseMeasure(t []string, m *collective.Measure, w *int64) (*collective.Measure, error) {
	if len(t) < 4 {
		return nil, rowError("short result group")
	}
	*m = collective.Measure{}
	vals := [...]*float64{&m.TimeUS, &m.AlgBW, &m.BusBW}
	na := 0
	for k, p := range vals {
		if t[k] == "N/A" {
			na++
			continue
		}
		v, ok := textio.ParseFloat(t[k])
		if !ok {
			return nil, rowError("not a number: " + t[k])
		}
		*p = v
	}
	if t[3] != "N/A" {
		f, ok := textio.ParseFloat(t[3])
		if !ok {
			return nil, rowError("#wrong is not a number: " + t[3])
		}
		if f < 0 || f > math.MaxInt64/2 {
			return nil, rowError("#wrong out of range: " + t[3])
		}
		*w = int64(f)
		m.Wrong = w
	}
	if na == 3 {
		return nil, nil
	}
	if na > 0 {
		return nil, rowError("result group partly N/A")
	}
	return m, nil
}

var opCollective = map[string]string{
	"AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter",
	"Broadcast": "broadcast", "Reduce": "reduce", "AllToAll": "alltoall", "AlltoAll": "alltoall",
	"SendRecv": "sendrecv", "Send": "sendrecv", "Recv": "sendrecv", "Gather": "gather",
	"Scatter": "scatter", "HyperCube": "hypercube",
}

// finishTest derives the collective, hosts, averages and peak.
func finishTest(t *Test, st *stream) {
	if st != nil {
		if t.Binary == "" && st.binaryHint != "" && !t.noHint {
			t.Binary, t.CollectiveFrom = st.binaryHint, "command"
		}
		if t.NCCLVersion == "" {
			t.NCCLVersion = st.ncclVersion
		}
		if t.Binary == "" && st.opHint != "" {
			t.Collective, t.CollectiveFrom = opCollective[st.opHint], "nccl-log"
		}
	}
	derive(t)
}

var typeSize = map[string]uint64{
	"int8": 1, "uint8": 1, "char": 1, "f8e4m3": 1, "f8e5m2": 1, "half": 2, "bfloat16": 2,
	"int32": 4, "uint32": 4, "int": 4, "float": 4, "int64": 8, "uint64": 8, "double": 8,
}

// inferCollective recognises all_reduce from its rows when nothing names
// the binary: a reduction without root whose element count is the whole
// buffer (reduce_scatter and the gathers divide it by the rank count).
func inferCollective(t *Test) string {
	n := 0
	for _, r := range t.Rows {
		ts := typeSize[r.Type]
		if r.Bytes == 0 {
			continue
		}
		if r.RedOp == "" || r.RedOp == "none" || (r.Root != nil && *r.Root != -1) || ts == 0 || r.Count*ts != r.Bytes {
			return ""
		}
		n++
	}
	if n == 0 {
		return ""
	}
	return "all_reduce"
}

// derive fills the fields computed from rows (shared with the JSON reader).
func derive(t *Test) {
	if t.Binary != "" {
		b := strings.TrimSuffix(t.Binary, "_mpi")
		t.Collective = strings.TrimSuffix(b, "_perf")
	}
	if t.Collective == "" {
		if c := inferCollective(t); c != "" {
			t.Collective, t.CollectiveFrom = c, "inferred"
		} else {
			t.Collective = "unknown"
		}
	}
	seen := map[string]bool{}
	for _, d := range t.Devices {
		if !seen[d.Host] {
			seen[d.Host] = true
			t.Hosts = append(t.Hosts, d.Host)
		}
	}
	if t.AvgFrom == "" {
		sum, n := 0.0, 0
		for _, r := range t.Rows {
			for _, m := range []*collective.Measure{r.OutOfPlace, r.InPlace} {
				if m != nil {
					sum += m.BusBW
					n++
				}
			}
		}
		if n > 0 {
			t.AvgBusBW, t.AvgFrom = round(sum/float64(n), 4), "computed"
		} else {
			t.AvgFrom = "none"
		}
	}
	for _, r := range t.Rows {
		if bw, place := bestBusBW(t, r); bw > t.PeakBusBW || t.PeakPlace == "" && place != "" {
			t.PeakBusBW, t.PeakSize, t.PeakPlace = bw, r.Bytes, place
		}
	}
}

// bestBusBW is the row's better busbw, out-of-place or in-place; for a
// one-rank test only the out-of-place one: in place, one rank has nothing
// to move and its "bandwidth" is the size over a no-op's time.
func bestBusBW(t *Test, r collective.Row) (float64, string) {
	if len(t.Devices) == 1 && r.OutOfPlace != nil {
		return r.OutOfPlace.BusBW, "out-of-place"
	}
	return r.BestBusBW()
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
