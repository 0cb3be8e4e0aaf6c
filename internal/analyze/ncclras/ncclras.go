// Package ncclras reads the status report of NCCL's RAS (reliability,
// availability and serviceability) subsystem, NCCL 2.24 and later: what
// `ncclras` (or a connection to NCCL_RAS_ADDR) prints about a running job.
// It reads the job summary (nodes, processes, GPUs, outlier nodes), the
// communicators table (status and errors per group) and the Errors and
// Warnings sections, and turns each of RAS's findings into a verdict:
// RAS itself only reports.
//
// A paste may hold several reports of the same job (the docs show one
// taken after a process stopped and one 60 s later): the last is the job's
// state, and the earlier ones are counted.
package ncclras

import (
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
)

// Kind is the analyzer kind name.
const Kind = "nccl-ras"

// Report is what one RAS status output says.
type Report struct {
	// Paste says which paste prefixes were removed and which lines were
	// skipped before the lines were read.
	Paste       *textio.PasteNote `json:"paste,omitempty"`
	NCCLVersion string            `json:"nccl_version,omitempty"`
	// Nodes, Processes and GPUs are the job summary's totals (0: not
	// printed).
	Nodes     int `json:"nodes,omitempty"`
	Processes int `json:"processes,omitempty"`
	GPUs      int `json:"gpus,omitempty"`
	// Outliers are the "Node X running processes ..." lines RAS prints
	// for nodes whose process count differs from the others'.
	Outliers []textio.Quote `json:"outlier_nodes,omitempty"`
	// Reports counts the communicator reports read; the last one's groups
	// and findings are kept.
	Reports  int       `json:"reports"`
	Groups   []Group   `json:"groups"`
	Errors   []Finding `json:"errors,omitempty"`
	Warnings []Finding `json:"warnings,omitempty"`
}

// Group is one row of the communicators table.
type Group struct {
	Index        int      `json:"group"`
	Comms        int      `json:"comms"`
	NodesPerComm int      `json:"nodes_per_comm"`
	RanksPerNode string   `json:"ranks_per_node"` // "8", or a range "7-8"
	RanksPerComm int      `json:"ranks_per_comm"`
	RanksInGroup int      `json:"ranks_in_group"`
	Status       string   `json:"status"` // RUNNING, NOCOMM, ...
	Errors       []string `json:"errors"` // OK, INCOMPLETE, MISMATCH, ...
	Line         int      `json:"line"`
}

// Finding is one entry of the Errors or Warnings section: a kind (DEAD,
// INCOMPLETE, MISMATCH, TIMEOUT, ...), the communicator it is about
// ("#0-0 (cf264af53edbe986)"; empty for the job), and RAS's detail lines.
type Finding struct {
	Kind    string   `json:"kind"`
	Comm    string   `json:"comm,omitempty"`
	Details []string `json:"details,omitempty"`
	Line    int      `json:"line"`
}

var (
	reDetect  = textio.MustCompile(`(?m)^[ \t]*Communicators\.\.\.|^[ \t]*Job summary[ \t]*\r?\n[ \t]*={5,}`)
	reVersion = regexp.MustCompile(`^NCCL version (\S+)`)
	reGroup   = regexp.MustCompile(`^(\d+)\s+(\d+)\s+(\d+)\s+(\d+(?:-\d+)?)\s+(\d+)\s+(\d+)\s+([A-Z][A-Z_]*)\s+([A-Z][A-Z_,]*)$`)
	reComm    = regexp.MustCompile(`^(#\d+-\d+(?:\s+\([0-9a-fA-F]+\))?)\s+([A-Z][A-Z_]*)$`)
	reKind    = regexp.MustCompile(`^[A-Z][A-Z_]+$`)
	reNumbers = regexp.MustCompile(`^\d+(\s+\d+)*$`)
)

// Detect reports whether head looks like a RAS status report.
func Detect(head []byte) bool { return reDetect.Match(head) }

// Analyze reads a RAS status report. Input without a communicators table
// and without a job summary is refused, naming the file.
func Analyze(name string, r io.Reader) (*Report, []result.Result, error) {
	lr := textio.NewLineReader(name, r)
	rep := &Report{Groups: []Group{}}
	p := parser{rep: rep}
	for no, line := range lr.All() {
		p.line(no, line)
	}
	if err := lr.Err(); err != nil {
		return nil, nil, err
	}
	rep.Paste = lr.Paste()
	if rep.Reports == 0 && !p.summary {
		return nil, nil, textio.Errorf(name, max(lr.Line(), 1), `no NCCL RAS report found (no "Job summary" and no "Communicators..." section)`)
	}
	vs := verdicts(name, rep)
	result.SetSource(vs, Kind)
	return rep, vs, nil
}

// parser is the state of one pass over the lines.
type parser struct {
	rep     *Report
	summary bool
	// section is where the lines are: "summary", "outliers", "comms",
	// "errors", "warnings" or "".
	section string
	// indent is the section title's indentation: a finding starts at it,
	// its details are further in.
	indent int
	cur    *Finding
	// totals: the summary's header said "(total)" under every column of
	// the next row of numbers.
	totals int
	// errorsSeen: this report's Errors section was read; another one
	// starts the next report (a paste of two reports, the second without
	// its communicators table).
	errorsSeen bool
}

func (p *parser) line(no int, raw string) {
	line := strings.TrimRight(raw, " \t\r")
	text := strings.TrimSpace(line)
	indent := len(line) - len(strings.TrimLeft(line, " \t"))
	if text == "" {
		p.cur = nil
		return
	}
	if strings.Trim(text, "=") == "" {
		return // a title's underline
	}
	if m := reVersion.FindStringSubmatch(text); m != nil {
		p.rep.NCCLVersion = m[1]
		return
	}
	switch {
	case text == "Job summary":
		p.summary, p.section = true, "summary"
		return
	case text == "The outlier node:" || text == "The outlier nodes:":
		p.section = "outliers"
		return
	case strings.HasPrefix(text, "Communicators..."):
		// A new report: the last one is the job's state.
		p.rep.Reports++
		p.rep.Groups, p.rep.Errors, p.rep.Warnings = []Group{}, nil, nil
		p.section, p.cur, p.errorsSeen = "comms", nil, false
		return
	case text == "Errors" && p.errorsSeen:
		// The next report, printed without its communicators table: its
		// findings replace the last ones; the table stays.
		p.rep.Reports++
		p.rep.Errors, p.rep.Warnings = nil, nil
		p.section, p.indent, p.cur = "errors", indent, nil
		return
	case text == "Errors" || text == "Warnings":
		p.errorsSeen = p.errorsSeen || text == "Errors"
		p.section, p.indent, p.cur = strings.ToLower(text), indent, nil
		return
	}
	switch p.section {
	case "summary":
		if strings.Contains(text, "(total)") {
			p.totals = strings.Count(text, "(total)")
			return
		}
		if reNumbers.MatchString(text) {
			f := strings.Fields(text)
			switch {
			case len(f) == 5: // nodes, processes per node, GPUs per process, processes, GPUs
				p.rep.Nodes, p.rep.Processes, p.rep.GPUs = atoi(f[0]), atoi(f[3]), atoi(f[4])
			case len(f) == 3 && p.totals == 3: // nodes, processes, GPUs (all totals)
				p.rep.Nodes, p.rep.Processes, p.rep.GPUs = atoi(f[0]), atoi(f[1]), atoi(f[2])
			}
			p.totals = 0
		}
	case "outliers":
		if strings.HasPrefix(text, "Node ") {
			p.rep.Outliers = append(p.rep.Outliers, textio.Quote{Line: no, Text: textio.Clip(text, textio.MaxQuoteLen)})
		}
	case "comms":
		if m := reGroup.FindStringSubmatch(text); m != nil {
			p.rep.Groups = append(p.rep.Groups, Group{Index: atoi(m[1]), Comms: atoi(m[2]), NodesPerComm: atoi(m[3]), RanksPerNode: m[4],
				RanksPerComm: atoi(m[5]), RanksInGroup: atoi(m[6]), Status: m[7], Errors: strings.Split(m[8], ","), Line: no})
		}
	case "errors", "warnings":
		list := &p.rep.Errors
		if p.section == "warnings" {
			list = &p.rep.Warnings
		}
		if indent <= p.indent || p.cur == nil {
			var f Finding
			if m := reComm.FindStringSubmatch(text); m != nil {
				f = Finding{Kind: m[2], Comm: strings.Join(strings.Fields(m[1]), " "), Line: no}
			} else if reKind.MatchString(text) {
				f = Finding{Kind: text, Line: no}
			} else {
				return // not a finding's title: a line RAS does not print
			}
			if len(*list) < maxFindings {
				*list = append(*list, f)
				p.cur = &(*list)[len(*list)-1]
			} else {
				p.cur = nil
			}
			return
		}
		if len(p.cur.Details) < maxDetails {
			p.cur.Details = append(p.cur.Details, textio.Clip(text, textio.MaxQuoteLen))
		}
	}
}

// Bounds on what one report keeps: RAS lists every missing rank of a
// large job one per line.
const (
	maxFindings = 64
	maxDetails  = 16
)

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
