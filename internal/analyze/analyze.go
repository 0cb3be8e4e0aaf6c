// Package analyze dispatches a file to the reader of its kind: detected
// from its content, or forced. The list of readers is static and explicit:
// each kind names its package's Detect and Analyze.
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
	"github.com/gdrcheck/gdrcheck/internal/result"
)

// Report is what every reader returns: data that prints itself.
type Report interface {
	WriteText(w io.Writer) error
}

// Output is one file read as one kind.
type Output struct {
	File     string          `json:"file"`
	Kind     string          `json:"kind"`
	Report   Report          `json:"report"`
	Verdicts []result.Result `json:"verdicts"`
}

// WriteText prints the file and kind, then the report (verdicts first).
func (o *Output) WriteText(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "== %s (%s)\n", o.File, o.Kind); err != nil {
		return err
	}
	return o.Report.WriteText(w)
}

// Reader is one kind of input.
type Reader struct {
	Kind        string
	Description string
	Detect      func(head []byte) bool
	Analyze     func(name string, r io.Reader) (Report, []result.Result, error)
}

// Readers lists every kind, in detection order: the most specific formats
// first, NCCL debug logs (which other outputs often contain) last.
func Readers() []Reader {
	return []Reader{
		newReader(smitopo.Kind, "nvidia-smi topo -m matrix: GPU→NIC pairing and gdr.nic-affinity", smitopo.Detect, smitopo.Analyze,
			func(r *smitopo.Report) []result.Result { return r.Verdicts }),
		newReader(dcgmi.Kind, "dcgmi diag text table (DCGM 3/4) or --json", dcgmi.Detect, dcgmi.Analyze,
			func(r *dcgmi.Report) []result.Result { return r.Verdicts }),
		newReader(nvbandwidth.Kind, "nvbandwidth text or -j JSON", nvbandwidth.Detect, nvbandwidth.Analyze,
			func(r *nvbandwidth.Report) []result.Result { return r.Verdicts }),
		newReader(perftest.Kind, "perftest ib_*_bw / ib_*_lat text or --out_json", perftest.Detect, perftest.Analyze,
			func(r *perftest.Report) []result.Result { return r.Verdicts }),
		newReader(nccltopo.Kind, "NCCL topology or graph XML (NCCL_TOPO_DUMP_FILE, NCCL_GRAPH_DUMP_FILE, NCCL_TOPO_FILE)", nccltopo.Detect, nccltopo.Analyze,
			func(r *nccltopo.Report) []result.Result { return r.Verdicts }),
		newReader(nccltests.Kind, "nccl-tests output (text or -J JSON)", nccltests.Detect, nccltests.Analyze,
			func(r *nccltests.Report) []result.Result { return r.Verdicts }),
		newReader(ncclog.Kind, "NCCL_DEBUG=INFO log", ncclog.Detect, ncclog.Analyze,
			func(r *ncclog.Report) []result.Result { return r.Verdicts }),
	}
}

// newReader makes the Reader of a package: its Detect and Analyze, and the
// verdicts of its report.
func newReader[R Report](name, desc string, detect func([]byte) bool, analyze func(string, io.Reader) (R, error), verdicts func(R) []result.Result) Reader {
	return Reader{name, desc, detect, func(n string, r io.Reader) (Report, []result.Result, error) {
		rep, err := analyze(n, r)
		if err != nil {
			return nil, nil, err
		}
		return rep, verdicts(rep), nil
	}}
}

// Kinds names every kind, in detection order.
func Kinds() []string {
	var out []string
	for _, r := range Readers() {
		out = append(out, r.Kind)
	}
	return out
}

func reader(kind string) (Reader, bool) {
	for _, r := range Readers() {
		if r.Kind == kind {
			return r, true
		}
	}
	return Reader{}, false
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
			out = append(out, r.Kind)
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
	return &Output{File: name, Kind: rd.Kind, Report: rep, Verdicts: vs}, nil
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
