// Package analyze dispatches a file to the reader of its kind: detected
// from its content, or forced. The list of readers is static and explicit:
// each kind names its package's Kind, Detect and Analyze, which together
// meet the Reader contract.
package analyze

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/gdrcheck/gdrcheck/internal/analyze/dcgmi"
	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclog"
	"github.com/gdrcheck/gdrcheck/internal/analyze/ncclras"
	"github.com/gdrcheck/gdrcheck/internal/analyze/nccltests"
	"github.com/gdrcheck/gdrcheck/internal/analyze/nccltopo"
	"github.com/gdrcheck/gdrcheck/internal/analyze/nvbandwidth"
	"github.com/gdrcheck/gdrcheck/internal/analyze/perftest"
	"github.com/gdrcheck/gdrcheck/internal/analyze/smitopo"
	"github.com/gdrcheck/gdrcheck/internal/printable"
	"github.com/gdrcheck/gdrcheck/internal/result"
	"github.com/gdrcheck/gdrcheck/internal/textio"
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
		newReader(ncclras.Kind, "NCCL RAS status report (ncclras, NCCL 2.24+)", ncclras.Detect, ncclras.Analyze),
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

// ReadError says an input could not be read at all: it does not exist,
// cannot be opened, is a directory, a device or a socket, or a read of it
// failed. An input that was read but holds nothing a reader recognises
// (empty, binary, another tool's output) is not a ReadError.
type ReadError struct {
	File string
	Err  error
}

func (e *ReadError) Error() string {
	if msg := e.Err.Error(); strings.Contains(msg, e.File) {
		return msg
	}
	return e.File + ": " + e.Err.Error()
}

func (e *ReadError) Unwrap() error { return e.Err }

// Unreadable reports whether err says an input could not be read at all
// (a *ReadError), as against content no reader recognised.
func Unreadable(err error) bool {
	var re *ReadError
	return errors.As(err, &re)
}

// Detect lists the kinds whose reader recognises head, in detection order.
func Detect(head []byte) []string {
	if len(head) > textio.HeadSize {
		head = head[:textio.HeadSize]
	}
	head = textio.CleanHead(head)
	var out []string
	for _, r := range Readers() {
		if r.Detect(head) {
			out = append(out, r.Kind())
		}
	}
	return out
}

// MaxInput bounds the bytes read from one input: past it the readers stop
// with an error, so that an endless stream (a device, a pipe that never
// ends) cannot keep analyze running for ever.
const MaxInput int64 = 16 << 30

// Stdin is the file name that stands for the standard input.
const Stdin = "-"

// input is one file being read: its bytes are read once, in chunks, with
// the context checked before each chunk and the total bounded by MaxInput.
type input struct {
	ctx  context.Context
	name string
	r    io.Reader
	n    int64
	// err is the first error of the underlying reader other than EOF:
	// the input could not be read to its end.
	err error
}

func (in *input) Read(p []byte) (int, error) {
	if err := in.ctx.Err(); err != nil {
		return 0, err
	}
	if in.n >= MaxInput {
		return 0, fmt.Errorf("input longer than %d GiB: not read further", MaxInput>>30)
	}
	if int64(len(p)) > MaxInput-in.n {
		p = p[:MaxInput-in.n]
	}
	n, err := in.r.Read(p)
	in.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && in.err == nil {
		in.err = err
	}
	return n, err
}

// open opens path for reading, "-" being the standard input. Regular
// files, pipes and FIFOs are read; a directory or a device is refused
// with a clear error. The returned function closes the file; a pending
// read on a pipe is ended when ctx ends.
func open(ctx context.Context, path string) (io.Reader, func(), error) {
	if path == Stdin {
		return openStdin(ctx)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, &ReadError{path, err}
	}
	switch m := fi.Mode(); {
	case m.IsDir():
		return nil, nil, &ReadError{path, errors.New("is a directory, not a file")}
	case m&os.ModeDevice != 0:
		return nil, nil, &ReadError{path, errors.New("is a device, not a file (pipe its output into analyze - instead)")}
	case m&os.ModeSocket != 0:
		return nil, nil, &ReadError{path, errors.New("is a socket, not a file")}
	}
	f, err := openFile(ctx, path, fi.Mode()&os.ModeNamedPipe != 0)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, err
		}
		return nil, nil, &ReadError{path, err}
	}
	stop := context.AfterFunc(ctx, func() { f.Close() })
	return f, func() { stop(); f.Close() }, nil
}

// openStdin gives the standard input. A pipe is read through a descriptor
// of analyze's own, opened non-blocking, so that the end of ctx can end a
// pending read by closing it (a read on the inherited, blocking descriptor
// could not be ended), and without changing the flags of the standard
// input that other processes share.
func openStdin(ctx context.Context) (io.Reader, func(), error) {
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		fd := uintptr(0)
		if rc, err := os.Stdin.SyscallConn(); err == nil {
			_ = rc.Control(func(d uintptr) { fd = d }) // Fd() would make os.Stdin blocking
		}
		if f, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", fd), os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			stop := context.AfterFunc(ctx, func() { f.Close() })
			return f, func() { stop(); f.Close() }, nil
		}
	}
	return os.Stdin, func() {}, nil
}

// openFile opens path. Opening a FIFO waits for its writer, which may
// never come: that wait ends when ctx does (the opening goroutine is left
// behind, and closes the file if the open ever completes).
func openFile(ctx context.Context, path string, fifo bool) (*os.File, error) {
	if !fifo {
		return os.Open(path)
	}
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		done <- opened{f, err}
	}()
	select {
	case o := <-done:
		return o.f, o.err
	case <-ctx.Done():
		go func() {
			if o := <-done; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// head reads the first HeadSize bytes of r for detection and returns them
// with a reader that gives the whole input again (head, then the rest).
func head(path string, r io.Reader) ([]byte, io.Reader, error) {
	h := make([]byte, textio.HeadSize)
	n, err := io.ReadFull(r, h)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, nil, &ReadError{path, err}
	}
	h = h[:n]
	return h, io.MultiReader(bytes.NewReader(h), r), nil
}

func unrecognised(path string, head []byte) error {
	if len(bytes.TrimSpace(head)) == 0 {
		return &KindError{path, "empty file"}
	}
	return &KindError{path, "kind not recognised (want one of " + strings.Join(Kinds(), ", ") + "; force one with --kind)"}
}

// File reads path ("-": the standard input) as kind; an empty kind means
// the first kind detected. It stops with ctx's error when ctx ends.
func File(ctx context.Context, path, kind string) (*Output, error) {
	if kind != "" {
		if _, ok := reader(kind); !ok {
			return nil, &KindError{path, fmt.Sprintf("unknown kind %q (want one of %s)", kind, strings.Join(Kinds(), ", "))}
		}
	}
	outs, err := analyzeFile(ctx, path, kind, false)
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// FileAll reads path ("-": the standard input) as every kind detected in
// it: an NCCL_DEBUG=INFO run of nccl-tests is both an NCCL log and a
// nccl-tests output. The input is read once, every reader being given the
// same bytes. A detected kind whose reader then finds nothing is dropped;
// the error comes back only when no kind could read the file.
func FileAll(ctx context.Context, path string) ([]*Output, error) {
	return analyzeFile(ctx, path, "", true)
}

func analyzeFile(ctx context.Context, path, kind string, all bool) ([]*Output, error) {
	return analyzeFileJob(ctx, path, kind, all, nil)
}

// analyzeFileJob is analyzeFile with, when the input is read as an NCCL
// log and extra is not nil, extra given the same bytes; extra's output is
// not returned.
func analyzeFileJob(ctx context.Context, path, kind string, all bool, extra Reader) ([]*Output, error) {
	f, closeFile, err := open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer closeFile()
	in := &input{ctx: ctx, name: path, r: f}
	src := io.Reader(in)
	var rds []Reader
	if kind != "" {
		rd, _ := reader(kind)
		rds = []Reader{rd}
	} else {
		var h []byte
		if h, src, err = head(path, src); err != nil {
			return nil, ctxErr(ctx, err)
		}
		kinds := Detect(h)
		if len(kinds) == 0 {
			return nil, unrecognised(path, h)
		}
		if !all {
			kinds = kinds[:1]
		}
		for _, k := range kinds {
			rd, _ := reader(k)
			rds = append(rds, rd)
		}
	}
	n := len(rds)
	// A file detected as other kinds only is also read for nccl-tests
	// rows (a table past the head, or one the head did not show as
	// one): their wrong results are never lost, whatever else the file
	// holds (issue 26 class 6).
	watch := -1
	if kind == "" && all && !slices.ContainsFunc(rds, func(r Reader) bool { return r.Kind() == nccltests.Kind }) {
		rd, _ := reader(nccltests.Kind)
		rds = append(rds, rd)
		watch = len(rds) - 1
	}
	if extra != nil && slices.ContainsFunc(rds[:n], func(r Reader) bool { return r.Kind() == extra.Kind() }) {
		rds = append(rds, extra)
	}
	outs, errs := readAll(path, src, rds)
	if watch >= 0 && outs[watch] != nil && wrongResults(outs[watch].Verdicts) {
		n++ // the watch reader comes right after the detected kinds
	}
	outs, errs = outs[:n], errs[:n]
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if in.err != nil {
		return nil, &ReadError{path, in.err}
	}
	var kept []*Output
	for _, o := range outs {
		if o != nil {
			kept = append(kept, o)
		}
	}
	if len(kept) == 0 {
		return nil, cmp.Or(errs...)
	}
	return kept, nil
}

// wrongResults reports whether vs say a collective returned wrong data.
func wrongResults(vs []result.Result) bool {
	return slices.ContainsFunc(vs, func(v result.Result) bool {
		return v.ID == nccltests.IDWrong && v.Status == result.Fail
	})
}

// ctxErr is ctx's error once ctx has ended (the read failed because of
// it), err otherwise.
func ctxErr(ctx context.Context, err error) error {
	return cmp.Or(ctx.Err(), err)
}

// readAll analyses src with every reader of rds, reading src once: with
// one reader directly, with several through one pipe each, fed the same
// chunks. A reader that returns early stops taking chunks; the others go
// on.
func readAll(name string, src io.Reader, rds []Reader) ([]*Output, []error) {
	outs, errs := make([]*Output, len(rds)), make([]error, len(rds))
	if len(rds) == 1 {
		outs[0], errs[0] = Read(name, src, rds[0])
		return outs, errs
	}
	prs, pws := make([]*io.PipeReader, len(rds)), make([]*io.PipeWriter, len(rds))
	var wg sync.WaitGroup
	for i, rd := range rds {
		prs[i], pws[i] = io.Pipe()
		wg.Go(func() {
			outs[i], errs[i] = Read(name, prs[i], rd)
			prs[i].CloseWithError(errReaderDone)
		})
	}
	buf := make([]byte, 256<<10)
	live := len(rds)
	for live > 0 {
		n, err := src.Read(buf)
		for i, pw := range pws {
			if pw == nil || n == 0 {
				continue
			}
			if _, werr := pw.Write(buf[:n]); werr != nil {
				pws[i] = nil
				live--
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			for _, pw := range pws {
				if pw != nil {
					pw.CloseWithError(err)
				}
			}
			break
		}
	}
	wg.Wait()
	return outs, errs
}

// errReaderDone closes the pipe of a reader that has returned.
var errReaderDone = errors.New("reader done")

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
