package textio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Paste undoes what pasting and logging did to a tool's output before a
// reader sees its lines:
//
//   - per-line prefixes added by launchers and log systems, found from the
//     first lines (a prefix shape is one that starts most of them, see
//     DetectPaste): torchrun "[rank3]:" / "[default0]:", mpirun
//     "[1,0]<stdout>:", mpiexec -prepend-rank "[3] ", srun "12: ", kubectl "[pod/name/ctr] ", compose
//     "name  | ", ISO and syslog timestamps, Markdown "> " quotes, a "| "
//     box without a right border, an indentation every line shares, and
//     a logger's prefix of any other shape, learned from the lines
//     (learnPrefix);
//   - lines that are not the output: Markdown code fences, HTML
//     <details>/<summary> tags of GitHub issues (skipped, counted);
//   - a shell prompt before a command ("$ ", "user@host:~$ ", "[u@h d]$ ",
//     "# " before a command): the prompt is removed and the command is
//     kept as a line, since some readers learn from it.
//
// NCCL's own "host:pid:tid" is not a prefix: it is the NCCL log's syntax
// and carries the host, so it is never removed. The lines of a tool's own
// syntax that could look like a prefix (nccl-tests' "#" header lines and
// space-aligned rows, the tab-separated rows of nvidia-smi topo -m, XML)
// are left alone: a shape must start most lines, and an indentation is
// only removed when every line of the head has it.
//
// A Paste is made once per input (DetectPaste) and then cleans each line
// (Clean); on input without any of these shapes a line costs a byte check.
type Paste struct {
	layers []layer
	keep   PasteOpt
	note   PasteNote
}

// PasteOpt leaves shapes to a reader that reads them itself.
type PasteOpt uint8

const (
	// KeepLaunchTags keeps mpirun "[1,0]<stdout>:" and mpiexec
	// -prepend-rank "[3] " tags and srun "12: " labels: nccl-tests
	// reassembles each rank's stream from them.
	KeepLaunchTags PasteOpt = 1 << iota
)

// PasteNote says what a Paste did to an input, for the reader's report.
type PasteNote struct {
	Prefixes      []string `json:"prefixes,omitempty"`       // the shapes removed, outermost first
	PrefixedLines int      `json:"prefixed_lines,omitempty"` // lines a prefix was removed from
	Fences        int      `json:"fences,omitempty"`         // Markdown code fence lines skipped
	HTML          int      `json:"html,omitempty"`           // <details>/<summary> lines skipped
	Prompts       []Quote  `json:"prompts,omitempty"`        // shell prompts removed: the command line
}

// Skipped is the number of input lines not given to the reader.
func (n *PasteNote) Skipped() int { return n.Fences + n.HTML }

// Empty reports whether the input needed no cleaning.
func (n *PasteNote) Empty() bool {
	return n == nil || len(n.Prefixes) == 0 && n.PrefixedLines == 0 && n.Skipped() == 0 && len(n.Prompts) == 0
}

// String is the one line a report prints: what was removed or skipped.
func (n *PasteNote) String() string {
	if n.Empty() {
		return ""
	}
	var parts []string
	if s := n.Skipped(); s > 0 {
		var what []string
		if n.Fences > 0 {
			what = append(what, plural(n.Fences, "code fence"))
		}
		if n.HTML > 0 {
			what = append(what, plural(n.HTML, "HTML tag line"))
		}
		parts = append(parts, fmt.Sprintf("%s skipped: %s", plural(s, "line"), strings.Join(what, ", ")))
	}
	if n.PrefixedLines > 0 {
		parts = append(parts, fmt.Sprintf("prefix %s removed from %s", strings.Join(n.Prefixes, " + "), plural(n.PrefixedLines, "line")))
	}
	if len(n.Prompts) > 0 {
		p := n.Prompts[0]
		s := fmt.Sprintf("shell prompt removed before %q (line %d)", Clip(p.Text, 60), p.Line)
		if len(n.Prompts) > 1 {
			s += fmt.Sprintf(" and %d more", len(n.Prompts)-1)
		}
		parts = append(parts, s)
	}
	return "paste: " + strings.Join(parts, "; ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

type shape uint8

const (
	shNone shape = iota
	shQuote
	shBox
	shIndent
	shTorchrun
	shMPI
	shHydra
	shSrun
	shKube
	shCompose
	shTime
	// shLearned is a prefix learned from the input (learnPrefix), not one
	// of the shapes above; it comes after them, never counted among them.
	shLearned
)

var shapeNames = [...]string{
	shQuote:    "Markdown quote '> '",
	shBox:      "box '| '",
	shIndent:   "indentation",
	shTorchrun: "torchrun '[rankN]:'",
	shMPI:      "mpirun '[job,rank]<stdout>:'",
	shHydra:    "mpiexec -prepend-rank '[N] '",
	shSrun:     "srun label 'N: '",
	shKube:     "kubectl '[pod/NAME/CONTAINER]'",
	shCompose:  "compose 'NAME | '",
	shTime:     "timestamp",
}

type layer struct {
	sh      shape
	indent  []byte // shIndent: the exact indentation
	learned string // shLearned: the prefix's shape (shapeOf)
}

// maxLayers bounds the shapes stacked on one line ("> " then "[rank0]:" then
// a timestamp).
const maxLayers = 4

// DetectPaste finds the prefix shapes of an input from its head (the first
// 64 KiB, or less): a shape is removed when it starts at least 60% of the
// head's non-blank lines (and two of them), and an indentation when it
// starts all of them. Shapes stack: after the outermost is removed from the
// head, the next is looked for.
func DetectPaste(head []byte, opt PasteOpt) *Paste {
	p := &Paste{keep: opt}
	var lines [][]byte
	for len(head) > 0 && len(lines) < 400 {
		i := bytes.IndexByte(head, '\n')
		var l []byte
		if i < 0 {
			l, head = head, nil // possibly cut: still a line's start
		} else {
			l, head = head[:i], head[i+1:]
		}
		l = bytes.TrimSuffix(l, []byte("\r"))
		if isFence(l) || isHTMLTag(l) || len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		lines = append(lines, l)
	}
	for len(p.layers) < maxLayers && len(lines) >= 2 {
		var count [shTime + 1]int
		for _, l := range lines {
			if sh, _ := p.match(l); sh != shNone {
				count[sh]++
			}
		}
		best := shNone
		for sh := shQuote; sh <= shTime; sh++ {
			if count[sh] > count[best] {
				best = sh
			}
		}
		var ly layer
		if best != shNone && count[best]*10 >= len(lines)*6 && count[best] >= 2 && !(best == shBox && boxTable(lines)) {
			ly = layer{sh: best}
		} else if ind := commonIndent(lines); len(ind) > 0 {
			ly = layer{sh: shIndent, indent: ind}
		} else if key, example := learnPrefix(lines); key != "" {
			ly = layer{sh: shLearned, learned: key}
			p.note.Prefixes = append(p.note.Prefixes, fmt.Sprintf("learned %q", Clip(example, 80)))
		} else {
			break
		}
		p.layers = append(p.layers, ly)
		if ly.sh != shLearned {
			p.note.Prefixes = append(p.note.Prefixes, shapeNames[ly.sh])
		}
		next := lines[:0]
		for _, l := range lines {
			if n := ly.strip(p, l); n > 0 {
				l = l[n:]
			}
			if len(bytes.TrimSpace(l)) > 0 && !isFence(l) && !isHTMLTag(l) {
				next = append(next, l)
			}
		}
		lines = next
	}
	return p
}

// Note is what the Paste did so far, for a reader's report: nil when it
// did nothing (or p is nil), so that a JSON report can omit it.
func (p *Paste) Note() *PasteNote {
	if p == nil || p.note.Empty() {
		return nil
	}
	n := p.note
	return &n
}

// MergeNotes is the notes of the Pastes of several inputs read as one (the
// logs of a job): the shapes once each, the counts added; nil when none
// did anything.
func MergeNotes(ps []*Paste) *PasteNote {
	var out PasteNote
	for _, p := range ps {
		n := p.Note()
		if n == nil {
			continue
		}
		for _, s := range n.Prefixes {
			if !slices.Contains(out.Prefixes, s) {
				out.Prefixes = append(out.Prefixes, s)
			}
		}
		out.PrefixedLines += n.PrefixedLines
		out.Fences += n.Fences
		out.HTML += n.HTML
		for _, q := range n.Prompts {
			out.Prompts = AddQuote(out.Prompts, q.Line, q.Text)
		}
	}
	if out.Empty() {
		return nil
	}
	return &out
}

// Clean returns line (number n) without its prefixes, or skip when the line
// is not part of the output (a code fence, an HTML tag of an issue).
func (p *Paste) Clean(b []byte, n int) (out []byte, skip bool) {
	if len(p.layers) > 0 {
		stripped := false
		for i := range p.layers {
			if k := p.layers[i].strip(p, b); k > 0 {
				b, stripped = b[k:], true
			}
		}
		if stripped {
			p.note.PrefixedLines++
		}
	}
	if len(b) == 0 {
		return b, false
	}
	// The fast path: most lines start with none of these bytes.
	switch c := b[0]; {
	case c == '`' || c == '~' || c == ' ':
		// A fence may be indented by up to three spaces; the
		// right-aligned rows of a table start with more.
		i := 0
		for i < 3 && i < len(b) && b[i] == ' ' {
			i++
		}
		if i < len(b) && (b[i] == '`' || b[i] == '~') && isFence(b) {
			p.note.Fences++
			return nil, true
		}
	case c == '<':
		if isHTMLTag(b) {
			p.note.HTML++
			return nil, true
		}
	case c == '$' || c == '#' || c == '[' || c == '(' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		if k := promptLen(b); k > 0 {
			b = b[k:]
			p.note.Prompts = AddQuote(p.note.Prompts, n, string(b))
		}
	}
	return b, false
}

// CleanString is Clean for a string line.
func (p *Paste) CleanString(s string, n int) (string, bool) {
	if len(p.layers) == 0 && (len(s) == 0 || !maybeSpecial(s[0])) {
		return s, false
	}
	b, skip := p.Clean([]byte(s), n)
	return string(b), skip
}

func maybeSpecial(c byte) bool {
	return c == '`' || c == '~' || c == ' ' || c == '<' || c == '$' || c == '#' || c == '[' || c == '(' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// match reports the shape that starts line l and its length.
func (p *Paste) match(l []byte) (shape, int) {
	if len(l) == 0 {
		return shNone, 0
	}
	switch c := l[0]; {
	case c == '>':
		return shQuote, quoteLen(l)
	case c == '|':
		if len(l) >= 2 && l[1] == ' ' {
			return shBox, 2
		}
	case c == '[':
		if n := torchrunLen(l); n > 0 {
			return shTorchrun, n
		}
		if n := mpiTagLen(l); n > 0 && p.keep&KeepLaunchTags == 0 {
			return shMPI, n
		}
		if n := hydraTagLen(l); n > 0 && p.keep&KeepLaunchTags == 0 {
			return shHydra, n
		}
		if n := kubeLen(l); n > 0 {
			return shKube, n
		}
		if n := timeLen(l); n > 0 {
			return shTime, n
		}
	case c >= '0' && c <= '9' || c == ' ':
		if n := timeLen(l); n > 0 {
			return shTime, n
		}
		if n := srunLen(l); n > 0 && p.keep&KeepLaunchTags == 0 {
			return shSrun, n
		}
	case c >= 'A' && c <= 'Z':
		if n := timeLen(l); n > 0 {
			return shTime, n
		}
		if n := composeLen(l); n > 0 {
			return shCompose, n
		}
	case c >= 'a' && c <= 'z':
		if n := composeLen(l); n > 0 {
			return shCompose, n
		}
	}
	return shNone, 0
}

// strip is the length of this layer's prefix at the start of l (0: none).
func (ly *layer) strip(p *Paste, l []byte) int {
	if ly.sh == shIndent {
		if bytes.HasPrefix(l, ly.indent) {
			return len(ly.indent)
		}
		return 0
	}
	if ly.sh == shLearned {
		return learnedLen(l, ly.learned)
	}
	if sh, n := p.match(l); sh == ly.sh {
		return n
	}
	return 0
}

// quoteLen: "> ", ">", "> > ".
func quoteLen(l []byte) int {
	n := 0
	for n < len(l) && l[n] == '>' {
		n++
		if n < len(l) && l[n] == ' ' {
			n++
		}
	}
	return n
}

// torchrunLen: "[rank3]:" or "[default0]:" (torchrun --tee / log_line_prefix),
// with the space after.
func torchrunLen(l []byte) int {
	var w string
	switch {
	case bytes.HasPrefix(l, []byte("[rank")):
		w = "[rank"
	case bytes.HasPrefix(l, []byte("[default")):
		w = "[default"
	default:
		return 0
	}
	i := len(w)
	d := i
	for i < len(l) && isDigitB(l[i]) {
		i++
	}
	if i == d || i+1 >= len(l) || l[i] != ']' || l[i+1] != ':' {
		return 0
	}
	return spaceAfter(l, i+2)
}

// mpiTagLen: "[1,0]<stdout>:" / "<stderr>:".
func mpiTagLen(l []byte) int {
	i := 1
	for i < len(l) && isDigitB(l[i]) {
		i++
	}
	if i == 1 || i >= len(l) || l[i] != ',' {
		return 0
	}
	i++
	d := i
	for i < len(l) && isDigitB(l[i]) {
		i++
	}
	if i == d || i >= len(l) || l[i] != ']' {
		return 0
	}
	rest := l[i+1:]
	if !bytes.HasPrefix(rest, []byte("<stdout>:")) && !bytes.HasPrefix(rest, []byte("<stderr>:")) {
		return 0
	}
	return spaceAfter(l, i+1+9)
}

// hydraTagLen: MPICH/Intel MPI mpiexec -prepend-rank (and -l) "[3] ". NCCL's
// "[3] NCCL" never starts a line, but is refused all the same.
func hydraTagLen(l []byte) int {
	i := 1
	for i < len(l) && i < 8 && isDigitB(l[i]) {
		i++
	}
	if i == 1 || i+1 >= len(l) || l[i] != ']' || l[i+1] != ' ' || bytes.HasPrefix(l[i+2:], []byte("NCCL ")) {
		return 0
	}
	return i + 2
}

// srunLen: "0: ", " 3: ", "12: " (srun --label pads to the widest rank).
func srunLen(l []byte) int {
	i := 0
	for i < len(l) && i < 6 && l[i] == ' ' {
		i++
	}
	d := i
	for i < len(l) && isDigitB(l[i]) {
		i++
	}
	if i == d || i-d > 5 || i >= len(l) || l[i] != ':' {
		return 0
	}
	if i+1 < len(l) && l[i+1] != ' ' {
		return 0
	}
	return spaceAfter(l, i+1)
}

// kubeLen: kubectl logs --prefix "[pod/NAME/CONTAINER] ".
func kubeLen(l []byte) int {
	if !bytes.HasPrefix(l, []byte("[pod/")) {
		return 0
	}
	e := bytes.IndexByte(l, ']')
	if e < 0 || e > 300 || bytes.IndexByte(l[:e], ' ') >= 0 {
		return 0
	}
	return spaceAfter(l, e+1)
}

// composeLen: docker compose "name-1  | ".
func composeLen(l []byte) int {
	i := 0
	for i < len(l) && i < 96 && isNameByte(l[i]) {
		i++
	}
	if i == 0 || i >= len(l) || l[i] != ' ' {
		return 0
	}
	j := i
	for j < len(l) && l[j] == ' ' {
		j++
	}
	if j+1 >= len(l) || l[j] != '|' || l[j+1] != ' ' {
		return 0
	}
	return j + 2
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

var months = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// timeLen: a timestamp with the separator after it:
//
//	2024-07-19T10:00:01.123456789Z        (kubectl --timestamps, ISO)
//	2024-07-19 10:00:01,123 [- ]          (Python logging)
//	[2024-07-19 10:00:01] / [2024-07-19T10:00:01Z]
//	Jul 19 10:00:01 host prog[123]:       (syslog, journalctl)
func timeLen(l []byte) int {
	i := 0
	br := false
	if len(l) > 0 && l[0] == '[' {
		br, i = true, 1
	}
	if n := isoLen(l[i:]); n > 0 {
		i += n
		if br {
			if i >= len(l) || l[i] != ']' {
				return 0
			}
			i++
		}
		n, ok := timeSep(l[i:])
		if !ok {
			return 0
		}
		return i + n
	}
	if br || len(l) < 16 {
		return 0
	}
	// syslog: "Mon dd hh:mm:ss host prog[pid]: "
	ok := false
	for _, m := range months {
		if string(l[:3]) == m {
			ok = true
			break
		}
	}
	if !ok || l[3] != ' ' {
		return 0
	}
	i = 4
	if l[i] == ' ' {
		i++
	}
	for i < len(l) && isDigitB(l[i]) {
		i++
	}
	if i >= len(l) || l[i] != ' ' {
		return 0
	}
	i++
	if n := clockLen(l[i:]); n == 0 {
		return 0
	} else {
		i += n
	}
	// host and tag up to ": "
	e := bytes.Index(l[i:], []byte(": "))
	if e < 0 || e > 160 {
		return 0
	}
	return i + e + 2
}

// timeSep is the separator after a timestamp: one space or tab, then
// possibly "- " or ": " (Python logging). The rest of the line keeps its
// own alignment (a topo -m header's tab, the spaces before an nccl-tests
// row). A "| " after the timestamp (log viewers) is the next layer's, a
// box, which a table of the tool's own (dcgmi's) is never taken for.
func timeSep(l []byte) (int, bool) {
	i := 0
	if len(l) > 0 && l[0] == ':' {
		i++
	}
	if i >= len(l) {
		return i, true // a timestamp alone on its line
	}
	if l[i] != ' ' && l[i] != '\t' {
		return 0, false
	}
	i++
	if i+1 < len(l) && l[i+1] == ' ' && (l[i] == '-' || l[i] == ':') {
		i += 2
	}
	return i, true
}

// isoLen: "2024-07-19T10:00:01(.frac)(Z|+00:00)" or with a space for T, or
// "2024/07/19 10:00:01".
func isoLen(l []byte) int {
	if len(l) < 19 || !digits(l[0:4]) || (l[4] != '-' && l[4] != '/') || !digits(l[5:7]) || l[7] != l[4] || !digits(l[8:10]) || (l[10] != 'T' && l[10] != ' ') {
		return 0
	}
	n := clockLen(l[11:])
	if n == 0 {
		return 0
	}
	i := 11 + n
	if i < len(l) && (l[i] == 'Z') {
		i++
	} else if i+5 < len(l)+0 && (l[i] == '+' || l[i] == '-') && digits(l[i+1:i+3]) {
		i += 3
		if i < len(l) && l[i] == ':' {
			i++
		}
		for i < len(l) && isDigitB(l[i]) {
			i++
		}
	}
	return i
}

// clockLen: "10:00:01", "10:00:01.123", "10:00:01,123".
func clockLen(l []byte) int {
	if len(l) < 8 || !digits(l[0:2]) || l[2] != ':' || !digits(l[3:5]) || l[5] != ':' || !digits(l[6:8]) {
		return 0
	}
	i := 8
	if i+1 < len(l) && (l[i] == '.' || l[i] == ',') && isDigitB(l[i+1]) {
		i++
		for i < len(l) && isDigitB(l[i]) {
			i++
		}
	}
	return i
}

func digits(b []byte) bool {
	for _, c := range b {
		if !isDigitB(c) {
			return false
		}
	}
	return len(b) > 0
}

func isDigitB(c byte) bool { return c >= '0' && c <= '9' }

func spaceAfter(l []byte, i int) int {
	if i < len(l) && l[i] == ' ' {
		i++
	}
	return i
}

// boxTable: "| " lines that also end with "|" or are drawn with "+---": a
// table of the tool's own (dcgmi diag, nvidia-smi), not a harness's box.
func boxTable(lines [][]byte) bool {
	ends := 0
	for _, l := range lines {
		t := bytes.TrimRight(l, " \t")
		if len(t) > 0 && (t[len(t)-1] == '|' || t[0] == '+') {
			ends++
		}
	}
	return ends*10 >= len(lines)
}

// commonIndent is the indentation (at least two spaces, or tabs) that every
// line has; nil when one line starts at its first column.
func commonIndent(lines [][]byte) []byte {
	var ind []byte
	for i, l := range lines {
		n := 0
		for n < len(l) && (l[n] == ' ' || l[n] == '\t') {
			n++
		}
		if i == 0 {
			ind = l[:n]
			continue
		}
		k := 0
		for k < len(ind) && k < n && ind[k] == l[k] {
			k++
		}
		ind = ind[:k]
		if k == 0 {
			return nil
		}
	}
	// A single tab or space is a tool's own alignment (topo -m's header
	// starts with a tab), and so is the indentation of right-aligned
	// number columns (a fragment of nccl-tests or nvbandwidth rows).
	if len(ind) < 2 {
		return nil
	}
	numeric := true
	for _, l := range lines {
		// A timestamp is not a number column: an indented log is
		// de-indented.
		if c := l[len(ind)]; c != ' ' && c != '\t' && (c < '0' || c > '9') || timeLen(l[len(ind):]) > 0 {
			numeric = false
			break
		}
	}
	if numeric {
		return nil
	}
	return append([]byte(nil), ind...)
}

// isFence: a Markdown code fence line, "```", "```text", "~~~".
func isFence(l []byte) bool {
	l = bytes.TrimLeft(l, " ")
	if len(l) < 3 || !(l[0] == '`' && l[1] == '`' && l[2] == '`' || l[0] == '~' && l[1] == '~' && l[2] == '~') {
		return false
	}
	// the info string: a word, no further backticks
	rest := bytes.TrimSpace(l[3:])
	rest = bytes.TrimLeft(rest, "`~")
	return len(rest) < 40 && bytes.IndexByte(rest, '`') < 0 && bytes.IndexByte(rest, ' ') < 0
}

// isHTMLTag: a GitHub issue's <details>, </details>, <summary>..</summary>
// line.
func isHTMLTag(l []byte) bool {
	l = bytes.TrimSpace(l)
	for _, t := range [...]string{"<details", "</details>", "<summary", "</summary>", "<pre>", "</pre>", "<br>"} {
		if len(l) >= len(t) && strings.EqualFold(string(l[:len(t)]), t) {
			return t != "<summary" || bytes.HasSuffix(bytes.ToLower(l), []byte("</summary>")) || len(l) == len("<summary>")
		}
	}
	return false
}

// commandWords are what a "# " root prompt may start: without one of them,
// "# " is a comment of the tool's own (nccl-tests' header lines).
var commandWords = []string{"./", "/", "~/", "mpirun", "srun", "torchrun", "python", "nvidia-smi", "sudo", "docker", "kubectl", "cat ", "dcgmi", "ib_", "nvbandwidth", "all_", "alltoall", "sendrecv", "reduce", "broadcast", "gather", "scatter", "env ", "export ", "NCCL_", "CUDA_", "bash", "sh ", "mpiexec", "deepspeed", "accelerate", "perftest", "LD_LIBRARY_PATH", "UCX_", "FI_", "OMPI_", "time "}

// promptLen is the length of a shell prompt at the start of l, with the
// space after it, or 0:
//
//	$ cmd   user@host:~$ cmd   user@host:/d# cmd   [user@host dir]$ cmd
//	(venv) user@host:~$ cmd   # cmd (root; cmd must look like a command)
func promptLen(l []byte) int {
	i := 0
	if l[0] == '(' { // a virtualenv or conda name
		e := bytes.IndexByte(l, ')')
		if e < 0 || e > 64 || e+1 >= len(l) || l[e+1] != ' ' {
			return 0
		}
		i = e + 2
	}
	rest := l[i:]
	if len(rest) >= 2 && (rest[0] == '$' || rest[0] == '#') && rest[1] == ' ' {
		if rest[0] == '#' && !looksCommand(rest[2:]) {
			return 0
		}
		if rest[0] == '$' && len(bytes.TrimSpace(rest[2:])) == 0 {
			return 0
		}
		return i + 2
	}
	if len(rest) > 0 && rest[0] == '[' { // [user@host dir]$
		e := bytes.IndexByte(rest, ']')
		if e < 0 || e > 128 || bytes.IndexByte(rest[:e], '@') < 0 {
			return 0
		}
		j := e + 1
		if j+1 < len(rest) && (rest[j] == '$' || rest[j] == '#') && rest[j+1] == ' ' {
			return i + j + 2
		}
		return 0
	}
	// user@host:path$ — '@' within the first 64 bytes, no space before the
	// prompt character.
	w := rest
	if len(w) > 128 {
		w = w[:128]
	}
	at := bytes.IndexByte(w, '@')
	if at <= 0 {
		return 0
	}
	for j := at + 1; j+1 < len(w); j++ {
		c := w[j]
		if c == ' ' {
			return 0
		}
		if (c == '$' || c == '#' || c == '%') && w[j+1] == ' ' && bytes.IndexByte(w[at:j], ':') >= 0 {
			return i + j + 2
		}
	}
	return 0
}

// commandsByByte is commandWords by their first byte (built once, read
// only): a "#" line of a tool's own output costs one table look-up.
var commandsByByte = func() (t [256][]string) {
	for _, w := range commandWords {
		t[w[0]] = append(t[w[0]], w)
	}
	return t
}()

func looksCommand(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	for _, w := range commandsByByte[s[0]] {
		if len(s) >= len(w) && string(s[:len(w)]) == w {
			return true
		}
	}
	return false
}

// PasteReader gives the lines of r cleaned by a Paste to a reader that reads
// bytes (the XML decoder): a skipped line becomes an empty line, so line
// numbers stay those of the input. A line longer than r's buffer is
// cleaned by its first piece; the rest passes as it is.
type PasteReader struct {
	p   *Paste
	br  *bufio.Reader
	buf []byte
	off int
	n   int
	mid bool // inside a line longer than the buffer
	err error
}

// NewPasteReader reads br (whose head was given to DetectPaste as p) through p.
func NewPasteReader(p *Paste, br *bufio.Reader) *PasteReader {
	return &PasteReader{p: p, br: br}
}

func (pr *PasteReader) Read(dst []byte) (int, error) {
	for pr.off >= len(pr.buf) {
		if pr.err != nil {
			return 0, pr.err
		}
		pr.buf, pr.off = pr.buf[:0], 0
		for len(pr.buf) < 32<<10 && pr.err == nil {
			chunk, err := pr.br.ReadSlice('\n')
			full := errors.Is(err, bufio.ErrBufferFull)
			if err != nil && !full {
				pr.err = err
			}
			if len(chunk) == 0 {
				continue
			}
			if pr.mid {
				pr.buf = append(pr.buf, chunk...)
				pr.mid = full
				continue
			}
			pr.n++
			body, eol := chunk, []byte(nil)
			if !full && body[len(body)-1] == '\n' {
				body, eol = body[:len(body)-1], body[len(body)-1:]
			}
			out, skip := pr.p.Clean(body, pr.n)
			if !skip {
				pr.buf = append(pr.buf, out...)
			}
			pr.buf = append(pr.buf, eol...)
			pr.mid = full
		}
	}
	n := copy(dst, pr.buf[pr.off:])
	pr.off += n
	return n, nil
}

var _ io.Reader = (*PasteReader)(nil)

// CleanHead is head (the first 64 KiB given to the Detect functions) as the
// readers will see it: cleaned by the Paste found from it, skipped lines
// left empty. It is head itself when nothing needed cleaning.
func CleanHead(head []byte) []byte {
	orig := head
	p := DetectPaste(head, 0)
	out := make([]byte, 0, len(head))
	changed := false
	for n := 1; len(head) > 0; n++ {
		i := bytes.IndexByte(head, '\n')
		l := head
		if i >= 0 {
			l, head = head[:i+1], head[i+1:]
		} else {
			head = nil
		}
		body := bytes.TrimSuffix(l, []byte("\n"))
		c, skip := p.Clean(body, n)
		if skip {
			c = nil
		}
		if skip || len(c) != len(body) {
			changed = true
		}
		out = append(out, c...)
		if len(body) < len(l) {
			out = append(out, '\n')
		}
	}
	if !changed {
		return orig
	}
	return out
}

// A logger's prefix of any shape (a test harness's "2019-07-16 03:43:24,132
// process L0458 DEBUG| [stdout] ", Ray's "(RayWorkerWrapper pid=539) ") is
// learned from the input rather than listed: the text before a separator
// ("] ", ") ", ": ", "| ", " - ") whose shape (digits as one class, blank
// runs as one blank, the rest as it is) starts at least 60% of the head's
// lines, and three of them. The longest such prefix is taken that ends
// before the payload the readers recognise: it must hold a letter and no
// NCCL origin ("host:pid:tid", "NCCL"), no "#" (nccl-tests' comments), no
// '<' (XML, mpirun's "<stdout>"), and the payload must not start with
// "NCCL ".

// maxLearned bounds a learned prefix's length.
const maxLearned = 200

// learnPrefix is the shape of the prefix most lines share and the first
// line's text of it; "" when there is none.
func learnPrefix(lines [][]byte) (key, example string) {
	count := map[string]int{}
	first := map[string]string{}
	for _, l := range lines {
		seen := map[string]bool{}
		for _, n := range prefixEnds(l) {
			k := shapeOf(l[:n])
			if seen[k] {
				continue
			}
			seen[k] = true
			count[k]++
			if _, ok := first[k]; !ok {
				first[k] = string(l[:n])
			}
		}
	}
	for k, c := range count {
		if c < 3 || c*10 < len(lines)*6 {
			continue
		}
		if len(k) > len(key) || len(k) == len(key) && k < key {
			key = k
		}
	}
	return key, first[key]
}

// prefixEnds are the lengths of l's candidate prefixes: each ends after a
// separator and the one blank after it (the payload keeps its own
// alignment; a line cut after the separator ends there), within
// maxLearned bytes, and passes the payload guard. Each candidate adds a
// letter or digit to the one before it: a bare "| " after a prefix is a
// table's border, not more of the prefix; nor is a rank tag ("[3] ",
// "3: ") one.
func prefixEnds(l []byte) []int {
	var out []int
	lim := min(len(l), maxLearned)
	last := 0
	for i := 1; i < lim; i++ {
		c := l[i]
		end := i+1 == len(l)
		if !(c == ']' || c == ')' || c == ':' || c == '|' || c == '-' && l[i-1] == ' ') || !end && l[i+1] != ' ' {
			continue
		}
		n := len(l)
		if !end {
			n = i + 2
		}
		seg := l[last:n]
		if !alnum(seg) || !payloadFree(l[:n], l[n:]) || hydraTagLen(seg) == len(seg) || srunLen(seg) == len(seg) {
			// A longer prefix would hold the payload too, or a
			// launcher's rank tag: the next layer's, kept for
			// nccl-tests.
			break
		}
		out = append(out, n)
		last = n
	}
	return out
}

func alnum(b []byte) bool {
	for _, c := range b {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigitB(c) {
			return true
		}
	}
	return false
}

// payloadFree reports whether prefix holds none of the payload the
// readers recognise, and rest does not start an NCCL message.
func payloadFree(prefix, rest []byte) bool {
	if bytes.HasPrefix(rest, []byte("NCCL ")) || bytes.Contains(prefix, []byte("NCCL")) ||
		bytes.IndexByte(prefix, '#') >= 0 || bytes.IndexByte(prefix, '<') >= 0 || ncclOrigin(prefix) {
		return false
	}
	for _, c := range prefix {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return true
		}
	}
	return false
}

// ncclOrigin reports whether b holds NCCL's "host:pid:tid" (a word ending
// in ":digits:digits").
func ncclOrigin(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != ':' || i+1 >= len(b) || !isDigitB(b[i+1]) {
			continue
		}
		j := i + 1
		for j < len(b) && isDigitB(b[j]) {
			j++
		}
		if j+1 < len(b) && b[j] == ':' && isDigitB(b[j+1]) {
			return true
		}
	}
	return false
}

// shapeOf is b with each run of digits as "9" and each run of blanks as
// one space: timestamps, pids and counters match, the words do not.
func shapeOf(b []byte) string {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case isDigitB(c):
			for i+1 < len(b) && isDigitB(b[i+1]) {
				i++
			}
			out = append(out, '9')
		case c == ' ' || c == '\t':
			for i+1 < len(b) && (b[i+1] == ' ' || b[i+1] == '\t') {
				i++
			}
			out = append(out, ' ')
		default:
			out = append(out, c)
		}
	}
	return string(out)
}

// learnedLen is the length of the learned prefix (of shape key) at the
// start of l, 0 when l does not start with it. It runs on every line of a
// learned input: the shape is compared as it is walked, without copies.
func learnedLen(l []byte, key string) int {
	for _, n := range prefixEnds(l) {
		switch k := shapeCmp(l[:n], key); {
		case k == 0:
			return n
		case k > 0:
			return 0 // longer already: later candidates are longer still
		}
	}
	return 0
}

// shapeCmp compares shapeOf(b) with key: 0 when equal, 1 when b's shape
// is longer than key or differs from it, -1 when it is a proper prefix of
// key (a longer candidate may still match).
func shapeCmp(b []byte, key string) int {
	k := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case isDigitB(c):
			for i+1 < len(b) && isDigitB(b[i+1]) {
				i++
			}
			c = '9'
		case c == ' ' || c == '\t':
			for i+1 < len(b) && (b[i+1] == ' ' || b[i+1] == '\t') {
				i++
			}
			c = ' '
		}
		if k >= len(key) || key[k] != c {
			return 1
		}
		k++
	}
	if k < len(key) {
		return -1
	}
	return 0
}
