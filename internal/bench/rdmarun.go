package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/analyze/perftest"
	"github.com/gdrcheck/gdrcheck/internal/bench/rdma"
)

// RDMAOptions run a plan.
type RDMAOptions struct {
	// PerftestDir holds the perftest binaries; "" searches PATH.
	PerftestDir string
	// Out keeps the raw outputs (made if missing).
	Out string
	// Timeout is each run's deadline (server and client together).
	Timeout time.Duration
	// Ready is how long the server gets to start listening (default 10 s,
	// never past Timeout).
	Ready time.Duration
}

// RunRDMA runs every entry of p that is not skipped: for each memory kind,
// the server, then (once it listens) the client, both under opt.Timeout.
// A failure is the run's Outcome (its Cause), never an error: the other
// pairs still run. The error is for the output folder only, or ctx ending.
func RunRDMA(ctx context.Context, p *rdma.Plan, opt RDMAOptions) ([]rdma.PairResult, error) {
	opt.defaults()
	if err := os.MkdirAll(opt.Out, 0o755); err != nil {
		return nil, err
	}
	var out []rdma.PairResult
	for _, e := range p.Entries {
		pr := rdma.PairResult{Entry: e}
		if e.Skip == "" {
			for _, r := range e.Runs {
				if err := ctx.Err(); err != nil {
					return out, err
				}
				pr.Outcomes = append(pr.Outcomes, runOne(ctx, &e, r, p.Test, opt))
			}
		}
		out = append(out, pr)
	}
	return out, ctx.Err()
}

// defaults fills in the deadlines left zero: Timeout 2 min, Ready 10 s.
// The server's start is judged before the run's deadline (Ready at most
// 3/4 of Timeout), so that a silent server is ServerNotReady, not a race
// with Timeout.
func (opt *RDMAOptions) defaults() {
	if opt.Timeout <= 0 {
		opt.Timeout = 2 * time.Minute
	}
	if opt.Ready <= 0 || opt.Ready > opt.Timeout*3/4 {
		opt.Ready = min(10*time.Second, opt.Timeout*3/4)
	}
}

// perftestBinary finds a perftest tool.
func perftestBinary(dir, tool string) (string, error) {
	if dir == "" {
		return exec.LookPath(tool)
	}
	path := filepath.Join(dir, tool)
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", path)
	}
	return path, nil
}

func command(ctx context.Context, path string, c rdma.Cmd, out *os.File) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, c.Args...)
	env := make([]string, 0, len(os.Environ())+len(c.Env))
	for _, kv := range os.Environ() {
		// --use_cuda=N counts all GPUs in bus order: a mask would renumber them.
		if !strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=") && !strings.HasPrefix(kv, "CUDA_DEVICE_ORDER=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, c.Env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	return cmd
}

func runOne(ctx context.Context, e *rdma.Entry, r rdma.Run, test string, opt RDMAOptions) rdma.Outcome {
	o := rdma.Outcome{Memory: r.Memory}
	base := fmt.Sprintf("gpu%d-%s-%s", e.GPU, safeName(e.NIC), r.Memory)
	o.ServerOut, o.ClientOut = base+"-server.txt", base+"-client.txt"
	path, err := perftestBinary(opt.PerftestDir, r.Server.Tool)
	if err != nil {
		o.Cause, o.Detail = rdma.CauseMissingBinary, err.Error()
		return o
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	cf, err := os.Create(filepath.Join(opt.Out, o.ClientOut))
	if err != nil {
		o.Cause, o.Detail = rdma.CauseClientFailed, err.Error()
		return o
	}
	defer cf.Close()
	srv, cause, detail := startServer(ctx, path, r.Server, filepath.Join(opt.Out, o.ServerOut), opt)
	if srv == nil {
		o.Cause, o.Detail = cause, detail
		return o
	}
	defer srv.close()
	cerr := command(ctx, path, r.Client, cf).Run()
	// The server ends on its own after the test; give it a moment.
	serr := srv.stop(2 * time.Second)
	ctext := readText(filepath.Join(opt.Out, o.ClientOut))
	stext := readText(srv.out)
	if ctx.Err() != nil {
		o.Cause, o.Detail = rdma.CauseTimeout, fmt.Sprintf("the run did not end within --pair-timeout %s", opt.Timeout)
		return o
	}
	if cerr != nil {
		if c, d := classify(stext, ""); c == rdma.CauseRegistration {
			o.Cause, o.Detail = c, "server: "+d
			return o
		}
		if c, d := classify(ctext, ""); c != "" {
			o.Cause, o.Detail = c, "client: "+d
			return o
		}
		if serr != nil && !errors.Is(serr, context.Canceled) {
			o.Cause, o.Detail = rdma.CauseServerDied, "server: "+exitText(serr)+"; client: "+exitText(cerr)
			return o
		}
		o.Cause, o.Detail = rdma.CauseClientFailed, "client: "+exitText(cerr)
		return o
	}
	m := measure(o.ClientOut, ctext, test)
	o.Gbps, o.LatencyUS, o.Bytes, o.Cause, o.Detail = m.Gbps, m.LatencyUS, m.Bytes, m.Cause, m.Detail
	return o
}

// perfServer is a perftest server that said it waits for its client.
type perfServer struct {
	cmd  *exec.Cmd
	file *os.File
	out  string // its output file
	done chan struct{}
	err  error // its exit, once done is closed
}

// startServer starts a perftest server writing to out and waits until it
// says it waits for its client (polling the TCP port would take the
// server's one connection). A server that exits first, stays silent past
// opt.Ready or outlives ctx is nil with the cause and the detail.
func startServer(ctx context.Context, path string, c rdma.Cmd, out string, opt RDMAOptions) (*perfServer, string, string) {
	f, err := os.Create(out)
	if err != nil {
		return nil, rdma.CauseServerDied, err.Error()
	}
	s := &perfServer{cmd: command(ctx, path, c, f), file: f, out: out, done: make(chan struct{})}
	if err := s.cmd.Start(); err != nil {
		f.Close()
		return nil, rdma.CauseServerDied, err.Error()
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	ready := time.NewTimer(opt.Ready)
	defer ready.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			f.Close()
			if ctx.Err() != nil {
				return nil, rdma.CauseTimeout, fmt.Sprintf("server: did not listen within --pair-timeout %s", opt.Timeout)
			}
			cause, detail := s.exitCause()
			return nil, cause, "server: " + strings.TrimPrefix(detail, "server: ")
		case <-ready.C:
			s.cmd.Process.Kill()
			<-s.done
			f.Close()
			if ctx.Err() != nil {
				return nil, rdma.CauseTimeout, fmt.Sprintf("server: no \"Waiting for client\" within %s", opt.Ready)
			}
			return nil, rdma.CauseServerNotReady, fmt.Sprintf("server: no \"Waiting for client\" within %s", opt.Ready)
		case <-tick.C:
			if strings.Contains(readText(out), "aiting for client") {
				return s, "", ""
			}
		}
	}
}

// exitCause is why the server exited (once done is closed): the line of
// its output that says why, else ServerDied with its exit status.
func (s *perfServer) exitCause() (cause, detail string) {
	cause, detail = classify(readText(s.out), rdma.CauseServerDied)
	if detail == "" {
		detail = exitText(s.err)
	}
	return cause, detail
}

// stop waits at most grace for the server's end, then kills it; its exit.
func (s *perfServer) stop(grace time.Duration) error {
	select {
	case <-s.done:
	case <-time.After(grace):
		s.cmd.Process.Kill()
		<-s.done
	}
	return s.err
}

// close kills the server if it still runs and closes its output.
func (s *perfServer) close() {
	s.stop(0)
	s.file.Close()
}

// measurement is what a client's output says.
type measurement struct {
	Gbps, LatencyUS float64
	Bytes           int64
	Cause, Detail   string
}

// measure reads a client's output with the perftest reader: the best
// average Gb/s at bandwidth sizes, or the typical latency.
func measure(name, ctext, test string) measurement {
	var m measurement
	rep, _, err := perftest.Analyze(name, strings.NewReader(ctext))
	if err != nil {
		m.Cause, m.Detail = rdma.CauseNoMeasurement, err.Error()
		return m
	}
	if len(rep.Errors) > 0 {
		// A run that measured and then failed (perftest's "Completion with
		// error") keeps its numbers; the error is the evidence.
		m.Detail = fmt.Sprintf("client line %d: %s", rep.Errors[0].Line, rep.Errors[0].Text)
	}
	if rdma.IsLatency(test) {
		for _, lr := range rep.LatRows {
			v := lr.Typical
			if v == nil {
				v = lr.Avg
			}
			if v != nil {
				m.LatencyUS, m.Bytes = *v, lr.Bytes
				break
			}
		}
		if m.LatencyUS == 0 {
			m.Cause, m.Detail = rdma.CauseNoMeasurement, "no latency row"
		}
		return m
	}
	m.Gbps, m.Bytes = rep.PeakAvgGbps, rep.PeakAvgBytes
	if m.Gbps <= 0 {
		m.Cause, m.Detail = rdma.CauseNoMeasurement, "no bandwidth row at bandwidth sizes"
	}
	return m
}

// classify names why a perftest side failed from its output; fallback
// when nothing is recognised ("" leaves Cause empty).
func classify(text, fallback string) (cause, detail string) {
	for _, m := range []struct{ cause, needle string }{
		{rdma.CauseRegistration, "Couldn't allocate MR"},
		{rdma.CauseRegistration, "ibv_reg_mr failed"},
		{rdma.CauseRegistration, "ibv_reg_dmabuf_mr failed"},
		{rdma.CausePortConflict, "Address already in use"},
		{rdma.CausePortConflict, "Couldn't bind"},
		{rdma.CausePortConflict, "Couldn't listen to port"},
		{rdma.CauseServerDied, "Couldn't connect to"},
		{rdma.CauseServerDied, "Unable to open file descriptor for socket connection"},
	} {
		if i := strings.Index(text, m.needle); i >= 0 {
			return m.cause, lineAt(text, i)
		}
	}
	return fallback, ""
}

func lineAt(text string, i int) string {
	s := strings.LastIndexByte(text[:i], '\n') + 1
	e := strings.IndexByte(text[i:], '\n')
	if e < 0 {
		return strings.TrimSpace(text[s:])
	}
	return strings.TrimSpace(text[s : i+e])
}

func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func readText(path string) string {
	b, _ := os.ReadFile(path)
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}
