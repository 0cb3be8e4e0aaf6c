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
	if opt.Timeout <= 0 {
		opt.Timeout = 2 * time.Minute
	}
	// The server's start is judged before the run's deadline, so that a
	// silent server is ServerNotReady, not a race with Timeout.
	if opt.Ready <= 0 || opt.Ready > opt.Timeout*3/4 {
		opt.Ready = min(10*time.Second, opt.Timeout*3/4)
	}
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

// binary finds a perftest tool.
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
	sf, err := os.Create(filepath.Join(opt.Out, o.ServerOut))
	if err != nil {
		o.Cause, o.Detail = rdma.CauseServerDied, err.Error()
		return o
	}
	defer sf.Close()
	cf, err := os.Create(filepath.Join(opt.Out, o.ClientOut))
	if err != nil {
		o.Cause, o.Detail = rdma.CauseClientFailed, err.Error()
		return o
	}
	defer cf.Close()

	srv := command(ctx, path, r.Server, sf)
	if err := srv.Start(); err != nil {
		o.Cause, o.Detail = rdma.CauseServerDied, err.Error()
		return o
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait() }()
	// The server is ready when it says it waits for the client; polling the
	// TCP port would take the server's one connection.
	ready := time.NewTimer(opt.Ready)
	defer ready.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err := <-srvDone:
			if ctx.Err() != nil {
				o.Cause, o.Detail = rdma.CauseTimeout, fmt.Sprintf("server: did not listen within --pair-timeout %s", opt.Timeout)
				return o
			}
			text := readText(filepath.Join(opt.Out, o.ServerOut))
			o.Cause, o.Detail = classify(text, rdma.CauseServerDied)
			if o.Detail == "" {
				o.Detail = "server: " + exitText(err)
			}
			o.Detail = "server: " + strings.TrimPrefix(o.Detail, "server: ")
			return o
		case <-ready.C:
			srv.Process.Kill()
			<-srvDone
			o.Cause, o.Detail = rdma.CauseServerNotReady, fmt.Sprintf("server: no \"Waiting for client\" within %s", opt.Ready)
			if ctx.Err() != nil {
				o.Cause = rdma.CauseTimeout
			}
			return o
		case <-tick.C:
			if strings.Contains(readText(filepath.Join(opt.Out, o.ServerOut)), "aiting for client") {
				break wait
			}
		}
	}
	cli := command(ctx, path, r.Client, cf)
	cerr := cli.Run()
	// The server ends on its own after the test; give it a moment.
	var serr error
	select {
	case serr = <-srvDone:
	case <-time.After(2 * time.Second):
		srv.Process.Kill()
		serr = <-srvDone
	}
	ctext := readText(filepath.Join(opt.Out, o.ClientOut))
	stext := readText(filepath.Join(opt.Out, o.ServerOut))
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
	rep, _, err := perftest.Analyze(o.ClientOut, strings.NewReader(ctext))
	if err != nil {
		o.Cause, o.Detail = rdma.CauseNoMeasurement, err.Error()
		return o
	}
	if len(rep.Errors) > 0 {
		// A run that measured and then failed (perftest's "Completion with
		// error") keeps its numbers; the error is the evidence.
		o.Detail = fmt.Sprintf("client line %d: %s", rep.Errors[0].Line, rep.Errors[0].Text)
	}
	if rdma.IsLatency(test) {
		for _, lr := range rep.LatRows {
			v := lr.Typical
			if v == nil {
				v = lr.Avg
			}
			if v != nil {
				o.LatencyUS, o.Bytes = *v, lr.Bytes
				break
			}
		}
		if o.LatencyUS == 0 {
			o.Cause, o.Detail = rdma.CauseNoMeasurement, "no latency row"
		}
		return o
	}
	o.Gbps, o.Bytes = rep.PeakAvgGbps, rep.PeakAvgBytes
	if o.Gbps <= 0 {
		o.Cause, o.Detail = rdma.CauseNoMeasurement, "no bandwidth row at bandwidth sizes"
	}
	return o
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
