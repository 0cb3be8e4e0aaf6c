// Package analyze dispatches a file to the reader of its kind: detected
// from its content, or forced. The list of readers is static and explicit:
// each kind names its package's Kind, Detect and Analyze, which together
// meet the Reader contract.
package analyze

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/analyze/dcgmi"
	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
	"github.com/gdrcheck/gdrcheck/internal/analyze/nccltests"
	"github.com/gdrcheck/gdrcheck/internal/analyze/nccltopo"
	"github.com/gdrcheck/gdrcheck/internal/analyze/nvbandwidth"
	"github.com/gdrcheck/gdrcheck/internal/analyze/perftest"
	"github.com/gdrcheck/gdrcheck/internal/analyze/smitopo"
	"github.com/gdrcheck/gdrcheck/internal/analyze/textio"
	"github.com/gdrcheck/gdrcheck/internal/report/printable"
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Report is the data a reader returns beside its verdicts. It prints
// itself as text, with the verdicts in their place.
type Report interface {
	WriteText(w io.Writer, verdicts []result.Result) error
}

// Output is one file read as one kind: the reader's data and its verdicts.
// In a JSON document the verdicts are written once, in the document's
// results; Results gives where this output's lie there.
type Output struct {
	File     string          `json:"file"`
	Kind     string          `json:"kind"`
	Report   Report          `json:"report"`
	Verdicts []result.Result `json:"-"`
	// Results are the indices [from, to) of Verdicts in the results of
	// the document that holds this output.
	Results [2]int `json:"results"`
}

// WriteText prints the file and kind, then the report (verdicts first).
// The file's name is printed escaped (printable.Line).
func (o *Output) WriteText(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "== %s (%s)\n", printable.Line(o.File), o.Kind); err != nil {
		return err
	}
	return o.Report.WriteText(w, o.Verdicts)
}

// Reader is the contract every reader meets: a kind name, a description,
// a test of the start of a file (at most textio.HeadSize bytes), and the
// analysis of a whole file into data and verdicts. Analyze fails only on
// input it cannot read at all, with a *textio.ParseError naming the file
// and a line.
type Reader interface {
	Kind() string
	Description() string
	Detect(head []byte) bool
	Analyze(name string, r io.Reader) (Report, []result.Result, error)
}

// Readers lists every kind, in detection order: the most specific formats
// first, NCCL debug logs (which other outputs often contain) last.
func Readers() []Reader {
	return []Reader{
		newReader(smitopo.Kind, "nvidia-smi topo -m matrix: GPU→NIC pairing and gdr.nic-affinity", smitopo.Detect, smitopo.Analyze),
		newReader(dcgmi.Kind, "dcgmi diag text table (DCGM 3/4) or --json", dcgmi.Detect, dcgmi.Analyze),
		newReader(nvbandwidth.Kind, "nvbandwidth text or -j JSON", nvbandwidth.Detect, nvbandwidth.Analyze),
		newReader(perftest.Kind, "perftest ib_*_bw / ib_*_lat text or --out_json", perftest.Detect, perftest.Analyze),
		newReader(nccltopo.Kind, "NCCL topology or graph XML (NCCL_TOPO_DUMP_FILE, NCCL_GRAPH_DUMP_FILE, NCCL_TOPO_FILE)", nccltopo.Detect, nccltopo.Analyze),
		newReader(nccltests.Kind, "nccl-tests output (text or -J JSON)", nccltests.Detect, nccltests.Analyze),
		newReader(ncclog.Kind, "NCCL_DEBUG=INFO log", ncclog.Detect, ncclog.Analyze),
	}
}

// funcs is the Reader of a reader package: its Kind, Detect and Analyze,
// R its report type. newReader's type check is what holds every package
// to the contract.
type funcs[R Report] struct {
	kind, desc string
	detect     func(head []byte) bool
	analyze    func(name string, r io.Reader) (R, []result.Result, error)
}

func newReader[R Report](kind, desc string, detect func([]byte) bool, analyze func(string, io.Reader) (R, []result.Result, error)) Reader {
	return funcs[R]{kind, desc, detect, analyze}
}

func (f funcs[R]) Kind() string            { return f.kind }
func (f funcs[R]) Description() string     { return f.desc }
func (f funcs[R]) Detect(head []byte) bool { return f.detect(head) }

func (f funcs[R]) Analyze(name string, r io.Reader) (Report, []result.Result, error) {
	rep, vs, err := f.analyze(name, r)
	if err != nil {
		return nil, nil, err
	}
	return rep, vs, nil
}

// Kinds names every kind, in detection order.
func Kinds() []string {
	var out []string
	for _, r := range Readers() {
		out = append(out, r.Kind())
	}
	return out
}

func reader(kind string) (Reader, bool) {
	for _, r := range Readers() {
		if r.Kind() == kind {
			return r, true
		}
	}
	return nil, false
}

// KindError says a file's kind is unknown or was not recognised.
type KindError struct {
	File string
	Msg  string
}

func (e *KindError) Error() string { return e.File + ": " + e.Msg }

// Detect lists the kinds whose reader recognises head, in detection order.
func Detect(head []byte) []string {
	if len(head) > textio.HeadSize {
		head = head[:textio.HeadSize]
	}
	var out []string
	for _, r := range Readers() {
		if r.Detect(head) {
			out = append(out, r.Kind())
		}
	}
	return out
}

func readHead(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, textio.HeadSize)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return head[:n], nil
}

// DetectFile lists the kinds recognised in the first 64 KiB of a file.
func DetectFile(path string) ([]string, error) {
	head, err := readHead(path)
	if err != nil {
		return nil, err
	}
	kinds := Detect(head)
	if len(kinds) == 0 {
		return nil, unrecognised(path, head)
	}
	return kinds, nil
}

func unrecognised(path string, head []byte) error {
	if len(bytes.TrimSpace(head)) == 0 {
		return &KindError{path, "empty file"}
	}
	return &KindError{path, "kind not recognised (want one of " + strings.Join(Kinds(), ", ") + "; force one with --kind)"}
}

// File reads path as kind; an empty kind means the first kind detected.
func File(path, kind string) (*Output, error) {
	if kind == "" {
		kinds, err := DetectFile(path)
		if err != nil {
			return nil, err
		}
		kind = kinds[0]
	}
	rd, ok := reader(kind)
	if !ok {
		return nil, &KindError{path, fmt.Sprintf("unknown kind %q (want one of %s)", kind, strings.Join(Kinds(), ", "))}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(path, f, rd)
}

// Read analyses r with one reader.
func Read(name string, r io.Reader, rd Reader) (*Output, error) {
	rep, vs, err := rd.Analyze(name, r)
	if err != nil {
		return nil, err
	}
	if vs == nil {
		vs = []result.Result{}
	}
	return &Output{File: name, Kind: rd.Kind(), Report: rep, Verdicts: vs}, nil
}

// FileAll reads path as every kind detected in it: an NCCL_DEBUG=INFO run
// of nccl-tests is both an NCCL log and a nccl-tests output. A detected
// kind whose reader then finds nothing is dropped; the error comes back
// only when no kind could read the file.
func FileAll(path string) ([]*Output, error) {
	kinds, err := DetectFile(path)
	if err != nil {
		return nil, err
	}
	var outs []*Output
	var first error
	for _, k := range kinds {
		o, err := File(path, k)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		outs = append(outs, o)
	}
	if len(outs) == 0 {
		return nil, first
	}
	return outs, nil
}
